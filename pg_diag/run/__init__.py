"""Sweeps and run directories.

* [`planning`][pg_diag.run.planning] — `plan`: a base config × a knob grid × seeds -> the validated agents;
* [`execute`][pg_diag.run.execute] — one compiled program over the agents, run in chunks, resumable;
* [`programs`][pg_diag.run.programs] — the compiled programs themselves (initialization, a chunk of iterations);
* [`store`][pg_diag.run.store] — the run directory: manifest, metrics; loading them back;
* [`provenance`][pg_diag.run.provenance] — what a manifest records of where a run ran: versions, revision, device,
  physics;
* [`checkpoints`][pg_diag.run.checkpoints] — the agents' saved states: save, list, drop, restore, a frozen policy;
* [`claim`][pg_diag.run.claim] — taking a run directory for writing: once, by one process, where it can be written;
* [`timings`][pg_diag.run.timings] — this host's recorded cost per step of training, for plans;
* [`progress`][pg_diag.run.progress] — compile counting, the progress bar, chunking;
* [`shard`][pg_diag.run.shard] — the agent axis across devices;
* [`distributed`][pg_diag.run.distributed] — several processes or hosts on ``jax.distributed``.
"""

from pg_diag.run.execute import AGENT_BATCHING, rerun, resume, sweep, train
from pg_diag.run.interrupts import Interrupted
from pg_diag.run.planning import Plan, plan
from pg_diag.run.programs import clear_compiled
from pg_diag.run.progress import CompileCounter
from pg_diag.run.checkpoints import load_checkpoint, load_policy
from pg_diag.run.imported import import_policy
from pg_diag.run.store import RunResult, load_run

__all__ = ["AGENT_BATCHING", "CompileCounter", "Interrupted", "Plan", "RunResult", "clear_compiled",
           "import_policy", "load_checkpoint", "load_policy", "load_run", "plan", "rerun", "resume", "sweep", "train"]
