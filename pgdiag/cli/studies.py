"""The ``pgdiag`` commands of the paper figures and tables: train a study (``--scale``) or measure given runs
(``--run``), or redraw saved results (``--from``); each one a thin call into
[`pgdiag.experiments`][pgdiag.experiments]."""

from __future__ import annotations

from pgdiag.cli.imports import policy_help, policy_option_help
from pgdiag.cli.options import option
from pgdiag.cli.runs import add_distributed
from pgdiag.config import ConfigError, parse_assignments
from pgdiag.experiments.target_types import SCALE
from pgdiag.studies.presets.tables import REPORTING_RULE, STATISTIC


def _show(out: dict) -> None:
    """What a target's run or draw returned: its text and tables printed, the files it wrote named."""
    import pandas as pd

    if out.get("text"):
        print(out["text"])
    if "markdown" in out:
        with open(out["markdown"]) as f:
            print(f.read())
    elif isinstance(out.get("summary"), pd.DataFrame):
        summary = out["summary"]
        print(summary.to_string(index=not isinstance(summary.index, pd.RangeIndex)))
    print(f"wrote {' and '.join(out[k] for k in ('figure', 'markdown', 'csv') if k in out)}")


def cmd_target(args):
    """A training target (or fig-theorem): trained at ``--scale`` into ``--out``, or redrawn from ``--from``."""
    from pgdiag.experiments import targets
    t = targets.get(args.command)
    if getattr(args, "dry_run", False):
        return cmd_dry_run(args, None)
    check_host_arg(args)
    rules = {o: getattr(args, o) for o in ("statistic", "reporting") if o in t.options}
    if args.from_dir:
        tasks = _from_args(args)
        out = t.redraw(args.from_dir, out=args.out, **({"tasks": tasks} if t.redraws_by_task else {}), **rules)
    else:
        out = t.train(args.scale or SCALE.default, out=args.out or args.default_out, **rules, **_experiment_args(args))
    _show(out)


def _experiment_args(args) -> dict:
    task = args.task if isinstance(args.task, (list, tuple)) or args.task is None else [args.task]
    extra = {"presets": tuple(args.algorithm)} if getattr(args, "algorithm", None) else {}
    if getattr(args, "steps", None) is not None:   # an optimize target's optimizer steps
        extra["steps"] = args.steps
    return dict(tasks=tuple(task) if task else None, seeds=getattr(args, "seeds", None),
                progress=getattr(args, "progress", None), **extra,
                **parse_assignments(getattr(args, "set", None), "--set"))


def _algorithms_arg(p) -> None:
    p.add_argument("--algorithm", action="append", metavar="PRESET",
                   help="train these presets instead of the target's own (repeatable; see `pgdiag presets`), "
                        "e.g. --algorithm ppo --algorithm npg")


def _from_args(args):
    """The tasks to redraw with --from; the options that only choose what to train are refused (an optimize
    target's --task chooses the batch it optimizes)."""
    from pgdiag.experiments import targets
    t = targets.get(args.command)
    theorem = t.kind == "optimize"
    by_task = t.redraws_by_task and not theorem     # --task chooses the tasks drawn; elsewhere what is trained
    given = [flag for flag, value in (("--scale", args.scale), ("--seeds", getattr(args, "seeds", None)),
                                      ("--set", getattr(args, "set", None)), ("--steps", getattr(args, "steps", None)),
                                      ("--task", None if by_task else args.task),
                                      ("--algorithm", getattr(args, "algorithm", None)))
             if value is not None]
    if given:
        raise ConfigError(f"{args.command} --from redraws saved results without training: {', '.join(given)} "
                          f"choose{'s' if len(given) == 1 else ''} what to train and cannot be combined with it "
                          f"(the study in {args.from_dir!r} "
                          f"records what it was trained with)")
    return tuple(args.task) if args.task and by_task else None


def _check_run_args(args) -> None:
    """--run and --policy measure saved agents: the options that choose what to train are refused beside them."""
    flag = "--run" if getattr(args, "run", None) else "--policy" if getattr(args, "policy", None) else None
    if flag and any(v is not None for v in (args.scale, args.task, args.seeds, args.set)):
        raise ConfigError(f"{args.command} {flag} measures existing runs: --scale, --task, --seeds and --set choose "
                          f"what to train and cannot be combined with it")


def cmd_dry_run(args, kind):
    """``--dry-run``: the target's plan ([`pgdiag.experiments.dry_run`][pgdiag.experiments.dry_run]), printed;
    nothing compiled."""
    from pgdiag.diagnostics.subjects import parse_settings
    from pgdiag.experiments import dry_run, targets

    if args.from_dir:
        raise ConfigError(f"{args.command} --dry-run plans what the target would train and measure; it cannot be "
                          f"combined with --from, which redraws saved results")
    runs = getattr(args, "run", None)
    _check_run_args(args)
    if getattr(args, "policy", None):   # an imported policy is planned as the run it is imported into
        from pgdiag.cli.imports import policy_runs

        runs = (runs or []) + policy_runs(args.policy, args.policy_option, args.out or args.default_out)
    extra = _experiment_args(args)
    extra.pop("progress", None)
    diag = parse_settings(kind, args.diag) if kind is not None else None
    from pgdiag.envs.hosts import declare
    from pgdiag.experiments.planner import show_plan

    t = targets.get(args.command)
    with declare(args.host):
        programs = (dry_run.runs_plan(t, runs, diag=diag, memory=None) if runs
                    else t.dry_run(args.scale or SCALE.default, diag=diag, **extra))
        show_plan(programs, None, extra.get("solver", "converged"), extra.get("model", "brax"))


