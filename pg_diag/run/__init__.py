"""Sweeps and run directories.

* :mod:`.plan` — a base config × a knob grid × seeds -> the validated agents;
* :mod:`.execute` — one compiled program over the agents, run in chunks, resumable;
* :mod:`.programs` — the compiled programs themselves (initialization, a chunk of iterations);
* :mod:`.store` — the run directory: manifest, metrics; loading them back;
* :mod:`.provenance` — what a manifest records of where a run ran: versions, revision, device, physics;
* :mod:`.checkpoints` — the agents' saved states: save, list, drop, restore, a frozen policy;
* :mod:`.claim` — taking a run directory for writing: once, by one process, where it can be written;
* :mod:`.timings` — this host's recorded cost per step of training, for plans;
* :mod:`.progress` — compile counting, the progress bar, chunking;
* :mod:`.shard` — the agent axis across devices;
* :mod:`.distributed` — several processes or hosts on ``jax.distributed``.
"""

from pg_diag.run.execute import AGENT_BATCHING, rerun, resume, sweep, train
from pg_diag.run.interrupts import Interrupted
from pg_diag.run.plan import Plan, plan
from pg_diag.run.programs import clear_compiled
from pg_diag.run.progress import CompileCounter
from pg_diag.run.checkpoints import load_checkpoint, load_policy
from pg_diag.run.store import RunResult, load_run

__all__ = ["AGENT_BATCHING", "CompileCounter", "Interrupted", "Plan", "RunResult", "clear_compiled",
           "load_checkpoint", "load_policy", "load_run", "plan", "rerun", "resume", "sweep", "train"]
