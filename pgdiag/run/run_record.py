"""What the run loop ([`pgdiag.run.loop`][pgdiag.run.loop]) records of a run: the manifest's progress after each
write and, however the loop ended, its status and timings, the last write, this host's cost per step for later
plans, and what a user reads (a stopped run's resume command, diverged agents, agents that finished no episode)."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

import numpy as np

from pgdiag.run import checkpoints, store, timings
from pgdiag.run.interrupts import writing
from pgdiag.run.progress import CompileCounter

if TYPE_CHECKING:
    from pgdiag.run.loop import _Loop


def finish(run: "_Loop", counter: CompileCounter, resume: bool) -> None:
    """However the loop ended: close the bar, record the status and timings in the manifest, write the metrics
    and manifest, record this host's cost per step, and say how a run that stopped resumes."""
    if run.bar is not None:
        run.bar.close()
    t_end = time.perf_counter()
    static, n, done = run.static, run.n, run.done
    run.manifest.update(progress_manifest(run.manifest, done, run.out, run.history))
    run.manifest.update(status=run.status, timings={
        "compile_s": run.compile_s, "run_s": t_end - run.t_start - run.compile_s, "total_s": t_end - run.t_start,
        "chunk_s": [c[0] for c in run.chunks], "chunk_iterations": [c[1] for c in run.chunks],
        "chunk_others_load": [c[2] for c in run.chunks],
        "from_iteration": run.first,
        "compiles": counter.count, "compile_backend_s": counter.seconds,
        "env_steps": done * static.batch_size * n,
        "env_steps_per_s": done * static.batch_size * n / max(t_end - run.t_start - run.compile_s, 1e-9),
        "others_load": None if run.others is None else run.others()})
    # a resume that failed before it started (a damaged file, a signal while restoring) leaves the
    # directory as it found it
    if run.out is not None and run.lead and (run.first is not None or not resume):
        with writing(raise_pending=False):
            try:
                store.write_metrics(run.out, store.metrics_frame(run.p, run.history))
                store.write_manifest(run.out, run.manifest)
            except (OSError, store.RunDirError):
                if run.status == "complete":
                    raise
                # a run that already failed (a full disk) keeps the record its last chunk wrote; its own
                # error, not this one, is what the command reports
                done = run.manifest["iterations_done"] = _last_written(run)
    if run.lead and run.chunks:
        _record_cost(run)
    if run.status != "complete" and run.lead:
        what = "failed" if run.status == "failed" else "interrupted"
        where = (f"; {'once its cause is fixed, ' if run.status == 'failed' else ''}resume with: {run.resume_cmd}"
                 if run.resume_cmd else "")
        sys.stderr.write(f"\n{run.manifest['label']}: {what} after iteration {done} of "
                         f"{static.num_iterations}{where}\n")


def _last_written(run: "_Loop") -> int:
    """The iteration the run directory's manifest, as last written, records."""
    try:
        return int(store.read_manifest(run.out).get("iterations_done", 0))
    except (OSError, store.RunDirError, ValueError, TypeError):
        return 0


def _record_cost(run: "_Loop") -> None:
    """This host's cost per step, for later plans: the chunks after the first where there are several (what
    every later iteration costs), each only if other processes left the host alone while it ran
    ([`timings.loaded`][pgdiag.run.timings.loaded]), so a long run records what its quiet hours cost; one chunk
    only where nothing better is kept."""
    static = run.static
    later = [c for c in run.chunks[1:] or run.chunks if not timings.loaded(c[2])]
    seconds, its = sum(c[0] for c in later), sum(c[1] for c in later)
    if seconds > 0:
        timings.record(static, run.n * static.num_envs, seconds * 1e3 / (its * static.steps_per_env),
                       replace=len(run.chunks) > 1)


def warn_diverged(run: "_Loop") -> None:
    diverged = run.manifest["diverged_agents"]
    if diverged and run.lead:
        sys.stderr.write(f"warning: {len(diverged)} of {run.n} agents diverged (non-finite parameters, "
                         f"losses, policy σ or KL): agents {diverged[:20]}{' ...' if len(diverged) > 20 else ''}\n")
    if run.lead:
        _say_no_episodes(run)


def _say_no_episodes(run: "_Loop") -> None:
    """Agents that finished no episode have NaN returns throughout: said once, with the steps they ran and the
    task's episode length (a batch shorter than one episode, as a Playground task's 1,000 steps can be)."""
    from pgdiag.envs.registry import episode_limit

    episodes = run.history.get("episodes")
    if episodes is None or run.done == 0:
        return
    none = [int(a) for a in np.nonzero(np.asarray(episodes)[:run.n].sum(axis=1) == 0)[0]]
    if none:
        steps = run.done * run.static.steps_per_env
        sys.stderr.write(f"warning: {len(none)} of {run.n} agents finished no episode in their {steps:,} steps per "
                         f"environment (episodes of {run.static.task} last up to {episode_limit(run.static.task):,}): "
                         f"their mean_return is NaN; train more iterations or steps_per_env\n")


def progress_manifest(manifest: dict, done: int, out, history: dict) -> dict:
    """``manifest`` with the progress after ``done`` iterations: the diverged agents and the checkpoints saved."""
    flag = history.get("diverged")
    diverged = [int(a) for a in np.nonzero(flag.any(axis=1))[0]] if flag is not None else []
    return {**manifest, "iterations_done": done, "diverged_agents": diverged,
            "checkpoints": {**manifest["checkpoints"], "saved": checkpoints.saved_iterations(out) if out else []}}


__all__ = ["finish", "progress_manifest", "warn_diverged"]
