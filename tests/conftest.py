"""Fixtures shared by several test modules."""

import os
import tempfile

import pytest

from pg_diag import preset, sweep

# physics="auto" reads the physics measurements recorded on this host (pg_diag.envs.crossover); the
# tests (and the processes they start) get an empty store of their own instead of the user's
os.environ["PG_DIAG_CACHE"] = tempfile.mkdtemp(prefix="pg_diag-cache-")

# The modules that take longest (mostly compiling their programs), longest first. `make test` hands whole
# modules to the workers in collection order (--dist loadfile --no-loadscope-reorder), so starting with these
# lets the workers finish together; the others follow in their usual order.
LONGEST_FIRST = ("test_notebooks", "test_distributed", "test_physics", "test_experiments", "test_sweep",
                 "test_diagnostics", "test_resume", "test_lqr", "test_baselines", "test_landscape", "test_devices")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__.rpartition(".")[2], len(rank)))


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
