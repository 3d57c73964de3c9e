"""Plans for another host (pgdiag.envs.hosts): a profile saved on one host declares its devices, memory and recorded
step costs, and a plan made anywhere under it decides and costs every program as that host would, timing nothing."""

import dataclasses
import json
import os

import pytest

from pgdiag import preset
from pgdiag.cli import main
from pgdiag.config import ConfigError
from pgdiag.diagnostics import memory, placement
from pgdiag.envs import crossover, hosts
from pgdiag.experiments import costs, dry_run, planner

GIB = 2 ** 30
# a declared GPU host: 80 GiB on its device, 64 GiB of RAM, 16 cores; Hopper's step on native MuJoCo (16 threads)
# and on Warp at three widths: native faster up to 64 environments, Warp from 1,024
ROWS = [{"task": "hopper", "solver": "converged", "batch": b, "native_ms": n, "warp_ms": w}
        for b, n, w in ((1, 0.03, 1.4), (64, 0.2, 1.45), (1024, 2.6, 1.6))]
GPU = hosts.Host("gpu", "NVIDIA H100 80GB HBM3", devices=1, cpu_devices=16, cores=16, device_memory=80 * GIB,
                 host_memory=64 * GIB, physics={16: ROWS}, costs=[], source="gpu.json")


def _training(agents=5, **over):
    cfg = preset("ppo", "hopper", num_envs=1, steps_per_env=64, num_iterations=2, **over)
    return dry_run.training_program("hopper", "ppo", cfg.static, agents, None, spec=(cfg, None, [0]))


@pytest.fixture
def nothing_timed(monkeypatch, tmp_path):
    """A plan under a declared host must not time a step here, nor write this host's cache."""
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path / "cache"))

    def refuse(*a, **k):
        raise AssertionError("a step was timed for a declared host")

    monkeypatch.setattr(crossover, "step_ms", refuse)
    monkeypatch.setattr(crossover, "measure", refuse)
    yield
    assert not (tmp_path / "cache").exists()


def test_a_declared_gpu_host_decides_where_each_program_runs_and_its_memory(nothing_timed):
    """Under the profile, this CPU plans as the GPU host would: a 5-agent native training splits (collection on the
    host's cores, update on the GPU), a measurement of native runs goes to the host's CPU, Warp's width to the GPU;
    memory is 80% of the device's or half the host's RAM, by where each program runs."""
    assert hosts.backend() == "cpu" and costs.where_here(_training()) is None
    with hosts.declare(GPU):
        assert hosts.backend() == "gpu" and hosts.cores() == 16
        assert costs.where_here(_training()) == "split"                     # 5 environments: native (rows 1, 64)
        assert costs.where_here(_training(agents=1024)) == "accelerator"   # Warp at 1,024
        assert costs.where_here(dataclasses.replace(_training(), stage="gradients")) == "host"
        assert costs.where_here(dataclasses.replace(_training(), stage="optimize")) == "callback"   # fig-theorem
        assert memory.available_memory() == int(0.8 * 80 * GIB)
        assert memory.available_memory(host=True) == 32 * GIB
        native, mjx = (preset("ppo", "hopper", physics=p).static for p in ("native", "mjx"))
        assert placement.memory_bytes(native) == 32 * GIB                   # on the host's CPU devices
        assert placement.memory_bytes(mjx) == int(0.8 * 80 * GIB)          # on the GPU
        # auto: the width decides where, and the width is shaped by memory: the smaller of the two
        assert placement.memory_bytes(preset("ppo", "hopper").static) == 32 * GIB
        assert _training().available == int(0.8 * 80 * GIB)
    assert hosts.declared() is None and hosts.backend() == "cpu"            # the block left, this host again


def test_a_plan_names_the_physics_auto_takes_at_each_programs_width(nothing_timed):
    """The backend column: native MuJoCo where the profile's rows have it faster (5 environments, between its rows at
    1 and 64), Warp where they have Warp faster (1,024 environments, a training program or a measurement that wide),
    native MuJoCo past the widest row (nothing is extrapolated there: the host itself would time that width), a
    backend asked for as asked, pure JAX for a pure-JAX task; on this CPU, without recorded Warp rows, native."""
    study = dataclasses.replace(_training(), stage="gradients")
    lqr = dry_run.training_program("lqr", "ppo", preset("ppo", "lqr").static, 3, None,
                                   spec=(preset("ppo", "lqr"), None, [0]))
    programs = [_training(), _training(agents=1024), dataclasses.replace(study, width=1024),
                dataclasses.replace(study, width=2048), _training(physics="native", agents=1024), lqr]
    with hosts.declare(GPU):
        assert dry_run.table(programs, lambda *a: 1.0)["backend"].tolist() == ["native", "warp", "warp", "native",
                                                                               "native", "jax"]
    assert [costs.backend_here(p) for p in programs[:4]] == ["native"] * 4


