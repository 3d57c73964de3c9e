"""What a plan costs on this host: per-step physics costs (recorded or measured now) and the estimated
duration of a plan's programs ([`pgdiag.experiments.dry_run`][pgdiag.experiments.dry_run])."""

from __future__ import annotations

import math
from pgdiag.config import task_kind
from pgdiag.envs import REGISTRY, crossover, hosts, recorded_physics
from pgdiag.experiments import train_cost
from pgdiag.run import split, timings

#: engine time over raw physics time (the physics of its costed steps), per kind of program, from the mid report's
#: programs on a 2-core CPU on two days whose Hopper steps cost 2.6× apart (benchmarks/results/plans-cpu-2026-11-27
#: and -11-29.md, each the geometric middle of what was measured): the gradient study 1.3–1.6 ×, the baselines 1.4 ×,
#: the landscapes 1.8–2.6 ×, the step study (its algorithm's updates) 2.1–2.7 ×; training 3.0–5.2 × on Hopper, what
#: a pure-JAX task's training is charged (a MuJoCo training on a CPU is costed from what its step does,
#: [`pgdiag.experiments.train_cost`][pgdiag.experiments.train_cost])
OVERHEAD = {"train": 4.0, "optimize": 1.0, "steps": 2.5, "gradients": 1.5, "baselines": 1.5, "landscape": 2.1}
#: a training step's cost beyond its physics on a host with an accelerator, in ms per batched step, by where the
#: iteration runs ([`where_here`][pgdiag.experiments.costs.where_here]); added, not multiplied: the update no
#: longer costs what the rollout does, as on a CPU. ``"split"`` (the collection on the host's CPU, the update on the
#: accelerator): the policy's sampling and the filters around the physics, the networks' and batch's transfers and
#: the update spread over the iteration's steps; an H200 host (16 cores, the collection in per-core blocks) measured
#: 0.04 for 320 one-environment Walker2d agents and 0.07 (PPO) to 0.10 (TRPO) for 5 Hopper agents over the physics
#: of the same batch (benchmarks/results/accelerator-h200-2026-11-26.md, the second iteration). ``"accelerator"``
#: (MJX or Warp physics, the whole iteration on the accelerator): the policy's and the filters' small kernels each
#: step; fig-ablation's 320 Walker2d agents measured 0.21 over Warp's physics on an H200
#: (benchmarks/results/accelerator-h200-2026-11-27.md) and 0.31 over MJX's on an H100
#: (accelerator-h100-2026-11-25.md), where the CPU's multiple planned 2.2× the measured time
#: ``"callback"`` (a measurement stepping native MuJoCo from a program on the accelerator: each batched step a host
#: callback, the state to the host and back): 0.36–0.40 ms a step at batch 1 on an H100 host against 0.022–0.086 for
#: ``mj_step`` (benchmarks/bench_native_placement.py), added to the measurement's own multiple of its physics
ACCELERATOR_FIXED_MS = {"split": 0.1, "accelerator": 0.3, "callback": 0.38}
#: a measurement's engine time over the physics of its costed steps where ``OVERHEAD`` does not name its kind (a
#: user's own study): the middle of the built-in measurements'
MEASURE_OVERHEAD = 1.7
#: seconds allowed per compiled program (an MJX task compiles in 10–50 s, native and pure-JAX ones faster)
COMPILE_S = 30.0
_TIMED: dict = {}   # {physics record's path: {(task, width, model, solver, physics): ms}} this process timed


def duration(programs: list, step_ms, recorded: bool = True) -> float | None:
    """Estimated seconds to run ``programs`` (identical ones once: targets that share a study train and measure it
    once), plus [`COMPILE_S`][pgdiag.experiments.costs.COMPILE_S] each: sequential steps × this host's recorded
    time per step of training programs like it ([`training_ms`][pgdiag.experiments.costs.training_ms], everything a
    step costs) where there is one, else × ``step_ms(task, width, model, solver, physics)`` (the program's physics)
    × the program kind's overhead (a training program on an accelerator host: physics +
    [`ACCELERATOR_FIXED_MS`][pgdiag.experiments.costs.ACCELERATOR_FIXED_MS] for where it runs,
    [`where_here`][pgdiag.experiments.costs.where_here]; a MuJoCo one on a CPU: its physics + its kernels and update,
    [`train_cost`][pgdiag.experiments.train_cost]); ``recorded=False``: from step costs alone. None where unknown."""
    total = 0.0
    for p in dict.fromkeys(programs):
        seconds = run_seconds(p, step_ms, recorded)
        if seconds is None:
            return None
        total += seconds + COMPILE_S
    return total


