"""Running a sweep: every agent of its roster as ONE compiled program, in chunks, resumable.

    from pgdiag import preset, sweep
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
``sweep(resume=RUN_DIR)`` / ``pgdiag resume RUN_DIR``. On several devices
the agent axis is sharded across them.

An agent's randomness depends only on its seed, so a configuration inside a
sweep gives the same numbers as the same configuration run alone (to float32
rounding, as XLA may choose other kernels for another batch; bitwise with
``batching="map"``), and agents
with the same seed share initial weights and environment noise across grid
points (common random numbers, which sharpen paired comparisons). (With
``physics="auto"`` a wider sweep may step MuJoCo on the other backend, which
agrees to ~1e-5 a step, not bitwise: name the backend to compare across widths.)
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Mapping, Sequence

import jax

from pgdiag.config import Choices, Config, ConfigError, Setting
from pgdiag.run import provenance, split, store
from pgdiag.run.trackers import as_callbacks
from pgdiag.run.continuation import check_unchanged, continue_run, training_manifest
from pgdiag.run.rosters import Roster, roster
from pgdiag.run.progress import default_chunk
from pgdiag.run.start import start
from pgdiag.metrics import metrics_of

#: How agents share a compiled program. "vmap" batches them (the fast path,
#: and the only sensible one on accelerators); "map" loops over them inside the
#: program, so each agent's arithmetic is exactly that of a run alone.
AGENT_BATCHING = ("vmap", "map")
#: ``sweep``'s ``batching``, declared once: its default and choices serve the signature, the check and ``--batching``
BATCHING = Setting("vmap", "vmap: vectorize agents (fast); map: loop over them, each bitwise equal to a run alone.",
                   Choices(AGENT_BATCHING, noun="batching"))
#: ``train``'s agent seed (``--seed``)
SEED = Setting(0, "The agent's seed.")


# --- the public entry points -----------------------------------------------------------------

def sweep(base: Config | None = None, grid: Mapping[str, Sequence] | Sequence[Mapping] | None = None,
          seeds: int | Sequence[int] | None = None, out: str | None = None, *, progress: bool | None = None,
          chunk_iterations: int | None = None, save_checkpoint: bool = False, label: str | None = None,
          batching: str = BATCHING.default, labels: Sequence[str] | None = None, resume: str | None = None,
          overwrite: bool = False, loggers=None, callbacks=None) -> store.RunResult:
    """Train every (grid point × seed) agent of ``base`` as one compiled program.

    With ``out`` it also writes the run directory (``manifest.json``, ``metrics.parquet`` and ``checkpoints/``),
    refreshed after every chunk; the agents' states after the iterations in ``base.checkpoint_at`` /
    ``checkpoint_every`` are kept, and with ``save_checkpoint`` the final one. ``resume=RUN_DIR`` continues an
    interrupted run from its last saved state with the configuration recorded in it (``base``, ``grid``, ``seeds``
    and ``labels`` may each be omitted; given, they must match). A run directory is written once
    ([`pgdiag.run.claim`][pgdiag.run.claim]): ``out`` holding a run is refused unless ``overwrite=True``, which
    removes that run's files first; a second process writing the same ``out`` fails at once; both are checked before
    anything is compiled.

    ``batching="vmap"`` (default) vectorizes the agents; each agent's numbers then equal a run alone up to float32
    rounding, because XLA may pick different kernels for different batch sizes. ``batching="map"`` loops over agents
    inside the same compiled program: every agent is bitwise identical to the same configuration and seed run alone
    (with "map"), at a cost in speed.

    Args:
        base: the configuration every agent starts from (a [`preset`][pgdiag.config.presets.preset]); or ``resume``.
        grid: knob -> values (their Cartesian product is swept) or a sequence of knob -> value mappings
            (exactly those points); None: ``base`` alone.
        seeds: a count (seeds 0 … n − 1) or a list of seeds; None: seed 0.
        out: the run directory to write; None: nothing written.
        progress: draw a progress bar; None: when attached to a terminal.
        chunk_iterations: iterations per compiled chunk (metrics and checkpoints are written after each);
            None: about a twentieth of the run.
        save_checkpoint: also keep every agent's final state.
        label: the run's label (default: ``base``'s name).
        batching: ``"vmap"`` or ``"map"`` (above).
        labels: a name per grid point (a ``label`` column in the metrics).
        resume: an interrupted run directory to continue.
        overwrite: replace the run that ``out`` holds.
        loggers: live tracking, names of [`LOGGERS`][pgdiag.run.trackers.LOGGERS] ("tensorboard", "mlflow",
            "wandb") or logger objects; called once per chunk on the host.
        callbacks: [`Callback`][pgdiag.run.callbacks.Callback] objects, or functions of an
            [`Event`][pgdiag.run.callbacks.Event] called after each chunk.

    Returns:
        The run ([`RunResult`][pgdiag.run.store.RunResult]): its manifest, metrics (a row per agent and iteration).
    """
    watchers = as_callbacks(callbacks, loggers, out if resume is None else resume)
    if resume is not None:
        check_unchanged(resume, out=out, chunk_iterations=chunk_iterations, save_checkpoint=save_checkpoint,
                          label=label, batching=batching, overwrite=overwrite)
        return continue_run(resume, base, grid, seeds, labels, progress, watchers)
    p = roster(base, grid, 1 if seeds is None else seeds, labels)
    static = base.static
    chunk_iterations = _chunk(static, chunk_iterations, out, save_checkpoint, p.num_agents)
    split.check(static)
    BATCHING.normalize("batching", batching)   # "unknown batching 'x'; choose one of: vmap, map"
    p, physics = _pinned(p, batching)
    manifest = new_manifest(p, label or base.name, chunk_iterations=chunk_iterations, batching=batching,
                            save_checkpoint=bool(save_checkpoint), physics=physics,
                            placement=dict(zip(("mode", "why"), split.resolve(p.base.static))))
    return start(p, manifest, out, progress, overwrite=overwrite, callbacks=watchers)


def _chunk(static, chunk_iterations, out, save_checkpoint, agents: int = 1) -> int:
    """Iterations per compiled chunk, checked; and checkpoints only with a directory to keep them in."""
    if chunk_iterations is None:
        chunk_iterations = default_chunk(static.num_iterations, agents=agents)
    if isinstance(chunk_iterations, bool) or not isinstance(chunk_iterations, int) or chunk_iterations < 1:
        raise ConfigError(f"chunk_iterations must be a positive int, got {chunk_iterations!r}")
    chunk_iterations = min(chunk_iterations, static.num_iterations)
    if out is None and (save_checkpoint or static.checkpoint_iterations()):
        what = "save_checkpoint=True" if save_checkpoint else f"checkpoints at {list(static.checkpoint_iterations())}"
        raise ConfigError(f"{what} needs an output directory (out=...)")
    return chunk_iterations


def _pinned(p: Roster, batching: str) -> tuple[Roster, dict]:
    """physics="auto" takes the backend measured faster for the batch each device steps; the run is pinned to
    it (the manifest's base configuration names it, so resume and rerun keep it)."""
    static = p.base.static
    per_device = static.num_envs * (-(-p.num_agents // jax.device_count()) if batching == "vmap" else 1)
    physics = provenance.physics_info(static, per_device)
    if physics["backend"] != "jax" and physics["backend"] != static.physics:
        p = pin_physics(p, physics["backend"])
    return p, physics


def new_manifest(p: Roster, label: str, **fields) -> dict:
    """A training run's manifest before its first iteration: the roster's agents, the metrics' meanings and the
    provenance (versions, revision, device, command, start), then ``fields``."""
    return {
        "format": store.FORMAT,
        "label": label,
        "status": "compiling",
        "base_config": p.base.to_dict(),
        "grid_axes": list(p.grid_axes),
        "grid_points": list(p.points),
        "labels": list(p.labels),
        "seeds": list(p.seeds),
        "agents": [{"agent": a, "point": pi, "seed": s, "knobs": p.points[pi],
                    **({"label": p.labels[pi]} if p.labels else {})} for a, pi, s in p.agents()],
        "num_agents": p.num_agents,
        "metrics": metrics_of(p.base.static.algorithm),
        "versions": provenance.versions(),
        "git_revision": provenance.git_revision(),
        "device": provenance.device_info(),
        "command": " ".join(sys.argv),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **fields,
        "iterations_done": 0,
    }


def pin_physics(p: Roster, backend: str) -> Roster:
    """``p`` with every configuration's physics backend set to ``backend``."""
    return dataclasses.replace(p, base=p.base.replace(physics=backend),
                               configs=tuple(c.replace(physics=backend) for c in p.configs))


def train(config: Config, seed: int = SEED.default, out: str | None = None, **kwargs) -> store.RunResult:
    """Train one agent: a sweep of one configuration and one seed.

    Args:
        config: the agent's configuration (e.g. [`preset`][pgdiag.config.presets.preset]).
        seed: its seed.
        out: the run directory to write; None: nothing written.
        **kwargs: [`sweep`][pgdiag.run.execute.sweep]'s other options (``progress``, ``chunk_iterations``,
            ``save_checkpoint``, ``batching``, ``overwrite``, …).

    Returns:
        The run of one agent.
    """
    return sweep(config, None, seeds=[seed], out=out, **kwargs)


def resume(run_dir: str, progress: bool | None = None, loggers=None, callbacks=None) -> store.RunResult:
    """Continue the interrupted run in ``run_dir`` from its last saved state.

    Args:
        run_dir: a run directory that [`sweep`][pgdiag.run.execute.sweep] (or the command line) wrote and
            did not finish.
        progress: draw a progress bar; None: when attached to a terminal.
        loggers: live tracking of the iterations left (as [`sweep`][pgdiag.run.execute.sweep] takes them).
        callbacks: hooks called on the host (as [`sweep`][pgdiag.run.execute.sweep] takes them).

    Returns:
        The finished run, as if it had not been interrupted.
    """
    return sweep(resume=run_dir, progress=progress, loggers=loggers, callbacks=callbacks)


def rerun(run_dir: str, out: str | None = None, progress: bool | None = None) -> store.RunResult:
    """The run recorded in ``run_dir`` again from scratch: its configuration, grid, seeds, labels,
    chunking, batching and checkpoints (the same seeds give the same numbers).

    Args:
        run_dir: the recorded run directory.
        out: a new run directory to write (not ``run_dir``); None: nothing written.
        progress: draw a progress bar; None: when attached to a terminal.

    Returns:
        The new run.
    """
    manifest = training_manifest(run_dir, "rerun")
    if out is not None and os.path.abspath(out) == os.path.abspath(run_dir):
        raise ConfigError(f"rerun writes a new run directory: --out must differ from {run_dir!r}")
    p = store.plan_from_manifest(manifest)
    return sweep(p.base, manifest["grid_points"] or None, manifest["seeds"], out, progress=progress,
                 chunk_iterations=manifest["chunk_iterations"], save_checkpoint=manifest["save_checkpoint"],
                 label=manifest["label"], batching=manifest["batching"], labels=manifest.get("labels") or None)
