"""Sweeps and run directories.

* [`rosters`][pgdiag.run.rosters] — `roster`: a base config × a knob grid × seeds -> the validated agents;
* [`execute`][pgdiag.run.execute] — one compiled program over the agents, run in chunks, resumable;
* [`programs`][pgdiag.run.programs] — the compiled programs themselves (initialization, a chunk of iterations);
* [`store`][pgdiag.run.store] — the run directory: manifest, metrics; loading them back;
* [`provenance`][pgdiag.run.provenance] — what a manifest records of where a run ran: versions, revision, device,
  physics;
* [`checkpoints`][pgdiag.run.checkpoints] — the agents' saved states: save, list, drop, restore, a frozen policy;
* [`claim`][pgdiag.run.claim] — taking a run directory for writing: once, by one process, where it can be written;
* [`timings`][pgdiag.run.timings] — this host's recorded cost per step of training, for plans;
* [`progress`][pgdiag.run.progress] — compile counting, the progress bar, chunking;
* [`shard`][pgdiag.run.shard] — the agent axis across devices;
* [`distributed`][pgdiag.run.distributed] — several processes or hosts on ``jax.distributed``.
"""

from pgdiag.run.execute import AGENT_BATCHING, rerun, resume, sweep, train
from pgdiag.run.interrupts import Interrupted
from pgdiag.run.rosters import Roster, roster
from pgdiag.run.programs import clear_compiled
from pgdiag.run.progress import CompileCounter
from pgdiag.run.checkpoints import load_checkpoint, load_policy
from pgdiag.run.imported import import_policy
from pgdiag.run.store import RunResult, load_run

__all__ = ["AGENT_BATCHING", "CompileCounter", "Interrupted", "Roster", "RunResult", "clear_compiled",
           "import_policy", "load_checkpoint", "load_policy", "load_run", "rerun", "resume", "roster", "sweep", "train"]