def cmd_diagnostic(args):
    from pgdiag.diagnostics.subjects import parse_settings
    from pgdiag.experiments import targets
    t = targets.get(args.command)
    kind = t.measurement.settings
    if getattr(args, "dry_run", False):
        return cmd_dry_run(args, kind)
    check_host_arg(args)
    if args.from_dir:
        if args.run or args.diag:
            raise ConfigError(f"{args.command} --from redraws saved results: --run and --diag choose what to measure "
                              f"and cannot be combined with it")
        _from_args(args)
        out = t.redraw(args.from_dir, out=args.out)
    else:
        from pgdiag.cli.imports import policy_runs

        diag = parse_settings(kind, args.diag)
        _check_run_args(args)
        out_dir = args.out or args.default_out
        runs = (args.run or []) + policy_runs(args.policy, args.policy_option, out_dir)
        out = t.train(args.scale or SCALE.default, out=out_dir, runs=runs or None, diag=diag, **_experiment_args(args))
    _show(out)


def _dry_run_arg(p):
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (programs, agents or subjects, pairs, sequential steps, memory, duration) "
                        "and stop; nothing is trained or measured (where this host has recorded no step cost, a few "
                        "steps are timed for the estimate)")
    host_arg(p)


def check_host_arg(args) -> None:
    """--host declares the host a plan is for; a run runs where it is."""
    if getattr(args, "host", None):
        raise ConfigError(f"{args.command} --host {args.host}: a host profile plans for another host and needs "
                          f"--dry-run; a run runs on the host it is started on")


def host_arg(p):
    p.add_argument("--host", default=None, metavar="PROFILE",
                   help="with --dry-run: plan for the host a profile declares (written there by `pgdiag host save "
                        "FILE`): its devices, memory and recorded step costs; nothing is timed here")


def _diagnostic_args(p):
    p.add_argument("--run", action="append", metavar="RUN_DIR",
                   help="measure this run directory (repeatable; it needs checkpoints) instead of training")
    p.add_argument("--policy", action="append", metavar="KIND:PATH", help=policy_help())
    p.add_argument("--policy-option", action="append", metavar="NAME=VALUE", help=policy_option_help())
    p.add_argument("--diag", action="append", metavar="NAME=VALUE",
                   help="a measurement setting (repeatable), e.g. --diag estimates=10 --diag sizes=100,1000,1e4 "
                        "--diag true_pairs=1e6 (see pgdiag.diagnostics.GradientSettings, StepSettings, "
                        "BaselineSettings, LandscapeSettings)")


def _add_from(p, default_out, scales: dict):
    # --scale and --out default to None so that --from can tell what was given; a target offers its own scales,
    # each described as the target describes it (``scales``: name -> description)
    p.add_argument("--scale", default=None, choices=list(scales),
                   help="; ".join(f"{s}{' (default)' if s == SCALE.default else ''}: {d.rstrip('.')}"
                                  for s, d in scales.items())
                   .replace("%", "%%"))
    p.add_argument("--out", default=None,
                   help=f"output directory (default {default_out}; with --from: the --from directory)")
    p.add_argument("--from", dest="from_dir", metavar="DIR", default=None,
                   help="redraw from the results saved in DIR (what --out was when the study trained) without "
                        "training anything")
    p.set_defaults(default_out=default_out)


def _add_target(sub, t) -> None:
    """The sub-command of target ``t`` ([`pgdiag.experiments.targets`][pgdiag.experiments.targets])."""
    p = sub.add_parser(t.name, help=t.help.replace("%", "%%"))   # argparse formats help with %
    _add_from(p, t.default_out, {s: t.scales[s].description
                                 for s in sorted(t.scales, key=lambda s: (s != SCALE.default, s != "mid", s))})
    _dry_run_arg(p)
    if t.kind == "optimize":
        p.add_argument("--steps", type=int, default=None, help="optimizer steps (default: the scale's)")
        p.add_argument("--task", default=None, help="the task whose batch is optimized (default: the scale's)")
        p.set_defaults(func=cmd_target)
        return
    p.add_argument("--task", action="append", help="restrict to these tasks (repeatable)")
    p.add_argument("--seeds", type=int, default=None,
                   help="agents per configuration (default: the scale's); saved runs of the same configuration "
                        "are reused seed by seed, so a larger count trains only the seeds not yet saved")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a static setting or knob")
    p.add_argument("--progress", dest="progress", action="store_true", default=None)
    p.add_argument("--no-progress", dest="progress", action="store_false")
    if "reporting" in t.options:
        p.add_argument("--reporting", **option(REPORTING_RULE))
    if "statistic" in t.options:
        p.add_argument("--statistic", **option(STATISTIC))
    if "algorithm" in t.options:
        _algorithms_arg(p)
    if t.kind == "diagnostic":
        _diagnostic_args(p)
    add_distributed(p)
    p.set_defaults(func=cmd_diagnostic if t.kind == "diagnostic" else cmd_target)


def add_studies(sub) -> None:
    """Every figure and table target ([`pgdiag.experiments.targets.TARGETS`][pgdiag.experiments.targets.TARGETS])
    as a subcommand of ``sub``."""
    from pgdiag.experiments import targets
    for t in targets.TARGETS.values():
        _add_target(sub, t)
