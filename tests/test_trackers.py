"""Live tracking and callbacks (pgdiag.run.callbacks, pgdiag.run.trackers): what a run tells the code watching
it after each chunk, on the host, and what TensorBoard, MLflow (a local file store) and Weights & Biases
(offline) receive — the values the run's metrics table holds."""

import glob
import importlib.util
import os

import numpy as np
import pytest

from pgdiag import ConfigError, preset, sweep
from pgdiag.cli import main
from pgdiag.run.callbacks import Callback
from pgdiag.run.trackers import MLflowLogger, WandbLogger
from tests.test_export import _fields, _records

SMALL = dict(num_envs=2, steps_per_env=16, num_iterations=4, num_minibatches=2, ppo_epochs=1, value_epochs=1,
             checkpoint_at=(2,))


class Recorder(Callback):
    def __init__(self):
        self.events = []

    def on_start(self, event):
        self.events.append(("start", event.iteration, None))

    def on_chunk(self, event):
        self.events.append(("chunk", event.iteration, event.rows))

    def on_checkpoint(self, event):
        self.events.append(("checkpoint", event.checkpoint, None))

    def on_end(self, event):
        self.events.append(("end", event.status, None))


class Broken(Callback):
    def on_chunk(self, event):
        raise RuntimeError("disk full")


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tracked")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"   # MLflow 3 keeps its file store behind this switch
    recorder = Recorder()
    mlflow_uri = f"file://{tmp / 'mlruns'}"
    run = sweep(preset("ppo", "point_mass", **SMALL), seeds=[0, 1], out=str(tmp / "run"), chunk_iterations=2,
                loggers=["tensorboard", MLflowLogger(tracking_uri=mlflow_uri, experiment="test"),
                         WandbLogger(project="test", mode="offline", dir=str(tmp))],
                callbacks=[recorder, Broken()])
    return run, recorder, mlflow_uri, tmp


def test_callbacks_hear_each_chunk_with_its_rows_and_the_kept_checkpoints(tracked, capfd):
    run, recorder, _, _ = tracked
    kinds = [(k, v) for k, v, _ in recorder.events]
    assert kinds == [("start", 0), ("chunk", 2), ("checkpoint", 2), ("chunk", 4), ("end", "complete")]
    chunks = [rows for k, _, rows in recorder.events if k == "chunk"]
    assert [sorted(set(r.iteration)) for r in chunks] == [[0, 1], [2, 3]]
    both = np.concatenate([r.sort_values(["agent", "iteration"]).mean_return.to_numpy() for r in chunks])
    table = run.metrics.sort_values(["iteration", "agent"])
    np.testing.assert_array_equal(np.sort(both), np.sort(table.mean_return.to_numpy()))
    assert run.manifest["status"] == "complete"   # the broken callback was dropped, the run went on


def test_tensorboard_event_files_are_written_as_the_run_goes(tracked):
    run, _, _, _ = tracked
    files = sorted(glob.glob(os.path.join(run.path, "tensorboard", "*", "events.out.tfevents.*")))
    assert len(files) == 2
    events = [_fields(r) for r in _records(open([f for f in files if "agent000" in f][0], "rb").read())]
    assert events[0][3] == [b"brain.Event:2"]
    scalars = {}
    for e in events[1:]:
        value = _fields(_fields(e[5][0])[1][0])
        scalars[(value[1][0].decode(), e[2][0])] = value[2][0]
    m = run.metrics[run.metrics.agent == 0].set_index("iteration")
    for it in range(4):
        assert scalars[("value_loss", it)] == pytest.approx(float(m.value_loss[it]), rel=1e-6)


def test_mlflow_holds_each_agents_metrics_by_iteration(tracked):
    from mlflow.tracking import MlflowClient

    run, _, uri, _ = tracked
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("test")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 2 and {r.info.status for r in runs} == {"FINISHED"}
    for r in runs:
        agent = 0 if "agent000" in r.info.run_name else 1
        history = {m.step: m.value for m in client.get_metric_history(r.info.run_id, "value_loss")}
        m = run.metrics[run.metrics.agent == agent].set_index("iteration")
        assert sorted(history) == [0, 1, 2, 3]
        for it, v in history.items():
            assert v == pytest.approx(float(m.value_loss[it]), rel=1e-6)
        assert r.data.params["seed"] == str(agent) and r.data.params["task"] == "point_mass"


def test_wandb_offline_runs_one_per_agent(tracked):
    _, _, _, tmp = tracked
    offline = glob.glob(os.path.join(tmp, "wandb", "offline-run-*"))
    assert len(offline) == 2
    assert all(glob.glob(os.path.join(d, "run-*.wandb")) for d in offline)


def test_bad_loggers_are_refused_before_anything_compiles(monkeypatch, tmp_path, capsys):
    cfg = preset("ppo", "point_mass", **SMALL)
    with pytest.raises(ConfigError, match="unknown logger 'neptune'; loggers are tensorboard, mlflow, wandb"):
        sweep(cfg, out=str(tmp_path / "a"), loggers=["neptune"])
    with pytest.raises(ConfigError, match="the tensorboard logger writes under the run directory"):
        sweep(cfg, loggers="tensorboard")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a))
    assert main(["train", "--preset", "ppo", "--task", "point_mass", "--log", "mlflow"]) == 2
    assert "the mlflow logger needs the mlflow package, which is not installed" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_wandbs_silent_fallback_to_the_temporary_directory_is_said_once(tmp_path, monkeypatch, capsys):
    """W&B writes into the system's temporary directory, without a word, where its ``dir`` cannot be written."""
    import tempfile

    from pgdiag.run import trackers

    trackers._say_fallback(str(tmp_path / "new" / "wandb"))   # writable (created by W&B): nothing said
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    trackers._say_fallback(str(tmp_path / "locked"))
    assert capsys.readouterr().err.strip() == (
        f"wandb: {str(tmp_path / 'locked')!r} cannot be written; W&B keeps this run's files under "
        f"{tempfile.gettempdir()!r} instead (give WandbLogger(dir=...) a writable directory)")


def test_mlflow_logs_to_its_default_store_and_to_the_sqlite_uri_the_guide_recommends(tmp_path, monkeypatch):
    """A real local MLflow store: its default (a SQLite file in the working directory, MLflow 3) and
    sqlite:///mlflow.db as docs/guides/tracking.md writes it — the [mlflow] extra brings what both need."""
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    cfg = preset("ppo", "point_mass", **SMALL)
    for uri in (None, "sqlite:///mlflow.db"):
        run = sweep(cfg, out=str(tmp_path / f"run-{uri is None}"),
                    loggers=[MLflowLogger(tracking_uri=uri, experiment=f"e{uri is None}")])
        client = MlflowClient(tracking_uri=uri)
        (logged,) = client.search_runs([client.get_experiment_by_name(f"e{uri is None}").experiment_id])
        history = client.get_metric_history(logged.info.run_id, "value_loss")
        assert len(history) == len(run.metrics) and logged.info.status == "FINISHED"
