"""What a diagnostic target will do, before it does it: ``pg-diag TARGET --dry-run`` and :func:`plan`.

A plan lists every compiled program a target runs at a scale — the training sweeps that make its checkpoints,
then each measurement — with its agents or subjects, state–action pairs, sequential batched steps, the batch
each step moves, the estimated peak memory against the memory the host (or a declared accelerator) has, and
an estimated duration where this host has a recorded per-step cost (``benchmarks/bench_crossover.py
--record``). Nothing is compiled: the measurements are resolved against the configurations the target would
train, as the study itself resolves them against the runs, and a measurement that does not fit is planned as
the study will run it (the landscape's subjects in turn and shorter chunks, an MJX gradient study narrower).
"""

from __future__ import annotations

import dataclasses

from pg_diag.config import ConfigError, preset, study_preset
from pg_diag.envs import sizes as task_sizes
from pg_diag.experiments import targets
# the cost model (costs.py); its functions stay reachable as plan.duration, plan.measured_step_ms, ...
from pg_diag.experiments.costs import duration, interpolate, measured_step_ms, recorded_step_ms
from pg_diag.experiments.scales import pick

DIAGNOSTIC_TARGETS = targets.of_kind("diagnostic")
#: targets that only train (their figures read the training metrics), and fig-theorem
TRAINING_TARGETS = targets.of_kind("training", "optimize")


@dataclasses.dataclass(frozen=True)
class Program:
    stage: str            # "train" or the measurement
    task: str
    algorithms: str
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


def num_params(static, obs_size: int, action_size: int) -> int:
    """The policy's parameter count (the diagnostics' gradient length): its MLP and the log-std vector."""
    sizes = (obs_size,) + tuple(static.policy_hidden) + (action_size,)
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:])) + action_size


def training_program(task, names: str, static, agents: int, have, spec: tuple | None = None) -> Program:
    """One training sweep of ``agents`` agents sharing ``static`` (one compiled program); ``spec``: its
    (base Config, grid, seeds)."""
    obs, act = task_sizes(task, static.model)
    per_pair = 2 * obs + 2 * act + 12 + 3 * sum(static.policy_hidden) + 3 * sum(static.value_hidden)
    memory = 4 * agents * static.num_envs * static.steps_per_env * per_pair
    return Program("train", task, names, agents, agents * static.num_iterations * static.num_envs *
                   static.steps_per_env, static.num_iterations * static.steps_per_env, agents * static.num_envs,
                   memory, memory <= have, spec=spec)


def _training(task, algos, seeds, over, have) -> list:
    """One training sweep per static configuration (PPO and PPO-M share one: their toggles are knobs)."""
    from pg_diag.experiments.training import preset_groups

    out = []
    for base, points in preset_groups(task, algos, **over):
        names = [a for a, _ in points]
        out.append(training_program(task, "+".join(names), base.static, seeds * len(names), have,
                                    spec=(base, [p for _, p in points], seeds)))
    return out


def _training_target(target, scale, tasks, seeds, have, overrides, chosen=None) -> list:
    """The sweeps of a target that only trains, as its ``run`` would start them."""
    from pg_diag.experiments import ablation, algorithms, training, trust_region, value_fig

    if target == "solver-compare":  # fig-ablation and table-2 under each solver setting
        from pg_diag.experiments.solver_compare import SOLVERS

        if "solver" in overrides:
            raise ConfigError("solver-compare trains under both solver settings: do not set solver")
        return [dataclasses.replace(p, note=f"solver={solver}") for solver in SOLVERS
                for part in ("fig-ablation", "table-2")
                for p in _training_target(part, scale, tasks, seeds, have, {**overrides, "solver": solver})]
    if target == "fig-theorem":  # one batch of the PPO preset, then every optimizer on it in turn
        from pg_diag.experiments import theorem

        sc = pick(theorem.SCALES, scale)
        task, steps = (tasks or sc.tasks_of())[0], sc.settings["optimize"]["steps"]
        s = preset("ppo", task, **overrides).static
        obs, act = task_sizes(task, s.model)
        pairs = s.num_envs * s.steps_per_env
        memory = 4 * pairs * (2 * obs + 2 * act + 12 + 3 * sum(s.policy_hidden))
        return [Program("optimize", task, "ppo", len(theorem.OPTIMIZERS), pairs,
                        s.steps_per_env + len(theorem.OPTIMIZERS) * steps, s.num_envs, memory, memory <= have,
                        f"{steps} full-batch steps per optimizer")]
    if target == "fig-ablation":
        sc = pick(ablation.SCALES, scale)
        n = seeds or sc.seeds
        agents = 2 ** len(ablation.TOGGLES) * len(sc.settings["grid"]["lr_policy"]) * n
        bases = {t: ablation.base_config(t, sc).replace(**overrides) for t in tuple(tasks or sc.tasks_of())}
        return [training_program(t, "ppo (2^4 toggles × LR)", base.static, agents, have,
                                 spec=(base, ablation.grid(sc), n)) for t, base in bases.items()]
    module, algos = {"fig-trust-region": (trust_region, trust_region.ALGORITHMS),
                     "fig-value": (value_fig, value_fig.ALGORITHMS)}.get(
        target, (algorithms, algorithms.ALGORITHM_PRESETS))
    if chosen and target not in ("fig-trust-region", "fig-value"):
        raise ConfigError(f"{target} trains its own presets; --algorithm applies to fig-trust-region and fig-value")
    sc = pick(module.SCALES, scale)
    algos = training.presets_of(chosen, sc.algorithms or algos)   # a scale may train more (runs shared)
    over = {**sc.overrides, **overrides}
    return [p for t in tuple(tasks or sc.tasks_of()) for p in _training(t, algos, seeds or sc.seeds, over, have)]


