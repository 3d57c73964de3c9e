"""What a target will do, before it does it: ``pgdiag TARGET --dry-run`` and ``Target.dry_run``.

A plan lists every compiled program a target runs at a scale — the training sweeps that make its checkpoints,
then each measurement — with its agents or subjects, state–action pairs, sequential batched steps, the batch
each step moves, the estimated peak memory against the memory the host (or a declared accelerator) has, and
an estimated duration where this host has a recorded per-step cost (``benchmarks/bench_crossover.py
--record``). Nothing is compiled: the measurements are resolved against the configurations the target would
train, as the study itself resolves them against the runs, and a measurement that does not fit is planned as
the study will run it (the landscape's subjects in turn and shorter chunks, an MJX or Warp gradient study narrower).
"""

from __future__ import annotations

import dataclasses

from pgdiag.config import ConfigError, study_preset
from pgdiag.diagnostics.engine import plan_shapes
from pgdiag.diagnostics import placement
from pgdiag.diagnostics.memory import WORD, available_memory, pair_words, refusal_text
from pgdiag.envs import sizes as task_sizes
from pgdiag.experiments.costs import run_seconds
from pgdiag.experiments.scales import pick
from pgdiag.experiments.training import preset_groups, presets_of
from pgdiag.diagnostics.subjects import DiagnosticError, label_of, plan_subjects


@dataclasses.dataclass(frozen=True)
class Program:
    stage: str            # "train" or the measurement
    task: str
    presets: str
    units: int            # agents (training) or subjects (measurement)
    pairs: int            # state–action pairs sampled
    sequential_steps: int  # batched steps one after another
    width: int            # environments one batched step moves
    memory: int           # estimated peak bytes
    fits: bool
    note: str = ""
    #: a training program's sweep: (base Config, grid, seeds) as ``sweep`` takes them (not part of the plan's
    #: identity: two targets that train the same runs plan the same program)
    spec: tuple | None = dataclasses.field(default=None, compare=False, repr=False)
    model: str = "brax"         # the MuJoCo model and solver setting its physics steps (its cost per step)
    solver: str = "converged"
    physics: str = "auto"       # the backend asked for ("auto": the one physics=auto picks on the host)
    placement: str = "auto"     # the runs' placement (a measurement of native runs: on the host's CPU unless "device")
    #: the bytes a program may use where it runs (the accelerator's, or the host's RAM): what it is checked against,
    #: not what it is (two plans of the same program against other memories plan the same program)
    available: int = dataclasses.field(default=0, compare=False)
    #: where it does not fit, the line its run would be refused with (what to lower)
    refusal: str = dataclasses.field(default="", compare=False)


def budget(memory: int | None) -> int:
    """The bytes a program on the default devices may use: ``memory`` where given, else what this host (or a
    declared one, [`pgdiag.envs.hosts`][pgdiag.envs.hosts]) allows it
    ([`available_memory`][pgdiag.diagnostics.memory.available_memory])."""
    return available_memory() if memory is None else int(memory)


def training_program(task, names: str, static, agents: int, have, spec: tuple | None = None) -> Program:
    """One training sweep of ``agents`` agents sharing ``static`` (one compiled program) against ``have`` bytes
    ([`budget`][pgdiag.experiments.dry_run.budget]); ``spec``: its (base Config, grid, seeds)."""
    have = budget(have)
    obs, act = task_sizes(task, static.model)
    memory = WORD * agents * static.num_envs * static.steps_per_env * pair_words(obs, act, static)
    return Program("train", task, names, agents, agents * static.num_iterations * static.num_envs *
                   static.steps_per_env, static.num_iterations * static.steps_per_env, agents * static.num_envs,
                   memory, memory <= have, spec=spec, model=static.model, solver=static.solver,
                   physics=static.physics, placement=static.placement, available=have)


def preset_training(task, algos, seeds, over, have) -> list:
    """One training sweep per static configuration (PPO and PPO-M share one: their toggles are knobs)."""
    out = []
    for base, points in preset_groups(task, algos, **over):
        names = [a for a, _ in points]
        out.append(training_program(task, "+".join(names), base.static, seeds * len(names), have,
                                    spec=(base, [p for _, p in points], seeds)))
    return out


def training_plan(target, scale: str = "smoke", tasks=None, seeds=None, memory: int | None = 1 << 62, presets=None,
                  **overrides) -> list:
    """The sweeps of a target that trains presets (``target.presets``; ``presets`` instead where it takes
    ``--algorithm``), as its ``run`` would start them: one per task and static configuration."""
    if presets and "algorithm" not in target.options:
        raise ConfigError(f"{target.name} trains its own presets ({', '.join(target.presets)}); it takes no "
                          f"--algorithm")
    sc = pick(target.scales, scale)
    algos = presets_of(presets, sc.presets or target.presets)   # a scale may train more (runs shared)
    return [p for t in tuple(tasks or sc.tasks_of())
            for p in preset_training(t, algos, seeds or sc.seeds, sc.training(t, overrides), memory)]


