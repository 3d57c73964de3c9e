"""Fixtures shared by several test modules."""

import atexit
import os
import shutil
import tempfile

# physics="auto" reads the physics measurements recorded on this host (pgdiag.envs.crossover); the
# tests (and the processes they start) get an empty store of their own instead of the user's, removed when
# the test process ends
os.environ["PGDIAG_CACHE"] = tempfile.mkdtemp(prefix="pgdiag-cache-")
atexit.register(shutil.rmtree, os.environ["PGDIAG_CACHE"], ignore_errors=True)

# The suite is the CPU's: on a host with an accelerator it runs on the host's CPU too (and so do the processes
# it starts), so that what it asserts of a CPU host holds there; JAX_PLATFORMS set beforehand overrides
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# ... on one CPU device (a CPU-only host's default is two: pgdiag.run.host_devices), its small programs compiled
# once rather than partitioned over two; the tests of two or more devices ask for them (tests/test_devices.py)
os.environ.setdefault("PGDIAG_HOST_DEVICES", "1")

# JAX's persistent compilation cache stays off unless JAX_COMPILATION_CACHE_DIR is set: writing a cache entry
# serializes the compiled CPU executable, and that serialization (jax 0.10, XLA:CPU) crashed a worker with a
# segmentation fault in about one suite run of four here (compilation_cache.put_executable_and_time), taking
# a passing test down with it.

import pytest  # noqa: E402

from pgdiag import preset, sweep  # noqa: E402
from scheduling import make_scheduler  # noqa: E402

# The modules that take longest (mostly compiling their programs), longest first. `make test` hands whole
# modules to the workers in collection order (--dist loadfile --no-loadscope-reorder), so starting with these
# lets the workers finish together; the others follow in their usual order.
LONGEST_FIRST = ("test_notebooks", "test_distributed", "test_physics", "test_algorithms", "test_experiments",
                 "test_sweep", "test_diagnostics", "test_resume", "test_lqr", "test_baselines", "test_landscape",
                 "test_devices", "test_examples")


def pytest_xdist_make_scheduler(config, log):
    return make_scheduler(config, log)


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
