"""physics="auto" by workload: deciding from recorded measurements, measuring and recording, pinning a run."""

import importlib.util
import json
import pathlib

import pytest

from pgdiag import envs, preset, sweep
from pgdiag.envs import crossover


def _row(batch, native, mjx, task="hopper", solver="converged"):
    return {"task": task, "solver": solver, "batch": batch, "native_ms": native, "mjx_ms": mjx}


# native faster at 64 and 256, MJX at 1,024 and 4,096
ROWS = [_row(64, 1.0, 9.0), _row(256, 3.0, 9.0), _row(1024, 12.0, 9.0), _row(4096, 48.0, 10.0),
        _row(1024, 2.0, 9.0, solver="fast"), _row(64, 1.0, 0.5, task="walker2d")]


@pytest.mark.parametrize("batch, expected", [
    (256, "native"),    # measured there
    (1024, "mjx"),      # measured there
    (128, "native"),    # between two native rows
    (2048, "mjx"),      # between two MJX rows
    (512, None),        # between a native row and an MJX row: undecided, measure
    (8192, None),       # past the measured batches: nothing is extrapolated
    (16, None),
])
def test_decide_from_the_rows_around_a_batch(batch, expected):
    decided = crossover.decide(ROWS, "hopper", "converged", batch)
    assert (decided and decided[0]) == expected
    if decided:
        assert "native" in decided[1] and "MJX" in decided[1]


def test_decide_keeps_tasks_and_solvers_apart():
    assert crossover.decide(ROWS, "hopper", "fast", 1024)[0] == "native"
    assert crossover.decide(ROWS, "hopper", "fast", 512) is None
    assert crossover.decide(ROWS, "walker2d", "converged", 64)[0] == "mjx"
    assert crossover.decide(ROWS, "humanoid", "converged", 64) is None


def test_decide_and_record_keep_models_apart(tmp_path):
    gym = dict(_row(1024, 30.0, 90.0), model="gym")          # Gym's Hopper: native at 1,024, Brax's: MJX
    rows = ROWS + [gym]
    assert crossover.decide(rows, "hopper", "converged", 1024)[0] == "mjx"
    assert crossover.decide(rows, "hopper", "converged", 1024, "gym")[0] == "native"
    assert crossover.decide(rows, "hopper", "converged", 256, "gym") is None   # a Brax row never decides Gym's
    path = str(tmp_path / "crossover.json")
    crossover.record("host", rows, path)
    crossover.record("host", [dict(gym, native_ms=20.0)], path)               # remeasured: replaces Gym's only
    saved = crossover.load("host", path)
    assert len(saved) == len(rows)
    assert [r["native_ms"] for r in saved if r.get("model") == "gym"] == [20.0]
    assert [r["native_ms"] for r in saved if r["batch"] == 1024 and r["solver"] == "converged"
            and "model" not in r] == [12.0]
    # Gym's Humanoid runs natively whatever was measured: MJX has no PGS solver
    assert envs.choose_physics("humanoid", "auto", 0, "converged", 4096, "gym")[:1] == ("native",)


def test_record_replaces_a_batch_and_keeps_other_hosts(tmp_path):
    path = str(tmp_path / "sub" / "crossover.json")
    crossover.record("host A", ROWS[:2], path)
    crossover.record("host B", [_row(64, 5.0, 1.0)], path)
    crossover.record("host A", [_row(64, 7.0, 1.0)], path)                 # remeasured: replaces
    a = crossover.load("host A", path)
    assert [(r["batch"], r["native_ms"]) for r in a] == [(64, 7.0), (256, 3.0)]
    assert crossover.load("host B", path) == [_row(64, 5.0, 1.0)]
    assert crossover.load("host C", path) == []
    (tmp_path / "bad.json").write_text("{not json")
    assert crossover.load("host A", str(tmp_path / "bad.json")) == []      # unreadable: measure again


def test_a_cpu_host_without_measurements_uses_native(tmp_path, monkeypatch):
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))   # no measurements (other tests' plans record theirs)
    backend, threads, why = envs.choose_physics("hopper", "auto", 0, "converged", 4)
    assert backend == "native" and threads >= 1 and "CPU host" in why
    assert envs.choose_physics("hopper", "mjx", 0, "converged", 4)[:2] == ("mjx", 0)   # asked for: as asked
    assert envs.choose_physics("point_mass", "auto", 0, "converged", 4)[0] == "jax"


