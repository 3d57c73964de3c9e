"""The ``pg-diag`` commands of the paper figures and tables: train a study (``--scale``) or measure given
runs (``--run``), or redraw saved results (``--from``); each one a thin call into :mod:`pg_diag.experiments`."""

from __future__ import annotations

from pg_diag.cli.runs import add_distributed
from pg_diag.config import ConfigError, parse_assignments


def _train_or_draw(args, run, draw, by_task: bool = True) -> dict:
    """A study's outputs: redrawn from ``--from`` (``by_task``: restricted to ``--task``) or trained at
    ``--scale`` into ``--out``."""
    if args.from_dir:
        tasks = _from_args(args)
        return draw(args.from_dir, out=args.out, **({"tasks": tasks} if by_task else {}))
    return run(args.scale or "smoke", out=args.out or args.default_out, **_experiment_args(args))


def _print_markdown(out: dict, *written: str) -> None:
    with open(out["markdown"]) as f:
        print(f.read())
    print(f"wrote {' and '.join(out[k] for k in written)}")


def cmd_fig_ablation(args):
    from pg_diag.experiments import ablation
    out = _train_or_draw(args, ablation.run, ablation.draw)
    for task, (best, effects) in out["tables"].items():
        print(f"== {task}: best learning rate per toggle combination")
        print(best.to_string(index=False))
        print(effects.to_string(index=False))
    print(f"wrote {out['figure']}")


def _experiment_args(args) -> dict:
    task = args.task if isinstance(args.task, (list, tuple)) or args.task is None else [args.task]
    extra = {"algorithms": tuple(args.algorithm)} if getattr(args, "algorithm", None) else {}
    return dict(tasks=tuple(task) if task else None, seeds=getattr(args, "seeds", None),
                progress=getattr(args, "progress", None), **extra,
                **parse_assignments(getattr(args, "set", None), "--set"))


def _algorithms_arg(p) -> None:
    p.add_argument("--algorithm", action="append", metavar="PRESET",
                   help="train these presets instead of the target's own (repeatable; see `pg-diag presets`), "
                        "e.g. --algorithm ppo --algorithm npg")


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
    _print_markdown(_train_or_draw(args, solver_compare.run, solver_compare.draw, by_task=False), "markdown", "csv")


def cmd_fig_trust_region(args):
    from pg_diag.experiments import trust_region
    out = _train_or_draw(args, trust_region.run, trust_region.draw)
    print(out["summary"].to_string(index=False))
    print(f"wrote {out['figure']}")


def cmd_fig_value(args):
    from pg_diag.experiments import value_fig
    _print_markdown(_train_or_draw(args, value_fig.run, value_fig.draw), "figure", "csv")


def cmd_fig_rewards(args):
    from pg_diag.experiments import algorithms
    out = _train_or_draw(args, algorithms.fig_rewards, algorithms.draw_rewards)
    print(f"wrote {out['figure']}")


def cmd_table(args):
    from pg_diag.experiments import algorithms
    rules = dict(statistic=args.statistic, reporting=args.reporting)
    if args.from_dir:
        out = algorithms.draw_table(args.command, args.from_dir, out=args.out, tasks=_from_args(args), **rules)
    else:
        fn = algorithms.table_2 if args.command == "table-2" else algorithms.table_3
        out = fn(args.scale or "smoke", out=args.out or args.default_out, **rules, **_experiment_args(args))
    _print_markdown(out, "markdown", "csv")


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


def cmd_dry_run(args, kind):
    """``--dry-run``: the target's plan (:mod:`pg_diag.experiments.plan`), printed; nothing compiled."""
    from pg_diag.diagnostics.gradients import fmt_bytes
    from pg_diag.diagnostics.subjects import parse_settings
    from pg_diag.experiments import plan

    if args.from_dir or getattr(args, "run", None):
        raise ConfigError(f"{args.command} --dry-run plans what the target trains and measures at --scale; it "
                          f"cannot be combined with --from or --run")
    extra = _experiment_args(args)
    extra.pop("progress", None)
    diag = parse_settings(kind, args.diag) if kind is not None else None
    programs = plan.plan(args.command, args.scale or "smoke", diag=diag, **extra)
    frame = plan.table(programs, plan.recorded_step_ms(extra.get("solver", "converged"), extra.get("model", "brax")))
    shown = frame.assign(memory=frame.memory.map(fmt_bytes))
    print(shown.to_string(index=False))
    total = frame.estimated_s
    print(f"{len(frame)} programs, {int(frame.pairs.sum()):,} pairs; "
          + ("every program fits the memory available" if frame.fits.all() else
             f"{int((~frame.fits).sum())} do not fit the memory available")
          + ("; estimated duration (without compiling): "
             f"{total.sum() / 60:.1f} min" if total.notna().all() else
             "; no per-step cost recorded for this host (python benchmarks/bench_crossover.py --record)"))


