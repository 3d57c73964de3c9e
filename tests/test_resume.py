"""Checkpoints during training, resume, interruption (Ctrl-C, SIGTERM, SIGKILL), frozen policies."""

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from compare import assert_trees_close
from pgdiag import ConfigError, load_checkpoint, load_policy, load_run, make_train, preset, resume, seed_key, sweep
from pgdiag import networks
from pgdiag.run import checkpoints, store
from pgdiag.metrics import METRICS

SMALL = dict(num_envs=2, steps_per_env=32, num_iterations=6, num_minibatches=4, ppo_epochs=2, value_epochs=2)
GRID = {"value_clipping": [False, True]}


@pytest.fixture(scope="module")
def base():
    return preset("ppo", "point_mass", **SMALL)


@pytest.fixture(scope="module")
def uninterrupted(base, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("full"))
    return sweep(base.replace(checkpoint_at=(0, 3)), GRID, seeds=[0, 1], out=out, chunk_iterations=2,
                 save_checkpoint=True)


def leaves_equal(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_checkpoints_are_kept_at_the_scheduled_iterations(uninterrupted, base):
    run = load_run(uninterrupted.path)
    assert run.checkpoints == [0, 3, 6]                      # 0 and 3 asked for, 6 = final (save_checkpoint)
    assert run.manifest["checkpoints"]["kept"] == [0, 3, 6]
    assert sorted(os.listdir(os.path.join(run.path, "checkpoints"))) == ["0", "3", "6"]  # rolling ones removed
    # the state after iteration 3 is what 3 iterations of the trainer give, computed separately
    trainer = make_train(base.static)
    agent = 3  # value_clipping on, seed 1
    knobs = run.config(agent).knobs.as_arrays()
    expected, _ = jax.jit(trainer.run, static_argnums=2)(trainer.init(seed_key(1), knobs), knobs, 3)
    saved = jax.tree.map(lambda x: x[agent], load_checkpoint(run, 3))
    assert int(saved.iteration) == 3
    # a vmapped sweep and one agent alone differ by float32 rounding (XLA's kernels differ with the
    # batch): tests/compare.py's bound; statistics are compared as values (the low
    # halves of their compensated sums are rounding residues and may differ entirely)
    def values(s):
        stats = (s.filters.obs, s.filters.ret)
        return jax.tree.leaves((s.policy, s.value, [(x.mean, x.std, x.n) for x in stats]))

    assert_trees_close(values(saved), values(expected))
    initial = jax.tree.map(lambda x: x[agent], load_checkpoint(run, 0))
    # the sweep's vmapped init program against the trainer's init alone: two programs, float32 rounding
    assert_trees_close(initial.policy, trainer.init(seed_key(1), knobs).policy)
    # the final checkpoint is the run's final state
    leaves_equal(load_checkpoint(run), uninterrupted.final_state)


def test_checkpoint_every(base, tmp_path):
    run = sweep(base.replace(checkpoint_every=4), GRID, seeds=[0, 1], out=str(tmp_path / "a"), chunk_iterations=2)
    assert run.checkpoints == [4]
    run = sweep(base.replace(checkpoint_every=2, checkpoint_at=(1,)), GRID, seeds=[0, 1], out=str(tmp_path / "b"),
                chunk_iterations=2)
    assert run.checkpoints == [1, 2, 4, 6]


def _interrupt_after(monkeypatch, iterations):
    """Ctrl-C right after the run directory records ``iterations`` iterations."""
    real = store.write_manifest

    def write(path, manifest):
        real(path, manifest)
        if manifest.get("status") == "running" and manifest["iterations_done"] >= iterations:
            raise KeyboardInterrupt

    monkeypatch.setattr(store, "write_manifest", write)


def test_interrupted_run_resumes_bitwise(uninterrupted, base, tmp_path, monkeypatch, capsys):
    out = str(tmp_path / "run")
    _interrupt_after(monkeypatch, 4)
    with pytest.raises(KeyboardInterrupt):
        sweep(base.replace(checkpoint_at=(0, 3)), GRID, seeds=[0, 1], out=out, chunk_iterations=2,
              save_checkpoint=True)
    monkeypatch.undo()
    assert f"resume with: pgdiag resume {out}" in capsys.readouterr().err
    stopped = load_run(out)
    assert stopped.manifest["status"] == "interrupted" and stopped.manifest["iterations_done"] == 4
    assert stopped.metrics.iteration.max() == 3 and len(stopped.metrics) == 4 * 4
    assert stopped.checkpoints == [0, 3, 4]                  # the kept ones and the latest state
    assert int(load_checkpoint(stopped).iteration[0]) == 4

    resumed = resume(out)
    assert resumed.manifest["status"] == "complete"
    for k in METRICS:
        np.testing.assert_array_equal(resumed.metrics[k].to_numpy(), uninterrupted.metrics[k].to_numpy(), err_msg=k)
    leaves_equal(resumed.final_state, uninterrupted.final_state)
    assert load_run(out).checkpoints == [0, 3, 6]
    # resuming a complete run does nothing
    again = sweep(resume=out)
    assert again.manifest["status"] == "complete" and len(again.metrics) == len(resumed.metrics)


@pytest.fixture(scope="module")
def stopped_at_4(base, tmp_path_factory):
    """The run of `uninterrupted` stopped by Ctrl-C after iteration 4: checkpoints 0, 3 (kept) and 4 (latest);
    each test takes a copy."""
    out = str(tmp_path_factory.mktemp("stopped") / "run")
    with pytest.MonkeyPatch.context() as mp:
        _interrupt_after(mp, 4)
        with pytest.raises(KeyboardInterrupt):
            sweep(base.replace(checkpoint_at=(0, 3)), GRID, seeds=[0, 1], out=out, chunk_iterations=2,
                  save_checkpoint=True, progress=False)
    assert load_run(out).checkpoints == [0, 3, 4]
    return out


def _copy(run, tmp_path):
    import shutil

    return shutil.copytree(run, str(tmp_path / "copy"))


def _files(out):
    return {f: open(os.path.join(out, f), "rb").read() for f in (store.MANIFEST, store.METRICS_FILE)}


def test_a_run_killed_between_a_checkpoint_and_its_metrics_resumes_from_the_one_before(
        stopped_at_4, uninterrupted, tmp_path, capsys):
    """A chunk writes its checkpoint, then the metrics, then the manifest: killed between the first two, the
    directory holds checkpoint 4 but metrics and manifest of iteration 3. The resume takes checkpoint 3 (the
    newest the metrics cover), steps 3 → 4 again and ends bitwise as the uninterrupted run."""
    out = _copy(stopped_at_4, tmp_path)
    table = pd.read_parquet(os.path.join(out, store.METRICS_FILE))
    store.write_metrics(out, table[table.iteration < 3])
    manifest = store.read_manifest(out)
    store.write_manifest(out, {**manifest, "iterations_done": 3})
    resumed = resume(out)
    for k in METRICS:
        np.testing.assert_array_equal(resumed.metrics[k].to_numpy(), uninterrupted.metrics[k].to_numpy(), err_msg=k)
    leaves_equal(resumed.final_state, uninterrupted.final_state)
    assert load_run(out).checkpoints == [0, 3, 6]


def test_a_damaged_latest_checkpoint_resumes_from_an_earlier_one(stopped_at_4, uninterrupted, tmp_path, capsys):
    out = _copy(stopped_at_4, tmp_path)
    for folder, _, files in os.walk(checkpoints.checkpoint_dir(out, 4)):
        for f in files:
            with open(os.path.join(folder, f), "r+b") as handle:
                handle.truncate(min(10, os.path.getsize(os.path.join(folder, f))))
    resumed = resume(out)
    err = capsys.readouterr().err
    assert f"the checkpoint {checkpoints.checkpoint_dir(out, 4)} cannot be read" in err
    assert "(resuming from an earlier state)" in err
    for k in METRICS:
        np.testing.assert_array_equal(resumed.metrics[k].to_numpy(), uninterrupted.metrics[k].to_numpy(), err_msg=k)


def test_a_resume_that_fails_before_it_starts_leaves_the_directory_as_it_was(stopped_at_4, tmp_path, monkeypatch):
    """A damaged metrics table (the only record of iterations 0-3) is named, and neither it nor the manifest is
    touched; nor are they when Ctrl-C arrives while the checkpoint is read; the run then resumes."""
    out = _copy(stopped_at_4, tmp_path)
    metrics_path = os.path.join(out, store.METRICS_FILE)
    good = open(metrics_path, "rb").read()
    with open(metrics_path, "r+b") as f:
        f.truncate(1000)
    before = _files(out)
    with pytest.raises(store.RunDirError, match="metrics.parquet cannot be read .*: the file is damaged"):
        resume(out)
    assert _files(out) == before
    with open(metrics_path, "wb") as f:
        f.write(good)
    before = _files(out)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoints, "restore_states", interrupted)
    with pytest.raises(KeyboardInterrupt):
        resume(out)
    assert _files(out) == before
    monkeypatch.undo()
    assert resume(out).manifest["status"] == "complete"


