"""Sweeps and run directories.

* :mod:`.plan` — a base config × a knob grid × seeds -> the validated agents;
* :mod:`.execute` — one compiled program over the agents, run in chunks, resumable;
* :mod:`.programs` — the compiled programs themselves (initialization, a chunk of iterations);
* :mod:`.store` — the run directory: manifest, metrics, checkpoints; loading them back;
* :mod:`.progress` — compile counting, the progress bar, chunking;
* :mod:`.shard` — the agent axis across devices;
* :mod:`.distributed` — several processes or hosts on ``jax.distributed``.
"""

from pg_diag.run.execute import AGENT_BATCHING, Interrupted, rerun, resume, sweep, train
from pg_diag.run.plan import Plan, plan
from pg_diag.run.programs import clear_compiled
from pg_diag.run.progress import CompileCounter
from pg_diag.run.store import RunResult, load_checkpoint, load_policy, load_run

__all__ = ["AGENT_BATCHING", "CompileCounter", "Interrupted", "Plan", "RunResult", "clear_compiled",
           "load_checkpoint", "load_policy", "load_run", "plan", "rerun", "resume", "sweep", "train"]
