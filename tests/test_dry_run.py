"""Plans before anything runs: every diagnostic and training target at every scale resolves, fits the memory of a 24 GiB host
with half of it available and of a declared 80 GB accelerator, and compiles nothing."""

import dataclasses
import os

import pytest

from pgdiag.cli import main
from pgdiag.config import ConfigError
from pgdiag.envs import EPISODE_LIMITS, TASK_SIZES, TASKS, make
from pgdiag.experiments import costs, dry_run, targets
from pgdiag.run import CompileCounter

GiB = 2 ** 30


def _plan(name, scale="smoke", **kwargs):
    return targets.get(name).dry_run(scale, **kwargs)


@pytest.mark.parametrize("memory", [12 * GiB, 80 * 10 ** 9], ids=["cpu-host", "accelerator"])
@pytest.mark.parametrize("scale", ["smoke", "mid", "paper"])
def test_every_plan_fits_and_compiles_nothing(scale, memory):
    with CompileCounter() as counter:
        for target in targets.of_kind("diagnostic"):
            programs = _plan(target, scale, memory=memory)
            stages = {p.stage for p in programs}
            assert "train" in stages and len(stages) == 2, target
            for p in programs:
                assert p.fits, (target, p)
                assert p.memory <= memory and p.units > 0 and p.pairs > 0 and p.sequential_steps > 0, (target, p)
        for target in targets.of_kind("training", "optimize"):
            programs = _plan(target, scale, memory=memory)
            assert programs and all(p.stage in ("train", "optimize") and p.fits and p.units > 0
                                    for p in programs), target
    assert counter.count == 0


def test_training_plans_count_what_the_targets_train():
    """Worked by hand from the scales: fig-ablation smoke is 2^4 toggles × 4 learning rates × 2 seeds = 128 agents
    on Hopper, 20 iterations of 4 environments × 256 steps; table-2 paper trains the five presets on three tasks
    as two sweeps per task (PPO, PPO-M and PPO-NoClip share a static configuration, TRPO and TRPO+ another),
    80 agents per preset, 488 iterations of 1 × 2,048 steps."""
    (ablation,) = _plan("fig-ablation", "smoke", memory=12 * GiB)
    assert (ablation.task, ablation.units, ablation.width) == ("hopper", 128, 128 * 4)
    assert ablation.pairs == 128 * 20 * 4 * 256 and ablation.sequential_steps == 20 * 256
    table = _plan("table-2", "paper", memory=80 * 10 ** 9)
    assert [(p.task, p.presets, p.units) for p in table] == [
        (t, a, n) for t in ("hopper", "walker2d", "humanoid") for a, n in (("ppo+ppo-m+ppo-noclip", 240),
                                                                           ("trpo+trpo+", 160))]
    assert all(p.pairs == p.units * 488 * 2048 and p.sequential_steps == 488 * 2048 for p in table)
    assert _plan("fig-value", "smoke", seeds=3, memory=GiB)[0].units == 3
    both = _plan("solver-compare", "smoke", memory=12 * GiB)   # fig-ablation + table-2 under each solver
    assert [p.note for p in both] == ["solver=converged"] * 3 + ["solver=fast"] * 3
    (theorem,) = _plan("fig-theorem", "smoke", memory=GiB)      # Hopper's paper batch, 6 optimizers × 600
    assert (theorem.pairs, theorem.units, theorem.sequential_steps) == (2048, 6, 2048 + 6 * 600)


def test_the_im_mid_scale_gives_every_claim_its_agents_and_trains_the_shared_runs_once():
    """`make implementation-matters-report SCALE=mid` (fig-ablation, table-2, fig-trust-region, fig-theorem):
    every target plans at mid without compiling; the ablation is Hopper at the papers' shape (1 × 2,048 steps,
    100 iterations) with ≥ 2 learning rates and ≥ 5 seeds per cell; Table 2/3's groups have ≥ 5 agents each;
    table-2's PPO+PPO-M and TRPO sweeps are fig-trust-region's (the same programs, base configurations, grids
    and seeds, so the same run directories), and a plan of all the report's targets costs them once: five
    training programs, not seven."""
    from pgdiag.experiments import claims
    from pgdiag.studies import ablation
    from pgdiag.studies.presets import targets as presets

    names = [t.name for t in targets.of_paper("im")]
    with CompileCounter() as counter:
        plans = {name: _plan(name, "mid", memory=12 * GiB) for name in names}
    assert counter.count == 0 and all(p.fits for ps in plans.values() for p in ps)
    (abl,) = plans["fig-ablation"]
    lrs = ablation.SCALES["mid"].settings["grid"]["lr_policy"]
    seeds = ablation.SCALES["mid"].seeds
    assert len(lrs) >= 2 and set(lrs) <= set(ablation.LEARNING_RATES) and seeds >= claims.MIN_AGENTS
    assert (abl.task, abl.units, abl.width) == ("hopper", 16 * len(lrs) * seeds, 16 * len(lrs) * seeds)
    assert abl.sequential_steps == 100 * 2048 and abl.spec[2] == seeds
    static = abl.spec[0].static
    assert (static.num_envs, static.steps_per_env, static.reset_every_iteration) == (1, 2048, True)
    table, n = plans["table-2"], presets.SCALES["mid"].seeds
    assert [(p.presets, p.units) for p in table] == [("ppo+ppo-m", 2 * n), ("trpo", n), ("ppo-noclip", n), ("trpo+", n)]
    agents = {a: p.spec[2] for p in table for a in (("ppo", "ppo-m") if p.presets == "ppo+ppo-m" else (p.presets,))}
    assert set(agents) == set(presets.TABLE_2_PRESETS) | set(presets.TABLE_3_PRESETS)
    assert min(agents.values()) >= claims.MIN_AGENTS
    # enough units that each claim's sign test can pass Holm's first step in its paper section (family)
    from pgdiag.experiments import findings
    from pgdiag.experiments.claims_im import IM_CLAIMS

    def needed(prefix):
        family = {c.family for c in IM_CLAIMS if c.evidence.startswith(prefix) and c.role == "finding"}
        return max(findings.agents_for(sum(c.family == f and c.role == "finding" for c in IM_CLAIMS)) for f in family)
    assert seeds >= needed("ablation_") and min(agents.values()) >= needed("im_score")
    region = plans["fig-trust-region"]
    assert table[:2] == region and _plan("table-3", "mid") == _plan("fig-rewards", "mid") == table
    for mine, theirs in zip(table, region):   # what names a run directory: configuration, grid, seeds
        assert mine.spec[0].to_dict() == theirs.spec[0].to_dict() and mine.spec[1:] == theirs.spec[1:]
    every = [p for ps in plans.values() for p in ps]
    assert len({p for p in every if p.stage == "train"}) == 5
    step = lambda *a: 1.0   # noqa: E731
    assert costs.duration(every, step, recorded=False) == pytest.approx(
        costs.duration(plans["fig-ablation"] + table + plans["fig-theorem"], step, recorded=False))


