"""pgdiag: a JAX experiment engine for studying deep policy-gradient algorithms."""

from pgdiag.run.host_devices import configure as _host_devices

_host_devices()  # first: JAX takes its CPU device count only before it starts (pgdiag.run.host_devices)

from pgdiag.run.compile_cache import configure as _compile_cache  # noqa: E402

_compile_cache()  # compiled programs kept across processes (pgdiag.run.compile_cache; PGDIAG_COMPILATION_CACHE=0)

from pgdiag.run.cpu_random import configure as _cpu_random  # noqa: E402

_cpu_random()  # random bits without loops on the CPU, before anything is traced (pgdiag.run.cpu_random)

import warnings as _warnings  # noqa: E402

from pgdiag.errors import Notice, show_notices as _show_notices  # noqa: E402

if not getattr(_warnings.showwarning, "pgdiag", False):   # pgdiag's notices as one line each
    _warnings.showwarning = _show_notices(_warnings.showwarning)

from pgdiag.algorithms import Algorithm, WorkingSet, register_algorithm
from pgdiag.config import OPTIMIZATIONS, Config, ConfigError, Knobs, Option, Static, preset, preset_names
from pgdiag.envs import ExactAnswers, register_task
from pgdiag.networks import Network, register_network
from pgdiag.policy import FrozenPolicy
from pgdiag.run.callbacks import Callback
from pgdiag.run import (RunResult, import_policy, load_checkpoint, load_policy, load_run, rerun, resume, roster,
                        sweep, train)
from pgdiag.metrics import METRICS
from pgdiag.trainer import make_train, seed_key
from pgdiag.experiments.planner import plan_report, plan_study, plan_sweep
from pgdiag import studies  # noqa: E402,F401  (pgdiag's own measurements: registers their targets)

__version__ = "0.1.0"


def plan(*args, **kwargs):
    """The former name of [`roster`][pgdiag.run.rosters.roster] (a sweep's validated agents), kept for code written
    against it: a *plan* is what a command would compile and cost ([`plan_sweep`][pgdiag.experiments.planner.
    plan_sweep])."""
    _warnings.warn("pgdiag.plan is now pgdiag.roster (a plan is what a command would compile and cost: "
                   "pgdiag.plan_sweep)", DeprecationWarning, stacklevel=2)
    return roster(*args, **kwargs)


__all__ = ["Algorithm", "Callback", "Config", "ConfigError", "ExactAnswers", "FrozenPolicy", "import_policy", "Knobs",
           "load_checkpoint", "load_policy", "load_run", "make_train", "METRICS", "Network", "Notice",
           "OPTIMIZATIONS", "Option", "plan_report", "plan_study", "plan_sweep", "preset", "preset_names",
           "register_algorithm", "register_network", "register_task", "rerun", "resume", "roster",
           "RunResult", "seed_key", "Static", "sweep", "train", "WorkingSet"]
