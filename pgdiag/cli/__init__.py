"""The ``pgdiag`` command line.

    pgdiag tasks | knobs | algorithms | networks | presets
    pgdiag train --preset ppo --task hopper --set lr_policy=1e-4 --out runs/one
    pgdiag sweep --preset ppo --task hopper --grid value_clipping=off,on \\
                  --grid lr_policy=1e-4,3e-4 --seeds 5 --out runs/sweep
    pgdiag show runs/sweep
    pgdiag resume runs/sweep
    pgdiag rerun runs/sweep --out runs/again
    pgdiag plot runs/sweep --metric value_loss | pgdiag export runs/sweep   # TensorBoard
    pgdiag fig-ablation | fig-trust-region | fig-value | fig-rewards | table-2 | table-3 | fig-theorem
            [--scale smoke|paper]
    pgdiag fig-grad-variance | fig-grad-true | fig-step-variance | fig-baselines
            | fig-landscape-concentration | fig-landscape-surrogate [--scale smoke|paper | --run DIR ...]
    pgdiag report --from results [--paper cl|im] [--scale smoke] [--out DIR]   # a paper's claims on saved studies
    pgdiag host save gpu.json | pgdiag report --dry-run --scale paper --host gpu.json   # plan for another host
"""

from __future__ import annotations

import argparse
import os
import sys

from pgdiag.adapters.pickles import ArchiveError
from pgdiag.aggregates import REPS
from pgdiag.cli.options import option
from pgdiag.cli.runs import (add_distributed, add_log, add_run_args, cmd_algorithms, cmd_export, cmd_knobs,
                             cmd_networks, cmd_plot, cmd_presets, cmd_rerun, cmd_resume, cmd_show, cmd_sweep, cmd_tasks,
                             cmd_train)
from pgdiag.cli.imports import add_import
from pgdiag.cli.hosts import add_hosts
from pgdiag.cli.replication import add_replication
from pgdiag.cli.studies import add_studies, check_host_arg, host_arg
from pgdiag.config import ConfigError
from pgdiag.experiments.aggregate_runs import METRIC
from pgdiag.experiments.planner import REPORT_SCALE
from pgdiag.experiments.target_types import PAPER, RESULTS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pgdiag", description="Experiments on deep policy-gradient algorithms.")
    parser.add_argument("--load", action="append", default=[], metavar="FILE_OR_MODULE",
                        help="import a Python file or module first, e.g. one that registers targets, algorithms "
                             "or tasks of your own (repeatable; before the command)")
    sub = parser.add_subparsers(dest="command", required=True)

    for add in (_add_listings, _add_runs, _add_report, _add_aggregate, add_import, add_hosts, add_replication,
                add_studies):
        add(sub)
    return parser


def _add_listings(sub) -> None:
    sub.add_parser("tasks", help="list tasks").set_defaults(func=cmd_tasks)
    sub.add_parser("knobs", help="list traced knobs and static settings").set_defaults(func=cmd_knobs)
    sub.add_parser("algorithms", help="list the registered algorithms, their knobs and constraints").set_defaults(
        func=cmd_algorithms)
    sub.add_parser("networks", help="list the registered networks (the static setting network)").set_defaults(
        func=cmd_networks)
    p = sub.add_parser("presets", help="list algorithm presets (the papers' hyperparameters)")
    p.add_argument("--algorithm", default=None)
    p.add_argument("--task", default=None)
    p.add_argument("--full", action="store_true", help="print every setting, not just the preset's own")
    p.set_defaults(func=cmd_presets)


