"""A measurement of one's own (examples/own_study.py: the gradient's signal and noise energies against N), written
outside the package against the study protocol: its arithmetic against a closed form, its numbers against a
second method (the gradient study's saved tables, from the same compiled program), and its target through the
CLI, the dry run, --from and the report."""

import pathlib

import numpy as np
import pandas as pd
import pytest

from pgdiag.cli import load_plugin, main
from pgdiag.diagnostics import gradient_study
from pgdiag.experiments import diagnostic_targets, study_dir, targets

PATH = pathlib.Path(__file__).parent.parent / "examples" / "own_study.py"


@pytest.fixture(scope="module")
def example():
    load_plugin(str(PATH))
    import sys
    yield sys.modules["pgdiag_load_own_study"]
    targets.unregister("fig-grad-snr")


def test_energies_recover_a_known_signal_and_noise(example):
    """K = 10 estimates g + e_k in d = 20,000 dimensions, e_k ~ N(0, σ²I): signal S = ‖g‖² = 4, noise V = dσ² = 12.
    The signal estimate, the mean over the K(K−1)/2 pairs of ‖g‖² + g·(e_i + e_j) + e_i·e_j, has variance
    4SV/(dK) + 2V²/(dK(K−1)); the noise estimate adds the mean ‖e_k‖² (variance 2V²/(dK)) and 2g·ē (variance
    4SV/(dK)), so its standard deviation is at most the sum of the three. Six of each bounds a deviation but
    with probability < 4e-9 (the draw is seeded: it passes on any CPU; the bound says how unlikely a failure
    was)."""
    rng = np.random.default_rng(0)
    d, k, S, V = 20_000, 10, 4.0, 12.0
    g = np.full(d, np.sqrt(S / d))
    est = g + np.sqrt(V / d) * rng.standard_normal((k, d))
    norms = np.linalg.norm(est, axis=1)
    cosines = est @ est.T / np.outer(norms, norms)
    signal, noise = example.energies(cosines, norms)
    sd_signal = np.sqrt(4 * S * V / (d * k) + 2 * V ** 2 / (d * k * (k - 1)))
    sd_noise = sd_signal + np.sqrt(2 * V ** 2 / (d * k)) + np.sqrt(4 * S * V / (d * k))
    assert abs(signal - S) < 6 * sd_signal and abs(noise - V) < 6 * sd_noise
    assert 6 * (sd_signal + sd_noise) < V - S        # the bounds are tight enough to tell the two apart


@pytest.fixture(scope="module")
def trained(example, tmp_path_factory):
    root = tmp_path_factory.mktemp("own-study")
    out = root / "grad-snr"
    assert main(["--load", str(PATH), "fig-grad-snr", "--out", str(out), "--no-progress"]) == 0
    return root, out


def test_the_target_runs_through_the_cli_the_dry_run_from_and_the_report(trained, tmp_path, capsys):
    root, out = trained
    assert (out / "fig-grad-snr.png").exists() and (out / "fig-grad-snr-summary.csv").exists()
    summary = pd.read_csv(out / "fig-grad-snr-summary.csv")
    assert set(summary.label) == {"ppo", "trpo"} and set(summary.iteration) == {0, 3}

    capsys.readouterr()
    assert main(["--load", str(PATH), "fig-grad-snr", "--dry-run", "--seeds", "3"]) == 0
    shown = capsys.readouterr().out
    assert "grad-snr" in shown and "lqr" in shown

    assert main(["--load", str(PATH), "fig-grad-snr", "--from", str(out), "--out", str(tmp_path / "again")]) == 0
    again = pd.read_csv(tmp_path / "again" / "fig-grad-snr-summary.csv")
    pd.testing.assert_frame_equal(again, summary)

    assert main(["--load", str(PATH), "report", "--from", str(root), "--out", str(tmp_path / "report")]) == 0
    assert "### fig-grad-snr" in (tmp_path / "report" / "report.md").read_text()


def test_a_bad_load_is_named():
    assert main(["--load", "no/such/file.py", "tasks"]) == 2
    assert main(["--load", "no_such_module_here", "tasks"]) == 2


