"""The example of a user's own algorithm (examples/ppo_early_stop.py): registered from outside the package, its
step checked at the two settings where it is another step, then trained and taken through fig-step-variance
and the surrogate landscape."""

import importlib.util
import os
import pathlib

import jax
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from pgdiag import algorithms, stages
from pgdiag.algorithms import ppo
from pgdiag.algorithms.epochs import minibatch_indices
from batches import fixed_batch, settings

PATH = pathlib.Path(__file__).parent.parent / "examples" / "ppo_early_stop.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("ppo_early_stop", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    if module.EARLY_STOP.name in algorithms.names():
        algorithms.unregister_algorithm(module.EARLY_STOP.name)


def test_the_early_stopped_step_is_ppos_step_or_its_first_minibatch(example):
    """With d_targ huge it never stops: PPO's step; with d_targ ≈ 0 it stops after the first minibatch
    step: that step alone, on the first permutation PPO's epochs draw from the same key. Different
    compiled programs of the same float32 arithmetic: 1e-6 relative."""
    params, batch = fixed_batch(hidden=(8,))
    if example.EARLY_STOP.name not in algorithms.names():
        algorithms.register_algorithm(example.EARLY_STOP)
    shape = dict(num_envs=1, steps_per_env=64, ppo_epochs=3, num_minibatches=4)
    static, knobs = settings("ppo", **shape)
    mine = lambda kl_target: settings(example.EARLY_STOP.name, kl_target=kl_target, **shape)  # noqa: E731
    key, lr = jax.random.PRNGKey(3), 1e-2
    state = ppo.init_state(params, knobs)
    flat = lambda p: np.asarray(ravel_pytree(p)[0])  # noqa: E731
    never = example.step(*mine(1e9)[:1], params, state, batch, lr, mine(1e9)[1], key)
    whole = stages.policy_step(static, params, state, batch, lr, knobs, key)
    np.testing.assert_allclose(flat(never.params), flat(whole.params), rtol=1e-6, atol=1e-7)
    at_once = example.step(*mine(1e-12)[:1], params, state, batch, lr, mine(1e-12)[1], key)
    first = minibatch_indices(jax.random.split(key, 3)[0], 64, 4)[0]
    # its own metric: all 3 × 4 minibatch steps applied when it never stops, the first alone (1/12) when it does
    assert float(never.info.extra["applied_fraction"]) == 1.0
    assert float(at_once.info.extra["applied_fraction"]) == pytest.approx(1 / 12)
    (one, _), _ = ppo.policy_minibatch(batch, lr, knobs)((params, state), first)
    np.testing.assert_allclose(flat(at_once.params), flat(one), rtol=1e-6, atol=1e-7)
    assert not np.allclose(flat(one), flat(whole.params))


def test_the_example_trains_and_runs_the_step_study_and_the_landscape(example, tmp_path):
    assert len(PATH.read_text().splitlines()) < 80
    from pgdiag.experiments.notebook import TINY_TRAINING

    run, steps, land = example.main(str(tmp_path), seeds=1, **TINY_TRAINING)
    assert run.manifest["base_config"]["static"]["algorithm"] == "ppo-early-stop"
    assert np.isfinite(run.metrics.mean_kl).all() and not run.metrics.diverged.any()
    # its own metric reaches the metrics table, the manifest's metrics and `pgdiag plot`
    assert run.metrics.applied_fraction.between(0, 1).all() and "applied_fraction" in run.manifest["metrics"]
    from pgdiag.experiments.run_plot import plot
    assert os.path.getsize(plot(run.path, "applied_fraction", out=str(tmp_path / "applied.png"))) > 5_000
    for res in (steps, land):
        assert os.path.getsize(res["figure"]) > 10_000
    from pgdiag.diagnostics import load_landscape_study
    planes = load_landscape_study(run.path, "landscape-surrogate").planes
    assert set(planes.constraint) == {"kl"} and np.allclose(planes.constraint_value, 0.005)
    # run again, it loads its saved run and measurements (a second run of a script or notebook works)
    again, _, _ = example.main(str(tmp_path), seeds=1, **TINY_TRAINING)
    assert again.metrics.equals(run.metrics)
