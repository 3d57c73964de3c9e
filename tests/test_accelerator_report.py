"""``make accelerator-report`` at the tiny scale: every section measured on this CPU, one Markdown report, and
bad input named before anything is measured."""

import importlib.util
import json
import pathlib

import pytest

PATH = pathlib.Path(__file__).parent.parent / "benchmarks" / "accelerator_report.py"


@pytest.fixture(scope="module")
def report_module():
    spec = importlib.util.spec_from_file_location("accelerator_report", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tiny_report_measures_every_section(report_module, tmp_path):
    path = report_module.run("tiny", str(tmp_path), budget_minutes=20, record=False)
    text = pathlib.Path(path).read_text()
    data = json.loads(pathlib.Path(path).with_suffix(".json").read_text())
    # the physics ladder: Hopper, converged solver, batch 4, both backends timed
    (row,) = data["crossover"]["rows"]
    assert (row["task"], row["solver"], row["batch"]) == ("hopper", "converged", 4)
    assert row["native_ms"] > 0 and row["mjx_ms"] > 0 and data["crossover"]["recorded"] is None
    # fig-value (PPO and TRPO: two sweeps of 2 agents) on the point mass, each timed over one iteration and
    # extrapolated to its length
    programs = data["programs"]
    assert sorted((p["targets"], p["algorithms"], p["agents"]) for p in programs) == [
        ("fig-value", "ppo", 2), ("fig-value", "trpo", 2)]
    for p in programs:
        assert p["measured"] and p["iteration_s"] > 0 and p["planned_s"] > 0
        assert p["extrapolated_s"] == pytest.approx(p["compile_s"] + p["iteration_s"] * p["iterations"])
    assert [r["agents"] for r in data["throughput"]] == [2]
    assert all(r["measured"] and r["training_steps_per_s"] > 0 and r["physics_steps_per_s"] > 0
               for r in data["throughput"])
    for heading in ("# Accelerator report: cpu", "## Physics", "MJX from batch", "first iteration timed",
                    "## Training throughput"):
        assert heading in text
    assert text.count("| fig-value | point_mass |") == 2


def test_a_spent_budget_lists_what_was_not_measured(report_module, tmp_path, monkeypatch):
    monkeypatch.setattr(report_module.Budget, "left", lambda self: -1.0)
    data = json.loads(pathlib.Path(report_module.run("tiny", str(tmp_path), 1, record=False))
                      .with_suffix(".json").read_text())
    assert data["crossover"]["rows"] == [] and data["crossover"]["skipped"] == ["hopper/converged/4"]
    assert all(not p["measured"] for p in data["programs"]) and all(not r["measured"] for r in data["throughput"])


@pytest.mark.parametrize("args,match", [
    (("huge",), "unknown scale 'huge'; choose one of: paper, tiny"),
    (("tiny", None, 0), "budget must be a number of minutes > 0, got 0"),
])
def test_bad_input_is_named(report_module, tmp_path, args, match):
    scale, out, budget = (args + (None, 30))[:3]
    with pytest.raises(SystemExit, match=match):
        report_module.run(scale, str(out or tmp_path), budget)


def test_an_unwritable_directory_is_named(report_module, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SystemExit, match="cannot write the report directory"):
        report_module.run("tiny", str(blocker / "sub"), 30)