def test_its_energies_equal_the_gradient_studys_tables(example, trained):
    """The gradient study with the same settings compiles the same program with the same keys: its saved
    cosines and norms, reassembled with pandas, give the same energies (float64 arithmetic on the same float32
    outputs, in another order: equal to float64 rounding)."""
    _, out = trained
    record, studies = diagnostic_targets.load_measured(example.TARGET, str(out))
    runs = [study_dir.run_dir(str(out), d, "fig-grad-snr") for d in record["runs"]["lqr"]]
    mine = studies["lqr"].snr
    g = gradient_study(runs, iterations=sorted(set(mine.iteration)), sizes=(64, 256, 1024), estimates=4,
                       save=False)
    assert len(g.pairs.groupby(["run", "agent", "iteration", "n"])) == len(mine) > 0
    keys = ["run", "agent", "iteration", "n"]
    for key, part in g.pairs.groupby(keys):
        norms = g.estimates.set_index(keys + ["k"]).loc[key].sort_index().norm.to_numpy(np.float64)
        signal = (part.cosine.to_numpy(np.float64) * norms[part.i] * norms[part.j]).mean()
        noise = np.mean(norms ** 2) - signal
        row = mine.set_index(keys).loc[key]
        np.testing.assert_allclose([row.signal, row.noise], [signal, noise], rtol=1e-12)


def test_a_measurement_needs_only_its_words_the_protocol_fills_in_the_rest():
    """A Diagnostic that declares no title and no result type gets "<kind> study" and the plain table holder; a
    Shape is made without labels (the engine fills them in)."""
    import dataclasses

    from pgdiag.diagnostics import Diagnostic, Shape
    from pgdiag.diagnostics.protocol import Tables

    @dataclasses.dataclass(frozen=True)
    class Settings:
        seed: int = 0

        def check(self):
            pass

    class Probe(Diagnostic):
        kind, settings, tables = "probe", Settings, ("values",)

        def shape(self, group):
            return Shape(batching="vmap", units=group.units, pairs=0, sequential_steps=0, width=0, bytes=0, fits=True)

        def program(self, shape):
            return lambda states, knobs, keys: {}

        def frames(self, measured):
            return {"values": pd.DataFrame({"x": [1.0]})}

    class Named(Probe):
        title = "a probe of my own"

    assert Probe.title == "probe study" and Named.title == "a probe of my own" and Probe.result is Tables
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    held = Probe.result(manifest={"kind": "probe"}, values=frame)
    assert held.values is frame and held.manifest["kind"] == "probe" and held.tables == ("values",)
    shape = Probe().shape(type("G", (), {"units": 3})())
    assert shape.labels == () and dataclasses.replace(shape, labels=("ppo",)).labels == ("ppo",)


def test_the_default_shape_is_worked_out_from_what_one_subject_does():
    """A measurement that states its work (per subject: 1,000 pairs in 50 steps of 20 environments, 10,000 words
    held) gets its program's shape by arithmetic: 6 subjects together need 6 × 10,000 × 4 = 240,000 bytes; with
    100,000 bytes they go one after another (40,000 bytes, six times the steps); with 30,000 even one does not fit,
    and the engine's check refuses it naming the measurement."""
    import dataclasses

    from pgdiag.diagnostics import Diagnostic, DiagnosticError, Group, Sizes
    from pgdiag.diagnostics.memory import require_memory
    from pgdiag.diagnostics.protocol import Work

    class Settings:
        pass

    class Probe(Diagnostic):
        kind, settings, tables = "probe", Settings, ("values",)

        def work(self, group):
            return Work(pairs=1000, steps=50, envs=20, words=10_000)

        def program(self, shape):
            return None

        def frames(self, measured):
            return {}

    def shape(memory):
        return Probe().shape(Group(Settings(), "resolved", (None,) * 6, 6, Sizes(11, 3, 100), memory))

    big, small, tiny = shape(10 ** 6), shape(100_000), shape(30_000)
    assert (big.batching, big.bytes, big.fits, big.pairs, big.sequential_steps, big.width) == (
        "vmap", 240_000, True, 6000, 50, 120) and big.resolved == "resolved"
    assert (small.batching, small.bytes, small.fits, small.sequential_steps, small.width, small.note) == (
        "map", 40_000, True, 300, 20, "subjects in turn")
    assert (tiny.batching, tiny.bytes, tiny.fits) == ("map", 40_000, False)
    with pytest.raises(DiagnosticError, match="the probe study needs about 0 MiB but 0 MiB is available"):
        require_memory(tiny.bytes, *tiny.refusal, have=30_000)
    with pytest.raises(TypeError, match="declares work\\(group\\)"):
        type("Nothing", (Probe,), {"work": Diagnostic.work})
    assert dataclasses.replace(big, labels=("ppo",)).labels == ("ppo",)