def test_the_im_mid_report_plans_under_45_minutes_at_a_2_core_cpus_recorded_costs(tmp_path, monkeypatch):
    """At the training costs per batched step the 2-core CPU of docs/plans.md recorded while running `make
    implementation-matters-report SCALE=mid` with other work beside it (PPO 8.9 ms at 288 agents, 0.39 at 14,
    0.24 at 7; TRPO 0.20 at 7), the report's programs — the shared runs once, 30 s of compiling each — plan
    under 45 minutes (37 by hand: 204,800 steps × (8.9 + 0.39 + 0.24 + 2 × 0.20) ms + 6 × 30 s). A mid scale
    grown past the budget fails here (the ablation with IM's fourth LR: about 47 minutes)."""
    from pgdiag.run import timings

    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    programs = [p for t in targets.of_paper("im") for p in _plan(t.name, "mid")]
    statics = {p.spec[0].static.algorithm: p.spec[0].static for p in programs if p.stage == "train"}
    for algorithm, width, ms in (("ppo", 288, 8.9), ("ppo", 14, 0.39), ("ppo", 7, 0.24), ("trpo", 7, 0.20)):
        timings.record(statics[algorithm], width, ms)
    physics = lambda task, width, *a: 0.02 + 0.01 * width   # noqa: E731  (the theorem's steps; widths beyond)
    assert costs.duration(programs, physics) < 45 * 60


def test_the_paper_landscape_runs_its_subjects_in_turn_where_memory_is_short():
    """The 1e6-pair step batches of the paper's surrogate landscape (4 checkpoints of one Humanoid agent) fit a
    12 GiB host only with the subjects in turn; the plan says so, and that it then fits."""
    humanoid = [p for p in _plan("fig-landscape-surrogate", "paper", memory=12 * GiB)
                if p.stage == "landscape" and p.task == "humanoid"]
    assert humanoid and all(p.fits for p in humanoid)
    assert any("subjects in turn" in p.note for p in humanoid)


def test_task_sizes_and_limits_are_those_of_the_built_tasks():
    for task, (kind, _) in TASKS.items():
        if kind == "jax" or task == "hopper":
            env = make(task, "native" if kind == "mujoco" else "auto")
            assert TASK_SIZES[task] == (env.obs_size, env.action_size), task
            assert EPISODE_LIMITS[task] == env.max_episode_steps, task
    assert set(TASK_SIZES) == set(TASKS) == set(EPISODE_LIMITS)


def test_bad_targets_and_scales_are_named(capsys):
    with pytest.raises(ConfigError, match="unknown target 'hopper-1m'"):
        _plan("hopper-1m")
    with pytest.raises(ConfigError, match="fig-ablation only trains"):
        _plan("fig-ablation", diag={"estimates": 4})
    with pytest.raises(ConfigError, match="unknown scale 'huge'"):
        _plan("fig-grad-variance", "huge")
    assert main(["fig-baselines", "--dry-run", "--from", "results/x"]) == 2
    assert "cannot be combined with --from" in capsys.readouterr().err


def test_the_cli_prints_the_plan_without_compiling(capsys, tmp_path, monkeypatch):
    import os

    from pgdiag.diagnostics.memory import available_memory, fmt_bytes
    from pgdiag.envs import crossover

    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))    # this host's recorded step costs: Hopper's only,
    crossover.record(crossover.host_key(os.cpu_count() or 1),   # both models (Table 2 trains Gym's)
                     [{"task": "hopper", "solver": "converged", "batch": b, "native_ms": 0.1 * b, "mjx_ms": 9.0,
                       **extra} for b in (1, 64) for extra in ({}, {"model": "gym"})])
    with CompileCounter() as counter:
        assert main(["fig-grad-variance", "--dry-run", "--scale", "mid"]) == 0
    assert counter.count == 0
    out = capsys.readouterr().out
    assert "gradients" in out and "train" in out and "programs" in out and "pairs" in out
    assert f"fits the memory where it runs: {fmt_bytes(available_memory())} (half the host's RAM)" in out
    assert "estimated duration (without compiling): " in out and "step costs: recorded on this host for hopper" in out
    with CompileCounter() as counter:
        assert main(["table-2", "--dry-run", "--scale", "paper", "--task", "hopper"]) == 0
    assert counter.count == 0
    out = capsys.readouterr().out
    assert "ppo+ppo-m+ppo-noclip" in out and "2 programs" in out


