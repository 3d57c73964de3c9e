"""The run directory as a store a researcher can trust: written once, by one process, only where it can be
written; damaged files named; a run given no directory still saved."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pgdiag import load_checkpoint, load_run, preset, sweep
from pgdiag.cli import main
from pgdiag.run import CompileCounter, checkpoints, store
from pgdiag.run.claim import LOCK, RunLock, claim, fresh_dir
from pgdiag.run.progress import attached
from pgdiag.run.store import RunDirError

SMALL = dict(num_envs=2, steps_per_env=32, num_iterations=3, num_minibatches=4, ppo_epochs=2, value_epochs=2)
CLI = ["--task", "point_mass", "--set", "num_envs=2", "--set", "steps_per_env=32", "--set", "num_iterations=2",
       "--set", "num_minibatches=4", "--set", "value_epochs=2", "--set", "ppo_epochs=2", "--no-progress"]


@pytest.fixture(scope="module")
def base():
    return preset("ppo", "point_mass", **SMALL)


@pytest.fixture(scope="module")
def saved(base, tmp_path_factory):
    """A complete run with checkpoints after iterations 0 and 3."""
    out = str(tmp_path_factory.mktemp("saved") / "run")
    sweep(base.replace(checkpoint_at=(0,)), seeds=[0], out=out, save_checkpoint=True)
    return out


def _copy(saved, tmp_path) -> str:
    dst = str(tmp_path / "copy")
    shutil.copytree(saved, dst)
    return dst


# --- written once ----------------------------------------------------------------------

def test_a_directory_holding_a_run_is_refused_before_compiling(saved, base, tmp_path):
    out = _copy(saved, tmp_path)
    before = json.load(open(os.path.join(out, store.MANIFEST)))
    # a shape not compiled yet in this process: the refusal must come before any compile
    with CompileCounter() as compiles, pytest.raises(RunDirError) as err:
        sweep(base.replace(num_envs=3), seeds=[0], out=out)
    assert compiles.count == 0
    message = str(err.value)
    assert out in message and "complete after 3 iterations" in message
    assert "pgdiag resume" in message and "--overwrite" in message and "another --out" in message
    assert json.load(open(os.path.join(out, store.MANIFEST))) == before
    assert load_run(out).checkpoints == [0, 3]


def test_overwrite_removes_the_old_runs_files_first(saved, base, tmp_path):
    out = _copy(saved, tmp_path)
    open(os.path.join(out, "notes.txt"), "w").write("mine")     # not a run file: kept
    os.makedirs(os.path.join(out, "diagnostics", "gradients"))    # the old run's measurements: removed with it
    open(os.path.join(out, "diagnostics", "gradients", "manifest.json"), "w").write("{}")
    run = sweep(base.replace(num_iterations=2), seeds=[1], out=out, overwrite=True)
    assert run.manifest["checkpoints"]["saved"] == [] and load_run(out).checkpoints == []
    assert os.listdir(os.path.join(out, store.CHECKPOINTS)) == []   # (the rolling resume state, dropped at the end)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):     # the old run's states are gone
        load_checkpoint(out)
    assert load_run(out).manifest["seeds"] == [1] and len(load_run(out).metrics) == 2
    assert open(os.path.join(out, "notes.txt")).read() == "mine"
    assert not os.path.exists(os.path.join(out, "diagnostics"))


def test_the_cli_refuses_a_reused_out_and_overwrites_when_asked(saved, tmp_path, capsys):
    out = _copy(saved, tmp_path)
    assert main(["train", *CLI, "--out", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already holds a run" in err[0] and "--overwrite" in err[0]
    assert main(["train", *CLI, "--out", out, "--overwrite"]) == 0
    assert load_run(out).manifest["iterations_done"] == 2 and load_run(out).checkpoints == []


# --- one writer ------------------------------------------------------------------------

HOLDER = textwrap.dedent("""
    import sys, time
    from pgdiag.run.claim import RunLock
    lock = RunLock(sys.argv[1]).acquire()
    print("held", flush=True)
    time.sleep(600)