def test_a_declared_host_costs_a_program_from_its_rows_by_hand(nothing_timed):
    """A 5-agent program of 128 steps: its physics at 5 environments interpolated between the profile's rows at 1
    (0.03 ms, native the faster) and 64 (0.2 ms): 0.03 + 0.17 × 4/63 ms; split training adds 0.1 ms a step, a
    measurement on the host's CPU is its kind's multiple of its physics (the gradient study's 1.5)."""
    physics = 0.03 + 0.17 * 4 / 63
    with hosts.declare(GPU):
        step_ms = costs.measured_step_ms()          # the profile's rows alone: nothing timed here
        assert step_ms("hopper", 5) == pytest.approx(physics)
        assert costs.run_seconds(_training(), step_ms) == pytest.approx(128 * (physics + 0.1) / 1e3)
        study = dataclasses.replace(_training(), stage="gradients")
        assert costs.run_seconds(study, step_ms) == pytest.approx(128 * physics * costs.OVERHEAD["gradients"] / 1e3)
        # beyond the widest row: proportional to the width (an upper bound), as on this host
        assert step_ms("hopper", 4096) == pytest.approx(min(2.6, 1.6) * 4)
        assert step_ms("humanoid", 64) is None      # nothing in the profile: no estimate, rather than a guess


def test_a_declared_host_widens_a_gradient_study_to_its_fullest_recorded_batch(nothing_timed):
    """Warp steps 1,024 / 1.6 environments per ms at its widest row, more than at 64 or 1: but the rows stop below
    2,048, so the constant 2,048 stays; with a row at 4,096 stepping more per ms, 4,096."""
    from pgdiag.studies.gradients.widening import wide_batch

    static = preset("ppo", "hopper").static
    with hosts.declare(GPU):
        assert wide_batch(static, "warp") == 2048
    wider = dataclasses.replace(GPU, physics={16: ROWS + [{"task": "hopper", "solver": "converged", "batch": 4096,
                                                           "native_ms": 10.0, "warp_ms": 1.8}]})
    with hosts.declare(wider):
        assert wide_batch(static, "warp") == 4096
    assert wide_batch(static, "warp") == 2048       # this host has no Warp rows


def test_a_saved_profile_reads_back_and_is_never_overwritten(tmp_path):
    path = str(tmp_path / "gpu.json")
    hosts.save(GPU, path)
    assert hosts.load(path) == dataclasses.replace(GPU, source=path)
    with pytest.raises(FileExistsError, match="exists"):
        hosts.save(dataclasses.replace(GPU, cores=8), path)
    assert hosts.load(path) == dataclasses.replace(GPU, source=path)
    assert sorted(os.listdir(tmp_path)) == ["gpu.json"]          # no temporary file left beside it
    # an accelerator whose memory the runtime does not report: saved as unknown, planned with half the host's RAM
    unknown = dataclasses.replace(GPU, device_memory=None)
    hosts.save(unknown, str(tmp_path / "unknown.json"))
    with hosts.declare(str(tmp_path / "unknown.json")):
        assert memory.available_memory() == 32 * GIB


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format="other"), "not a pgdiag host profile"),
    (lambda d: d.update(version=99), "layout version 99"),
    (lambda d: d["host"].pop("cores"), "lacks 'cores'"),
    (lambda d: d["host"].update(cores=0), "cores must be a positive whole number, got 0"),
    (lambda d: d["host"].update(device_memory="lots"), "device_memory must be the bytes"),
    (lambda d: d["host"].pop("host_memory"), "lacks 'host_memory'"),
    (lambda d: d["host"].update(host_memory=0), "host_memory must be a positive whole number, got 0"),
    (lambda d: d["host"].update(platform="cuda"), "platform must be one of cpu, gpu, tpu"),
    (lambda d: d.update(version=True), "layout version True"),
    (lambda d: d["host"].update(colour="red"), "unknown host field"),
    (lambda d: d["host"].update(physics={}), "unknown host field"),
    (lambda d: d.update(physics={"sixteen": []}), "physics threads"),
    (lambda d: d.update(physics={"16": [1, 2]}), "crossover rows"),
    (lambda d: d.update(costs=[{"width": 5}]), "ms_per_step"),
    (lambda d: d.update(costs=[{"ms_per_step": 1.0}]), "width and ms_per_step"),
])
def test_a_malformed_profile_is_refused_naming_what_is_wrong(tmp_path, change, message):
    data = hosts.to_json(GPU)
    change(data)
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=message):
        hosts.load(str(tmp_path / "bad.json"))
    with pytest.raises(ConfigError, match="no such file"):
        hosts.load(str(tmp_path / "missing.json"))