def test_rerun_reproduces_a_run_from_its_manifest(uninterrupted, tmp_path, capsys):
    """`pgdiag rerun` runs the recorded configuration, grid, seeds and checkpoints again: the same numbers."""
    from pgdiag.cli import main

    assert main(["rerun", uninterrupted.path, "--out", str(tmp_path / "again"), "--no-progress"]) == 0
    again, first = load_run(str(tmp_path / "again")), load_run(uninterrupted.path)
    for k in ("grid_points", "seeds", "label", "chunk_iterations", "batching", "base_config", "save_checkpoint"):
        assert again.manifest[k] == first.manifest[k], k
    pd.testing.assert_frame_equal(again.metrics, uninterrupted.metrics, check_exact=True)
    assert again.checkpoints == uninterrupted.checkpoints
    leaves_equal(load_checkpoint(again, 3), load_checkpoint(uninterrupted, 3))
    assert main(["rerun", uninterrupted.path, "--out", uninterrupted.path]) == 2
    assert "--out must differ" in capsys.readouterr().err


def test_resume_refuses_what_is_not_its_run(base, tmp_path, uninterrupted):
    with pytest.raises(ConfigError, match="not a pgdiag run directory"):
        resume(str(tmp_path))
    # a resumed run continues as recorded: settings of how to run it cannot be changed on the way
    with pytest.raises(ConfigError, match=r"continues the run as recorded in it; chunk_iterations=7, "
                                          r"batching='map' cannot be changed"):
        sweep(resume=uninterrupted.path, chunk_iterations=7, batching="map")
    with pytest.raises(ConfigError, match="another seeds"):
        sweep(base.replace(checkpoint_at=(0, 3)), GRID, seeds=[0, 5], resume=uninterrupted.path)
    # what is omitted is the run's own (its grid of 2 points, its seeds 0 and 1): the complete run is loaded
    mine = base.replace(checkpoint_at=(0, 3))
    for given in (dict(), dict(grid=GRID), dict(seeds=[0, 1])):
        assert sweep(mine, resume=uninterrupted.path, **given).num_agents == 4
    with pytest.raises(ConfigError, match="another grid"):
        sweep(mine, {"value_clipping": [True]}, resume=uninterrupted.path)


