"""The run loop of a sweep: its agents trained chunk by chunk as one compiled program, the run directory
written after every chunk (states, then metrics, then manifest), signals handled so that the directory always
stays consistent (`pgdiag.run.interrupts`).

`run_loop` reads as its steps: `_prepare` (what every chunk shares), `_start` (restore or init, compile,
checkpoint 0), then `_run_chunk` and `_write_chunk` for each chunk, `_drop_last`, `finish` (status,
timings, the last write and the message a stopped run leaves: `pgdiag.run.run_record`) and `_result`. Their shared
state is one `_Loop`."""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any, Callable

import jax
import numpy as np

from pgdiag.config import stack_knobs
from pgdiag.run import checkpoints, programs, split, store, timings
from pgdiag.run.callbacks import Dispatch, Event
from pgdiag.run.distributed import sync
from pgdiag.run.interrupts import sigterm_interrupts, wait, writing
from pgdiag.run.rosters import Roster
from pgdiag.run.run_record import finish, progress_manifest, warn_diverged
from pgdiag.run.progress import CompileCounter, Progress, attached, chunk_lengths, estimate
from pgdiag.run.programs import init_program
from pgdiag.run.shard import gather, pad_and_shard, replicated, unpadded
from pgdiag.metrics import metrics_of
from pgdiag.trainer import seed_key


