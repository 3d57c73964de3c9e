"""Several processes as one SPMD program (jax.distributed; gloo between local CPU processes).

Each case runs the same ``pgdiag sweep`` command as two local processes joined through a localhost
coordinator (one virtual CPU device each, or two), and alone as one process, with looped agents
(``--batching map``). Every agent's arithmetic is then that of a run alone, but the programs are not the same
(a loop over 2 agents on each device against a loop over 3), so XLA may order some sums differently: the
metrics and saved states must agree to float32 rounding (tests/compare.py derives the tolerance), and the
integer columns (episode counts) exactly. A wrong split, seed or agent would differ by orders of magnitude
more."""

import os
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest

from compare import assert_frames_close, assert_trees_close
from pgdiag import load_checkpoint
from pgdiag.cli import main
from pgdiag.config import ConfigError
from pgdiag.run import distributed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _env(devices: int) -> dict:
    """This process's XLA flags (e.g. an instruction-set cap, which changes float results) and the
    virtual device count."""
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f]
    if devices > 1:
        flags.append(f"--xla_force_host_platform_device_count={devices}")
    return {**os.environ, "XLA_FLAGS": " ".join(flags), "JAX_PLATFORMS": "cpu"}


def _sweep(out, args, processes: int = 1, devices: int = 1) -> list:
    cmd = [sys.executable, "-m", "pgdiag.cli", "sweep", *args, "--out", str(out), "--no-progress", "--checkpoint",
           "--batching", "map"]
    if processes == 1:
        children = [subprocess.Popen(cmd, env=_env(devices), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)]
    else:
        port = _free_port()
        children = [subprocess.Popen(cmd + ["--coordinator", f"localhost:{port}", "--num-processes", str(processes),
                                            "--process-id", str(i)], env=_env(devices), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True) for i in range(processes)]
    outs = [c.communicate(timeout=400) for c in children]
    for c, (_, err) in zip(children, outs):
        assert c.returncode == 0, err[-3000:]
    return outs


def _same_run(a, b):
    ma, mb = pd.read_parquet(a / "metrics.parquet"), pd.read_parquet(b / "metrics.parquet")
    assert_frames_close(ma, mb)
    assert_trees_close(load_checkpoint(str(a)), load_checkpoint(str(b)))


POINT_MASS = ["--preset", "ppo", "--task", "point_mass", "--set", "num_envs=2", "--set", "steps_per_env=32",
              "--set", "num_iterations=3", "--set", "num_minibatches=4", "--set", "ppo_epochs=2",
              "--set", "value_epochs=2", "--grid", "lr_policy=1e-4,3e-4,1e-3", "--seeds", "1"]
HOPPER = ["--preset", "ppo", "--task", "hopper", "--set", "num_envs=2",
          "--set", "steps_per_env=32", "--set", "num_iterations=2", "--set", "num_minibatches=2",
          "--set", "ppo_epochs=1", "--set", "value_epochs=1", "--grid", "lr_policy=1e-4,3e-4,1e-3", "--seeds", "1"]


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    root = tmp_path_factory.mktemp("alone")
    _sweep(root / "point_mass", POINT_MASS)
    _sweep(root / "hopper", HOPPER)
    return root


def _manifest(run):
    import json
    return json.load(open(run / "manifest.json"))


def test_two_processes_equal_one_on_a_pure_jax_task(alone, tmp_path):
    """3 agents over 2 processes (padded to 4, the copy dropped)."""
    _sweep(tmp_path / "run", POINT_MASS, processes=2)
    _same_run(tmp_path / "run", alone / "point_mass")
    manifest = _manifest(tmp_path / "run")
    assert manifest["device"]["processes"] == 2 and manifest["device"]["count"] == 2
    assert manifest["status"] == "complete" and manifest["num_agents"] == 3


def test_two_processes_of_two_devices_equal_one_on_native_mujoco(alone, tmp_path):
    """3 agents over 2 processes × 2 virtual devices: each process steps the physics of its own agents
    (the host callback inside shard_map). ``physics=auto`` is decided by process 0 and taken by both."""
    _sweep(tmp_path / "run", HOPPER, processes=2, devices=2)
    _same_run(tmp_path / "run", alone / "hopper")
    manifest = _manifest(tmp_path / "run")
    assert manifest["device"]["count"] == 4 and manifest["num_agents"] == 3
    physics = manifest["physics"]
    assert (physics["requested"], physics["backend"], physics["batch_per_device"]) == ("auto", "native", 2)
    assert manifest["base_config"]["static"]["physics"] == "native"   # the run is pinned to it