def run_seconds(program, step_ms, recorded: bool = True) -> float | None:
    """One program's estimated seconds without compiling (see [`duration`][pgdiag.experiments.costs.duration]);
    None where unknown."""
    ms = (training_ms(program, step_ms) if program.stage == "train" else study_ms(program, step_ms)) \
        if recorded else None
    if ms is None:
        physics = step_ms(program.task, program.width, program.model, program.solver, program.physics)
        if physics is None:
            return None
        where, multiple = where_here(program), physics * OVERHEAD.get(program.stage, MEASURE_OVERHEAD)
        cpu = where is None and program.stage == "train" and hosts.backend() == "cpu" \
            and task_kind(program.task) == "mujoco"
        ms = (multiple + ACCELERATOR_FIXED_MS[where] if where == "callback"
              else physics + ACCELERATOR_FIXED_MS[where] if where in ("split", "accelerator")
              else cpu and train_cost.step_ms(program, physics, step_ms) or multiple)
    return steps_of(program) * ms / 1e3


def steps_of(program) -> int:
    """The batched steps a program is costed for: a training program's sequential steps, a measurement's
    [`costed_steps`][pgdiag.run.timings.costed_steps]."""
    if program.stage == "train":
        return program.sequential_steps
    return timings.costed_steps(program.sequential_steps, program.pairs, program.width)


def where_here(program) -> str | None:
    """Where a program of a MuJoCo task would run on this host's accelerator (or a declared host's,
    [`pgdiag.envs.hosts`][pgdiag.envs.hosts]): ``"split"`` (a training program's collection on the host's CPU, the
    update on the accelerator: [`pgdiag.run.split.resolve`][pgdiag.run.split.resolve]), ``"accelerator"`` (MJX or
    Warp physics: the whole iteration there), ``"host"`` (a measurement of native runs compiled for the host's CPU
    devices: [`pgdiag.diagnostics.placement`][pgdiag.diagnostics.placement]), ``"callback"`` (one stepping native
    MuJoCo from the accelerator's program: runs placed on the device, several processes, fig-theorem's batch), or
    None (a CPU host, a pure-JAX task, a training program on the accelerator's own callback path, native physics
    over several devices, a measurement on MJX or Warp). "host" and None keep the CPU's multiple (on a CPU the
    update costs about what the rollout does; on the callback path the policy's steps do). ``physics='auto'`` is the
    backend this host's recorded measurements pick for the batch each device steps
    ([`pgdiag.envs.recorded_physics`][pgdiag.envs.recorded_physics], as a sweep decides it), native MuJoCo where
    they do not."""
    import dataclasses

    if hosts.backend() == "cpu" or task_kind(program.task) != "mujoco":
        return None
    if program.stage == "optimize":   # fig-theorem's one batch, collected in a program on the default device
        return "callback" if backend_here(program) == "native" else None
    if program.stage != "train":   # a measurement stepping native MuJoCo: on the host's CPU unless on the device
        if backend_here(program) != "native":
            return None
        return "callback" if program.placement == "device" or hosts.process_count() > 1 else "host"
    if program.spec is None:
        return None
    if backend_here(program) in ("mjx", "warp"):
        return "accelerator"
    static = dataclasses.replace(program.spec[0].static, physics="native")
    return "split" if split.resolve(static)[0] == "split" else None