""")


def test_a_second_writer_fails_at_once_and_a_killed_writers_lock_is_taken_over(base, tmp_path):
    out = str(tmp_path / "run")
    os.makedirs(out)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, out], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        t = time.perf_counter()
        with pytest.raises(RunDirError, match=rf"being written by process {holder.pid} on "):
            sweep(base, seeds=[0], out=out)
        assert time.perf_counter() - t < 10          # at once, not after waiting or compiling
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # the killed holder's record is still in the file; the kernel dropped its lock, so it is taken over
    assert f"process {holder.pid} " in open(os.path.join(out, LOCK)).read()
    lock = claim(out)
    assert lock.taken_over.startswith(f"process {holder.pid} ")
    lock.release()
    assert open(os.path.join(out, LOCK)).read() == ""        # a clean end leaves no holder behind


def test_a_study_trains_into_its_directory_left_with_only_a_killed_runs_lock(base, tmp_path):
    """A study's run killed while compiling leaves its directory holding the lock file alone (nothing was
    written yet): asked again, the study trains there instead of refusing a directory with nothing to lose."""
    from pgdiag.experiments.training import train_once

    out = str(tmp_path / "hopper-ppo-key")
    os.makedirs(out)
    with open(os.path.join(out, LOCK), "w") as f:
        f.write("process 4194303 on elsewhere since 2026-01-01 00:00:00")   # its process is gone
    run = train_once(out, base, None, [0], progress=False)
    assert run.manifest["status"] == "complete" and load_run(out).metrics.iteration.max() == SMALL["num_iterations"] - 1


def test_resume_names_a_run_stopped_before_it_started_and_a_rerun_takes_it_over(base, tmp_path, capsys):
    """What a run killed while compiling leaves (its lock, an empty checkpoints directory): `resume` says the run
    never started and what to do; the same command run again takes the directory over, saying so."""
    out = str(tmp_path / "run")
    os.makedirs(os.path.join(out, "checkpoints"))
    with open(os.path.join(out, LOCK), "w") as f:
        f.write("process 4194303 on elsewhere since 2026-01-01 00:00:00")
    assert main(["resume", out]) == 2
    err = capsys.readouterr().err
    assert "the run there was stopped before it started" in err and f"again with --out {out}" in err
    run = sweep(base, seeds=[0], out=out)
    assert run.manifest["status"] == "complete"
    assert "taking over the directory a run stopped before it started left" in capsys.readouterr().err


def test_a_run_inside_another_runs_directory_is_refused_before_compiling(saved, base, tmp_path):
    with CompileCounter() as counter:
        for inside in ("checkpoints", os.path.join("checkpoints", "0"), "elsewhere"):
            with pytest.raises(RunDirError, match=rf"lies inside the run directory '{saved}'"):
                sweep(base, seeds=[0], out=os.path.join(saved, inside))
    assert counter.count == 0 and not os.path.exists(os.path.join(saved, "elsewhere"))


def test_a_run_around_other_runs_is_refused_and_a_foreign_manifest_is_no_run(saved, base, tmp_path):
    """A run written into a directory holding runs below it would mix their files and stop them resuming:
    refused before compiling. A manifest.json that no sweep wrote (another tool's) makes no run directory."""
    parent = tmp_path / "parent"
    shutil.copytree(saved, parent / "a" / "child")
    with CompileCounter() as counter, pytest.raises(
            RunDirError, match=rf"the run directory '{parent / 'a' / 'child'}' lies inside it"):
        sweep(base, seeds=[0], out=str(parent))
    assert counter.count == 0 and not os.path.exists(parent / store.MANIFEST)
    project = tmp_path / "project"
    project.mkdir()
    (project / store.MANIFEST).write_text('{"name": "a web app"}')
    run = sweep(base, seeds=[0], out=str(project / "runs" / "x"))
    assert run.manifest["status"] == "complete"


def test_a_lock_is_exclusive_within_one_process_too(tmp_path):
    first = RunLock(str(tmp_path)).acquire()
    with pytest.raises(RunDirError, match=rf"process {os.getpid()} "):
        RunLock(str(tmp_path)).acquire()
    first.release()
    RunLock(str(tmp_path)).acquire().release()


# --- writable before compiling ----------------------------------------------------------

@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_an_unwritable_out_fails_in_one_line_before_compiling(tmp_path, capsys, where):
    blocker = tmp_path / "taken"
    blocker.write_text("a file")
    out = str(blocker) if where == "a file" else str(blocker / "run")
    with CompileCounter() as compiles:
        assert main(["train", *CLI, "--set", "num_envs=5", "--out", out]) == 2
    assert compiles.count == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and repr(out) in err[0] and ("an existing file" in err[0] or "is a file" in err[0])
    assert blocker.read_text() == "a file"


def _read_only(path) -> bool:
    """Make ``path`` read-only to this process: permission bits for a user; for root, which ignores them, the
    immutable attribute (``chattr +i``; False where the file system or the container does not allow it)."""
    os.chmod(path, 0o555)
    if os.geteuid() != 0:
        return True
    return shutil.which("chattr") is not None and subprocess.run(["chattr", "+i", str(path)],
                                                                 capture_output=True).returncode == 0


def test_a_read_only_directory_is_refused(tmp_path, monkeypatch):
    parent = tmp_path / "ro"
    parent.mkdir()
    out = str(parent / "run")
    if not _read_only(parent):
        # no way to take write access from root here: the operating system's answer is given instead
        def denied(*_, **__):
            raise PermissionError(13, "Permission denied")
        monkeypatch.setattr(os, "makedirs", denied)
    try:
        with CompileCounter() as compiles, pytest.raises(RunDirError) as err:
            sweep(preset("ppo", "point_mass", **{**SMALL, "num_envs": 7}), seeds=[0], out=out)
        assert compiles.count == 0
        assert str(err.value) in (f"cannot create the run directory {out!r}: permission denied",)
        assert not os.path.exists(out)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(parent)], capture_output=True)
        os.chmod(parent, 0o755)