def test_a_dry_run_where_nothing_is_recorded_times_a_few_steps(capsys):
    """The suite's cache is empty (conftest): the LQR's step is timed now, and the plan has a duration."""
    assert main(["fig-grad-true", "--dry-run", "--scale", "smoke", "--task", "lqr"]) == 0   # (compiles step timers)
    out = capsys.readouterr().out
    assert "step costs: timed now for lqr (a few batched steps each, seconds;" in out
    value, unit = out.split("estimated duration (without compiling): ")[1].split()[:2]
    assert unit in ("s", "min") and 0 < float(value) * (60 if unit == "min" else 1) < 3600


def test_recorded_step_costs_are_interpolated_between_recorded_batches(tmp_path, monkeypatch):
    """The H100 host's Humanoid rows (docs/benchmarks.md): native 0.61 ms at batch 1, 1.2 at 16, 1.4 at 64, MJX slower at
    each. A 3-agent program's step is 0.61 + (1.2 − 0.61)·2/15 ms — not 3 × 0.61, which planned the paper
    diagnostics' training 3× too long there; beyond the widest batch the cost grows with the width."""
    import os

    from pgdiag.envs import crossover

    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    key = crossover.host_key(os.cpu_count() or 1)
    crossover.record(key, [{"task": "humanoid", "solver": "converged", "batch": b, "native_ms": n, "mjx_ms": m}
                           for b, n, m in ((1, 0.61, 3.6), (16, 1.2, 6.2), (64, 1.4, 7.3))])
    crossover.record(key, [{"task": "hopper", "solver": "fast", "batch": 256, "native_ms": 1.94, "mjx_ms": 1.02}])
    step_ms = costs.recorded_step_ms("converged")
    assert step_ms("humanoid", 3) == pytest.approx(0.61 + 0.59 * 2 / 15)
    assert step_ms("humanoid", 1) == pytest.approx(0.61) and step_ms("humanoid", 16) == pytest.approx(1.2)
    assert step_ms("humanoid", 40) == pytest.approx(1.2 + 0.2 * 24 / 48)
    assert step_ms("humanoid", 320) == pytest.approx(1.4 * 5)
    assert step_ms("walker2d", 3) is None and step_ms("point_mass", 3) is None   # nothing recorded; pure JAX
    assert costs.recorded_step_ms("fast")("hopper", 512) == pytest.approx(1.02 * 2)   # the faster backend, MJX
    assert costs.recorded_step_ms("converged", beyond=False)("humanoid", 320) is None  # no bound past 64: measure
    # a backend asked for is costed at its own column, not at the faster one's
    assert step_ms("humanoid", 3, physics="mjx") == pytest.approx(3.6 + 2.6 * 2 / 15)
    assert costs.recorded_step_ms("fast")("hopper", 256, physics="native") == pytest.approx(1.94)
    assert step_ms("humanoid", 3, physics="warp") is None                       # no Warp column recorded


def test_a_program_asking_for_a_backend_is_costed_on_it(tmp_path, monkeypatch):
    """A sweep with physics asked for (here MJX) plans at that backend's step, recorded or timed now on it;
    the dry run's programs carry the physics of their sweeps."""
    from pgdiag.experiments import targets

    (program,) = targets.get("fig-ablation").dry_run("smoke", memory=1 << 62, physics="mjx")
    assert program.physics == "mjx"
    asked = []

    def step_ms(task, width, model, solver, physics):
        asked.append(physics)
        return {"mjx": 4.0, "auto": 1.0, "native": 1.0}[physics]

    # on a CPU: the MJX step (4.0 ms, no held-out batches at smoke) + the rollout's kernels and the Hopper preset's
    # update in native Hopper steps of the same width (1.0 ms): 4.0 + 0.9 + 1.9 = 6.8 ms
    assert costs.run_seconds(program, step_ms, recorded=False) == pytest.approx(program.sequential_steps * 6.8 / 1e3)
    assert asked == ["mjx", "native"]
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    from pgdiag.envs import crossover
    timed = []
    monkeypatch.setattr(crossover, "step_ms", lambda task, backend, threads, solver, batch, **kw:
                        timed.append((backend, batch)) or 2.0)
    assert costs.measured_step_ms("converged")("hopper", 4, physics="mjx") == pytest.approx(2.0)
    assert timed == [("mjx", 4)]