def backend_here(program) -> str:
    """The physics a program steps on this host (or a declared one): its own setting, or what ``auto`` picks from
    the recorded measurements at the batch it steps — a training program's environments per device, a
    measurement's width ([`measured_physics`][pgdiag.experiments.costs.measured_physics]) — native MuJoCo where
    they do not decide; "jax" for a pure-JAX task. What a plan's ``backend`` column shows."""
    if task_kind(program.task) != "mujoco":
        return "jax"
    if program.physics != "auto":   # as asked (a backend this host lacks is refused when the run starts, not here)
        return program.physics
    if program.stage != "train" or program.spec is None:
        return measured_physics(program)
    static = program.spec[0].static
    per_device = static.num_envs * -(-program.units // hosts.device_count())
    return recorded_physics(static.task, static.physics, static.physics_threads, static.solver, per_device,
                            static.model)


def training_ms(program, step_ms=None) -> float | None:
    """A training program's time per batched step from this host's own runs of programs like it
    ([`pgdiag.run.timings`][pgdiag.run.timings]); None where none is recorded. Between recorded widths by
    [`interpolate`][pgdiag.experiments.costs.interpolate]; outside them, the nearest recorded width's cost scaled
    by the physics' own cost at the two widths (``step_ms``): a run of 512 environments says little of one of 8 by
    its width alone (flat, it charged 8 environments what 512 cost), while its cost over its physics carries to the
    physics of another width."""
    if program.stage != "train" or program.spec is None:
        return None

    return _from_rows(timings.recorded(program.spec[0].static), program, step_ms)


def study_ms(program, step_ms=None) -> float | None:
    """A study program's time per sequential step from this host's own runs of the same measurement on the same
    task, model and solver ([`pgdiag.run.timings.recorded_study`][pgdiag.run.timings.recorded_study]), carried
    across widths as [`training_ms`][pgdiag.experiments.costs.training_ms] does; None where none is recorded."""
    if program.stage == "train":
        return None
    physics = measured_physics(program)
    return _from_rows(timings.recorded_study(program.stage, program.task, program.model, program.solver, physics),
                      program, step_ms)


def measured_physics(program) -> str:
    """The backend a measurement steps at its width on this host, from the recorded measurements alone
    ([`pgdiag.envs.recorded_physics`][pgdiag.envs.recorded_physics], as
    [`pgdiag.diagnostics.placement.with_physics`][pgdiag.diagnostics.placement.with_physics] decides it when it
    runs): "auto" for a pure-JAX task."""
    from pgdiag.envs import recorded_physics

    backend = recorded_physics(program.task, program.physics, 0, program.solver, program.width, program.model)
    return "auto" if backend == "jax" else backend


def _from_rows(rows, program, step_ms) -> float | None:
    if not rows:
        return None
    width = program.width
    if rows[0][0] <= width <= rows[-1][0] or step_ms is None:
        return interpolate(rows, width)
    near, near_ms = min(rows, key=lambda r: abs(math.log(r[0] / width)))
    there, here = (step_ms(program.task, w, program.model, program.solver, program.physics) for w in (near, width))
    if not there or here is None:
        return interpolate(rows, width)
    return near_ms * here / there


#: the batch widths at which [`measured_step_ms`][pgdiag.experiments.costs.measured_step_ms] times a task's step;
#: widths between are interpolated
LADDER = (1, 4, 16, 64, 256, 1024, 4096, 16384)


def measured_step_ms(solver: str = "converged", model: str = "brax"):
    """``step_ms(task, width, model=model, solver=solver, physics="auto")`` for this device: the recorded per-step
    cost where the recorded batches span ``width`` ([`recorded_step_ms`][pgdiag.experiments.costs.recorded_step_ms]),
    else timed now (``physics``; ``"auto"``: what ``physics=auto`` picks) at the two LADDER widths around ``width``
    (linear between, proportional beyond), once per process, and recorded for this host unless other processes kept
    it busy meanwhile ([`pgdiag.envs.crossover.record`][pgdiag.envs.crossover.record]): later plans read it."""
    import os

    import jax

    if hosts.declared():   # a plan for another host times nothing here: its profile's rows, widened beyond them
        return recorded_step_ms(solver, model)
    recorded, cache = recorded_step_ms(solver, model, beyond=False), _TIMED.setdefault(crossover.cache_path(), {})
    threads = os.cpu_count() or 1

    def at(task, width, model, solver, physics):
        key = (task, width, model, solver, physics)
        if key not in cache:
            others = timings.load_meter()   # the share of the cores other processes take while it is timed
            cpu_native = jax.default_backend() == "cpu" and physics in ("auto", "native")
            if REGISTRY[task].kind == "mujoco" and physics != "auto" and not cpu_native:   # the backend asked for
                cache[key] = crossover.step_ms(task, physics, threads, solver, width, model=model)
            elif REGISTRY[task].kind == "mujoco" and jax.default_backend() != "cpu":
                # both backends, recorded for this host as `physics=auto` would measure them
                row = crossover.measure(task, solver, width, threads, model=model)
                keep(row, others())
                cache[key] = min(row[f"{b}_ms"] for b in crossover.BACKENDS if f"{b}_ms" in row)
            elif REGISTRY[task].kind == "mujoco":   # native MuJoCo on a CPU (auto's choice there): recorded alone
                cache[key] = crossover.step_ms(task, "native", threads, solver, width, model=model)
                keep({"task": task, "solver": solver, "batch": int(width), "native_ms": cache[key],
                      **({"model": model} if model != "brax" else {})}, others())
            else:  # a pure-JAX task has no physics setting (and costs microseconds to time)
                cache[key] = crossover.step_ms(task, "auto", threads, solver, width)
        return cache[key]

    def keep(row, others):   # recorded for this host, unless timed beside other work: the next plan reads it
        if not timings.loaded(others):
            try:
                crossover.record(crossover.host_key(threads), [row])
            except OSError:
                pass  # an unwritable cache costs a measurement next time, nothing else

    def step_ms(task, width, model=model, solver=solver, physics="auto"):
        ms = recorded(task, width, model, solver, physics)
        if ms is not None:
            return ms
        hi = next((w for w in LADDER if w >= width), LADDER[-1])
        if hi == width or hi == LADDER[0] or width > hi:
            return interpolate([(hi, at(task, hi, model, solver, physics))], width)
        lo = LADDER[LADDER.index(hi) - 1]
        return interpolate([(lo, at(task, lo, model, solver, physics)), (hi, at(task, hi, model, solver, physics))],
                           width)

    return step_ms


def recorded_step_ms(solver: str = "converged", model: str = "brax", beyond: bool = True, below: bool = True):
    """``step_ms(task, width, model=model, solver=solver, physics="auto")`` from this host's recorded physics
    measurements of the model and solver setting (a declared host's: [`pgdiag.envs.hosts`][pgdiag.envs.hosts]), or
    None where none is recorded. At each recorded batch the cost of the backend asked for (``physics``), or for
    ``"auto"`` the faster one's; between two recorded batches, linear in the batch (a batched step costs a fixed
    part plus a part per environment, which a line through its neighbours follows; scaling the nearest batch's cost
    by the width instead charged 3 environments three times one, though the threads step them side by side); below
    the smallest recorded batch, its cost; beyond the largest, proportional to the width (an upper bound: a step
    cannot get cheaper per environment than the widest measured). With ``beyond=False``, None outside the recorded
    batches: a bound from 16 environments charged 320 on 16 threads 2–6× their measured cost, and 256's cost
    charged to 14 planned a mid training 12× its length (``below=False`` with ``beyond``: None below the
    smallest alone, as a plan on this host reads them). A pure-JAX task's step is read from ``jax_ms``
    rows, which only a host profile carries (timed when it is saved:
    [`time_pure_jax`][pgdiag.experiments.costs.time_pure_jax]); on this host it is timed when planned."""
    rows = crossover.rows_here(hosts.cores())

    def step_ms(task, width, model=model, solver=solver, physics="auto"):
        costs, backends = {}, crossover.BACKENDS if physics == "auto" else (physics,)
        if REGISTRY[task].kind != "mujoco":   # a pure-JAX task's step: recorded only in a host profile
            backends = ("jax",)
        for r in rows:
            if r.get("task") == task and r.get("solver") == solver and r.get("model", "brax") == model:
                ms = min(r.get(f"{b}_ms", float("inf")) for b in backends)
                if math.isfinite(ms):
                    costs[r["batch"]] = ms
        if not costs or (not beyond and width > max(costs)) or (not (beyond and below) and width < min(costs)):
            return None
        return interpolate(sorted(costs.items()), width)

    return step_ms


def time_pure_jax(threads: int) -> list[dict]:
    """Rows ``{task, solver, batch, jax_ms}`` for every pure-JAX task at the [`LADDER`][pgdiag.experiments.costs.
    LADDER] widths, timed now (seconds each): what a host profile carries so that a plan made elsewhere costs these
    tasks' programs as this host runs them."""
    return [{"task": task, "solver": "converged", "batch": w, "jax_ms": crossover.step_ms(task, "auto", threads,
                                                                                        "converged", w)}
            for task, entry in REGISTRY.items() if entry.kind == "jax" for w in LADDER]


def interpolate(points, width: float) -> float:
    """The cost at ``width`` from (batch, ms) ``points`` sorted by batch, as
    [`recorded_step_ms`][pgdiag.experiments.costs.recorded_step_ms] describes: linear between the two around it,
    flat below the first, proportional beyond the last."""
    (lo, lo_ms), (hi, hi_ms) = points[0], points[-1]
    if width <= lo:
        return lo_ms
    if width >= hi:
        return hi_ms * width / hi
    (a, a_ms), (b, b_ms) = next((p, q) for p, q in zip(points, points[1:]) if p[0] <= width <= q[0])
    return a_ms + (b_ms - a_ms) * (width - a) / (b - a)


__all__ = ["ACCELERATOR_FIXED_MS", "COMPILE_S", "LADDER", "MEASURE_OVERHEAD", "OVERHEAD", "duration", "interpolate",
           "measured_step_ms", "recorded_step_ms", "run_seconds", "steps_of", "study_ms", "time_pure_jax",
           "training_ms", "where_here"]

