"""Running a sweep: every agent of a plan as ONE compiled program, in chunks, resumable.

    from pg_diag import preset, sweep
    run = sweep(preset("ppo", "pendulum"),
                grid={"value_clipping": [False, True], "lr_policy": [1e-4, 3e-4]},
                seeds=5, out="runs/demo")
    run.metrics.groupby(["value_clipping", "lr_policy"]).mean_return.max()

Every agent (one grid point × one seed) is a row of a stacked knob pytree;
the training step is ``vmap``-ed over that leading agent axis and compiled
once, so the number of compiles does not depend on how many knobs or values
are swept. Training runs in chunks of iterations; between chunks the host
draws a progress bar and writes the metrics and every agent's state to the
run directory, so an interrupted run (Ctrl-C, SIGTERM, or a killed process,
which loses at most the chunk in flight) continues with
``sweep(resume=RUN_DIR)`` / ``pg-diag resume RUN_DIR``. On several devices
the agent axis is sharded across them.

An agent's randomness depends only on its seed, so a configuration inside a
sweep gives the same numbers as the same configuration run alone, and agents
with the same seed share initial weights and environment noise across grid
points (common random numbers, which sharpen paired comparisons). (With
``physics="auto"`` a wider sweep may step MuJoCo on the other backend, which
agrees to ~1e-5 a step, not bitwise: name the backend to compare across widths.)
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from typing import Mapping, Sequence

import jax
import numpy as np

from pg_diag.config import Config, ConfigError, stack_knobs
from pg_diag.run import checkpoints, programs, split, store, timings
from pg_diag.run.claim import claim
from pg_diag.run.distributed import sync
from pg_diag.run.interrupts import sigterm_interrupts, wait, writing
from pg_diag.run.plan import Plan, plan
from pg_diag.run.progress import CompileCounter, Progress, attached, chunk_lengths, default_chunk, estimate
from pg_diag.run.programs import init_program
from pg_diag.run.shard import gather, pad_and_shard, replicated
from pg_diag.trainer import METRICS, seed_key

#: How agents share a compiled program. "vmap" batches them (the fast path,
#: and the only sensible one on accelerators); "map" loops over them inside the
#: program, so each agent's arithmetic is exactly that of a run alone.
AGENT_BATCHING = ("vmap", "map")


# --- the public entry points -----------------------------------------------------------------

def sweep(base: Config | None = None, grid: Mapping[str, Sequence] | Sequence[Mapping] | None = None,
          seeds: int | Sequence[int] = 1, out: str | None = None, *, progress: bool | None = None,
          chunk_iterations: int | None = None, save_checkpoint: bool = False, label: str | None = None,
          batching: str = "vmap", labels: Sequence[str] | None = None, resume: str | None = None,
          overwrite: bool = False) -> store.RunResult:
    """Train every (grid point × seed) agent of ``base`` as one compiled program.

    Returns a :class:`~pg_diag.run.store.RunResult`; with ``out`` it also
    writes the run directory (``manifest.json``, ``metrics.parquet`` and
    ``checkpoints/``), refreshed after every chunk. The agents' states after
    the iterations in ``base.checkpoint_at`` / ``checkpoint_every`` are kept,
    and with ``save_checkpoint`` the final one.

    ``resume=RUN_DIR`` continues an interrupted run from its last saved state
    with the configuration recorded in it (``base``, ``grid`` and ``seeds``
    may be omitted; given, they must match).

    A run directory is written once (:mod:`pg_diag.run.claim`): ``out``
    holding a run is refused unless ``overwrite=True``, which removes that
    run's files first; a second process writing the same ``out`` fails at
    once. Both are checked before anything is compiled.

    ``batching="vmap"`` (default) vectorizes the agents; each agent's numbers
    then equal a run alone up to float32 rounding, because XLA may pick
    different kernels for different batch sizes. ``batching="map"`` loops
    over agents inside the same compiled program: every agent is bitwise
    identical to the same configuration and seed run alone (with "map"),
    at some cost in speed.
    """
    if resume is not None:
        return _resume(resume, base, grid, seeds, labels, progress)
    p = plan(base, grid, seeds, labels)
    static = base.static
    if chunk_iterations is None:
        chunk_iterations = default_chunk(static.num_iterations)
    if isinstance(chunk_iterations, bool) or not isinstance(chunk_iterations, int) or chunk_iterations < 1:
        raise ConfigError(f"chunk_iterations must be a positive int, got {chunk_iterations!r}")
    chunk_iterations = min(chunk_iterations, static.num_iterations)
    if out is None and (save_checkpoint or static.checkpoint_iterations()):
        what = "save_checkpoint=True" if save_checkpoint else f"checkpoints at {list(static.checkpoint_iterations())}"
        raise ConfigError(f"{what} needs an output directory (out=...)")
    split.check(static)
    if batching not in AGENT_BATCHING:
        raise ConfigError(f"unknown batching {batching!r}; choose one of: {', '.join(AGENT_BATCHING)}")
    # physics="auto" takes the backend measured faster for the batch each device steps; the run is
    # pinned to it (the manifest's base configuration names it, so resume and rerun keep it)
    per_device = static.num_envs * (-(-p.num_agents // jax.device_count()) if batching == "vmap" else 1)
    physics = store.physics_info(static, per_device)
    if physics["backend"] != "jax" and physics["backend"] != static.physics:
        p = pin_physics(p, physics["backend"])
    manifest = {
        "format": store.FORMAT,
        "label": label or base.name,
        "status": "compiling",
        "base_config": p.base.to_dict(),
        "grid_axes": list(p.grid_axes),
        "grid_points": list(p.points),
        "labels": list(p.labels),
        "seeds": list(p.seeds),
        "agents": [{"agent": a, "point": pi, "seed": s, "knobs": p.points[pi],
                    **({"label": p.labels[pi]} if p.labels else {})} for a, pi, s in p.agents()],
        "num_agents": p.num_agents,
        "metrics": METRICS,
        "versions": store.versions(),
        "git_revision": store.git_revision(),
        "device": store.device_info(),
        "command": " ".join(sys.argv),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "chunk_iterations": chunk_iterations,
        "batching": batching,
        "save_checkpoint": bool(save_checkpoint),
        "physics": physics,
        "placement": dict(zip(("mode", "why"), split.resolve(p.base.static))),
        "iterations_done": 0,
    }
    return _execute(p, manifest, out, progress, overwrite=overwrite)


def pin_physics(p: Plan, backend: str) -> Plan:
    """``p`` with every configuration's physics backend set to ``backend``."""
    return dataclasses.replace(p, base=p.base.replace(physics=backend),
                               configs=tuple(c.replace(physics=backend) for c in p.configs))


