"""The memory model (pgdiag.diagnostics.memory) against numbers worked by hand, and the dry run's shapes
(engine.plan_shapes) against what the studies record when they run."""

import types

import pytest

from pgdiag import preset, sweep
from pgdiag.diagnostics import DiagnosticError, engine, gradient_study, memory, step_study
from pgdiag.studies.gradients import GRADIENTS as GRADIENT_STUDY
from pgdiag.studies.gradients.memory import gradient_bytes
from pgdiag.studies.steps import STEPS as STEP_STUDY
from pgdiag.studies.steps.memory import step_bytes
from pgdiag.run import CompileCounter

#: a tiny network: 3 observations, 1 action, one hidden layer of 4 (policy) and 5 (value) units
TINY = types.SimpleNamespace(policy_hidden=(4,), value_hidden=(5,))


def test_a_pair_costs_its_named_terms():
    """2 × 3 (observation, next) + 2 × 1 (action, mean) + 12 scalars + 3 × 4 (policy) + 3 × 5 (value) = 47
    words; the gradient study keeps 2 words per value unit (42); two advantage heads add 2 (49)."""
    assert memory.pair_words(3, 1, TINY) == 47
    assert memory.pair_words(3, 1, TINY, value_passes=2) == 42
    assert memory.pair_words(3, 1, TINY, heads=2) == 49


def test_the_gradient_estimate_by_hand():
    """K = 2 estimates and R = 1 truth stream of 8-pair chunks, a grid of 3 sizes, 10 parameters, 2 subjects:
    per stream 8 × 42 + (3 + 4) × 10 = 406 words; 3 streams × 2 subjects × 406 = 2436 words, plus
    2 subjects × 2 × 3² = 36 words of cosines: 2472 words, 9888 bytes; in turn, one subject's streams:
    3 × 406 + 36 = 1254 words."""
    r = types.SimpleNamespace(estimates=2, truth_streams=1, sampling=types.SimpleNamespace(chunk=8),
                              grid=types.SimpleNamespace(sizes=(2, 4, 8)))
    assert gradient_bytes(TINY, r, 2, 3, 1, 10, "vmap") == 4 * 2472
    assert gradient_bytes(TINY, r, 2, 3, 1, 10, "map") == 4 * 1254


def test_a_step_holds_the_larger_of_its_backward_and_forward_passes():
    """Policy (4, 6), value (5,): a whole-batch backward pass 3 × 10 = 30 words per pair; PPO with 4
    minibatches 30 / 4 = 7.5, below one forward pass of the widest layer (2 × 6 = 12); TRPO's 3 scales
    tried together 3 × 12 = 36, above its backward pass. With 2 subjects of 3 + 1 batches of 2 × 5 pairs:
    (2 × 3 + 2 × 1 + 12 scalars + 12) = 32 words × 40 pairs × 2 subjects × 4 bytes = 10240 (PPO)."""
    base = dict(policy_hidden=(4, 6), value_hidden=(5,), num_envs=2, steps_per_env=5, num_minibatches=4,
                line_search_steps=3)
    ppo, trpo, npg = (types.SimpleNamespace(algorithm=a, **base) for a in ("ppo", "trpo", "npg"))
    assert memory.step_words(ppo) == 12 and memory.step_words(trpo) == 36 and memory.step_words(npg) == 30
    settings = types.SimpleNamespace(batches=3, heldout_envs=0)
    assert step_bytes(ppo, settings, 2, 3, 1, "vmap") == 10240
    assert step_bytes(ppo, settings, 2, 3, 1, "map") == 5120


def test_the_policy_parameter_count_by_hand():
    """3 → 4 → 1: 3 × 4 + 4 + 4 × 1 + 1 weights and biases, and one log-std: 22."""
    assert memory.num_params(TINY, 3, 1) == 22