def test_a_training_s_update_is_costed_over_its_cpu_devices(monkeypatch):
    """The Hopper preset's update is 1.9 native Hopper steps of the program's width on one CPU device (one core);
    sharded over two CPU devices on 2 cores it runs on both: the smoke ablation's step, 1.0 ms of physics and
    1.0 ms a gauge step, is 1.0 + 0.9 + 1.9 = 3.8 ms on one device, 1.0 + 0.9 + 1.9 / 2 = 2.85 ms on two, and
    one agent (nothing to shard) or one core keeps 3.8."""
    from pgdiag.envs import hosts
    from pgdiag.experiments import targets, train_cost

    (program,) = targets.get("fig-ablation").dry_run("smoke", memory=1 << 62)
    one = lambda *a: 1.0   # noqa: E731
    for devices, cores, agents, ms in ((1, 2, 128, 3.8), (2, 2, 128, 2.85), (2, 2, 1, 3.8), (2, 1, 128, 3.8),
                                       (4, 16, 128, 1.0 + 0.9 + 1.9 / 4)):
        monkeypatch.setattr(hosts, "cpu_device_count", lambda: devices)
        monkeypatch.setattr(hosts, "cores", lambda: cores)
        assert train_cost.step_ms(dataclasses.replace(program, units=agents), 1.0, one) == pytest.approx(ms)


def test_a_plan_after_wide_studies_times_a_narrow_training_rather_than_charge_it_their_step(tmp_path, monkeypatch,
                                                                                           capsys):
    """A report's studies record this host's physics at 420-7,168 environments; a 14-agent training planned next
    is timed at the ladder's 4 and 16 (and interpolated), not charged the 1,024-wide step's 7.9 ms."""
    import os

    from pgdiag.envs import crossover
    from pgdiag.experiments.planner import show_plan
    from pgdiag.experiments import targets

    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    crossover.record(crossover.host_key(os.cpu_count() or 1),
                     [{"task": "hopper", "solver": "converged", "batch": b, "native_ms": ms}
                      for b, ms in ((1024, 7.9), (4096, 31.0))])
    timed = []
    monkeypatch.setattr(crossover, "step_ms", lambda task, backend, threads, solver, batch, **kw:
                        timed.append(batch) or 0.01 * batch)
    programs = [p for p in targets.get("fig-value").dry_run("mid", memory=1 << 62) if p.width == 14]
    frame = show_plan(programs, None, show=False)
    assert sorted(set(timed)) == [4, 16]
    physics = 0.04 + 0.12 * 10 / 12                  # the ladder's line at 14: 0.14 ms
    every = programs[0].spec[0].static.heldout_every
    ms = physics * (1 + 1 / every if every else 1) + physics * (0.9 + 1.9)   # train_cost: one CPU device here
    # the table rounds to 0.1 s
    assert frame.estimated_s.iloc[0] == pytest.approx(programs[0].sequential_steps * ms / 1e3, abs=0.05)


def test_a_plan_measures_widths_beyond_the_recorded_batches(tmp_path, monkeypatch):
    """Rows up to 16 environments do not price 320 (16 threads step 16 environments side by side, 320 in 20
    rounds): the plan times the ladder's batches around 320 (256 and 1,024) and interpolates between them."""
    import os

    from pgdiag.envs import crossover

    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    crossover.record(crossover.host_key(os.cpu_count() or 1),
                     [{"task": "walker2d", "solver": "converged", "batch": b, "native_ms": ms, "mjx_ms": 9.0}
                      for b, ms in ((4, 0.10), (16, 0.11))])
    timed = []
    monkeypatch.setattr(crossover, "step_ms", lambda task, backend, threads, solver, batch, **kw:
                        timed.append(batch) or {256: 1.0, 1024: 2.6}[batch])
    step_ms = costs.measured_step_ms("converged")
    assert step_ms("walker2d", 16) == pytest.approx(0.11) and timed == []           # recorded: no timing
    assert step_ms("walker2d", 320) == pytest.approx(1.0 + 1.6 * 64 / 768)
    assert sorted(timed) == [256, 1024]



def test_a_step_timed_for_a_plan_is_recorded_so_the_next_plan_agrees(tmp_path, monkeypatch):
    """A CPU host's native step timed for one plan is written to this host's physics record: a second plan (a new
    process's `measured_step_ms`) reads it back and times nothing, so two dry runs of a program agree exactly —
    where two timings on a busy host had put the same program 413 s and 1,738 s apart."""
    import jax

    from pgdiag.envs import crossover

    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")   # the CPU host's path, on any host
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    noisy = iter([1.0, 4.0, 4.0, 4.0])   # what a busy host's successive timings would say
    timed = []
    monkeypatch.setattr(crossover, "step_ms", lambda task, backend, threads, solver, batch, **kw:
                        timed.append((backend, batch)) or next(noisy))
    assert costs.measured_step_ms("converged")("hopper", 16) == pytest.approx(1.0)
    assert timed == [("native", 16)]
    assert costs.measured_step_ms("converged")("hopper", 16) == pytest.approx(1.0) and len(timed) == 1
    assert costs.measured_step_ms("fast")("hopper", 16) == pytest.approx(4.0) and len(timed) == 2  # its own row


