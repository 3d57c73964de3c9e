"""A long study measured in blocks of subjects kept one by one: the split, the blocks read back only where they are
the same measurement, and an interrupted study resumed to what one program measures."""

import os

import numpy as np
import pandas as pd
import pytest

from pgdiag import preset, sweep
from pgdiag.diagnostics import GRADIENTS, engine, pieces
from pgdiag.diagnostics.tables import saved_manifest

KW = dict(iterations=[2], sizes=(100, 1000), estimates=2, true_pairs=0)


def test_a_program_splits_into_blocks_each_planned_within_the_limit():
    assert pieces.count(8, None) == pieces.count(8, 600.0) == pieces.count(1, 1e9) == 1
    assert pieces.count(8, 601.0) == 2 and pieces.count(8, 1800.0) == 3   # ⌈planned / 600 s⌉
    assert pieces.count(8, 4900.0) == 8                                   # never more blocks than subjects
    assert pieces.blocks(8, 3) == [(0, 3), (3, 5), (5, 8)]                # sizes 3, 2, 3
    assert pieces.blocks(3, 3) == [(0, 1), (1, 2), (2, 3)] and pieces.blocks(5, 1) == [(0, 5)]


def test_a_block_is_read_back_only_whole_and_for_the_same_measurement(tmp_path):
    where = str(tmp_path / "kept")
    rows = [dict(run=str(tmp_path / "r"), agent=0, seed=3, iteration=2)]
    what = pieces.record("gradients", {"estimates": 2, "sizes": (100, 1000)}, rows)
    frame = pd.DataFrame({"run": [rows[0]["run"]], "cosine": [0.25]})
    assert pieces.load(where, what, ["pairs"]) is None                    # nothing kept
    pieces.save(where, what, {"pairs": frame}, {"run_s": 1.5})
    frames, timing = pieces.load(where, what, ["pairs"])
    pd.testing.assert_frame_equal(frames["pairs"], frame)
    assert timing == {"run_s": 1.5, "kept": True}
    other = pieces.record("gradients", {"estimates": 3, "sizes": (100, 1000)}, rows)
    assert pieces.load(where, other, ["pairs"]) is None                   # other settings: another block
    assert pieces.load(where, what, ["pairs", "estimates"]) is None       # a table missing: measured again
    # the block count a program was first split into holds for later plans of it
    group = pieces.record("gradients", {"estimates": 2}, [dict(rows[0], agent=a) for a in range(5)])
    assert pieces.settled(where, group, 4) == 4 and pieces.settled(where, group, 1) == 4
    pieces.clear(where)
    assert not os.path.exists(where)


class MachineGone(Exception):
    pass


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """PPO on point_mass, three seeds, checkpointed after iteration 2."""
    out = str(tmp_path_factory.mktemp("pieces") / "ppo")
    sweep(preset("ppo", "point_mass").replace(num_iterations=3, checkpoint_at=(2,)), seeds=3, out=out,
          chunk_iterations=3)
    return out


def test_an_interrupted_study_resumes_from_its_kept_blocks(run, monkeypatch):
    whole = engine.run(GRADIENTS, run, save=False, **KW)                  # one program of three subjects
    real, calls, gone = engine._compile_and_run, [], []

    def stopped_at_the_second(study, shape, *args):
        calls.append(shape.units)
        if len(calls) == 2 and not gone:
            gone.append(True)
            raise MachineGone   # the machine goes away during the second block
        return real(study, shape, *args)

    monkeypatch.setattr(engine, "_compile_and_run", stopped_at_the_second)
    with pytest.raises(MachineGone):
        engine.run(GRADIENTS, run, estimate=lambda shape: 1e6, **KW)     # planned far over 600 s: 3 blocks of 1
    assert calls == [1, 1] and saved_manifest(run, "gradients") is None
    calls.clear()
    # resumed with a plan that would not split it (the host's costs recorded meanwhile): the count first chosen
    # holds, the kept block is read back, the other two are measured
    resumed = engine.run(GRADIENTS, run, estimate=lambda shape: 1.0, **KW)
    assert calls == [1, 1]
    assert [bool(t.get("kept")) for t in resumed.manifest["timings"]] == [True, False, False]
    assert not os.path.exists(pieces.directory(run, "gradients"))        # saved whole: the blocks are gone
    # a subject's streams are its own (subject_keys): the blocks measure what one program does, to float32
    # rounding of the cosines (as a subject alone against others, test_diagnostics)
    assert list(resumed.pairs.agent) == list(whole.pairs.agent)
    np.testing.assert_allclose(resumed.pairs.cosine.to_numpy(), whole.pairs.cosine.to_numpy(), atol=1e-5)
