"""The ``pgdiag`` commands on runs: list tasks, knobs and presets; train, sweep, show, resume, rerun, plot,
export; and the options they share (a configuration from flags, several processes)."""

from __future__ import annotations

import os

from pgdiag.cli.options import option
from pgdiag.config import (KNOB_FIELDS, KNOB_NAMES, PRESETS, STATIC_FIELDS, STATIC_NAMES, STATIC_SETTINGS, Config,
                           ConfigError, parse_assignments, parse_grid, preset, preset_names)
from pgdiag.config.presets import BASE_TASK
from pgdiag.run.distributed import JOIN_TIMEOUT
from pgdiag.run.execute import BATCHING, SEED
from pgdiag.run.rosters import SEEDS


def _config_from_args(args) -> Config:
    overrides = parse_assignments(args.set, "--set")
    if args.preset:
        return _preset(args.preset, args.task, overrides)
    return Config().replace(task=args.task, **overrides)


def _preset(algorithm: str, task: str, overrides: dict) -> Config:
    """The preset of ``algorithm`` on ``task``; on a task a user registered (``--load``), which no preset names, the
    algorithm's preset on the base task (`BASE_TASK`: the papers' MuJoCo hyperparameters) with that task, said
    once."""
    import sys

    from pgdiag.envs.registry import REGISTRY

    try:
        return preset(algorithm, task, **overrides)
    except ConfigError:   # an unknown task, or a preset's own task without this algorithm, stays refused
        if task not in REGISTRY or any(t == task.lower() for _, t in PRESETS) or (algorithm.lower(), BASE_TASK) \
                not in PRESETS:
            raise
    sys.stderr.write(f"pgdiag: no {algorithm} preset for your task {task!r}: its {BASE_TASK.capitalize()} settings "
                     f"(the papers' MuJoCo hyperparameters), with --set overriding them\n")
    return preset(algorithm, BASE_TASK).replace(name=f"{algorithm.lower()}/{task}", task=task, **overrides)


def add_distributed(p):
    g = p.add_argument_group("several processes or hosts (one SPMD program; see pgdiag.run.distributed)")
    g.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="process 0's address, the same for every process ('auto': let JAX detect a SLURM or TPU "
                        "cluster); default $PGDIAG_COORDINATOR")
    g.add_argument("--num-processes", type=int, default=None, help="processes in all; default $PGDIAG_NUM_PROCESSES")
    g.add_argument("--process-id", type=int, default=None,
                   help="this process's index, 0 … num-processes − 1; default $PGDIAG_PROCESS_ID")
    g.add_argument("--join-timeout", **option(JOIN_TIMEOUT))


def add_log(p):
    p.add_argument("--log", default=None, metavar="NAME,...",
                   help="track live, once per chunk: tensorboard (event files under the run directory), mlflow, "
                        "wandb (pgdiag-rl[mlflow], pgdiag-rl[wandb]); e.g. --log tensorboard,mlflow")