def test_a_step_timed_beside_other_work_serves_this_process_but_is_not_recorded(tmp_path, monkeypatch):
    """A native step timed for a plan while other processes keep the host busy (by hand: 2 s of wall time on 2
    cores, this process 1 s, the host 4 s busy: others 3 of 4 = 0.75 > LOADED) serves this process's plans and is
    not recorded: a new process times it again, on a quiet host (others 0), records it, and the next reads it."""
    import jax

    from pgdiag.envs import crossover
    from pgdiag.run import timings

    clock = {"busy": 100.0, "own": 10.0, "wall": 50.0}
    monkeypatch.setattr(timings, "_busy_seconds", lambda: clock["busy"])
    monkeypatch.setitem(timings._clocks, "own", lambda: clock["own"])
    monkeypatch.setitem(timings._clocks, "wall", lambda: clock["wall"])
    monkeypatch.setitem(timings._clocks, "cores", lambda: 2)
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    monkeypatch.setattr(costs, "_TIMED", {})
    runs = iter([(3.0, 4.0), (0.0, 1.0)])   # (others' busy seconds while timing, the ms it times)

    def step_ms(task, backend, threads, solver, batch, **kw):
        others, ms = next(runs)
        clock.update(busy=clock["busy"] + 1.0 + others, own=clock["own"] + 1.0, wall=clock["wall"] + 2.0)
        return ms

    monkeypatch.setattr(crossover, "step_ms", step_ms)
    assert costs.measured_step_ms("converged")("hopper", 16) == pytest.approx(4.0)
    assert costs.measured_step_ms("converged")("hopper", 16) == pytest.approx(4.0)   # this process: as timed
    costs._TIMED.clear()   # a new process: nothing recorded, so timed again
    assert costs.measured_step_ms("converged")("hopper", 16) == pytest.approx(1.0)
    costs._TIMED.clear()
    assert costs.measured_step_ms("converged")("hopper", 16) == pytest.approx(1.0)   # recorded: nothing timed


def test_a_study_program_records_its_cost_and_plans_use_it(tmp_path, monkeypatch):
    """Each study program's run over its sequential steps is recorded for this host (a run under half a second is
    not: its fixed costs, not its steps), by the physics it stepped, and a plan of a program like it — the same
    measurement, task, model, solver and the physics it would step (native on this CPU) — costs it from those rows: 2 s over 400 steps at width 40 is 5 ms a step, so 1,000 steps plan 5 s
    (not physics × the measuring allowance); another measurement or task keeps the allowance."""
    import types

    from pgdiag.diagnostics import engine
    from pgdiag.run import timings

    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    static = types.SimpleNamespace(task="hopper", model="brax", solver="converged")
    study = types.SimpleNamespace(kind="gradients")
    for width, run_s, physics in ((40, 2.0, "native"), (80, 0.2, "native"), (40, 4.0, "mjx")):
        engine._record_cost(study, types.SimpleNamespace(static=static, sequential_steps=400, pairs=400 * width,
                                                         width=width), {"run_s": run_s, "physics": physics})
    assert timings.recorded_study("gradients", "hopper", "brax", "converged") == [(40, pytest.approx(5.0))]
    assert timings.recorded_study("gradients", "hopper", "brax", "converged", "mjx") == [(40, pytest.approx(10.0))]
    assert timings.recorded_study("landscape", "hopper", "brax", "converged") == []

    def program(stage, task="hopper", width=40):
        return dry_run.Program(stage, task, "ppo", 2, 40_000, 1000, width, 0, True)

    physics = lambda *a: 1.0   # noqa: E731
    assert costs.run_seconds(program("gradients"), physics) == pytest.approx(5.0)
    assert costs.run_seconds(program("landscape"), physics) == pytest.approx(costs.OVERHEAD["landscape"])
    assert costs.run_seconds(program("gradients", "walker2d"), physics) == pytest.approx(costs.OVERHEAD["gradients"])
    assert costs.run_seconds(program("entropy"), physics) == pytest.approx(costs.MEASURE_OVERHEAD)   # a user's
    # at another width: the recorded row's cost over its physics, times the physics there
    scaled = lambda task, w, *a: 0.1 * w   # noqa: E731
    assert costs.run_seconds(program("gradients", width=80), scaled) == pytest.approx(10.0)
    # pairs beyond the sequential steps at the program's width (a baseline study's fit lanes) are costed as steps
    # of its width: 40,000 pairs at width 10 are 4,000 steps, not the 1,000 sequential ones
    wide = dataclasses.replace(program("landscape"), width=10)
    assert costs.steps_of(wide) == 4000
    assert costs.run_seconds(wide, physics) == pytest.approx(4000 * costs.OVERHEAD["landscape"] / 1e3)
    assert costs.run_seconds(program("steps"), physics) == pytest.approx(costs.OVERHEAD["steps"])