def test_a_program_too_large_is_refused_naming_both_sizes():
    assert memory.fmt_bytes(3 * 2 ** 30) == "3.0 GiB" and memory.fmt_bytes(5 * 2 ** 20) == "5 MiB"
    memory.require_memory(2 ** 20, "the study", "a shape", "advice", have=2 ** 20)
    with pytest.raises(DiagnosticError, match=r"the study needs about 2 MiB but 1 MiB is available: a shape; "
                                              r"lower it"):
        memory.require_memory(2 ** 21, "the study", "a shape", "lower it", have=2 ** 20)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One PPO agent on point_mass, its checkpoint after iteration 0."""
    cfg = preset("ppo", "point_mass").replace(num_iterations=1, checkpoint_at=(0,))
    out = str(tmp_path_factory.mktemp("memory-model") / "ppo")
    sweep(cfg, seeds=1, out=out, chunk_iterations=1)
    return out, cfg.static


GRADIENTS = dict(sizes=(100, 1000), estimates=2, true_pairs=2000)


def test_the_dry_run_shapes_the_gradient_study_it_runs(run):
    """plan_shapes resolves the settings as the study does: the sizes, chunks and truth the manifest records,
    the batching and the pairs its program's timing counts."""
    path, static = run
    (shape,) = engine.plan_shapes(GRADIENT_STUDY, "point_mass", {"ppo": static}, 1, GRADIENTS,
                                  memory.available_memory())
    study = gradient_study([path], save=False, **GRADIENTS)
    resolved, r = study.manifest["resolved"], shape.resolved
    assert resolved["sizes"] == list(r.grid.sizes) and resolved["chunk_pairs"] == r.grid.chunk
    assert (resolved["envs"], resolved["steps"], resolved["true_pairs"]) == (r.sampling.envs, r.sampling.steps,
                                                                               r.true_pairs)
    assert shape.labels == ("ppo",) and shape.units == 1 and shape.batching == "vmap" and shape.fits
    assert study.manifest["timings"][0]["pairs"] == shape.pairs


def test_the_dry_run_shapes_the_step_study_it_runs(run):
    path, static = run
    (shape,) = engine.plan_shapes(STEP_STUDY, "point_mass", {"ppo": static}, 1, {"batches": 2},
                                  memory.available_memory())
    study = step_study([path], save=False, batches=2)
    assert study.manifest["resolved"]["batching"] == [{"algorithm": "ppo", "batching": shape.batching}]
    assert study.manifest["timings"][0]["pairs"] == shape.pairs == 3 * static.batch_size


def test_a_study_that_does_not_fit_is_refused_before_it_compiles(run, monkeypatch):
    path, _ = run
    monkeypatch.setattr(memory, "available_memory", lambda host=False: 1024)
    with CompileCounter() as counter, pytest.raises(DiagnosticError, match="the study needs about .* but 0 MiB "
                                                                           "is available"):
        gradient_study([path], save=False, **GRADIENTS)
    assert counter.count == 0


def test_a_users_algorithm_declares_its_working_set():
    """An algorithm of one's own that differentiates half its batch at a time (policy (4, 6): 3 × 10 / 2 = 15
    words per pair, above a forward pass's 2 × 6 = 12) is estimated by its declaration; a share outside
    (0, 1] is refused naming it."""
    import dataclasses

    from pgdiag import WorkingSet, algorithms, register_algorithm
    from pgdiag.algorithms import AlgorithmError, unregister_algorithm

    mine = dataclasses.replace(algorithms.get("vpg"), name="vpg-halves",
                               working_set=lambda static: WorkingSet(differentiated=0.5))
    register_algorithm(mine)
    try:
        static = types.SimpleNamespace(algorithm="vpg-halves", policy_hidden=(4, 6), value_hidden=(5,))
        assert memory.step_words(static) == 15
    finally:
        unregister_algorithm("vpg-halves")
    with pytest.raises(AlgorithmError, match="got 1.5"):
        WorkingSet(differentiated=1.5)