def test_a_run_that_fails_is_recorded_as_failed_and_resumes_once_fixed(base, tmp_path, monkeypatch, capsys):
    """An error (not a signal) while compiling: the manifest says failed, with the error, and the message
    does not call it an interruption; with the cause gone, resuming it trains the whole run."""
    from pgdiag.run import loop

    def broken(*args, **kwargs):
        raise TypeError("a bug in a user's code")
    monkeypatch.setattr(loop.programs, "chunk_program", broken)
    out = str(tmp_path / "run")
    with pytest.raises(TypeError, match="a bug"):
        sweep(base, seeds=[0], out=out, progress=False)
    manifest = load_run(out).manifest
    assert manifest["status"] == "failed" and manifest["error"] == "TypeError: a bug in a user's code"
    err = capsys.readouterr().err
    assert "failed after iteration 0 of 6; once its cause is fixed, resume with: pgdiag resume" in err
    monkeypatch.undo()
    run = resume(out, progress=False)
    assert run.manifest["status"] == "complete" and "error" not in load_run(out).manifest


def test_checkpoint_settings_are_validated_before_compiling(base, uninterrupted):
    with pytest.raises(ConfigError, match=r"checkpoint_at \[7\] lies beyond the run's num_iterations = 6"):
        base.replace(checkpoint_at=(3, 7))
    with pytest.raises(ConfigError, match="checkpoint_every = 9 exceeds num_iterations = 6"):
        base.replace(checkpoint_every=9)
    with pytest.raises(ConfigError, match="checkpoint_at must be a list of iterations"):
        base.replace(checkpoint_at=(-1,))
    with pytest.raises(ConfigError, match="needs an output directory"):
        sweep(base.replace(checkpoint_at=(2,)), seeds=[0])
    with pytest.raises(ValueError, match=r"saved iterations: \[0, 3, 6\]"):
        load_checkpoint(uninterrupted.path, 5)


