"""pg_diag: a JAX experiment engine for studying deep policy-gradient algorithms."""

from pg_diag.config import (OPTIMIZATIONS, Config, ConfigError, Knobs, Static, preset,
                            preset_names)
from pg_diag.sweep import RunResult, load_checkpoint, load_run, plan, sweep, train
from pg_diag.train import METRICS, make_train, seed_key

__version__ = "0.1.0"

__all__ = ["Config", "ConfigError", "Knobs", "METRICS", "OPTIMIZATIONS", "RunResult", "Static",
           "load_checkpoint", "load_run", "make_train", "plan", "preset", "preset_names", "seed_key",
           "sweep", "train"]