def test_this_hosts_plan_equals_the_plan_under_its_own_saved_profile(monkeypatch, tmp_path):
    """Recorded rows planned live and the same rows read from the profile `pgdiag host save` writes give the same
    plan, program for program (the same code reads them; only where they come from differs)."""
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    rows = [{"task": "hopper", "solver": "converged", "batch": b, "native_ms": 0.02 * b ** 0.8}
            for b in (1, 4, 16, 64, 256, 1024, 4096, 16384)]
    for threads in {hosts.cores(), *range(1, hosts.cores() + 1)}:
        crossover.record(crossover.host_key(threads), rows)
    monkeypatch.setattr(costs, "time_pure_jax", lambda threads: [])
    assert main(["host", "save", str(tmp_path / "here.json")]) == 0
    live = planner.plan_report("cl", "mid", show=False)
    declared = planner.plan_report("cl", "mid", show=False, host=str(tmp_path / "here.json"))
    assert live.drop(columns="available").equals(declared.drop(columns="available"))
    assert live.estimated_s.notna().all()


def test_the_command_line_plans_for_a_saved_host_and_refuses_a_run_with_one(tmp_path, capsys, nothing_timed):
    path = str(tmp_path / "gpu.json")
    hosts.save(GPU, path)
    assert main(["fig-grad-variance", "--dry-run", "--scale", "mid", "--host", path]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA H100" in out and "host" in out and "split" in out     # the path column of a GPU host
    assert main(["report", "--dry-run", "--scale", "mid", "--host", str(tmp_path / "none.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["fig-grad-variance", "--scale", "mid", "--host", path]) == 2
    assert "needs --dry-run" in capsys.readouterr().err
    assert main(["host", "show", path]) == 0
    assert "hopper (brax, converged) at 1, 64, 1,024 on native/warp" in capsys.readouterr().out
    assert os.path.exists(path)


def test_a_plan_names_what_does_not_fit_with_the_line_its_run_would_give(capsys, nothing_timed):
    """A width past the memory: the plan prints the study's own refusal (what it needs, what is available, what
    to lower), against the declared device's memory where the program would run there."""
    with hosts.declare(GPU):
        assert main(["fig-grad-variance", "--dry-run", "--scale", "mid", "--diag", "envs=100000"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("does not fit: gradients hopper"))
    assert "is available" in line and "lower envs or steps" in line
    assert f"but {memory.fmt_bytes(32 * GIB)} is available" in line   # auto runs: the smaller memory (host RAM)


def test_warp_is_planned_for_a_host_that_has_it_though_this_one_does_not(monkeypatch):
    from pgdiag import envs
    from pgdiag.envs import mujoco_physics

    monkeypatch.setattr(mujoco_physics, "warp_unavailable", lambda: "warp-lang is not installed")
    with pytest.raises(ConfigError, match="not installed"):
        envs.resolve_physics("hopper", "warp")
    with hosts.declare(GPU):
        assert envs.resolve_physics("hopper", "warp") == ("warp", 0)
    # a plan here names the backend asked for; the run is what refuses it, with the line above
    assert costs.backend_here(_training(physics="warp")) == "warp"


def test_host_save_can_first_time_what_a_scale_of_both_reports_needs(monkeypatch, tmp_path, capsys):
    """--scale plans both papers' reports here first (their missing step costs timed and recorded, as any dry run
    does), then saves; a scale no target has is refused before anything is timed or written."""
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(costs, "time_pure_jax", lambda threads: [])
    planned = []
    monkeypatch.setattr(planner, "plan_report", lambda paper, scale, show: planned.append((paper, scale)))
    assert main(["host", "save", str(tmp_path / "a.json"), "--scale", "paper"]) == 0
    assert planned == [("cl", "paper"), ("im", "paper")] and os.path.exists(tmp_path / "a.json")
    monkeypatch.undo()
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path / "cache"))
    assert main(["host", "save", str(tmp_path / "b.json"), "--scale", "huge"]) == 2
    assert "huge" in capsys.readouterr().err and not os.path.exists(tmp_path / "b.json")
