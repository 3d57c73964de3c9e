"""The self-contained measurement example (examples/policy_entropy.py), run by the engine on a small trained run
and checked against the closed form worked out here from each checkpoint's own σ."""

import importlib.util
import math
import pathlib

import numpy as np
import pytest

from pgdiag import load_checkpoint, preset, sweep
from pgdiag.diagnostics import DiagnosticError, run

PATH = pathlib.Path(__file__).parent.parent / "examples" / "policy_entropy.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("policy_entropy", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("entropy") / "lqr")
    cfg = preset("ppo", "lqr", num_envs=4, steps_per_env=32, num_iterations=2, checkpoint_at=(0, 2))
    return sweep(cfg, None, seeds=2, out=out)


def test_the_estimate_meets_the_closed_form(example, trained):
    """H = Σ_i log σ_i + (d/2)·log(2πe) from each saved agent's own log σ (unchanged at iteration 0: σ = 1). The
    estimate averages n = draws × environments independent −log π(a|s), whose SD is √(d/2) exactly, so it lies
    within 5 standard errors of H but with probability 6e-7 per subject (a fixed seed: the same draws every run)."""
    study = run(example.ENTROPY, [trained.path], draws=256, save=False)
    rows = study.entropy.sort_values(["agent", "iteration"])
    assert len(rows) == 4 and study.manifest["kind"] == "policy-entropy"
    for r in rows.itertuples():
        log_std = np.asarray(load_checkpoint(trained, int(r.iteration)).policy["log_std"], np.float64)[int(r.agent)]
        d = log_std.size
        exact = log_std.sum() + d / 2 * math.log(2 * math.pi * math.e)
        assert r.exact == pytest.approx(exact, rel=1e-5, abs=1e-5)
        assert r.n == 256 * 4 and abs(r.estimate - exact) <= 5 * math.sqrt(d / 2 / r.n)
    assert study.manifest["resolved"]["draws"] == 256


def test_a_bad_setting_is_named_before_anything_is_loaded(example):
    with pytest.raises(DiagnosticError, match="draws must be at least 2"):
        run(example.ENTROPY, ["no-such-run"], draws=1)
