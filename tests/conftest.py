"""Fixtures shared by several test modules."""

import pytest

from pg_diag import preset, sweep


@pytest.fixture(scope="session")
def lqr_runs(tmp_path_factory):
    """PPO and TRPO on the LQR task (one agent each), checkpoints after iterations 0 and 5: the subjects of
    the landscape and baseline diagnostics' tests (trained once per session)."""
    root = tmp_path_factory.mktemp("lqr-runs")
    out = {}
    for algo in ("ppo", "trpo"):
        out[algo] = str(root / algo)
        sweep(preset(algo, "lqr").replace(num_iterations=6, checkpoint_at=(0, 5)), seeds=1, out=out[algo],
              chunk_iterations=3)
    return out