def add_run_args(p, sweep: bool):
    # the default run is the default configuration's algorithm (its preset) on its task; preset() and Config
    # refuse an unknown one, naming what there is
    p.add_argument("--preset", **option(STATIC_SETTINGS["algorithm"], "algorithm preset (see `pgdiag presets`)",
                                        choices=False))
    p.add_argument("--task", **option(STATIC_SETTINGS["task"], "task (see `pgdiag tasks`)", choices=False))
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a knob or static setting (repeatable), e.g. --set lr_policy=1e-4")
    p.add_argument("--out", default=None, help="run directory to write (manifest, metrics, checkpoints); default "
                                               "a new runs/DATE-TIME-PRESET-TASK")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --out (its files, checkpoints included, are removed first)")
    p.add_argument("--no-save", dest="save", action="store_false", help="write nothing (results only printed)")
    p.add_argument("--checkpoint", action="store_true",
                   help="keep the final agent states (orbax); --set checkpoint_at=0,150,300 keeps others")
    p.add_argument("--chunk", type=int, default=None, help="iterations per compiled chunk (progress granularity)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None, help="show a progress bar")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    p.add_argument("--batching", **option(BATCHING))
    add_log(p)
    add_distributed(p)
    if sweep:
        p.add_argument("--grid", action="append", metavar="KNOB=V1,V2,...",
                       help="a grid axis (repeatable); the sweep runs the Cartesian product")
        p.add_argument("--seeds", **option(SEEDS))
    else:
        p.add_argument("--seed", **option(SEED))


def _summary(result) -> str:
    m = result.metrics
    if m.empty:
        return "no iterations completed"
    last = m[m.iteration == m.iteration.max()]
    axes = result.manifest["grid_axes"]
    lines = [f"run: {result.manifest['label']}  agents: {result.num_agents}  "
             f"iterations: {result.manifest['iterations_done']}  status: {result.manifest['status']}"]
    phys = result.manifest.get("physics") or {}
    if phys.get("backend") not in (None, "jax"):
        threads = f", {phys['threads']} threads" if phys.get("threads") else ""
        why = f" (auto: {phys['chosen_by']})" if phys.get("requested") == "auto" and phys.get("chosen_by") else ""
        lines.append(f"physics: {phys['backend']}{threads}, model {phys.get('model', 'brax')}, "
                     f"solver {phys.get('solver', 'converged')}{why}")
    t = result.manifest.get("timings", {})
    if t:
        lines.append(f"compile {t['compile_s']:.1f}s  run {t['run_s']:.1f}s  "
                     f"{t['env_steps_per_s']:.0f} env steps/s  compiles {t['compiles']}")
    score = m.groupby("agent")["mean_return"].max()
    table = last.set_index("agent")[axes + ["seed"]].assign(final_return=last.set_index("agent")["mean_return"],
                                                            best_return=score)
    if axes:
        summary = table.groupby(axes)[["final_return", "best_return"]].agg(["mean", "std"])
        lines.append(summary.to_string())
    else:
        lines.append(table[["seed", "final_return", "best_return"]].to_string())
    if result.diverged_agents:
        lines.append(f"diverged agents: {result.diverged_agents}")
    return "\n".join(lines)


def cmd_tasks(args):
    from pgdiag.envs import REGISTRY, sizes
    for name, entry in REGISTRY.items():
        print(f"{name:12s} {entry.kind:7s} {entry.description}")
        for model in entry.models:
            from pgdiag.envs.mujoco_models import mujoco_task
            obs, act = sizes(name, model)
            about = mujoco_task(name, model).description
            print(f"{'':12s} {'':7s} model={model}: {obs}-d obs, {act}-d action. {about}")


def cmd_algorithms(args):
    from pgdiag import algorithms
    for name in algorithms.names():
        a = algorithms.get(name)
        bound = f"constraint {a.constraint.label} ({a.constraint.knob})" if a.constraint else "no constraint"
        print(f"{name:10s} {a.summary}\n{'':10s} knobs: {', '.join(a.knobs) or '-'}; static: "
              f"{', '.join(a.static) or '-'}; {bound}")


def cmd_networks(args):
    from pgdiag import networks
    for name in networks.names():
        n = networks.get(name)
        shares = "; shares the policy's parameters (tie)" if n.tie else ""
        print(f"{name:14s} {n.summary}\n{'':14s} parameters' key {n.key!r}; the task receives "
              f"{'tanh(u)' if n.squashes else 'u'}{shares}")


def cmd_knobs(args):
    print("Traced knobs (sweepable in one compiled program):")
    for name in KNOB_NAMES:
        f = KNOB_FIELDS[name]
        print(f"  {name:22s} default {f.default!s:8s} {f.metadata['doc']}")
    print("\nStatic settings (shape the program; one compile per value):")
    for name in STATIC_NAMES:
        f = STATIC_FIELDS[name]
        print(f"  {name:22s} default {f.default!s:8s} {f.metadata['doc']}")
    from pgdiag import algorithms
    print("\nEach algorithm's own (set only where `algorithm` is it; knobs sweepable, static settings not):")
    for algo in algorithms.names():
        a = algorithms.get(algo)
        for kind, declared in (("knob", a.knobs), ("static", a.static)):
            for name, o in declared.items():
                print(f"  {algo + '.' + name:22s} default {o.default!s:8s} ({kind}) {o.doc}")


def cmd_presets(args):
    for what, wanted, have in (("algorithm", args.algorithm, preset_names()),
                               ("task", args.task, sorted({t for _, t in PRESETS}))):
        if wanted and wanted not in have:
            raise ConfigError(f"presets --{what} {wanted!r}: no preset has it; presets exist for: {', '.join(have)}")
    for (algo, task), (values, desc) in sorted(PRESETS.items()):
        if args.algorithm and algo != args.algorithm or args.task and task != args.task:
            continue
        cfg = preset(algo, task)
        print(f"== {algo} / {task}: {desc}")
        if args.full:
            for half in (cfg.static, cfg.knobs):
                for name, value in half.values().items():
                    print(f"    {name:22s} {value!s}")
        else:  # the settings its own algorithm takes (the papers' common block also names PPO's, for PPO)
            from pgdiag import algorithms
            own = algorithms.get(cfg.static.algorithm)
            takes = {*KNOB_NAMES, *STATIC_NAMES, *own.knobs, *own.static}
            print("    " + ", ".join(f"{k}={v}" for k, v in values.items() if k in takes))


def _out(args, what: str) -> str | None:
    """Where a train or sweep writes: --out, else a new timestamped directory under runs/ (said at once, so
    that an interrupted run can be found), or nowhere with --no-save."""
    if not args.save:
        if args.out or args.overwrite:
            raise ConfigError("--no-save writes nothing: drop --out/--overwrite, or drop --no-save")
        return None
    if args.out:
        return args.out
    from pgdiag.run.claim import fresh_dir
    out = fresh_dir(f"{args.preset or 'default'}-{args.task}{what}")
    print(f"writing {out} (--out names the directory, --no-save writes nothing)", flush=True)
    return out


def cmd_train(args):
    from pgdiag.run import train
    cfg = _config_from_args(args)
    out = _out(args, "")
    result = train(cfg, seed=args.seed, out=out, progress=args.progress, chunk_iterations=args.chunk,
                   save_checkpoint=args.checkpoint, batching=args.batching, overwrite=args.overwrite,
                   loggers=args.log)
    print(_summary(result))
    if out:
        print(f"wrote {out}")


def cmd_sweep(args):
    from pgdiag.run import sweep
    from pgdiag.run.rosters import roster
    cfg = _config_from_args(args)
    grid = parse_grid(args.grid)
    roster(cfg, grid, args.seeds)     # the grid and seeds checked before a directory is named
    out = _out(args, "-sweep")
    result = sweep(cfg, grid, seeds=args.seeds, out=out, progress=args.progress, chunk_iterations=args.chunk,
                   save_checkpoint=args.checkpoint, batching=args.batching, overwrite=args.overwrite,
                   loggers=args.log)
    print(_summary(result))
    if out:
        print(f"wrote {out}")


def cmd_show(args):
    from pgdiag.run import load_run
    try:
        run = load_run(args.run)
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    print(_summary(run))
    if run.checkpoints:
        print(f"checkpoints after iterations: {', '.join(map(str, run.checkpoints))}")


def cmd_resume(args):
    from pgdiag.run import resume
    result = resume(args.run, progress=args.progress, loggers=args.log)
    print(_summary(result))
    print(f"wrote {args.run}")


def cmd_rerun(args):
    from pgdiag.run import rerun
    from pgdiag.run.claim import fresh_dir
    from pgdiag.run import load_run
    try:
        load_run(args.run)          # a training run, readable, before a directory is named for its rerun
    except FileNotFoundError as err:
        raise ConfigError(f"cannot rerun {args.run!r}: {err}") from None
    out = args.out
    if out is None:  # a rerun is saved like any run: a new directory under runs/
        out = fresh_dir("rerun-" + os.path.basename(os.path.normpath(args.run)))
        print(f"writing {out} (--out names the directory)", flush=True)
    result = rerun(args.run, out=out, progress=args.progress)
    print(_summary(result))
    print(f"wrote {out}")


def cmd_plot(args):
    from pgdiag.experiments import run_plot
    print(f"wrote {run_plot.plot(args.run, args.metric, out=args.out)}")


def cmd_export(args):
    from pgdiag.run import tensorboard
    try:
        paths = tensorboard.export(args.run, args.logdir)
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    where = os.path.dirname(os.path.dirname(paths[0])) if paths else args.logdir
    print(f"wrote {len(paths)} event files under {where}")