def _add_runs(sub) -> None:
    p = sub.add_parser("train", help="train one agent")
    add_run_args(p, sweep=False)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("sweep", help="train a grid of knob values × seeds as one compiled program")
    add_run_args(p, sweep=True)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("show", help="summarize a run directory")
    p.add_argument("run")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("resume", help="continue an interrupted run from its last saved state")
    p.add_argument("run", help="the run directory (the one given to --out)")
    _add_progress(p)
    add_log(p)
    add_distributed(p)
    p.set_defaults(func=cmd_resume)

    p = sub.add_parser("plot", help="a recorded metric of a run against iterations, mean over seeds with a 95%% CI")
    p.add_argument("run", help="the run directory")
    from pgdiag.metrics import METRICS
    p.add_argument("--metric", default="mean_return",
                   help=f"a recorded metric: {', '.join(METRICS)} (default mean_return)")
    p.add_argument("--out", default=None, help="the image to write (default RUN/plots/METRIC.png)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("export", help="a run's metrics as TensorBoard event files, one per agent")
    p.add_argument("run", help="the run directory")
    p.add_argument("--logdir", default=None, help="where to write them (default RUN/tensorboard)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("rerun", help="run a recorded run again from scratch (same configuration, grid and seeds)")
    p.add_argument("run", help="the run directory whose manifest to reproduce")
    p.add_argument("--out", default=None,
                   help="the new run directory to write (default a new runs/DATE-TIME-rerun-RUN)")
    _add_progress(p)
    add_distributed(p)
    p.set_defaults(func=cmd_rerun)


def _add_progress(p) -> None:
    p.add_argument("--progress", dest="progress", action="store_true", default=None, help="show a progress bar")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")


def _add_report(sub) -> None:
    p = sub.add_parser("report", help="check a paper's claims on saved studies: one Markdown page with every "
                                      "figure, each claim's quoted sentence, statistic, interval and verdict")
    p.add_argument("--paper", **option(PAPER, choices=False))   # check_paper's refusal says what each paper is
    p.add_argument("--from", dest="from_dir", **option(RESULTS))
    p.add_argument("--scale", default=None, help="read only the studies of this scale (where several are there), "
                                                  "or of several, comma-separated: mid,tasks reads the mid scale's "
                                                  "Hopper studies with the papers' own tasks beside them")
    p.add_argument("--out", default=None, help="where to write the report (default FROM/closer-look-report-SCALE "
                                               "or FROM/implementation-matters-report-SCALE, as make writes)")
    p.add_argument("--dry-run", action="store_true", help="print every program the report's targets would run at "
                                                         f"--scale (default {REPORT_SCALE.default}), each once, with "
                                                         "its memory and estimated duration, and the total; nothing "
                                                         "runs")
    host_arg(p)
    p.set_defaults(func=cmd_report)


def _add_aggregate(sub) -> None:
    p = sub.add_parser("aggregate", help="IQM, median, mean and optimality gap over tasks × seeds of saved runs, "
                                         "with stratified bootstrap intervals (rliable's estimators)")
    p.add_argument("runs", nargs="+", help="run directories (every agent's final score, per task and label)")
    p.add_argument("--metric", **option(METRIC))
    p.add_argument("--range", action="append", default=[], metavar="TASK=LOW,HIGH",
                   help="a task's reference range for normalized scores (repeatable; default: the lowest and "
                        "highest final score on the task among the runs)")
    p.add_argument("--reps", **option(REPS))
    p.add_argument("--out", default=None, help="also write aggregates.md and aggregates.csv there")
    p.set_defaults(func=cmd_aggregate)


def cmd_report(args) -> None:
    from pgdiag.experiments.report import check_paper, report

    if args.dry_run:
        from pgdiag.experiments.planner import plan_report

        plan_report(args.paper, args.scale or REPORT_SCALE.default, host=args.host)
        return
    check_host_arg(args)

    result = report(args.from_dir, args.out, args.scale, check_paper(args.paper))
    counts = result["findings"].outcome.value_counts()
    print(f"{result['report']}: {len(result['findings'])} findings from {', '.join(sorted(result['studies']))}: "
          + ", ".join(f"{n} {v}" for v, n in counts.items()))


def _ranges(given: list) -> dict:
    """--range TASK=LOW,HIGH values as {task: (low, high)}; a malformed one is named."""
    out = {}
    for item in given:
        task, _, bounds = item.partition("=")
        try:
            low, high = (float(v) for v in bounds.split(","))
        except ValueError:
            raise ConfigError(f"--range {item!r}: expected TASK=LOW,HIGH with two numbers, e.g. hopper=0,3500") \
                from None
        if not high > low:
            raise ConfigError(f"--range {item!r}: HIGH must exceed LOW")
        out[task] = (low, high)
    return out


def cmd_aggregate(args) -> None:
    from pgdiag.experiments.aggregate_runs import aggregate_runs

    if args.reps not in REPS.allowed:
        raise ConfigError(f"--reps {args.reps}: at least {REPS.allowed.low} bootstrap replicates, for 95% percentile "
                          f"intervals")
    from pgdiag.experiments.aggregate_tables import combined

    result = aggregate_runs(args.runs, args.metric, _ranges(args.range), args.reps, out=args.out)
    print(combined(result["table"], result["improvements"]).to_string(index=False))   # P(X > Y) rows after them
    print(result["note"])
    if "markdown" in result:
        print(f"wrote {result['markdown']}, {result['csv']} and {result['figure']}")


def _loads(argv: list) -> list:
    """The ``--load`` values before the command (they must be imported before the parser lists the targets)."""
    found, i = [], 0
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "--load" and i + 1 < len(argv):
            found.append(argv[i + 1])
            i += 2
            continue
        if argv[i].startswith("--load="):
            found.append(argv[i].split("=", 1)[1])
        i += 1
    return found


def load_plugin(what: str) -> None:
    """Import ``what``: a ``.py`` file (by its path) or a module name; a clear error where neither imports."""
    import importlib
    import importlib.util

    if what.endswith(".py"):
        if not os.path.isfile(what):
            raise ConfigError(f"--load {what!r}: no such file")
        name = f"pgdiag_load_{os.path.splitext(os.path.basename(what))[0]}"
        if name in sys.modules:    # loaded already (main called twice in one process)
            return
        spec = importlib.util.spec_from_file_location(name, what)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    else:
        try:
            importlib.import_module(what)
        except ModuleNotFoundError as e:
            raise ConfigError(f"--load {what!r}: {e}; give a .py file's path or an importable module") from None


def one_line(err, limit: int = 400) -> str:
    """An error as the command line prints it: one line (breaks and tabs as spaces), control characters escaped
    (a file's bytes cannot reach the terminal as escape codes), at most ``limit`` characters."""
    text = " ".join(str(err).split())
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _refuse(err) -> int:
    print(f"pgdiag: error: {one_line(err)}", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        for what in _loads(argv):
            load_plugin(what)
    except ConfigError as err:
        return _refuse(err)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if hasattr(args, "coordinator"):
            from pgdiag.run import distributed
            if distributed.initialize(args.coordinator, args.num_processes, args.process_id, args.join_timeout) \
                    and not distributed.is_lead():
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # process 0 reports; errors
                # still reach stderr (the file descriptor, so that the collectives' own messages go too)
        args.func(args)
    except (ConfigError, ArchiveError) as err:   # a user's option, path or file refused: one line, exit 2
        return _refuse(err)
    except BrokenPipeError:  # the reader of the output left (`pgdiag knobs | head`): nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # the interpreter's last flush too
        return 0
    except OSError as err:   # a path that cannot be read or written (a file where a directory goes, ...)
        return _refuse(err)
    except KeyboardInterrupt:  # the run directory is consistent and says how to resume
        return 130
    return 0


def entry() -> None:
    """The ``pgdiag`` command: [`main`][pgdiag.cli.main]'s exit code. An interrupted command leaves at once, once
    its run directory is written and its message printed: the interpreter's teardown with one of XLA's compilations
    cut short could end the process with a segmentation fault instead of exit code 130."""
    code = main()
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":
    sys.exit(main())