def train(config: Config, seed: int = 0, out: str | None = None, **kwargs) -> store.RunResult:
    """Train one agent: a sweep of one configuration and one seed."""
    return sweep(config, None, seeds=[seed], out=out, **kwargs)


def resume(run_dir: str, progress: bool | None = None) -> store.RunResult:
    """Continue the interrupted run in ``run_dir`` from its last saved state."""
    return sweep(resume=run_dir, progress=progress)


def rerun(run_dir: str, out: str | None = None, progress: bool | None = None) -> store.RunResult:
    """The run recorded in ``run_dir`` again from scratch: its configuration, grid, seeds, labels,
    chunking, batching and checkpoints (the same seeds give the same numbers). ``out``: a new directory."""
    manifest = _training_manifest(run_dir, "rerun")
    if out is not None and os.path.abspath(out) == os.path.abspath(run_dir):
        raise ConfigError(f"rerun writes a new run directory: --out must differ from {run_dir!r}")
    p = store.plan_from_manifest(manifest)
    return sweep(p.base, manifest["grid_points"] or None, manifest["seeds"], out, progress=progress,
                 chunk_iterations=manifest["chunk_iterations"], save_checkpoint=manifest["save_checkpoint"],
                 label=manifest["label"], batching=manifest["batching"], labels=manifest.get("labels") or None)