FAILING_SAVE = textwrap.dedent("""
    import os, sys
    from pgdiag.cli import main
    from pgdiag.run import checkpoints
    # the directory was writable when the run began; later its checkpoints' place becomes a file
    blocker = os.path.join(sys.argv[1], "blocker")
    open(blocker, "w").write("x")
    checkpoints.checkpoint_dir = lambda path, it: os.path.join(blocker, str(it))
    sys.exit(main(sys.argv[2:]))
""")


def test_a_failure_to_write_during_a_run_ends_the_process_with_one_line(tmp_path):
    out = str(tmp_path / "run")
    done = subprocess.run([sys.executable, "-c", FAILING_SAVE, str(tmp_path), "train", *CLI, "--out", out,
                           "--checkpoint"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("pgdiag: error: cannot write the checkpoint ")
    assert "Traceback" not in done.stderr
    # what the run did write is consistent: the manifest records a failed run, with its error
    manifest = store.read_manifest(out)
    assert manifest["status"] == "failed" and manifest["error"].startswith("RunDirError: cannot write the checkpoint")
    assert "failed after iteration" in done.stderr and "once its cause is fixed, resume with" in done.stderr


# --- damaged files named --------------------------------------------------------------------

def _truncate(path):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)


def test_a_truncated_manifest_is_named_with_what_to_do(saved, tmp_path, capsys):
    out = _copy(saved, tmp_path)
    _truncate(os.path.join(out, store.MANIFEST))
    with pytest.raises(RunDirError, match=r"manifest.json cannot be read .*damaged"):
        load_run(out)
    assert main(["show", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and os.path.join(out, store.MANIFEST) in err[0]
    assert main(["resume", out]) == 2 and main(["rerun", out, "--out", str(tmp_path / "new")]) == 2


def test_a_truncated_metrics_table_is_named(saved, tmp_path):
    out = _copy(saved, tmp_path)
    _truncate(os.path.join(out, store.METRICS_FILE))
    with pytest.raises(RunDirError, match=r"metrics.parquet cannot be read .*pgdiag rerun"):
        load_run(out)


def test_a_damaged_checkpoint_is_named_with_the_good_ones(saved, tmp_path):
    out = _copy(saved, tmp_path)
    root = checkpoints.checkpoint_dir(out, 3)
    for dirpath, _, files in os.walk(root):
        for name in files:
            _truncate(os.path.join(dirpath, name))
    with pytest.raises(RunDirError) as err:
        load_checkpoint(out, 3)
    message = str(err.value)
    assert root in message and "saved after iterations [0]" in message and "pgdiag rerun" in message
    assert len(message.splitlines()) == 1
    load_checkpoint(out, 0)                            # the other checkpoint still loads


# --- every run saved somewhere ---------------------------------------------------------

def test_a_cli_run_without_out_goes_to_a_fresh_directory_unless_no_save(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", *CLI]) == 0
    out = capsys.readouterr().out
    (made,) = os.listdir(tmp_path / "runs")
    assert made.endswith("-ppo-point_mass") and f"writing runs/{made}" in out and f"wrote runs/{made}" in out
    assert load_run(str(tmp_path / "runs" / made)).manifest["status"] == "complete"
    assert main(["train", *CLI, "--no-save"]) == 0
    assert os.listdir(tmp_path / "runs") == [made]
    assert main(["train", *CLI, "--no-save", "--out", "x"]) == 2
    capsys.readouterr()
    assert main(["rerun", f"runs/{made}", "--no-progress"]) == 0     # a rerun is saved too, beside it
    (again,) = set(os.listdir(tmp_path / "runs")) - {made}
    assert again.endswith(f"-rerun-{made}") and f"wrote runs/{again}" in capsys.readouterr().out
    assert load_run(str(tmp_path / "runs" / again)).metrics.equals(load_run(str(tmp_path / "runs" / made)).metrics)


def test_fresh_directories_never_collide(tmp_path):
    first = fresh_dir("ppo/hopper: a b", root=str(tmp_path))
    assert os.path.basename(first).endswith("-ppo-hopper--a-b")
    os.makedirs(first)
    second = fresh_dir("ppo/hopper: a b", root=str(tmp_path))
    assert second == first + "-2"


def test_progress_is_shown_where_a_notebook_is_attached(monkeypatch):
    class ZMQInteractiveShell:
        pass

    class FakeIPython:
        shell = None

        @classmethod
        def get_ipython(cls):
            return cls.shell

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    monkeypatch.setitem(sys.modules, "IPython", FakeIPython)
    assert not attached()                                    # IPython imported, no kernel running
    FakeIPython.shell = ZMQInteractiveShell()
    assert attached()


def test_metrics_an_earlier_version_did_not_record_resume_as_not_measured():
    """A run interrupted under a version that recorded fewer metrics resumes under this one: the iterations it
    saved read NaN for the metrics it lacked (by hand: 2 agents × 3 iterations), the others as saved."""
    import numpy as np
    import pandas as pd

    from pgdiag.metrics import METRICS

    older = [m for m in METRICS if m != "heldout_value_mre_floor"]
    frame = pd.DataFrame([{"agent": a, "iteration": i, **{m: 10.0 * a + i for m in older}}
                          for a in range(2) for i in range(4)])
    history = store.history_from_frame(frame, num_agents=2, iterations=3)
    assert np.isnan(history["heldout_value_mre_floor"]).all() and history["heldout_value_mre_floor"].shape == (2, 3)
    assert history["mean_return"].tolist() == [[0.0, 1.0, 2.0], [10.0, 11.0, 12.0]]
