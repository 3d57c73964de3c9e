"""Plans from Python before anything runs: what a sweep or a study would compile, its memory and its duration,
as `--dry-run` prints them on the command line.

    pgdiag.plan_sweep(base, grid={"lr_policy": [1e-4, 3e-4]}, seeds=5)
    pgdiag.plan_study("gradients", ["runs/hopper-vclip"], estimates=10, sizes=(100, 1000, 10_000))

Each prints the table (one row per compiled program: agents or subjects, pairs, sequential steps, width,
memory, whether it fits, estimated seconds without compiling) and a total, and returns the table. Step costs
are this host's recorded ones, else timed now (a few batched steps, seconds).
"""

from __future__ import annotations

from pgdiag.config import ConfigError, Setting
from pgdiag.envs.hosts import declare
from pgdiag.experiments.target_types import PAPER

#: the scale(s) a report's plan is made at where none is named (``pgdiag report --dry-run``)
REPORT_SCALE = Setting("paper", "The scale(s) a report's plan is made at, comma-separated.")
#: the Python studies' names -> the target whose measurement they are
STUDIES = {"gradients": "fig-grad-variance", "steps": "fig-step-variance", "baselines": "fig-baselines",
           "landscape": "fig-landscape-surrogate"}


def show_plan(programs: list, have: int | None = None, solver: str = "converged", model: str = "brax",
              show: bool = True, owners: list | None = None):
    """The plan's table with each program's estimated seconds (``owners``: a first column, the targets that run each
    program); printed with its totals where ``show``. Each program is checked against the memory where it runs
    (its ``available``); ``have`` is only what the summary names where programs do not say."""
    from pgdiag.diagnostics.memory import fmt_bytes
    from pgdiag.envs import hosts
    from pgdiag.experiments import costs, dry_run

    # this host's recorded costs, but timed now below the narrowest recorded batch: a plan after a report's studies,
    # whose physics were recorded at 256 environments and more, charged a 14-agent training the 256-wide step (13×
    # its own); a declared host's profile, which nothing here can time, is read below its rows too
    recorded = costs.recorded_step_ms(solver, model, below=hosts.declared() is not None)
    timed_now, timed = costs.measured_step_ms(solver, model), set()

    def step_ms(task, width, model=model, solver=solver, physics="auto"):  # recorded, else timed now (a compile)
        ms = recorded(task, width, model, solver, physics)
        if ms is None:
            timed.add(task)
            ms = timed_now(task, width, model, solver, physics)
        return ms

    frame = dry_run.table(programs, step_ms)
    if not frame.empty and have is not None:
        frame.loc[frame.available == 0, "available"] = have
    if owners is not None:
        frame.insert(0, "targets", owners)
    if show:
        shown = frame.assign(memory=frame.memory.map(fmt_bytes), available=frame.available.map(fmt_bytes))
        print((shown if frame.available.nunique() > 1 else shown.drop(columns="available")).to_string(index=False))
        print(_summary(frame))
        for p in programs:
            if p.refusal:   # what its run would say, before anything compiles
                print(f"does not fit: {p.stage} {p.task} {p.presets}: {p.refusal}")
        print(_costs_line(frame, timed))
    return frame


def _summary(frame) -> str:
    """The plan's totals: programs, pairs, the memory each was checked against, the estimated duration."""
    from pgdiag.diagnostics.memory import available_memory, fmt_bytes, memory_source
    from pgdiag.envs import hosts

    words = {available_memory(host=True): memory_source(host=True), available_memory(): memory_source()}
    where = "; ".join(f"{fmt_bytes(b)}" + (f" ({words[b]})" if b in words else " (as given)")
                      for b in sorted(set(int(b) for b in frame.available)))
    total = frame.estimated_s.sum()
    host = hosts.declared()
    return (f"{len(frame)} programs, {int(frame.pairs.sum()):,} pairs; "
            + ("every program fits" if frame.fits.all() else f"{int((~frame.fits).sum())} do not fit")
            + f" the memory where it runs: {where}; estimated duration (without compiling)"
            + (f" on {host.describe()}" if host else "") + ": "
            + (f"{total / 60:.1f} min" if total >= 60 else f"{total:.1f} s")
            + (f" ({int(frame.estimated_s.isna().sum())} without an estimate)" if frame.estimated_s.isna().any()
               else ""))