def _training_manifest(run_dir: str, what: str) -> dict:
    try:
        manifest = store.read_manifest(run_dir)
    except FileNotFoundError:
        raise ConfigError(f"cannot {what} {run_dir!r}: it is not a pg_diag run directory (no "
                          f"{store.MANIFEST}); give the directory a sweep or train wrote with out=...") from None
    if "base_config" not in manifest or "grid_points" not in manifest:
        raise ConfigError(f"cannot {what} {run_dir!r}: its {store.MANIFEST} is not a training run's "
                          f"(format {manifest.get('format')!r})")
    return manifest


def _resume(run_dir, base, grid, seeds, labels, progress) -> store.RunResult:
    manifest = _training_manifest(run_dir, "resume")
    p = store.plan_from_manifest(manifest)
    if base is not None:
        given = plan(base, grid, seeds, labels)
        for what, mine, theirs in (("base configuration", base.to_dict(), store.requested_config(manifest)),
                                   ("grid", list(given.points), manifest["grid_points"]),
                                   ("seeds", list(given.seeds), manifest["seeds"])):
            if json.loads(json.dumps(mine, default=list)) != theirs:
                raise ConfigError(f"cannot resume {run_dir!r} with another {what}: the run has {theirs!r}, "
                                  f"got {mine!r}; omit it to use the run's own")
    if manifest["status"] == "complete":
        sys.stderr.write(f"{run_dir}: the run is already complete ({manifest['iterations_done']} iterations)\n")
        return store.load_run(run_dir)
    # where and how each continuation ran (the "device" entry stays the first run's)
    manifest.setdefault("resumed", []).append({
        "after_iteration": manifest["iterations_done"], "device": store.device_info(), "command": " ".join(sys.argv),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "versions": store.versions()})
    return _execute(p, manifest, run_dir, progress, resume=True)


# --- the run loop ---------------------------------------------------------------------

def _execute(p: Plan, manifest: dict, out: str | None, progress: bool | None, resume: bool = False,
             overwrite: bool = False):
    lead = jax.process_index() == 0   # on several processes, process 0 writes the files and draws progress
    # the directory is taken (created, locked, checked to hold no other run) before anything compiles
    lock = claim(out, overwrite=overwrite, resume=resume) if out is not None and lead else None
    try:
        if lock is not None and lock.taken_over:
            sys.stderr.write(f"{out}: took over the lock left by {lock.taken_over} (that process has ended)\n")
        return _run(p, manifest, out, progress, resume, lead)
    finally:
        if lock is not None:
            lock.release()


def _run(p: Plan, manifest: dict, out: str | None, progress: bool | None, resume: bool, lead: bool):
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
        finally:
            if bar is not None:
                bar.close()
            t_end = time.perf_counter()
            manifest.update(_progress_manifest(manifest, done, out, history))
            manifest.update(status=status, timings={
                "compile_s": compile_s, "run_s": t_end - t_start - compile_s, "total_s": t_end - t_start,
                "compiles": counter.count, "compile_backend_s": counter.seconds,
                "env_steps": done * static.batch_size * n,
                "env_steps_per_s": done * static.batch_size * n / max(t_end - t_start - compile_s, 1e-9)})
            # a resume that failed before it started (a damaged file, a signal while restoring) leaves the
            # directory as it found it
            if out is not None and lead and (first is not None or not resume):
                with writing(raise_pending=False):
                    store.write_metrics(out, store.metrics_frame(p, history))
                    store.write_manifest(out, manifest)
            ran = done - first if first is not None else 0
            if lead and ran > 0 and manifest["timings"]["run_s"] > 0:  # this host's cost, for later plans
                timings.record(static, n * static.num_envs,
                               manifest["timings"]["run_s"] * 1e3 / (ran * static.steps_per_env))
            if status != "complete" and lead:
                where = f"; resume with: {resume_cmd}" if resume_cmd else ""
                sys.stderr.write(f"\n{manifest['label']}: interrupted after iteration {done} of "
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
