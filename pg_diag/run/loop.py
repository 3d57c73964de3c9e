"""The run loop of a sweep: its agents trained chunk by chunk as one compiled program, the run directory
written after every chunk (states, then metrics, then manifest), signals handled so that the directory always
stays consistent ([`pg_diag.run.interrupts`][pg_diag.run.interrupts])."""

from __future__ import annotations

import sys
import time

import jax
import numpy as np

from pg_diag.config import stack_knobs
from pg_diag.run import checkpoints, programs, split, store, timings
from pg_diag.run.distributed import sync
from pg_diag.run.interrupts import sigterm_interrupts, wait, writing
from pg_diag.run.plan import Plan
from pg_diag.run.progress import CompileCounter, Progress, attached, chunk_lengths, estimate
from pg_diag.run.programs import init_program
from pg_diag.run.shard import gather, pad_and_shard, replicated
from pg_diag.trainer import seed_key


def run_loop(p: Plan, manifest: dict, out: str | None, progress: bool | None, resume: bool, lead: bool):
    """Train the agents of ``p`` chunk by chunk from their initial states, or, with ``resume``, from the run
    directory's resume point ([`resume_point`][pg_diag.run.checkpoints.resume_point]), writing ``out`` after every chunk;
    the directory's lock is held by the caller. Returns the [`RunResult`][pg_diag.run.store.RunResult]."""
    static, n = p.base.static, p.num_agents
    program, batching, chunk = static.program(), manifest["batching"], manifest["chunk_iterations"]
    chunk_program = split.chunk if split.resolve(static)[0] == "split" else programs.chunk_program
    kept = set(static.checkpoint_iterations()) | ({static.num_iterations} if manifest["save_checkpoint"] else set())
    if progress is None:
        progress = attached()
    progress = progress and lead
    knobs = stack_knobs([cfg.knobs for cfg in p.configs for _ in p.seeds])
    keys = np.stack([np.asarray(seed_key(s)) for _, _, s in p.agents()])
    (keys, knobs), n_padded = pad_and_shard((keys, knobs), n)
    resume_cmd = f"pg-diag resume {out}" if out else None
    manifest.update(resume_command=resume_cmd,
                    checkpoints={"kept": sorted(kept), "saved": checkpoints.saved_iterations(out) if out else []})

    sync("run start")  # every process has read what process 0 is about to replace
    t_start = time.perf_counter()
    compile_s = 0.0

    def get(fn, *args):
        nonlocal compile_s
        t = time.perf_counter()
        prog = fn(program, n_padded, *args)
        compile_s += time.perf_counter() - t
        return prog

    done, history, state, latest, first = 0, {}, None, None, None
    chunks = []  # (wall seconds, iterations) of each chunk this process ran: the first carries first-call costs
    status, bar = "interrupted", None
    with CompileCounter() as counter, sigterm_interrupts():
        try:
            if resume:
                with writing():   # a signal waits for the restore (orbax reports one inside it as damage)
                    at, restored, table = checkpoints.resume_point(out, p.base, n)
            if resume and at is not None:
                latest = done = at
                state, _ = pad_and_shard(restored, n)
                history = store.history_from_frame(table, n, done) if done else {}
            else:
                state = get(init_program, batching)(keys, knobs)
            first = done
            lengths = chunk_lengths(done, static.num_iterations, chunk, kept)
            # one program for every chunk, sized by the run alone (a resumed run uses the same one)
            longest = min(chunk, static.num_iterations)
            if lengths:
                get(chunk_program, longest, batching)  # compiled before the clock starts
            manifest["status"] = "running"
            manifest.pop("error", None)   # a failure a resume got past
            bar = Progress(static.num_iterations, manifest["label"], progress)
            if out is not None and done == 0 and 0 in kept:
                with writing():
                    checkpoints.save_states(out, 0, state, n)
            first_chunk = True
            for length in lengths:
                t_chunk = time.perf_counter()
                state, metrics = get(chunk_program, longest, batching)(state, knobs, replicated(np.int32(length)))
                wait((state, metrics))
                chunk_metrics = {k: np.asarray(v)[:length].T[:n] for k, v in gather(metrics).items()}
                history = {k: np.concatenate([history[k], v], axis=1) if history else v
                           for k, v in chunk_metrics.items()}
                done += length
                chunks.append((time.perf_counter() - t_chunk, length))
                ret = chunk_metrics["mean_return"][:, -1]
                if first_chunk and lead:  # a long run says how long it will take (compiled before t_chunk)
                    line = estimate(manifest["label"], length, time.perf_counter() - t_chunk,
                                    static.num_iterations - done)
                    if line:
                        sys.stderr.write(("\n" if progress else "") + line + "\n")
                first_chunk = False
                bar.update(done, f" return {np.nanmean(ret) if np.isfinite(ret).any() else float('nan'):9.2f}")
                if out is not None:
                    with writing():
                        checkpoints.save_states(out, done, state, n)  # every process takes part (orbax)
                        if lead:
                            store.write_metrics(out, store.metrics_frame(p, history))
                            if latest is not None and latest not in kept:
                                checkpoints.drop_checkpoint(out, latest)
                            store.write_manifest(out, _progress_manifest(manifest, done, out, history))
                        latest = done
            if out is not None and lead and latest is not None and latest not in kept:
                with writing():
                    checkpoints.drop_checkpoint(out, latest)
            status = "complete"
        except Exception as err:   # not a signal (KeyboardInterrupt): an error, recorded as one
            status = "failed"
            manifest["error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            raise
        finally:
            if bar is not None:
                bar.close()
            t_end = time.perf_counter()
            manifest.update(_progress_manifest(manifest, done, out, history))
            manifest.update(status=status, timings={
                "compile_s": compile_s, "run_s": t_end - t_start - compile_s, "total_s": t_end - t_start,
                "chunk_s": [s for s, _ in chunks], "chunk_iterations": [i for _, i in chunks],
                "from_iteration": first,
                "compiles": counter.count, "compile_backend_s": counter.seconds,
                "env_steps": done * static.batch_size * n,
                "env_steps_per_s": done * static.batch_size * n / max(t_end - t_start - compile_s, 1e-9)})
            # a resume that failed before it started (a damaged file, a signal while restoring) leaves the
            # directory as it found it
            if out is not None and lead and (first is not None or not resume):
                with writing(raise_pending=False):
                    store.write_metrics(out, store.metrics_frame(p, history))
                    store.write_manifest(out, manifest)
            if lead and chunks:  # this host's cost, for later plans: the chunks after the first where there
                # are several (what every later iteration costs); one chunk only where nothing better is kept
                later = chunks[1:] or chunks
                seconds, its = sum(s for s, _ in later), sum(i for _, i in later)
                if seconds > 0:
                    timings.record(static, n * static.num_envs, seconds * 1e3 / (its * static.steps_per_env),
                                   replace=len(chunks) > 1)
            if status != "complete" and lead:
                what = "failed" if status == "failed" else "interrupted"
                where = (f"; {'once its cause is fixed, ' if status == 'failed' else ''}resume with: {resume_cmd}"
                         if resume_cmd else "")
                sys.stderr.write(f"\n{manifest['label']}: {what} after iteration {done} of "
                                 f"{static.num_iterations}{where}\n")
    diverged = manifest["diverged_agents"]
    if diverged and lead:
        sys.stderr.write(f"warning: {len(diverged)} of {n} agents diverged (non-finite parameters, "
                         f"losses, policy σ or KL): agents {diverged[:20]}{' ...' if len(diverged) > 20 else ''}\n")
    if jax.process_count() > 1:  # every agent's final state on every process
        state = gather(state)
    sync("run written")  # the others may now read the run directory
    final = jax.tree.map(lambda x: x[:n], state) if n_padded != n else state
    return store.RunResult(manifest=manifest, metrics=store.metrics_frame(p, history), path=out, final_state=final)


def _progress_manifest(manifest: dict, done: int, out, history: dict) -> dict:
    flag = history.get("diverged")
    diverged = [int(a) for a in np.nonzero(flag.any(axis=1))[0]] if flag is not None else []
    return {**manifest, "iterations_done": done, "diverged_agents": diverged,
            "checkpoints": {**manifest["checkpoints"], "saved": checkpoints.saved_iterations(out) if out else []}}


__all__ = ["run_loop"]