def measurement_shapes(study, task, statics: dict, subjects_per: int, settings: dict, have) -> list:
    """The programs of the measurement ``study`` (a `Diagnostic`) on ``task`` (``statics``: preset -> Static of its
    runs), shaped as the study shapes them
    ([`pgdiag.diagnostics.engine.plan_shapes`][pgdiag.diagnostics.engine.plan_shapes]) against ``have`` bytes, or
    with None each against the memory of where it runs, as the study checks it
    ([`pgdiag.diagnostics.placement.memory_bytes`][pgdiag.diagnostics.placement.memory_bytes])."""
    first = next(iter(statics.values()))

    def physics(labels):   # the physics of the runs a shape measures (saved runs may mix them)
        s = statics.get(labels[0], first) if labels else first
        return {"model": s.model, "solver": s.solver, "physics": s.physics, "placement": s.placement}

    def program(s):
        available = placement.memory_bytes(s.static) if have is None else int(have)
        refusal = "" if s.fits or not s.refusal else refusal_text(s.bytes, *s.refusal, available)
        return Program(study.kind, task, "+".join(s.labels), s.units, s.pairs, s.sequential_steps, s.width, s.bytes,
                       s.fits, s.note, **physics(s.labels), available=available, refusal=refusal)

    return [program(s) for s in plan_shapes(study, task, statics, subjects_per, settings, have)]


def shape_seconds(shape, task: str, step_ms, study: str = "measure") -> float | None:
    """A diagnostic program's estimated running seconds, as its plan estimates them, from an engine `Shape` of the
    measurement ``study`` ([`run_seconds`][pgdiag.experiments.costs.run_seconds]); None where this host has no cost
    for its physics."""
    static = shape.static
    program = Program(study, task, "+".join(shape.labels), shape.units, shape.pairs,
                      shape.sequential_steps, shape.width, shape.bytes, shape.fits, model=static.model,
                      solver=static.solver, physics=static.physics, placement=static.placement)
    return run_seconds(program, step_ms)


def measurement_plan(target, scale: str = "smoke", tasks=None, seeds=None, diag: dict | None = None,
                     memory: int | None = 1 << 62, **overrides) -> list:
    """A diagnostic target's programs: the training sweeps that make its checkpoints (the scale's presets, else
    the target's), then its measurement on the presets it measures at the checkpoints the scale measures."""
    sc, m = pick(target.scales, scale), target.measurement
    trained = sc.presets or target.presets   # a scale may train more presets (runs its targets share)
    seeds = seeds or sc.seeds
    programs = []
    for task in tuple(tasks or sc.tasks_of(target.name)):
        over = sc.training(task, overrides)
        programs += preset_training(task, trained, seeds, over, memory)
        statics = {a: study_preset(a, task, **over).static for a in target.measured_presets}
        checkpoints = len(sc.checkpoints(m.name) or next(iter(statics.values())).checkpoint_at) or 1
        programs += measurement_shapes(m.study, task, statics, seeds * checkpoints, sc.measuring(m.name, task, diag),
                                       memory)
    return programs


def runs_plan(target, runs, diag: dict | None = None, memory: int | None = 1 << 62, scale: str = "smoke",
              iterations=None, agents=None) -> list:
    """A diagnostic target's programs on saved ``runs`` (``--run``): its measurement of every agent (or
    ``agents``) at every checkpoint they keep (or ``iterations``), task by task, with the settings the measurement
    would take (the scale's, the task's, then ``diag``); the manifests are read, no checkpoint is loaded and
    nothing is compiled."""

    sc, m = pick(target.scales, scale), target.measurement
    try:
        planned = plan_subjects(list(runs), iterations, agents)
    except DiagnosticError as e:
        raise ConfigError(f"{target.name} --run: {e}") from None
    by_task: dict = {}
    for run, agent, _ in planned:
        static = run.config(agent).static
        statics, counts = by_task.setdefault(static.task, ({}, {}))
        label = label_of(run, agent)
        statics.setdefault(label, static)
        counts[label] = counts.get(label, 0) + 1
    return [p for task, (statics, counts) in by_task.items()
            for p in measurement_shapes(m.study, task, statics, counts, sc.measuring(m.name, task, diag), memory)]


def table(programs: list, step_ms=None):
    """The plan as a DataFrame; ``step_ms(task, width, model, solver, physics) -> ms or None`` adds each program's
    estimated seconds without compiling
    ([`pgdiag.experiments.costs.run_seconds`][pgdiag.experiments.costs.run_seconds]: this host's recorded training
    cost per step where there is one, else the program's physics × its kind's overhead, or + a fixed cost per step
    where its collection and update are split between a host's CPU and its accelerator); on an accelerator host a
    ``path`` column says where each program runs ([`where_here`][pgdiag.experiments.costs.where_here]: a
    measurement of native physics on the host's CPU, or by host callback from the device, a fixed cost per step
    more), and a ``backend`` column the physics each steps ([`backend_here`][pgdiag.experiments.costs.backend_here]:
    what ``auto`` takes at its width)."""
    import pandas as pd

    from pgdiag.experiments.costs import backend_here, where_here

    rows = []
    for p in programs:
        row = {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.name not in ("spec", "refusal")}
        seconds = run_seconds(p, step_ms) if step_ms else None
        row["estimated_s"] = None if seconds is None else round(seconds, 1)
        row["path"] = where_here(p) or ""    # on an accelerator host: split, accelerator, host or callback
        rows.append(row)
    frame = pd.DataFrame(rows)
    if not frame.empty:   # beside the physics asked for, what it is here ("auto" resolved at each width)
        frame.insert(frame.columns.get_loc("physics") + 1, "backend", [backend_here(p) for p in programs])
    return frame if frame.empty or frame["path"].any() else frame.drop(columns="path")


__all__ = ["Program", "budget", "measurement_plan", "measurement_shapes", "preset_training", "runs_plan", "table",
           "training_plan", "training_program"]