def run_loop(p: Roster, manifest: dict, out: str | None, progress: bool | None, resume: bool, lead: bool,
             callbacks: list = ()):
    """Train the agents of `p` chunk by chunk.

    From their initial states, or, with `resume`, from the run directory's resume point
    (`pgdiag.run.checkpoints.resume_point`), writing `out` after every chunk; the directory's lock is held by
    the caller.

    Returns:
        The `pgdiag.run.store.RunResult`.
    """
    run = _prepare(p, manifest, out, progress, lead)
    watch = Dispatch(callbacks if lead else [])   # process 0 writes, and tells the watchers
    sync("run start")  # every process has read what process 0 is about to replace
    run.t_start = time.perf_counter()
    run.others = timings.load_meter()   # what other processes take of the host meanwhile
    with CompileCounter() as counter, sigterm_interrupts():
        try:
            lengths = _start(run, resume)
            _tell(watch, run, None)
            for length in lengths:
                before = run.done
                _run_chunk(run, length)
                _write_chunk(run)
                _tell(watch, run, before)
            _drop_last(run)
            run.status = "complete"
        except Exception as err:   # not a signal (KeyboardInterrupt): an error, recorded as one
            run.status = "failed"
            manifest["error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            raise
        finally:   # a signal (status "interrupted") or an error still leaves the directory consistent
            finish(run, counter, resume)
            if watch:
                watch.call("on_end", _event(run, status=run.status))
    warn_diverged(run)
    return _result(run)


def _event(run: "_Loop", **fields) -> Event:
    return Event(run.out, run.manifest["label"], run.manifest, run.done, run.static.num_iterations, **fields)


def _tell(watch: Dispatch, run: "_Loop", before: int | None) -> None:
    """The watchers' hooks after the start (``before`` None) or after the chunk that began at ``before``: its
    metric rows, then the kept checkpoint it wrote."""
    if not watch:
        return
    if before is None:
        watch.call("on_start", _event(run))
    else:
        frame = store.metrics_frame(run.p, run.history)
        watch.call("on_chunk", _event(run, rows=frame[frame.iteration >= before].reset_index(drop=True)))
    if run.out is not None and run.done in run.kept and (before is not None or run.done == 0):
        watch.call("on_checkpoint", _event(run, checkpoint=run.done))


@dataclasses.dataclass
class _Loop:
    """One run of the loop: what its steps share, and what `finish` reads however far the run got."""

    p: Roster
    manifest: dict
    out: str | None
    lead: bool             # process 0: writes the metrics and manifest, draws progress, prints
    progress: bool         # whether the progress bar is drawn
    program: Any           # the static program that every compiled piece is built from
    chunk_program: Callable   # builds the chunk: one program, or split across devices (`pgdiag.run.split`)
    batching: str
    chunk_iterations: int
    kept: set              # the iterations whose checkpoints stay; every other one is dropped once superseded
    keys: Any              # the agents' seed keys and knobs, padded and sharded
    knobs: Any
    n_padded: int
    resume_cmd: str | None
    t_start: float = 0.0
    compile_s: float = 0.0
    done: int = 0          # iterations trained
    history: dict = dataclasses.field(default_factory=dict)   # every metric, agents × iterations
    state: Any = None
    latest: int | None = None   # the newest checkpoint written, to drop when the next one is unless kept
    first: int | None = None    # where this process started; None while the start (a restore) has not ended
    status: str = "interrupted"   # what a signal leaves it as
    bar: Progress | None = None
    # (wall seconds, iterations, the share of the host others took meanwhile or None) of each chunk this process
    # ran: the first carries first-call costs
    chunks: list = dataclasses.field(default_factory=list)
    others: Callable | None = None   # the share of the host other processes have taken since the start

    @property
    def static(self):
        return self.p.base.static

    @property
    def n(self) -> int:
        return self.p.num_agents

    @property
    def longest(self) -> int:
        """The iterations of the one chunk program every chunk runs, sized by the run alone (so a resumed run
        uses the same one)."""
        return min(self.chunk_iterations, self.static.num_iterations)

    def compiled(self, fn: Callable, *args):
        """`fn`'s program for this run, the seconds spent building it counted as compiling, not running."""
        t = time.perf_counter()
        prog = fn(self.program, self.n_padded, *args)
        self.compile_s += time.perf_counter() - t
        return prog


def _prepare(p: Roster, manifest: dict, out: str | None, progress: bool | None, lead: bool) -> _Loop:
    """The loop's fixed parts; records the resume command and the checkpoints kept in `manifest`."""
    static, n = p.base.static, p.num_agents
    program = static.program()
    chunk_program = split.chunk if split.resolve(static)[0] == "split" else programs.chunk_program
    kept = set(static.checkpoint_iterations()) | ({static.num_iterations} if manifest["save_checkpoint"] else set())
    if progress is None:
        progress = attached()
    knobs = stack_knobs([cfg.knobs for cfg in p.configs for _ in p.seeds])
    keys = np.stack([np.asarray(seed_key(s)) for _, _, s in p.agents()])
    (keys, knobs), n_padded = pad_and_shard((keys, knobs), n)
    resume_cmd = f"pgdiag resume {out}" if out else None
    manifest.update(resume_command=resume_cmd,
                    checkpoints={"kept": sorted(kept), "saved": checkpoints.saved_iterations(out) if out else []})
    return _Loop(p=p, manifest=manifest, out=out, lead=lead, progress=progress and lead, program=program,
                 chunk_program=chunk_program, batching=manifest["batching"],
                 chunk_iterations=manifest["chunk_iterations"], kept=kept, keys=keys, knobs=knobs,
                 n_padded=n_padded, resume_cmd=resume_cmd)


def _start(run: _Loop, resume: bool) -> list[int]:
    """Restore the resume point (with `resume`) or initialise the agents, compile the chunk program and write
    checkpoint 0 where it is kept.

    Returns:
        The lengths of the chunks left to run.
    """
    at = None
    if run.out is not None and not resume and run.lead:
        run.manifest["status"] = "running"
        with writing():   # the manifest before anything compiles: a run stopped or killed from here on resumes
            store.write_metrics(run.out, store.metrics_frame(run.p, run.history))
            store.write_manifest(run.out, progress_manifest(run.manifest, 0, run.out, run.history))
    if resume:
        with writing():   # a signal waits for the restore (orbax reports one inside it as damage)
            at, restored, table = checkpoints.resume_point(run.out, run.p.base, run.n)
    if at is not None:
        run.latest = run.done = at
        run.state, _ = pad_and_shard(restored, run.n)
        run.history = (store.history_from_frame(table, run.n, run.done, metrics_of(run.static.algorithm))
                       if run.done else {})
    else:
        run.state = run.compiled(init_program, run.batching)(run.keys, run.knobs)
    run.first = run.done
    lengths = chunk_lengths(run.done, run.static.num_iterations, run.chunk_iterations, run.kept)
    if lengths:
        run.compiled(run.chunk_program, run.longest, run.batching)  # compiled before the clock starts
    run.manifest["status"] = "running"
    run.manifest.pop("error", None)   # a failure a resume got past
    run.bar = Progress(run.static.num_iterations, run.manifest["label"], run.progress)
    if run.out is not None and run.done == 0 and 0 in run.kept:
        with writing():
            checkpoints.save_states(run.out, 0, run.state, run.n)
    return lengths


def _run_chunk(run: _Loop, length: int) -> None:
    """Train `length` iterations as one compiled call and append their metrics to the history.

    The wait polls, so a signal stops the chunk at once (`pgdiag.run.interrupts.wait`)."""
    t_chunk, others = time.perf_counter(), timings.load_meter()
    run.state, metrics = run.compiled(run.chunk_program, run.longest, run.batching)(
        run.state, run.knobs, replicated(np.int32(length)))
    wait((run.state, metrics))
    chunk_metrics = {k: np.asarray(v)[:length].T[:run.n] for k, v in gather(metrics).items()}
    run.history = {k: np.concatenate([run.history[k], v], axis=1) if run.history else v
                   for k, v in chunk_metrics.items()}
    run.done += length
    run.chunks.append((time.perf_counter() - t_chunk, length, others()))
    ret = chunk_metrics["mean_return"][:, -1]
    if len(run.chunks) == 1 and run.lead:  # a long run says how long it will take (compiled before t_chunk)
        line = estimate(run.manifest["label"], length, time.perf_counter() - t_chunk,
                        run.static.num_iterations - run.done)
        if line:
            sys.stderr.write(("\n" if run.progress else "") + line + "\n")
    run.bar.update(run.done, f" return {np.nanmean(ret) if np.isfinite(ret).any() else float('nan'):9.2f}")


def _write_chunk(run: _Loop) -> None:
    """Write the run directory after a chunk: the states, then the metrics, then the manifest.

    In that order, so that the manifest never names what is not yet on disk; the previous checkpoint is
    dropped (unless kept) only once the new one is written. A signal waits for the whole write."""
    if run.out is None:
        return
    with writing():
        checkpoints.save_states(run.out, run.done, run.state, run.n)  # every process takes part (orbax)
        if run.lead:
            store.write_metrics(run.out, store.metrics_frame(run.p, run.history))
            if run.latest is not None and run.latest not in run.kept:
                checkpoints.drop_checkpoint(run.out, run.latest)
            store.write_manifest(run.out, progress_manifest(run.manifest, run.done, run.out, run.history))
        run.latest = run.done


def _drop_last(run: _Loop) -> None:
    """Drop the last checkpoint written unless it is kept (each earlier one went when the next was written)."""
    if run.out is not None and run.lead and run.latest is not None and run.latest not in run.kept:
        with writing():
            checkpoints.drop_checkpoint(run.out, run.latest)


def _result(run: _Loop) -> store.RunResult:
    """The run's result, once every process has its agents' final states and process 0 has written."""
    state, n = run.state, run.n
    if jax.process_count() > 1:  # every agent's final state on every process
        state = gather(state)
    sync("run written")  # the others may now read the run directory
    final = unpadded(state, n) if run.n_padded != n else state
    return store.RunResult(manifest=run.manifest, metrics=store.metrics_frame(run.p, run.history), path=run.out,
                           final_state=final)


__all__ = ["run_loop"]