def test_a_sweep_records_its_cost_per_step_and_plans_use_it(tmp_path, monkeypatch):
    """Every sweep records this host's time per batched step of its program (compiling excluded): its chunks
    after the first over the steps they ran, from its own manifest. A plan then costs programs like it from
    those rows — linear between recorded widths — instead of physics × the training allowance: widths 2 and 8
    recorded at 1 and 4 ms give
    2 ms at width 4, so 5 iterations × 32 steps take 160 steps × 2 ms = 0.32 s, plus 30 s of compiling."""
    from pgdiag import preset, sweep
    from pgdiag.run import timings

    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    monkeypatch.setattr(timings, "_busy_seconds", lambda: None)   # the suite's other workers load this host
    base = preset("ppo", "point_mass", num_envs=2, steps_per_env=32, num_iterations=3, num_minibatches=4,
                  ppo_epochs=2, value_epochs=2)
    run = sweep(base, {"value_clipping": [False, True]}, seeds=[0])
    t = run.manifest["timings"]
    ((width, ms),) = timings.recorded(base.static)
    # three one-iteration chunks (progress.default_chunk); the first carries the first call's costs, so the
    # cost recorded is the other two's
    assert len(t["chunk_s"]) == 3 and all(c > 0 for c in t["chunk_s"]) and sum(t["chunk_s"]) <= t["run_s"]
    assert t["chunk_iterations"] == [1, 1, 1] and t["from_iteration"] == 0
    assert width == 2 * 2 and ms == pytest.approx(sum(t["chunk_s"][1:]) * 1e3 / (2 * 32))
    assert timings.recorded(base.replace(steps_per_env=64).static) == []      # another program: not its cost
    # a run of one chunk (its time carries the first call's costs) adds a row, never replaces one
    timings.record(base.static, 4, 9.0, replace=False)
    timings.record(base.static, 16, 9.0, replace=False)
    assert timings.recorded(base.static) == [(4, pytest.approx(ms)), (16, 9.0)]
    timings.record(base.static, 16, 3.0)
    assert timings.recorded(base.static) == [(4, pytest.approx(ms)), (16, 3.0)]

    other = preset("trpo", "point_mass", num_envs=1, steps_per_env=32, num_iterations=5)
    for w, cost in ((2, 1.0), (8, 4.0)):
        timings.record(other.static, w, cost)
    program = dry_run.training_program("point_mass", "trpo", other.static, 4, 1 << 40, spec=(other, None, [0, 1, 2, 3]))
    assert costs.training_ms(program) == pytest.approx(2.0)
    # outside the recorded widths: the nearest row's cost over its physics, times the physics at this width.
    # With physics 0.1 + 0.01·w ms and one row (8 agents, 4 ms): 2 agents cost 4 · 0.12/0.18, 32 cost
    # 4 · 0.42/0.18; without the physics, flat below the row and proportional above it
    lone = preset("trpo", "point_mass", num_envs=1, steps_per_env=64, num_iterations=5)
    timings.record(lone.static, 8, 4.0)
    physics = lambda task, w, *a: 0.1 + 0.01 * w   # noqa: E731
    for agents, expected, flat in ((2, 4.0 * 0.12 / 0.18, 4.0), (32, 4.0 * 0.42 / 0.18, 16.0)):
        p = dry_run.training_program("point_mass", "trpo", lone.static, agents, 1 << 40,
                                     spec=(lone, None, list(range(agents))))
        assert costs.training_ms(p, physics) == pytest.approx(expected) and costs.training_ms(p) == flat
    assert costs.duration([program], lambda *a: 100.0) == pytest.approx(160 * 2.0 / 1e3 + costs.COMPILE_S)
    # without a recorded row: physics × the training allowance
    bare = dry_run.training_program("point_mass", "trpo", other.static, 4, 1 << 40)
    assert costs.duration([bare], lambda *a: 1.0) == pytest.approx(160 * 1.0 * costs.OVERHEAD["train"] / 1e3
                                                                   + costs.COMPILE_S)
    # split between a host's CPU and its accelerator: physics + the fixed allowance (0.1 ms), not a multiple
    monkeypatch.setattr(costs, "where_here", lambda program: "split")
    assert costs.duration([bare], lambda *a: 1.0) == pytest.approx(160 * 1.1 / 1e3 + costs.COMPILE_S)
    # the whole iteration on the accelerator (MJX or Warp physics): physics + 0.3 ms
    monkeypatch.setattr(costs, "where_here", lambda program: "accelerator")
    assert costs.duration([bare], lambda *a: 1.0) == pytest.approx(160 * 1.3 / 1e3 + costs.COMPILE_S)