def test_load_policy_is_frozen_and_matches_the_networks(uninterrupted):
    policy = load_policy(uninterrupted.path, iteration=3, agent=2)
    state = jax.tree.map(lambda x: x[2], load_checkpoint(uninterrupted.path, 3))
    assert int(policy.iteration) == 3
    raw = jax.random.normal(jax.random.PRNGKey(0), (5, 4)) * 3.0
    stat = state.filters.obs
    filtered = np.clip((np.asarray(raw) - np.asarray(stat.mean)) / (np.sqrt(np.asarray(stat.var)) + 1e-8), -10, 10)
    knobs = uninterrupted.config(2).knobs.as_arrays()
    mean, log_std = networks.policy_apply(state.policy, jnp.asarray(filtered), knobs)
    np.testing.assert_allclose(policy.act(raw), mean, rtol=1e-5, atol=1e-6)
    action, log_prob = jax.jit(lambda p, k, o: p.sample(k, o))(policy, jax.random.PRNGKey(1), raw)
    z = (np.asarray(action) - np.asarray(mean)) / np.exp(np.asarray(log_std))
    by_hand = np.sum(-0.5 * z ** 2 - np.asarray(log_std) - 0.5 * math.log(2 * math.pi), axis=-1)
    np.testing.assert_allclose(log_prob, by_hand, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"agent must be an index in 0 … 3"):
        load_policy(uninterrupted.path, 3, agent=4)
    import pathlib   # a run directory given as a path object, as sweep(out=...) takes it
    again = load_policy(pathlib.Path(uninterrupted.path), iteration=3, agent=2)
    np.testing.assert_array_equal(again.act(raw), policy.act(raw))
    for agent in (4, -1, 1.0):
        with pytest.raises(IndexError, match=r"agent must be an index in 0 … 3 \(the run's 4 agents\), got"):
            uninterrupted.config(agent)


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    store.write_manifest(str(tmp_path), {"status": "running"})

    def boom(tmp):
        with open(tmp, "w") as f:
            f.write("{half")
        raise OSError("disk full")

    with pytest.raises(store.RunDirError, match="disk full"):
        store._atomic_write(os.path.join(tmp_path, store.MANIFEST), boom)
    assert json.load(open(tmp_path / store.MANIFEST)) == {"status": "running"}


# --- real signals, in a child process --------------------------------------------------

CHILD = textwrap.dedent("""
    import signal, sys
    # a child of a background job starts with SIGINT ignored (POSIX shells do that without job control),
    # and Python then installs no KeyboardInterrupt handler: restore it, as in an interactive terminal
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from pgdiag import preset, sweep
    # far more iterations than the test waits for, so that a busy machine cannot let it finish first
    cfg = preset("ppo", "point_mass", num_envs=2, steps_per_env=32, num_iterations=20000, num_minibatches=4,
                 ppo_epochs=2, value_epochs=2, lr_annealing=False)
    sweep(cfg, {"value_clipping": [False, True]}, seeds=[0], out=sys.argv[1], chunk_iterations=2)
""")


#: `pgdiag` with Ctrl-C's handler as an interactive terminal gives it. A test suite started as a background job
#: without job control has SIGINT ignored, every process it starts inherits that, and a command started with SIGINT
#: ignored keeps ignoring it (as it should: `pgdiag train ... &`)
PGDIAG_INTERACTIVE = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                      "from pgdiag.cli import entry; entry()")