def _processes(args, processes: int = 2) -> list:
    """``pgdiag ARGS`` as ``processes`` local processes joined through a localhost coordinator."""
    port = _free_port()
    cmd = [sys.executable, "-m", "pgdiag.cli", *args, "--coordinator", f"localhost:{port}",
           "--num-processes", str(processes)]
    children = [subprocess.Popen(cmd + ["--process-id", str(i)], env=_env(1), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for i in range(processes)]
    outs = [c.communicate(timeout=400) for c in children]
    for c, (_, err) in zip(children, outs):
        assert c.returncode == 0, err[-3000:]
    return outs


def _two(per_process: list) -> list:
    """Two processes, each ``pgdiag ARGS`` with its own arguments; (return code, stderr) of each."""
    port = _free_port()
    children = [subprocess.Popen([sys.executable, "-m", "pgdiag.cli", *args, "--coordinator", f"localhost:{port}",
                                  "--num-processes", "2", "--process-id", str(i)], env=_env(1),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for i, args in enumerate(per_process)]
    return [(c.returncode, err) for c, (_, err) in ((c, c.communicate(timeout=300)) for c in children)]


def test_processes_started_otherwise_stop_and_a_refusal_on_process_0_reaches_the_others(alone, tmp_path):
    """Each process fills its own agents from its own arguments: started with another grid value, the two would
    train a mix that process 0's manifest records as its own grid. Both stop before anything is written,
    naming what differs. A directory process 0 refuses (it holds a run) stops the other with one line."""
    out = str(tmp_path / "run")
    sweep = ["sweep", *POINT_MASS, "--out", out, "--no-progress"]
    other = [a if a != "lr_policy=1e-4,3e-4,1e-3" else "lr_policy=1e-4,3e-4,3e-2" for a in sweep]
    for code, err in _two([sweep, other]):
        assert code == 2 and "sweep: process(es) 1 were started with another grid than process 0" in err, err[-2000:]
        assert "Traceback" not in err
    assert not os.path.exists(os.path.join(out, "manifest.json"))
    taken = ["sweep", *POINT_MASS, "--out", str(alone / "point_mass"), "--no-progress", "--checkpoint",
             "--batching", "map"]
    (code0, err0), (code1, err1) = _two([taken, taken])
    assert code0 == 2 and "already holds a run" in err0, err0[-2000:]
    assert code1 == 2 and "taking the run directory: process 0 stopped (its message says why)" in err1, err1[-2000:]


def test_a_run_interrupted_alone_resumes_on_two_processes(alone, tmp_path, monkeypatch):
    """Stopped after its first iteration in this process, resumed by two: the restored states are split
    over the processes, and the finished run equals the uninterrupted one (to float32 rounding: the
    resumed iterations ran in a program of another shape)."""
    from pgdiag.run import store

    real = store.write_manifest

    def stop_after_one(path, manifest):
        real(path, manifest)
        if manifest.get("status") == "running" and manifest["iterations_done"] >= 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(store, "write_manifest", stop_after_one)
    out = tmp_path / "run"
    assert main(["sweep", *POINT_MASS, "--out", str(out), "--no-progress", "--checkpoint", "--batching", "map",
                 "--chunk", "1"]) == 130
    monkeypatch.undo()
    assert _manifest(out)["status"] == "interrupted" and _manifest(out)["iterations_done"] == 1
    outs = _processes(["resume", str(out), "--no-progress"])
    _same_run(out, alone / "point_mass")
    manifest = _manifest(out)
    assert manifest["status"] == "complete" and manifest["device"]["processes"] == 1
    assert [(r["after_iteration"], r["device"]["processes"]) for r in manifest["resumed"]] == [(1, 2)]
    assert "iterations: 3" in outs[0][0] and outs[1][0] == ""   # process 0 reports, the other is silent


def test_a_diagnostic_target_on_two_processes_equals_one(alone, tmp_path):
    """fig-grad-variance measuring a saved run: subjects restored in every process, the measurement split over
    them, the tables and figure written once by process 0. The tables equal those of one process up to
    float32 rounding: XLA compiles the per-device loop over 2 subjects a little differently from the loop
    over 3 (the same happens with 2 devices in one process), and a few values move by an ulp or two
    (tests/compare.py: 1e-4 of each column's scale), far below any difference a wrong subject, seed or split
    would make (the estimates' own spread is ~10%)."""
    import shutil

    measure = ["--diag", "sizes=100,1000", "--diag", "estimates=2", "--diag", "true_pairs=2048", "--diag",
               "batching=map", "--no-progress"]  # subjects one at a time: bitwise whatever the split
    for name in ("one", "two"):
        shutil.copytree(alone / "point_mass", tmp_path / name, ignore=shutil.ignore_patterns("diagnostics"))
    assert main(["fig-grad-variance", "--run", str(tmp_path / "one"), "--out", str(tmp_path / "study-one"),
                 *measure]) == 0
    _processes(["fig-grad-variance", "--run", str(tmp_path / "two"), "--out", str(tmp_path / "study-two"), *measure])
    tables = sorted(os.listdir(tmp_path / "one" / "diagnostics" / "gradients"))
    assert "estimates.parquet" in tables and "pairs.parquet" in tables
    for table in tables:
        if table.endswith(".parquet"):
            a, b = (pd.read_parquet(tmp_path / n / "diagnostics" / "gradients" / table).drop(columns="run")
                    for n in ("one", "two"))
            assert_frames_close(b, a)
    assert (tmp_path / "study-two" / "fig-grad-variance.png").is_file()
    summary = [pd.read_csv(tmp_path / s / "fig-grad-variance-summary.csv") for s in ("study-one", "study-two")]
    assert_frames_close(summary[1], summary[0])


@pytest.mark.parametrize("given,match", [
    (dict(coordinator="localhost:1234", num_processes=2, process_id=2), "process_id must be in 0 … 1"),
    (dict(coordinator="localhost:1234", num_processes=0, process_id=0), "num_processes must be ≥ 1"),
    (dict(coordinator="localhost", num_processes=2, process_id=0), "HOST:PORT"),
    (dict(coordinator="localhost:99999", num_processes=2, process_id=0), "HOST:PORT"),
    (dict(coordinator="localhost:1234", num_processes=2), "missing: --process-id"),
])
def test_bad_settings_are_named(given, match):
    with pytest.raises(distributed.ConfigError, match=match):
        distributed.settings(**given)


def test_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("PGDIAG_COORDINATOR", "10.0.0.1:1234")
    monkeypatch.setenv("PGDIAG_NUM_PROCESSES", "4")
    monkeypatch.setenv("PGDIAG_PROCESS_ID", "3")
    assert distributed.settings() == {"coordinator_address": "10.0.0.1:1234", "num_processes": 4, "process_id": 3}
    assert distributed.settings(process_id=1)["process_id"] == 1   # an argument wins over the environment


def test_cli_refuses_a_process_id_out_of_range(capsys):
    assert main(["sweep", "--task", "point_mass", "--coordinator", "localhost:1234", "--num-processes", "2",
                 "--process-id", "5"]) == 2
    assert "process_id must be in 0 … 1" in capsys.readouterr().err


def test_an_unreachable_coordinator_is_a_clear_error():
    """Process 1 of 2 with nobody listening at the coordinator's address gives up after the timeout."""
    port = _free_port()
    out = subprocess.run([sys.executable, "-m", "pgdiag.cli", "sweep", "--task", "point_mass", "--coordinator",
                          f"localhost:{port}", "--num-processes", "2", "--process-id", "1", "--join-timeout", "3"],
                         env=_env(1), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr[-2000:]
    assert f"could not join coordinator localhost:{port} as process 1 of 2 within 3 s" in out.stderr


def test_process_0_whose_peers_never_come_is_a_clear_error():
    """Process 0 of 2, alone: it waits for the other process at its port and gives up after the timeout with
    one line (JAX would abort with a C++ check failure)."""
    port = _free_port()
    out = subprocess.run([sys.executable, "-m", "pgdiag.cli", "sweep", "--task", "point_mass", "--coordinator",
                          f"localhost:{port}", "--num-processes", "2", "--process-id", "0", "--join-timeout", "3"],
                         env=_env(1), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr[-2000:]
    assert (f"could not join coordinator localhost:{port} as process 0 of 2 within 3 s: 0 of the 1 other processes "
            f"reached it") in out.stderr


def test_process_0_counts_each_peer_once_by_the_id_it_knocks_with():
    """Three processes: process 1 knocking twice (started twice) and a bare probe of the port do not stand in
    for process 2, and the error names the one that never came; a stream of silent probes does not hold
    process 0 past its timeout; real peers (one whose knock arrives in two pieces) are each answered and
    counted, and all three go on."""
    import threading

    def knock(port, *pieces):
        for _ in range(100):
            try:
                with socket.create_connection(("localhost", port), timeout=1.0) as c:
                    for piece in pieces:
                        c.sendall(piece)
                        time.sleep(0.05)
                    return
            except OSError:
                time.sleep(0.05)

    def process(port, i, timeout, out):
        try:
            distributed._check_reachable(f"localhost:{port}", i, timeout, "the test's coordinator", 3)
            out[i] = None
        except ConfigError as e:
            out[i] = str(e)

    def host(port, timeout, out):
        t = threading.Thread(target=process, args=(port, 0, timeout, out))
        t.start()
        return t

    port, out = _free_port(), {}
    t = host(port, 3.0, out)
    for pieces in ((b"pgdiag 1\n",), (b"pgdiag 1\n",), ()):
        knock(port, *pieces)
    t.join(30)
    assert "1 of the 2 other processes reached it (not process 2)" in out[0], out

    port, out, stop = _free_port(), {}, threading.Event()
    t, start = host(port, 2.0, out), time.monotonic()
    prober = threading.Thread(target=lambda: [knock(port) for _ in iter(lambda: stop.wait(0.1), True)])
    prober.start()
    t.join(30)
    stop.set()
    prober.join(30)
    assert "0 of the 2 other processes" in out[0] and time.monotonic() - start < 2.0 + 1.5, out

    port, out = _free_port(), {}
    t = host(port, 20.0, out)
    knock(port, b"pgd", b"iag 2\n")                 # process 2's knock in two pieces
    peer = threading.Thread(target=process, args=(port, 1, 20.0, out))
    peer.start()
    for thread in (t, peer):
        thread.join(60)
    assert out == {0: None, 1: None}, out