def cmd_diagnostic(args):
    from pg_diag.diagnostics.subjects import parse_settings
    kind, run, draw = _diagnostic_target(args.command)
    if getattr(args, "dry_run", False):
        return cmd_dry_run(args, kind)
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
    _print_markdown(out, "figure", "csv")


def _dry_run_arg(p):
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (programs, agents or subjects, pairs, sequential steps, memory, duration) "
                        "and stop; nothing is trained, measured or compiled")


def _planned(func):
    """A training target's command, or its plan with --dry-run."""
    def command(args):
        return cmd_dry_run(args, None) if args.dry_run else func(args)
    return command


def _diagnostic_args(p):
    _dry_run_arg(p)
    p.add_argument("--run", action="append", metavar="RUN_DIR",
                   help="measure this run directory (repeatable; it needs checkpoints) instead of training")
    p.add_argument("--diag", action="append", metavar="NAME=VALUE",
                   help="a measurement setting (repeatable), e.g. --diag estimates=10 --diag sizes=100,1000,1e4 "
                        "--diag true_pairs=1e6 (see pg_diag.diagnostics.GradientSettings, StepSettings, "
                        "BaselineSettings, LandscapeSettings)")


def _add_from(p, default_out):
    # --scale and --out default to None so that --from can tell what was given
    p.add_argument("--scale", default=None, choices=["smoke", "mid", "paper"],
                   help="smoke: minutes on a CPU (default); mid (the diagnostic targets): Hopper at the papers' "
                        "shape, PPO and TRPO, 100 iterations, under an hour on a CPU; paper: the papers' setting, "
                        "for accelerators")
    p.add_argument("--out", default=None,
                   help=f"output directory (default {default_out}; with --from: the --from directory)")
    p.add_argument("--from", dest="from_dir", metavar="DIR", default=None,
                   help="redraw from the results saved in DIR (what --out was when the study trained) without "
                        "training anything")
    p.set_defaults(default_out=default_out)


def _add_experiment(sub, name, help_, func, default_out, extra=None, planned=False):
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
    if planned:
        _dry_run_arg(p)
    add_distributed(p)
    p.set_defaults(func=_planned(func) if planned else func)


def add_studies(sub) -> None:
    """Every figure and table target as a subcommand of ``sub``."""
    _add_experiment(sub, "fig-ablation", "CL Fig 1 / IM Fig 1: the 2^4 toggle ablation × LR × seeds",
                    cmd_fig_ablation, "results/fig-ablation", planned=True)
    _add_experiment(sub, "fig-trust-region", "CL Fig 9 / IM Fig 2-4: ratios and KL of PPO, PPO-M, TRPO",
                    cmd_fig_trust_region, "results/fig-trust-region", extra=_algorithms_arg, planned=True)
    _add_experiment(sub, "fig-value", "CL Fig 4/14/15: value-network MRE against its target, the returns and "
                    "(LQR) the exact V^π", cmd_fig_value, "results/fig-value", extra=_algorithms_arg, planned=True)
    _add_experiment(sub, "fig-rewards", "CL Fig 10: reward curves of all five algorithms", cmd_fig_rewards,
                    "results/algorithms", planned=True)

    statistic = lambda p: p.add_argument(  # noqa: E731
        "--statistic", default="final", choices=["final", "max"],
        help="per-agent score: mean of the last 5 iterations (final) or max over training (max)")
    _add_experiment(sub, "table-2", "IM Table 2: PPO, PPO-M, TRPO, TRPO+ with bootstrap CIs, AAI, ACLI",
                    cmd_table, "results/algorithms", statistic, planned=True)
    _add_experiment(sub, "table-3", "IM Table 3: PPO vs PPO-NoClip with bootstrap CIs", cmd_table,
                    "results/algorithms", statistic, planned=True)
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
                    "solver settings, their conclusions side by side", cmd_solver_compare, "results/solver-compare",
                    planned=True)
    p = sub.add_parser("fig-theorem", help="CL Theorem 5.1: optimizing the clipped objective on one batch")
    _add_from(p, "results/fig-theorem")
    p.add_argument("--steps", type=int, default=None, help="optimizer steps (default: the scale's)")
    p.add_argument("--task", default=None, help="the task whose batch is optimized (default: the scale's)")
    _dry_run_arg(p)
    p.set_defaults(func=_planned(cmd_fig_theorem))