def _start_and_signal(out, sig, after_iterations=4):
    child = subprocess.Popen([sys.executable, "-c", CHILD, out], stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while time.time() < deadline:
        try:
            if store.read_manifest(out).get("iterations_done", 0) >= after_iterations:
                break
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        time.sleep(0.05)
    child.send_signal(sig)
    try:
        _, err = child.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        child.kill()  # a child that ignores the signal must not outlive the test
        child.communicate()
        raise
    return child.returncode, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_signalled_run_is_consistent_and_resumes_to_the_same_numbers(tmp_path, sig):
    out = str(tmp_path / "run")
    code, err = _start_and_signal(out, sig)
    assert code != 0
    run = load_run(out)
    done = run.manifest["iterations_done"]
    assert 4 <= done < 20000
    if sig in (signal.SIGINT, signal.SIGTERM):
        assert run.manifest["status"] == "interrupted"
        assert f"resume with: pgdiag resume {out}" in err
    else:  # killed outright: the directory is as it was after the last finished chunk
        assert run.manifest["status"] == "running"
    assert run.metrics.iteration.max() == done - 1
    latest = run.checkpoints[-1]
    assert latest >= done - 2 and int(load_checkpoint(run).iteration[0]) == latest
    # finish a shorter version of the same run in-process: resuming continues from `latest` and lands on the
    # numbers of a straight run, bit for bit. The child's program and these differ only in num_iterations, a
    # literal inside the annealing's branch, which the traced lr_annealing knob (off) never takes: the programs
    # compile to the same code, so the iterations before `latest` are the ones a straight run computes
    manifest = store.read_manifest(out)
    manifest["base_config"]["static"]["num_iterations"] = latest + 4
    store.write_manifest(out, manifest)
    resumed = resume(out)
    cfg = preset("ppo", "point_mass", num_envs=2, steps_per_env=32, num_iterations=latest + 4, num_minibatches=4,
                 ppo_epochs=2, value_epochs=2, lr_annealing=False)
    straight = sweep(cfg, {"value_clipping": [False, True]}, seeds=[0], chunk_iterations=2)
    for k in ("mean_return", "value_loss", "max_kl", "policy_loss"):
        np.testing.assert_array_equal(resumed.metrics[k].to_numpy(), straight.metrics[k].to_numpy(), err_msg=k)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_checkpoint_write_waits_for_the_write(tmp_path, monkeypatch, sig):
    """A signal that arrives while a chunk's checkpoint is being written (here: sent from inside the write)
    stops the run only once the write is done: the checkpoint, the metrics and the manifest agree, and the
    run resumes from it to the numbers of a straight run."""
    out = str(tmp_path / "run")
    real_save, calls = checkpoints.save_states, []

    def save_and_get_signalled(path, iteration, *args, **kwargs):
        calls.append(iteration)
        if iteration == 4:
            os.kill(os.getpid(), sig)      # delivered now, in the middle of the write
        return real_save(path, iteration, *args, **kwargs)

    monkeypatch.setattr(checkpoints, "save_states", save_and_get_signalled)
    cfg = preset("ppo", "point_mass", num_envs=2, steps_per_env=32, num_iterations=8, num_minibatches=4,
                 ppo_epochs=2, value_epochs=2, lr_annealing=False)
    # a process started in the background ignores SIGINT, and a run keeps ignoring it: restore Ctrl-C's
    # handler as an interactive terminal has it
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            sweep(cfg, seeds=[0], out=out, chunk_iterations=2)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert calls == [2, 4]                  # stopped after the write it interrupted, not inside it
    run = load_run(out)
    assert run.manifest["status"] == "interrupted" and run.manifest["iterations_done"] == 4
    assert run.checkpoints[-1] == 4 and int(load_checkpoint(run).iteration[0]) == 4
    assert run.metrics.iteration.max() == 3
    monkeypatch.setattr(checkpoints, "save_states", real_save)
    resumed = resume(out)
    straight = sweep(cfg, seeds=[0], chunk_iterations=2)
    for k in ("mean_return", "value_loss", "max_kl", "policy_loss"):
        np.testing.assert_array_equal(resumed.metrics[k].to_numpy(), straight.metrics[k].to_numpy(), err_msg=k)


def test_a_signal_swallowed_where_it_landed_is_raised_at_the_next_wait():
    """Python drops an exception raised inside a callback (JAX's garbage-collection hook: "Exception ignored
    in ..."): a SIGTERM landing there is raised again when the run next waits on its chunk, not lost."""
    from pgdiag.run.interrupts import Interrupted, sigterm_interrupts, wait

    with sigterm_interrupts():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)                 # the handler runs here and raises
        except Interrupted:
            pass                            # ... and, as in such a callback, the exception goes nowhere
        with pytest.raises(Interrupted):
            wait(jnp.zeros(3))
        wait(jnp.zeros(3))                  # raised once


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_command_signalled_while_it_compiles_exits_130_and_resumes(tmp_path, sig):
    """`pgdiag train` stopped while XLA compiles (its lock taken, the directory claimed): exit code 130 with
    the resume command — the interpreter's teardown with a compilation cut short could end the process with a
    segmentation fault (seen in about half of such runs) — and the run then resumes to completion."""
    out = str(tmp_path / "run")
    child = subprocess.Popen([sys.executable, "-c", PGDIAG_INTERACTIVE, "train", "--preset", "ppo",
                              "--task", "hopper", "--set", "num_envs=2", "--set", "steps_per_env=32",
                              "--set", "num_iterations=50", "--set", "num_minibatches=4", "--out", out,
                              "--no-progress"],
                             stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(out, ".lock")) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)   # inside the initialization's or the chunk's compilation
    child.send_signal(sig)
    try:
        _, err = child.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise
    assert child.returncode == 130, err
    assert f"resume with: pgdiag resume {out}" in err
    assert resume(out).manifest["status"] == "complete"


