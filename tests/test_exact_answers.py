"""Exact answers as a task's capability (pgdiag.envs.ExactAnswers): a task registered with closed-form J, ∇J and
V^π is measured against them by training and by every diagnostic, whatever its name. A user's task declaring
the linear-quadratic task's answers gets, from the same compiled arithmetic, the built-in task's numbers bit for
bit; the same task without them gets none (NaN; training otherwise the same, to float32 rounding: another
compiled program, tests/compare.py), and the diagnostics that need them refuse it before compiling."""

import numpy as np
import pytest
from compare import RTOL

from pgdiag import envs, preset, sweep
from pgdiag.diagnostics import DiagnosticError
from pgdiag.studies.baselines import measure as baselines
from pgdiag.studies.gradients import measure as gradients
from pgdiag.envs import lqr


@pytest.fixture(scope="module")
def twins():
    maker = lambda physics, threads, solver: lqr.make_lqr()  # noqa: E731
    envs.register_task("lqr_twin", maker, obs_size=2, action_size=1, episode_limit=10_000, exact=lqr.exact_answers())
    envs.register_task("lqr_blind", maker, obs_size=2, action_size=1, episode_limit=10_000)
    yield
    envs.unregister_task("lqr_twin")
    envs.unregister_task("lqr_blind")


def _run(task):
    cfg = preset("ppo", "lqr", num_envs=2, steps_per_env=64, num_iterations=2, num_minibatches=4, ppo_epochs=2,
                 value_epochs=2, heldout_every=1).replace(task=task)
    return sweep(cfg, seeds=[0, 1], progress=False).metrics


def test_a_users_task_with_exact_answers_is_measured_against_them(twins):
    builtin, twin, blind = _run("lqr"), _run("lqr_twin"), _run("lqr_blind")
    exact = ["value_mre_exact", "heldout_value_mre_exact", "heldout_value_mse_exact", "heldout_value_mse_floor"]
    assert np.isfinite(builtin[exact].to_numpy()).all()
    np.testing.assert_array_equal(twin[exact].to_numpy(), builtin[exact].to_numpy())
    np.testing.assert_array_equal(twin["mean_return"].to_numpy(), builtin["mean_return"].to_numpy())
    assert np.isnan(blind[exact].to_numpy()).all()
    # without the exact values the program differs (no raw observations kept): equal to float32 rounding
    np.testing.assert_allclose(blind["value_loss"].to_numpy(), builtin["value_loss"].to_numpy(), rtol=RTOL)


def test_the_diagnostics_read_the_capability_not_the_name(twins):
    static = lambda task, hidden=(): preset("ppo", "lqr", policy_hidden=hidden).replace(task=task).static  # noqa
    exact_settings = gradients.GradientSettings(sizes=(64,), estimates=2, advantages="exact")
    assert gradients.resolve(exact_settings, [static("lqr_twin")]).exact
    for refused in (static("lqr_blind"), static("lqr_twin", (8,)), static("lqr", (8,))):
        with pytest.raises(DiagnosticError, match="needs the task's exact answers"):
            gradients.resolve(exact_settings, [refused])
        with pytest.raises(DiagnosticError, match="the 'exact' baseline needs the task's exact answers"):
            baselines.resolve(baselines.BaselineSettings(sizes=(64,), estimates=2, baselines=("exact",)), [refused])
    assert envs.exact_answers("lqr_twin") is envs.EXACT["lqr_twin"] and envs.exact_answers("lqr_blind") is None
    with pytest.raises(ValueError, match="exact must be a pgdiag.envs.ExactAnswers, got dict"):
        envs.register_task("lqr_bad", lambda *a: lqr.make_lqr(), obs_size=2, action_size=1, episode_limit=10,
                           exact={"value": None})