def test_measure_record_then_decide_from_the_record(tmp_path, monkeypatch):
    """What ``auto`` does on an accelerator for a batch it knows nothing about: time one batched step of
    each backend, record it for this host, and decide that batch from the record from then on."""
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))
    backend, why = crossover.measure_and_record("hopper", "converged", 4, 1)
    rows = json.load(open(tmp_path / "crossover.json"))["hosts"][crossover.host_key(1)]
    assert len(rows) == 1 and rows[0]["batch"] == 4
    assert rows[0]["native_ms"] > 0 and rows[0]["mjx_ms"] > 0
    assert backend == crossover.faster(rows[0]) and f"{rows[0]['native_ms']:.3g} ms" in why
    chosen, threads, why = envs.choose_physics("hopper", "auto", 1, "converged", 4)
    assert (chosen, threads) == (backend, 1 if backend == "native" else 0) and "measured at batch 4" in why
    assert envs.choose_physics("hopper", "auto", 2, "converged", 4)[2].startswith("CPU host")  # another host key


def test_a_sweep_is_pinned_to_the_backend_auto_chose(tmp_path, monkeypatch):
    """The manifest's base configuration names the backend (resume and rerun keep it); ``physics``
    says what was asked for, for which batch and why."""
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path / "cache"))   # a host without measurements
    cfg = preset("ppo", "hopper", num_iterations=1, num_envs=2, steps_per_env=16, num_minibatches=2,
                 ppo_epochs=1, value_epochs=1)
    run = sweep(cfg, {"lr_policy": [1e-4, 3e-4]}, seeds=2, out=str(tmp_path / "run"))
    m = run.manifest
    assert m["physics"]["requested"] == "auto" and m["physics"]["backend"] == "native"
    assert m["physics"]["batch_per_device"] == 4 * 2                      # 4 agents × 2 environments
    assert m["base_config"]["static"]["physics"] == "native"
    from pgdiag.run import store
    assert store.requested_config(m) == json.loads(json.dumps(cfg.to_dict()))
    from pgdiag.cli.runs import _summary
    assert "physics: native, " in _summary(run) and "(auto: CPU host without physics measurements at " in _summary(run)
    # resuming with the configuration as asked for is accepted (the run is complete: nothing to do)
    again = sweep(cfg, {"lr_policy": [1e-4, 3e-4]}, seeds=2, resume=str(tmp_path / "run"))
    assert again.manifest["status"] == "complete" and again.metrics.equals(run.metrics)


def _bench_crossover():
    path = pathlib.Path(__file__).parent.parent / "benchmarks" / "bench_crossover.py"
    spec = importlib.util.spec_from_file_location("bench_crossover", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_measurement_of_some_backends_and_each_backends_crossover():
    """A row of the backends asked for only; bench_crossover's crossover per backend from the rows that timed
    it (by hand: MJX at least as fast as native from batch 64 on, Warp from 16, a row without Warp skipped),
    and --record refused with a subset, whose rows would decide physics=auto without the others."""
    row = crossover.measure("hopper", "converged", 2, 1, steps=2, repeats=1, backends=("native",))
    assert row["native_ms"] > 0 and "mjx_ms" not in row and crossover.faster(row) == "native"
    bench = _bench_crossover()
    rows = [{"task": "hopper", "solver": "fast", "batch": b, "native_ms": n, "mjx_ms": m, **w}
            for b, n, m, w in ((1, 1.0, 2.0, {"warp_ms": 3.0}), (16, 1.5, 2.0, {"warp_ms": 1.0}),
                               (64, 3.0, 2.0, {}), (256, 6.0, 2.0, {"warp_ms": 1.0}))]
    assert bench.crossovers(rows, "mjx") == {("hopper", "brax", "fast"): 64}
    assert bench.crossovers(rows, "warp") == {("hopper", "brax", "fast"): 16}
    with pytest.raises(SystemExit):
        bench.main(["--backends", "native", "--record"])