def _signal_after(monkeypatch, module, name: str, swallowed: bool):
    """Make ``module.name`` end with a Ctrl-C: raised at once, or (``swallowed``) inside a garbage-collection
    callback, where Python prints it as "Exception ignored" and drops it, as it does in JAX's hook."""
    import gc

    real = getattr(module, name)

    def then_signal(*args, **kwargs):
        result = real(*args, **kwargs)
        if not swallowed:
            signal.raise_signal(signal.SIGINT)
            return result

        def in_gc(phase, info):
            gc.callbacks.remove(in_gc)
            signal.raise_signal(signal.SIGINT)
        gc.callbacks.append(in_gc)
        gc.collect()
        return result
    monkeypatch.setattr(module, name, then_signal)


TRAIN = ["train", "--preset", "ppo", "--task", "point_mass", "--set", "num_envs=2", "--set", "steps_per_env=16",
         "--set", "num_iterations=2", "--set", "num_minibatches=2", "--no-progress"]


@pytest.fixture
def interactive_ctrl_c():
    """Ctrl-C's handler as an interactive terminal has it: a suite started in the background (a CI job, `make ... &`)
    starts with SIGINT ignored, and a run keeps a signal ignored that its process ignores."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_signal_just_after_the_lock_is_taken_stops_the_run_and_the_same_command_runs_again(tmp_path, monkeypatch,
                                                                                             capsys,
                                                                                             interactive_ctrl_c):
    """The window between taking the lock and the loop: handled (exit 130, one line), leaving a directory the
    same command takes again without --overwrite."""
    from pgdiag.cli import main

    from pgdiag.run import start

    out = str(tmp_path / "run")
    with monkeypatch.context() as m:
        _signal_after(m, start, "claim", swallowed=False)
        assert main(TRAIN + ["--out", out]) == 130
    assert "interrupted before training started; nothing was trained" in capsys.readouterr().err
    assert main(TRAIN + ["--out", out]) == 0
    assert load_run(out).manifest["status"] == "complete"


def test_a_signal_python_swallows_in_a_gc_callback_still_stops_the_run(tmp_path, monkeypatch, capsys,
                                                                         interactive_ctrl_c):
    """Raised inside a garbage-collection callback the KeyboardInterrupt is dropped by Python; the run still stops
    at its next wait (exit 130) with its manifest written, and resumes to completion."""
    from pgdiag.cli import main

    from pgdiag.run import loop

    out = str(tmp_path / "run")
    with monkeypatch.context() as m:
        _signal_after(m, loop, "_prepare", swallowed=True)
        assert main(TRAIN + ["--out", out]) == 130
    assert f"resume with: pgdiag resume {out}" in capsys.readouterr().err
    assert load_run(out).manifest["status"] == "interrupted"
    assert resume(out).manifest["status"] == "complete"


KILLED_AFTER_CHECKPOINT_0 = ("import os, sys\nfrom pgdiag.run import checkpoints\nreal = checkpoints.save_states\n"
                             "def save_then_die(*a, **k):\n    real(*a, **k)\n    os._exit(9)\n"
                             "checkpoints.save_states = save_then_die\n"
                             "from pgdiag.cli import main\nmain(sys.argv[1:])")


def test_a_run_killed_before_its_first_chunk_resumes(tmp_path):
    """The manifest is written before anything compiles, so a run killed right after its checkpoint 0 (the
    process ends at once: no handler runs) resumes instead of being "not a run directory"."""
    out = str(tmp_path / "run")
    child = subprocess.run([sys.executable, "-c", KILLED_AFTER_CHECKPOINT_0, *TRAIN, "--set", "checkpoint_at=0",
                            "--out", out], capture_output=True, text=True, timeout=300)
    assert child.returncode == 9 and os.path.isdir(os.path.join(out, "checkpoints", "0")), child.stderr[-2000:]
    assert json.load(open(os.path.join(out, store.MANIFEST)))["status"] == "running"
    assert resume(out).manifest["status"] == "complete"


def test_a_full_disk_says_one_line_and_the_run_resumes(tmp_path, monkeypatch, capsys):
    """Orbax's writer threads fail on a full disk, each logging a traceback; the command says one line (the
    checkpoint it could not write and why) beside where the run stands, and the run resumes once there is room."""
    import errno
    import logging

    from pgdiag.cli import main
    from pgdiag.run import checkpoints

    real = checkpoints._checkpointer
    saves = []

    class FullDisk:
        def __init__(self):
            self.inner = real()

        def save(self, *args, **kwargs):
            saves.append(1)
            if len(saves) == 3:
                for _ in range(5):
                    logging.getLogger("absl").error("writer thread failed", exc_info=OSError(errno.ENOSPC, "full"))
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.inner.save(*args, **kwargs)

        def close(self):
            self.inner.close()

    out = str(tmp_path / "run")
    with monkeypatch.context() as m:
        m.setattr(checkpoints, "_checkpointer", FullDisk)
        assert main(TRAIN + ["--set", "num_iterations=4", "--set", "checkpoint_every=1", "--out", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "Traceback" not in "\n".join(err), err
    assert err[-1].endswith("cannot write the checkpoint " + os.path.join(out, "checkpoints", "3")
                            + ": no space left on the device"), err
    assert f"resume with: pgdiag resume {out}" in err[0]
    assert resume(out).manifest["status"] == "complete"


def test_a_run_continued_on_another_device_count_says_so(capsys):
    """A run continued on another device count than it began on is other compiled programs from there (its agents
    sharded into other blocks): one line says so and how to continue it as it began; the same count says nothing."""
    from pgdiag.run.continuation import _say_if_other_devices
    from pgdiag.run.provenance import device_info

    now = device_info()["count"]
    _say_if_other_devices("/r", {"device": {"count": now}})
    assert capsys.readouterr().out == ""
    _say_if_other_devices("/r", {"device": {"count": now + 1}})
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and f"began on {now + 1} device(s) and continues on {now}" in line
    assert f"PGDIAG_HOST_DEVICES={now + 1}" in line


def test_a_run_continued_on_another_cpu_model_says_so(capsys, monkeypatch):
    """XLA compiles for the host's CPU: a run whose last session ran on another model (other vector instructions)
    continues as other programs. One line names both; the same model, or a manifest from before the model was
    recorded, says nothing. The model is read from /proc/cpuinfo (its name, the widest vector set)."""
    from pgdiag.run import provenance
    from pgdiag.run.continuation import _say_if_other_devices

    monkeypatch.setattr(provenance, "cpu_model", lambda: "B (avx512f)")
    count = provenance.device_info()["count"]
    for manifest in ({"device": {"count": count, "cpu": "B (avx512f)"}}, {"device": {"count": count}},
                     {"device": {"count": count, "cpu": "A (avx2)"}, "resumed": [{"device": {"cpu": "B (avx512f)"}}]}):
        _say_if_other_devices("/r", manifest)
        assert capsys.readouterr().out == ""
    _say_if_other_devices("/r", {"device": {"count": count, "cpu": "B (avx512f)"},
                                 "resumed": [{"device": {"cpu": "A (avx2)"}}]})
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and "ran on A (avx2) and continues on B (avx512f)" in line


def test_the_cpu_model_names_the_widest_vector_instructions(tmp_path, monkeypatch):
    import builtins

    from pgdiag.run import provenance

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse4_2 avx avx2 fma\n\n"
                    "processor\t: 1\nmodel name\t: Some CPU\nflags\t\t: fpu sse4_2 avx avx2 fma\n")
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: real_open(info if f == "/proc/cpuinfo" else f, *a, **k))
    monkeypatch.setattr(provenance.platform, "processor", lambda: "")
    assert provenance.cpu_model() == "Some CPU (avx2)"