def test_the_fixed_allowances_follow_where_the_iteration_runs(monkeypatch):
    """physics + 0.1 ms a step where pgdiag.run.split.resolve would split the program on this host (an
    accelerator, one process and one device, native physics, a MuJoCo task); physics + 0.3 ms where MJX or
    Warp runs the whole iteration on the accelerator, asked for or picked by ``auto`` from this host's recorded
    measurements at the program's width; every other program keeps the multiple (on a CPU the update costs
    about what the rollout does; on the accelerator's own callback path the policy's steps do)."""
    import jax

    from pgdiag import preset
    from pgdiag.envs import crossover

    def program(task="hopper", agents=5, **over):
        cfg = preset("ppo", task, num_envs=1, steps_per_env=64, num_iterations=2, **over)
        return dry_run.training_program(task, "ppo", cfg.static, agents, 1 << 40, spec=(cfg, None, [0]))

    assert costs.where_here(program()) is None                          # this CPU: no accelerator
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(jax, "local_device_count", lambda *a, **k: 1)
    monkeypatch.setattr(jax, "device_count", lambda *a, **k: 1)
    monkeypatch.setattr(jax, "process_count", lambda: 1)
    monkeypatch.setattr(crossover, "load", lambda key: [])
    assert costs.where_here(program()) == costs.where_here(program(physics="native")) == "split"
    assert costs.where_here(program(physics="mjx")) == "accelerator"    # the whole iteration on the GPU
    assert costs.where_here(program(physics="warp")) == "accelerator"
    assert costs.where_here(program(placement="device")) is None        # asked for: the host callback path
    assert costs.where_here(program("point_mass")) is None              # pure JAX: no host physics
    # a measurement of runs left at auto steps what auto picks at its width from the recorded measurements (native
    # where none decide, as a sweep: on the host's CPU); MJX or Warp where they are faster there (below)
    assert costs.where_here(dataclasses.replace(program(), stage="gradients")) == "host"
    # a measurement of native runs is compiled for the host's CPU (pgdiag.diagnostics.placement): the CPU's multiple
    # of its physics (at 1 ms of physics: 1.5 ms a step for the gradient study); runs placed on the device (or several processes) step
    # it by host callback from the accelerator's program: the multiple plus 0.38 ms a step
    native = dataclasses.replace(program(physics="native"), stage="gradients")
    assert costs.where_here(native) == "host"
    assert costs.run_seconds(native, lambda *a: 1.0, recorded=False) == pytest.approx(
        costs.steps_of(native) * costs.OVERHEAD["gradients"] / 1e3)
    on_device = dataclasses.replace(native, placement="device")
    assert costs.where_here(on_device) == "callback"
    assert costs.run_seconds(on_device, lambda *a: 1.0, recorded=False) == pytest.approx(
        costs.steps_of(native) * (costs.OVERHEAD["gradients"] + 0.38) / 1e3)
    assert dry_run.table([native, on_device], lambda *a: 1.0)["path"].tolist() == ["host", "callback"]
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    assert costs.where_here(native) == "callback"
    monkeypatch.setattr(jax, "process_count", lambda: 1)
    # auto: Warp measured faster at 320 and 1,024 Hopper environments here, native at 64
    rows = [{"task": "hopper", "solver": "converged", "batch": b, "native_ms": n, "warp_ms": w}
            for b, n, w in ((64, 0.3, 1.5), (320, 2.7, 2.1), (1024, 8.1, 2.4))]
    monkeypatch.setattr(crossover, "load", lambda key: rows)
    assert costs.where_here(program(agents=500)) == "accelerator"        # between two rows that agree
    assert costs.where_here(dataclasses.replace(program(agents=500), stage="gradients")) is None   # Warp there
    assert costs.where_here(program(agents=5)) == "split"               # below the rows: auto's native default
    assert costs.where_here(program(agents=200)) == "split"             # the rows around it disagree
    assert costs.where_here(program(agents=500, physics="native")) == "split"
    assert costs.where_here(program(agents=2000)) == "split"            # past the rows: undecided, native
    # Gym's Humanoid: MJX and Warp lack its solver, so auto keeps native whatever the rows say
    rows += [{**r, "task": "humanoid", "model": "gym"} for r in rows]
    assert costs.where_here(program("humanoid", agents=500, model="gym")) == "split"
    # several devices: auto decides at the batch each device steps, as a sweep does (2,000 agents over 4: 500)
    monkeypatch.setattr(jax, "local_device_count", lambda *a, **k: 4)
    monkeypatch.setattr(jax, "device_count", lambda *a, **k: 4)
    assert costs.where_here(program(agents=2000)) == "accelerator"
    monkeypatch.setattr(crossover, "load", lambda key: [])
    assert costs.where_here(program()) is None                          # native: sharded over them


def test_a_plan_costs_each_program_with_its_own_model_and_solver():
    """Table 2 at paper scale trains Gym's models: its programs are costed with Gym's physics (2.5–4× Brax's
    per step), not the default model's; a measurement program carries its runs' model too."""
    from pgdiag.experiments import targets

    asked = []

    def step_ms(task, width, model, solver, physics):
        asked.append((task, model, solver))
        return {"gym": 2.0, "brax": 1.0}[model]

    (program, _) = targets.get("table-2").dry_run("paper", tasks=("hopper",), memory=1 << 62)
    assert (program.model, program.solver) == ("gym", "converged")
    # Gym's step (2.0 ms) + the rollout's kernels and the update in Brax's Hopper steps (1.0 ms): 0.9 + 1.9; Gym's
    # Hopper has Brax's sizes (11 observations, 3 actions), so the update's FLOPs are the preset's
    assert costs.run_seconds(program, step_ms) == pytest.approx(488 * 2048 * (2.0 + 0.9 + 1.9) / 1e3)
    assert asked == [("hopper", "gym", "converged"), ("hopper", "brax", "converged")]
    fast = targets.get("fig-ablation").dry_run("smoke", memory=1 << 62, solver="fast")
    assert {(p.model, p.solver) for p in fast} == {("brax", "fast")}
    grads = [p for p in targets.get("fig-grad-variance").dry_run("smoke", tasks=("hopper",), memory=1 << 62,
                                                                  model="gym") if p.stage != "train"]
    assert [(p.stage, p.model) for p in grads] == [("gradients", "gym")]


def test_a_dry_run_on_saved_runs_plans_their_agents_at_their_checkpoints(lqr_runs, capsys, tmp_path):
    """`--run DIR --dry-run`: the measurement of every agent of the runs at every checkpoint they keep, read from
    their manifests. Worked by hand: each LQR run has 1 agent with checkpoints 0 and 5, so 2 subjects per preset;
    the smoke step study takes 10 batches and one held-out batch of 4 environments × 256 steps per subject."""
    runs = [lqr_runs["ppo"], lqr_runs["trpo"]]
    with CompileCounter() as counter:
        programs = dry_run.runs_plan(targets.get("fig-step-variance"), runs)
    assert counter.count == 0
    assert [(p.stage, p.task, p.presets, p.units, p.pairs) for p in programs] == [
        ("steps", "lqr", label, 2, 2 * (10 + 1) * 4 * 256) for label in ("ppo", "trpo")]
    assert main(["fig-step-variance", "--run", runs[0], "--run", runs[1], "--dry-run", "--diag", "batches=20"]) == 0
    out = capsys.readouterr().out
    assert "2 programs, 86,016 pairs" in out              # 2 presets × 2 subjects × (20 + 1) × 1,024
    assert main(["fig-step-variance", "--run", runs[0], "--dry-run", "--scale", "mid"]) == 2
    assert "--run measures existing runs: --scale" in capsys.readouterr().err
    assert main(["fig-step-variance", "--run", str(tmp_path / "none"), "--dry-run"]) == 2
    assert f"fig-step-variance --run: {str(tmp_path / 'none')!r} is not a run directory" in capsys.readouterr().err


