"""The ``pg-diag`` command line.

    pg-diag tasks | knobs | presets
    pg-diag train --preset ppo --task hopper --set lr_policy=1e-4 --out runs/one
    pg-diag sweep --preset ppo --task hopper --grid value_clipping=off,on \\
                  --grid lr_policy=1e-4,3e-4 --seeds 5 --out runs/sweep
    pg-diag show runs/sweep
    pg-diag resume runs/sweep
    pg-diag rerun runs/sweep --out runs/again
    pg-diag plot runs/sweep --metric value_loss | pg-diag export runs/sweep   # TensorBoard
    pg-diag fig-ablation | fig-trust-region | fig-value | fig-rewards | table-2 | table-3 | fig-theorem [--scale smoke|paper]
    pg-diag fig-grad-variance | fig-grad-true | fig-step-variance | fig-baselines
            | fig-landscape-concentration | fig-landscape-surrogate [--scale smoke|paper | --run DIR ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from pg_diag.config import (KNOB_FIELDS, KNOB_NAMES, PRESETS, STATIC_FIELDS, STATIC_NAMES, Config,
                            ConfigError, parse_assignments, parse_grid, preset)


def _config_from_args(args) -> Config:
    overrides = parse_assignments(args.set, "--set")
    if args.preset:
        return preset(args.preset, args.task, **overrides)
    return Config().replace(task=args.task, **overrides)


def _add_distributed(p):
    g = p.add_argument_group("several processes or hosts (one SPMD program; see pg_diag.run.distributed)")
    g.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="process 0's address, the same for every process ('auto': let JAX detect a SLURM or TPU "
                        "cluster); default $PG_DIAG_COORDINATOR")
    g.add_argument("--num-processes", type=int, default=None, help="processes in all; default $PG_DIAG_NUM_PROCESSES")
    g.add_argument("--process-id", type=int, default=None,
                   help="this process's index, 0 … num-processes − 1; default $PG_DIAG_PROCESS_ID")
    g.add_argument("--join-timeout", type=int, default=120, help="seconds to wait for every process (default 120)")


def _add_run_args(p, sweep: bool):
    p.add_argument("--preset", default="ppo", help="algorithm preset (see `pg-diag presets`); default ppo")
    p.add_argument("--task", default="hopper", help="task (see `pg-diag tasks`); default hopper")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a knob or static setting (repeatable), e.g. --set lr_policy=1e-4")
    p.add_argument("--out", default=None, help="run directory to write (manifest + metrics)")
    p.add_argument("--checkpoint", action="store_true",
                   help="keep the final agent states (orbax); --set checkpoint_at=0,150,300 keeps others")
    p.add_argument("--chunk", type=int, default=None, help="iterations per compiled chunk (progress granularity)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None, help="show a progress bar")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    p.add_argument("--batching", default="vmap", choices=["vmap", "map"],
                   help="vmap: vectorize agents (fast); map: loop over them, each bitwise equal to a run alone")
    _add_distributed(p)
    if sweep:
        p.add_argument("--grid", action="append", metavar="KNOB=V1,V2,...",
                       help="a grid axis (repeatable); the sweep runs the Cartesian product")
        p.add_argument("--seeds", type=int, default=1, help="seeds per grid point (0..n-1)")
    else:
        p.add_argument("--seed", type=int, default=0, help="agent seed")


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
        lines.append(f"physics: {phys['backend']}{threads}, solver {phys.get('solver', 'converged')}{why}")
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
    from pg_diag.envs import TASKS
    for name, (kind, desc) in TASKS.items():
        print(f"{name:12s} {kind:7s} {desc}")


def cmd_knobs(args):
    print("Traced knobs (sweepable in one compiled program):")
    for name in KNOB_NAMES:
        f = KNOB_FIELDS[name]
        print(f"  {name:22s} default {f.default!s:8s} {f.metadata['doc']}")
    print("\nStatic settings (shape the program; one compile per value):")
    for name in STATIC_NAMES:
        f = STATIC_FIELDS[name]
        print(f"  {name:22s} default {f.default!s:8s} {f.metadata['doc']}")


def cmd_presets(args):
    for (algo, task), (values, desc) in sorted(PRESETS.items()):
        if args.algorithm and algo != args.algorithm or args.task and task != args.task:
            continue
        cfg = preset(algo, task)
        print(f"== {algo} / {task}: {desc}")
        if args.full:
            for half in (cfg.static, cfg.knobs):
                for f in dataclasses.fields(half):
                    print(f"    {f.name:22s} {getattr(half, f.name)!s}")
        else:
            print("    " + ", ".join(f"{k}={v}" for k, v in values.items()))


def cmd_train(args):
    from pg_diag.run import train
    cfg = _config_from_args(args)
    result = train(cfg, seed=args.seed, out=args.out, progress=args.progress, chunk_iterations=args.chunk,
                   save_checkpoint=args.checkpoint, batching=args.batching)
    print(_summary(result))
    if args.out:
        print(f"wrote {args.out}")


def cmd_sweep(args):
    from pg_diag.run import sweep
    cfg = _config_from_args(args)
    grid = parse_grid(args.grid)
    result = sweep(cfg, grid, seeds=args.seeds, out=args.out, progress=args.progress,
                   chunk_iterations=args.chunk, save_checkpoint=args.checkpoint, batching=args.batching)
    print(_summary(result))
    if args.out:
        print(f"wrote {args.out}")


def cmd_show(args):
    from pg_diag.run import load_run
    try:
        run = load_run(args.run)
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    print(_summary(run))
    if run.checkpoints:
        print(f"checkpoints after iterations: {', '.join(map(str, run.checkpoints))}")


def cmd_resume(args):
    from pg_diag.run import resume
    result = resume(args.run, progress=args.progress)
    print(_summary(result))
    print(f"wrote {args.run}")


def cmd_rerun(args):
    from pg_diag.run import rerun
    result = rerun(args.run, out=args.out, progress=args.progress)
    print(_summary(result))
    if args.out:
        print(f"wrote {args.out}")


def cmd_plot(args):
    from pg_diag.experiments import run_plot
    print(f"wrote {run_plot.plot(args.run, args.metric, out=args.out)}")


def cmd_export(args):
    from pg_diag.run import tensorboard
    try:
        paths = tensorboard.export(args.run, args.logdir)
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from None
    print(f"wrote {len(paths)} event files under {os.path.dirname(os.path.dirname(paths[0])) if paths else args.logdir}")


def cmd_fig_ablation(args):
    from pg_diag.experiments import ablation
    if args.from_dir:
        out = ablation.draw(args.from_dir, out=args.out, tasks=_from_args(args))
    else:
        out = ablation.run(args.scale or "smoke", out=args.out or args.default_out, **_experiment_args(args))
    for task, (best, effects) in out["tables"].items():
        print(f"== {task}: best learning rate per toggle combination")
        print(best.to_string(index=False))
        print(effects.to_string(index=False))
    print(f"wrote {out['figure']}")


def _experiment_args(args) -> dict:
    return dict(tasks=tuple(args.task) if args.task else None, seeds=args.seeds, progress=args.progress,
                **parse_assignments(args.set, "--set"))


def _from_args(args):
    """The tasks to redraw with --from; the options that only choose what to train are refused."""
    theorem = args.command == "fig-theorem"
    given = [flag for flag, value in (("--scale", args.scale), ("--seeds", getattr(args, "seeds", None)),
                                      ("--set", getattr(args, "set", None)), ("--steps", getattr(args, "steps", None)),
                                      ("--task", args.task if theorem else None))
             if value is not None]
    if given:
        raise ConfigError(f"{args.command} --from redraws saved results without training: {', '.join(given)} "
                          f"choose what to train and cannot be combined with it (the study in {args.from_dir!r} "
                          f"records what it was trained with)")
    return tuple(args.task) if args.task and not theorem else None


def cmd_solver_compare(args):
    from pg_diag.experiments import solver_compare
    if args.from_dir:
        _from_args(args)
        out = solver_compare.draw(args.from_dir, out=args.out)
    else:
        out = solver_compare.run(args.scale or "smoke", out=args.out or args.default_out, **_experiment_args(args))
    with open(out["markdown"]) as f:
        print(f.read())
    print(f"wrote {out['markdown']} and {out['csv']}")


def cmd_fig_trust_region(args):
    from pg_diag.experiments import trust_region
    if args.from_dir:
        out = trust_region.draw(args.from_dir, out=args.out, tasks=_from_args(args))
    else:
        out = trust_region.run(args.scale or "smoke", out=args.out or args.default_out, **_experiment_args(args))
    print(out["summary"].to_string(index=False))
    print(f"wrote {out['figure']}")


def cmd_fig_value(args):
    from pg_diag.experiments import value_fig
    if args.from_dir:
        out = value_fig.draw(args.from_dir, out=args.out, tasks=_from_args(args))
    else:
        out = value_fig.run(args.scale or "smoke", out=args.out or args.default_out, **_experiment_args(args))
    with open(out["markdown"]) as f:
        print(f.read())
    print(f"wrote {out['figure']} and {out['csv']}")


def cmd_fig_rewards(args):
    from pg_diag.experiments import algorithms
    if args.from_dir:
        out = algorithms.draw_rewards(args.from_dir, out=args.out, tasks=_from_args(args))
    else:
        out = algorithms.fig_rewards(args.scale or "smoke", out=args.out or args.default_out,
                                     **_experiment_args(args))
    print(f"wrote {out['figure']}")


def cmd_table(args):
    from pg_diag.experiments import algorithms
    rules = dict(statistic=args.statistic, reporting=args.reporting)
    if args.from_dir:
        out = algorithms.draw_table(args.command, args.from_dir, out=args.out, tasks=_from_args(args), **rules)
    else:
        fn = algorithms.table_2 if args.command == "table-2" else algorithms.table_3
        out = fn(args.scale or "smoke", out=args.out or args.default_out, **rules, **_experiment_args(args))
    with open(out["markdown"]) as f:
        print(f.read())
    print(f"wrote {out['markdown']} and {out['csv']}")


def cmd_fig_theorem(args):
    from pg_diag.experiments import theorem
    if args.from_dir:
        _from_args(args)
        out = theorem.draw(args.from_dir, out=args.out)
    else:
        out = theorem.run(args.scale or "smoke", out=args.out or args.default_out, steps=args.steps,
                          task=args.task)
    print(f"first step: |grad L^C - grad L| / |grad L| = {out['first_step_relative_difference']:.2e}")
    print(out["summary"].to_string())
    print(f"wrote {out['figure']}")


def _diagnostic_target(command):
    """(settings class, run(…), draw(from_dir, out)) of a diagnostic figure target."""
    from pg_diag import diagnostics as d
    from pg_diag.experiments import baseline_fig, gradient_figs, landscape_figs
    if command == "fig-baselines":
        return d.BaselineSettings, baseline_fig.run, baseline_fig.draw
    if command in landscape_figs.TARGETS:
        return (d.LandscapeSettings, lambda *a, **k: landscape_figs.run(command, *a, **k),
                lambda *a, **k: landscape_figs.draw(command, *a, **k))
    kind = d.StepSettings if command == "fig-step-variance" else d.GradientSettings
    return (kind, lambda *a, **k: gradient_figs.run(command, *a, **k),
            lambda *a, **k: gradient_figs.draw(command, *a, **k))


def cmd_diagnostic(args):
    from pg_diag.diagnostics.subjects import parse_settings
    kind, run, draw = _diagnostic_target(args.command)
    if args.from_dir:
        if args.run or args.diag:
            raise ConfigError(f"{args.command} --from redraws saved results: --run and --diag choose what to measure "
                              f"and cannot be combined with it")
        _from_args(args)
        out = draw(args.from_dir, out=args.out)
    else:
        diag = parse_settings(kind, args.diag)
        if args.run and (args.scale or args.task or args.seeds or args.set):
            raise ConfigError(f"{args.command} --run measures existing runs: --scale, --task, --seeds and --set "
                              f"choose what to train and cannot be combined with it")
        out = run(args.scale or "smoke", out=args.out or args.default_out, runs=args.run, diag=diag,
                  **_experiment_args(args))
    with open(out["markdown"]) as f:
        print(f.read())
    print(f"wrote {out['figure']} and {out['csv']}")


def _diagnostic_args(p):
    p.add_argument("--run", action="append", metavar="RUN_DIR",
                   help="measure this run directory (repeatable; it needs checkpoints) instead of training")
    p.add_argument("--diag", action="append", metavar="NAME=VALUE",
                   help="a measurement setting (repeatable), e.g. --diag estimates=10 --diag sizes=100,1000,1e4 "
                        "--diag true_pairs=1e6 (see pg_diag.diagnostics.GradientSettings, StepSettings, "
                        "BaselineSettings, LandscapeSettings)")


def _add_from(p, default_out):
    # --scale and --out default to None so that --from can tell what was given
    p.add_argument("--scale", default=None, choices=["smoke", "paper"],
                   help="smoke: minutes on a CPU (default); paper: the papers' setting, for accelerators")
    p.add_argument("--out", default=None,
                   help=f"output directory (default {default_out}; with --from: the --from directory)")
    p.add_argument("--from", dest="from_dir", metavar="DIR", default=None,
                   help="redraw from the results saved in DIR (what --out was when the study trained) without "
                        "training anything")
    p.set_defaults(default_out=default_out)


def _add_experiment(sub, name, help_, func, default_out, extra=None):
    p = sub.add_parser(name, help=help_)
    _add_from(p, default_out)
    p.add_argument("--task", action="append", help="restrict to these tasks (repeatable)")
    p.add_argument("--seeds", type=int, default=None, help="agents per configuration (default: the scale's)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a static setting or knob")
    p.add_argument("--progress", dest="progress", action="store_true", default=None)
    p.add_argument("--no-progress", dest="progress", action="store_false")
    if func is cmd_table:
        p.add_argument("--reporting", default="pg_diag", choices=["pg_diag", "original"],
                       help="which episodes an iteration's mean return counts: every one that ended (pg_diag, "
                            "default) or the original code's rule, as published (original: mean_return_reference)")
    if extra:
        extra(p)
    _add_distributed(p)
    p.set_defaults(func=func)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pg-diag", description="Experiments on deep policy-gradient algorithms.")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("tasks", help="list tasks").set_defaults(func=cmd_tasks)
    sub.add_parser("knobs", help="list traced knobs and static settings").set_defaults(func=cmd_knobs)
    p = sub.add_parser("presets", help="list algorithm presets (the papers' hyperparameters)")
    p.add_argument("--algorithm", default=None)
    p.add_argument("--task", default=None)
    p.add_argument("--full", action="store_true", help="print every setting, not just the preset's own")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser("train", help="train one agent")
    _add_run_args(p, sweep=False)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("sweep", help="train a grid of knob values × seeds as one compiled program")
    _add_run_args(p, sweep=True)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("show", help="summarize a run directory")
    p.add_argument("run")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("resume", help="continue an interrupted run from its last saved state")
    p.add_argument("run", help="the run directory (the one given to --out)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None, help="show a progress bar")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    _add_distributed(p)
    p.set_defaults(func=cmd_resume)

    p = sub.add_parser("plot", help="a recorded metric of a run against iterations, mean over seeds with a 95%% CI")
    p.add_argument("run", help="the run directory")
    p.add_argument("--metric", default="mean_return", help="a recorded metric (see `pg-diag knobs`); default "
                                                            "mean_return")
    p.add_argument("--out", default=None, help="the image to write (default RUN/plots/METRIC.png)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("export", help="a run's metrics as TensorBoard event files, one per agent")
    p.add_argument("run", help="the run directory")
    p.add_argument("--logdir", default=None, help="where to write them (default RUN/tensorboard)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("rerun", help="run a recorded run again from scratch (same configuration, grid and seeds)")
    p.add_argument("run", help="the run directory whose manifest to reproduce")
    p.add_argument("--out", default=None, help="the new run directory to write")
    p.add_argument("--progress", dest="progress", action="store_true", default=None, help="show a progress bar")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    _add_distributed(p)
    p.set_defaults(func=cmd_rerun)

    _add_experiment(sub, "fig-ablation", "CL Fig 1 / IM Fig 1: the 2^4 toggle ablation × LR × seeds",
                    cmd_fig_ablation, "results/fig-ablation")
    _add_experiment(sub, "fig-trust-region", "CL Fig 9 / IM Fig 2-4: ratios and KL of PPO, PPO-M, TRPO",
                    cmd_fig_trust_region, "results/fig-trust-region")
    _add_experiment(sub, "fig-value", "CL Fig 4/14/15: value-network MRE against its target, the returns and "
                    "(LQR) the exact V^π", cmd_fig_value, "results/fig-value")
    _add_experiment(sub, "fig-rewards", "CL Fig 10: reward curves of all five algorithms", cmd_fig_rewards,
                    "results/algorithms")

    statistic = lambda p: p.add_argument(  # noqa: E731
        "--statistic", default="final", choices=["final", "max"],
        help="per-agent score: mean of the last 5 iterations (final) or max over training (max)")
    _add_experiment(sub, "table-2", "IM Table 2: PPO, PPO-M, TRPO, TRPO+ with bootstrap CIs, AAI, ACLI",
                    cmd_table, "results/algorithms", statistic)
    _add_experiment(sub, "table-3", "IM Table 3: PPO vs PPO-NoClip with bootstrap CIs", cmd_table,
                    "results/algorithms", statistic)
    for name, help_ in (("fig-grad-variance", "CL Fig 2/11: pairwise cosine of gradient estimates vs N"),
                        ("fig-grad-true", "CL Fig 3/12: cosine of gradient estimates to the true (and exact LQR) "
                                          "gradient vs N"),
                        ("fig-step-variance", "CL Fig 13: pairwise cosine and KL of the algorithm's own steps")):
        _add_experiment(sub, name, help_, cmd_diagnostic, "results/gradients", _diagnostic_args)
    _add_experiment(sub, "fig-baselines", "CL Fig 5/16: gradient concentration with the value net, a fitted value "
                    "net, no baseline and (LQR) the exact V^π", cmd_diagnostic, "results/fig-baselines",
                    _diagnostic_args)
    for name, help_ in (("fig-landscape-concentration", "CL Fig 6/26/27: true reward landscape from 2K/20K/100K "
                                                         "pairs per point"),
                        ("fig-landscape-surrogate", "CL Fig 7/8/17-25: true reward vs the surrogate on the plane "
                                                     "of the step")):
        _add_experiment(sub, name, help_, cmd_diagnostic, "results/landscape", _diagnostic_args)
    _add_experiment(sub, "solver-compare", "fig-ablation and Table 2 trained under the converged and the fast "
                    "solver settings, their conclusions side by side", cmd_solver_compare, "results/solver-compare")
    p = sub.add_parser("fig-theorem", help="CL Theorem 5.1: optimizing the clipped objective on one batch")
    _add_from(p, "results/fig-theorem")
    p.add_argument("--steps", type=int, default=None, help="optimizer steps (default: the scale's)")
    p.add_argument("--task", default=None, help="the task whose batch is optimized (default: the scale's)")
    p.set_defaults(func=cmd_fig_theorem)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if hasattr(args, "coordinator"):
            from pg_diag.run import distributed
            if distributed.initialize(args.coordinator, args.num_processes, args.process_id, args.join_timeout) \
                    and not distributed.is_lead():
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # process 0 reports; errors
                # still reach stderr (the file descriptor, so that the collectives' own messages go too)
        args.func(args)
    except ConfigError as err:
        print(f"pg-diag: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the run directory is consistent and says how to resume
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