def _costs_line(frame, timed: set) -> str:
    """Where the step costs came from: recorded on this host, timed now, or a declared host's profile."""
    from pgdiag.envs import hosts

    recorded_tasks = sorted(set(frame.task) - timed)
    if hosts.declared():
        missing = sorted(set(frame.task[frame.estimated_s.isna()]))
        found = [t for t in sorted(set(frame.task)) if t not in missing]
        return "step costs: " + "; ".join(
            [f"from {hosts.declared().source or 'the declared host'} for {', '.join(found)}"] * bool(found)
            + [f"none in the profile for {', '.join(missing)} (record them there: python "
               f"benchmarks/bench_crossover.py --record, then pgdiag host save)"] * bool(missing))
    return "step costs: " + "; ".join(
        [f"recorded on this host for {', '.join(recorded_tasks)}"] * bool(recorded_tasks)
        + [f"timed now for {', '.join(sorted(timed))} (a few batched steps each, seconds; "
           f"python benchmarks/bench_crossover.py --record keeps this host's costs)"] * bool(timed))


def plan_sweep(base, grid=None, seeds=1, show: bool = True, host=None):
    """What [`sweep`][pgdiag.run.execute.sweep] ``(base, grid, seeds)`` would compile and cost; nothing runs.

    Args:
        host: plan for the host a profile declares (its path, or a `Host`; [`pgdiag.envs.hosts`][pgdiag.envs.hosts],
            ``pgdiag host save`` writes one there); default this one.

    Returns:
        The plan's table (one training program: every agent of the grid × seeds).
    """
    from pgdiag.experiments import dry_run
    from pgdiag.run.rosters import roster

    p = roster(base, grid, seeds)   # the grid and seeds checked as sweep checks them
    static = p.base.static
    with declare(host):
        program = dry_run.training_program(static.task, p.base.name, static, p.num_agents, None,
                                           spec=(p.base, grid, seeds))
        return show_plan([program], None, static.solver, static.model, show)


def plan_study(study: str, runs, iterations=None, agents=None, show: bool = True, host=None, **settings):
    """What a study of ``runs`` would compile and cost with ``settings`` (its fields); nothing is loaded or run.

    Args:
        study: "gradients", "steps", "baselines" or "landscape" (the Python studies), or a diagnostic target's
            name ("fig-grad-true", "fig-landscape-concentration", ...).
        runs: run directories with checkpoints.
        iterations: the checkpointed iterations to measure at (None: every saved one).
        agents: agent indices in each run (None: all).
        show: print the table and its totals.
        host: plan for the host a profile declares (as [`plan_sweep`][pgdiag.experiments.planner.plan_sweep]).
        **settings: the study's settings, e.g. ``estimates=10, sizes=(100, 1000, 10_000)``.

    Returns:
        The plan's table, one row per compiled program.
    """
    from pgdiag.experiments import dry_run, targets

    name = STUDIES.get(study, study)
    if name not in targets.TARGETS or targets.get(name).kind != "diagnostic":
        raise ConfigError(f"plan_study: unknown study {study!r}; studies are {', '.join(STUDIES)} or a diagnostic "
                          f"target's name")
    with declare(host):
        programs = dry_run.runs_plan(targets.get(name), [runs] if isinstance(runs, str) else list(runs),
                                     diag=settings, memory=None, iterations=iterations, agents=agents)
        first = programs[0] if programs else None
        return show_plan(programs, None, getattr(first, "solver", "converged"), getattr(first, "model", "brax"),
                         show)


def plan_report(paper: str = PAPER.default, scale: str = REPORT_SCALE.default, show: bool = True, host=None):
    """What ``make closer-look-report SCALE=scale`` (``paper="im"``: the implementation-matters report) would
    compile and cost: every program of every target the paper's report reads, at ``scale`` (several,
    comma-separated: each), each program once however many targets share it (their trainings, as the report's
    targets share them); nothing is compiled or run. A target without that scale is left out, and said so.
    ``host``: plan for the host a profile declares (as [`plan_sweep`][pgdiag.experiments.planner.plan_sweep]).

    Returns:
        The plan's table, one row per compiled program, its first column the targets that run it.
    """
    from pgdiag.experiments import targets
    from pgdiag.experiments.report import check_paper

    owners, missing = {}, []
    scales = [x for x in scale.split(",") if x]
    with declare(host):
        for t in targets.of_paper(check_paper(paper)):
            for sc in scales:
                if sc not in t.scales:
                    missing.append(f"{t.name} ({sc})")
                    continue
                for p in t.dry_run(sc):
                    owners.setdefault(p, []).append(t.name)
        if not owners:
            raise ConfigError(f"report --dry-run --scale {scale!r}: no target of the report has that scale")
        if missing and show:
            print(f"without scale {scale}: {', '.join(missing)}")
        return show_plan(list(owners), None, show=show, owners=[", ".join(dict.fromkeys(v)) for v in owners.values()])


__all__ = ["REPORT_SCALE", "STUDIES", "plan_report", "plan_study", "plan_sweep", "show_plan"]