def test_recorded_costs_make_plans_better_never_worse(tmp_path, monkeypatch):
    """A program's recorded cost is the least of its last timings (contention only slows a run down: a timing
    under load after a clean one leaves the plan as it was, a faster one lowers it, and the record keeps the
    last five); a run other processes loaded is not recorded; rows of another version of pgdiag's source are
    not read (a plan falls back on physics); and a physics record of batches 256 and up no longer costs a
    14-environment batch at 256's price (it is timed, and recorded, at the ladder's widths around it)."""
    import jax

    from pgdiag import preset
    from pgdiag.envs import crossover
    from pgdiag.run import timings

    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    static = preset("trpo", "point_mass", num_envs=1, steps_per_env=32).static
    for ms in (2.0, 5.0, 3.0):
        timings.record(static, 8, ms)
    assert timings.recorded(static) == [(8, 2.0)]
    for ms in (1.5, 4.0, 4.0, 4.0, 4.0, 4.0):    # 1.5 falls out of the last five
        timings.record(static, 8, ms)
    assert timings.recorded(static) == [(8, 4.0)]
    timings.record(static, 8, 1.0, others=0.6)     # others kept 60% of the host busy: not kept
    timings.record(static, 8, 1.0, others=0.1)
    assert timings.recorded(static) == [(8, 1.0)]
    monkeypatch.setattr(timings, "code_digest", lambda: "another version")
    assert timings.recorded(static) == []
    timings.record(static, 8, 7.0)                 # the new code's row replaces the old code's
    assert timings.recorded(static) == [(8, 7.0)] and len(timings.here()) == 1

    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    rows = [{"task": "hopper", "solver": "converged", "batch": b, "native_ms": 0.02 * b} for b in (256, 1024)]
    crossover.record(crossover.host_key(os.cpu_count() or 1), rows)
    timed = []
    monkeypatch.setattr(crossover, "step_ms", lambda task, backend, threads, solver, batch, **kw:
                        timed.append(batch) or 0.1 + 0.02 * batch)
    step_ms = costs.measured_step_ms("converged")
    assert step_ms("hopper", 512) == pytest.approx(0.02 * 512) and timed == []     # between recorded batches
    assert step_ms("hopper", 14) == pytest.approx(0.1 + 0.02 * 14) and timed == [4, 16]


def test_a_long_run_records_what_its_quiet_chunks_cost(tmp_path, monkeypatch):
    """A run's cost per step is recorded from its chunks after the first that ran with the host to themselves: a
    chunk during which others took 60% of the host is left out, one at 10% or where the host does not say is kept
    (by hand: 3 s + 1 s over 2 + 1 iterations of 32 steps = 41.7 ms a step, at 3 agents × 2 environments); a run
    whose every later chunk ran under load records nothing, and a run of one quiet chunk adds its row."""
    from types import SimpleNamespace

    from pgdiag import preset
    from pgdiag.run import run_record, timings

    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    static = preset("ppo", "point_mass", num_envs=2, steps_per_env=32).static
    run = SimpleNamespace(static=static, n=3, chunks=[(10.0, 1, 0.0), (2.0, 1, 0.6), (3.0, 2, 0.1), (1.0, 1, None)])
    run_record._record_cost(run)
    assert timings.recorded(static) == [(6, pytest.approx(4.0e3 / (3 * 32)))]
    other = preset("trpo", "point_mass", num_envs=2, steps_per_env=32).static
    run_record._record_cost(SimpleNamespace(static=other, n=3, chunks=[(10.0, 1, 0.0), (2.0, 1, 0.5)]))
    assert timings.recorded(other) == []
    run_record._record_cost(SimpleNamespace(static=other, n=1, chunks=[(0.64, 1, 0.0)]))
    assert timings.recorded(other) == [(2, pytest.approx(20.0))]


def test_the_load_meter_reads_other_processes_share_of_the_host(monkeypatch):
    """``load_meter``: busy time not this process's, over wall time × cores — by hand with a host whose cores
    were busy 3 s in 2 s of wall time on 2 cores while this process used 1 s (others: 2 s of 4 = 0.5); None
    where the host does not say."""
    from pgdiag.run import timings

    clock = {"busy": 100.0, "own": 10.0, "wall": 50.0}
    monkeypatch.setattr(timings, "_busy_seconds", lambda: clock["busy"])
    monkeypatch.setitem(timings._clocks, "own", lambda: clock["own"])
    monkeypatch.setitem(timings._clocks, "wall", lambda: clock["wall"])
    monkeypatch.setitem(timings._clocks, "cores", lambda: 2)
    others = timings.load_meter()
    clock.update(busy=103.0, own=11.0, wall=52.0)
    assert others() == pytest.approx(0.5) and timings.loaded(others())
    clock.update(busy=111.0, own=19.0, wall=60.0)   # 8 s more of this process's own: others still 2 s, of 20
    assert others() == pytest.approx(0.1) and not timings.loaded(others())
    monkeypatch.setattr(timings, "_busy_seconds", lambda: None)
    assert timings.load_meter()() is None and not timings.loaded(None)
