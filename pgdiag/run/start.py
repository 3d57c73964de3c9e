"""Starting a run: the processes agree on its roster, the run directory is taken under its lock before
anything compiles, then the loop ([`pgdiag.run.loop`][pgdiag.run.loop]) trains into it; Ctrl-C and SIGTERM stop it
cleanly from the first moment."""

from __future__ import annotations

import os
import sys

import jax

from pgdiag.run import distributed, store
from pgdiag.run.claim import claim
from pgdiag.run.interrupts import sigterm_interrupts, writing
from pgdiag.run.loop import run_loop
from pgdiag.run.rosters import Roster


def complete(run_dir: str, manifest: dict) -> store.RunResult:
    """The run in ``run_dir`` is already complete: said on stderr, and loaded as it is."""
    sys.stderr.write(f"{run_dir}: the run is already complete ({manifest['iterations_done']} iterations)\n")
    return store.load_run(run_dir)


def start(p: Roster, manifest, out: str | None, progress: bool | None, resume: bool = False,
          overwrite: bool = False, callbacks: list = ()):
    """Run ``p``: every process agrees on the roster, the run directory ``out`` is taken (created, locked, checked to
    hold no other run) before anything compiles, then the loop trains into it. ``manifest``: the run's, or for a
    resume a function reading it once the lock is held (None there: the run is complete)."""
    lead = jax.process_index() == 0   # on several processes, process 0 writes the files and draws progress
    distributed.agree("sweep", {
        "configuration": p.base.to_dict(), "grid": [dict(x) for x in p.points], "seeds": list(p.seeds),
        "labels": list(p.labels), "--out": out, "resume": resume, "--overwrite": overwrite,
        **({k: manifest.get(k) for k in ("chunk_iterations", "batching", "save_checkpoint")}
           if isinstance(manifest, dict) else {})})
    # Ctrl-C and SIGTERM are handled from before the lock is taken: one landing anywhere after it (even where
    # Python swallows it, in JAX's garbage-collection hook) stops the run rather than being lost
    with sigterm_interrupts():
        lock = None
        try:
            if out is not None:   # taken (created, locked, checked to hold no other run) before anything compiles,
                with writing():   # whole: a signal meanwhile waits until the lock is held and can be released
                    lock = distributed.lead_first("taking the run directory", lambda: claim(
                        out, overwrite=overwrite, resume=resume))
            if lock is not None and lock.taken_over:
                sys.stderr.write(f"{out}: took over the lock left by {lock.taken_over} (that process has ended)\n")
            if callable(manifest):   # a resume reads its manifest under the lock
                manifest = manifest()
                if manifest is None:
                    return complete(out, store.read_manifest(out))
            return run_loop(p, manifest, out, progress, resume, lead, callbacks)
        except KeyboardInterrupt:
            if out is not None and lead and not os.path.exists(os.path.join(out, store.MANIFEST)):
                sys.stderr.write(f"\n{out}: interrupted before training started; nothing was trained (run the "
                                 f"same command again)\n")
            raise
        finally:
            if lock is not None:
                lock.release()