def _measure(target, task, statics: dict, subjects_per: int, settings: dict, have) -> list:
    """The measurement programs of ``target`` on ``task`` (``statics``: algorithm -> Static of its runs), shaped
    as the study shapes them (:func:`pg_diag.diagnostics.engine.plan_shapes`)."""
    from pg_diag.diagnostics.engine import plan_shapes

    # the study a target's measurement (its settings' name in a Scale) runs: the landscapes' two are one study
    measurement = targets.get(target).measurement
    kind = "landscape" if measurement.startswith("fig-landscape-") else measurement
    return [Program(kind, task, "+".join(s.labels), s.units, s.pairs, s.sequential_steps, s.width, s.bytes, s.fits,
                    s.note) for s in plan_shapes(kind, task, statics, subjects_per, settings, have)]


def plan(target: str, scale: str = "smoke", tasks=None, seeds=None, diag: dict | None = None,
         memory: int | None = None, **overrides) -> list:
    """The programs ``target`` runs at ``scale`` (see the module docstring); ``memory``: the bytes available
    (default: what the study itself would check against on this host)."""
    import importlib

    from pg_diag.diagnostics.memory import available_memory

    if target not in DIAGNOSTIC_TARGETS + TRAINING_TARGETS:
        raise ConfigError(f"--dry-run: no plan for target {target!r}; targets with one: "
                          f"{', '.join(DIAGNOSTIC_TARGETS + TRAINING_TARGETS)}")
    have = int(memory) if memory is not None else available_memory()
    if target in TRAINING_TARGETS:
        if diag:
            raise ConfigError(f"{target} only trains: it has no measurement settings, got {sorted(diag)}")
        algos = overrides.pop("algorithms", None)
        return _training_target(target, scale, tasks, seeds, have, overrides, algos)
    t = targets.get(target)
    module = importlib.import_module(f"pg_diag.experiments.{t.run.split(':')[0]}")
    sc, measured = pick(module.SCALES, scale), t.measurement
    trained = sc.algorithms or module.ALGORITHMS   # a scale may train more presets (runs its targets share)
    algos = getattr(module, "MEASURED", {}).get(target, module.ALGORITHMS)   # what the target measures
    seeds = seeds or sc.seeds
    programs = []
    for task in tuple(tasks or sc.tasks_of(target)):
        over = sc.training(task, overrides)
        programs += _training(task, trained, seeds, over, have)
        statics = {a: study_preset(a, task, **over).static for a in algos}
        checkpoints = len(sc.checkpoints(measured) or next(iter(statics.values())).checkpoint_at) or 1
        programs += _measure(target, task, statics, seeds * checkpoints, sc.measuring(measured, task, diag), have)
    return programs


def table(programs: list, step_ms=None):
    """The plan as a DataFrame; ``step_ms(task, width) -> ms or None`` adds each program's estimated seconds
    without compiling (:func:`pg_diag.experiments.costs.run_seconds`: this host's recorded training cost per
    step where there is one, else physics × the program kind's overhead)."""
    import pandas as pd

    from pg_diag.experiments.costs import run_seconds

    rows = []
    for p in programs:
        row = {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.name != "spec"}
        seconds = run_seconds(p, step_ms) if step_ms else None
        row["estimated_s"] = None if seconds is None else round(seconds, 1)
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = ["DIAGNOSTIC_TARGETS", "TRAINING_TARGETS", "Program", "duration", "measured_step_ms", "num_params", "plan",
           "interpolate", "recorded_step_ms", "table", "training_program"]
