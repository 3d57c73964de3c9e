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
    # beside it, this host's profile for plans made elsewhere (pgdiag.envs.hosts): it reads back as this host
    from pgdiag.envs import hosts
    profile = hosts.load(str(pathlib.Path(path).with_name(pathlib.Path(path).stem + "-host.json")))
    assert (profile.platform, profile.cores) == (hosts.backend(), hosts.cores())
    assert row["native_ms"] > 0 and row["mjx_ms"] > 0 and data["crossover"]["recorded"] is None
    # fig-value (PPO and TRPO: two sweeps of 2 agents) on the point mass, each timed over one iteration and
    # extrapolated to its length
    programs = data["programs"]
    assert sorted((p["targets"], p["algorithms"], p["agents"]) for p in programs) == [
        ("fig-value", "ppo", 2), ("fig-value", "trpo", 2)]
    for p in programs:
        assert p["measured"] and p["iteration_s"] > 0 and p["planned_s"] > 0
        # compile, the initial states (≥ 0), the first iteration, then every later one at the second's cost
        known = p["compile_s"] + p["first_iteration_s"] + p["iteration_s"] * (p["iterations"] - 1)
        assert p["first_iteration_s"] > 0 and known <= p["extrapolated_s"] <= known + 60
    assert [r["agents"] for r in data["throughput"]] == [2]
    assert all(r["measured"] and r["training_steps_per_s"] > 0 and r["physics_steps_per_s"] > 0
               for r in data["throughput"])
    # fig-grad-true's gradient program on one PPO agent (Hopper), its sizes cut to 256 pairs: timed on the physics
    # and devices it took here, set against its floor and extrapolated to the pairs of the target's own Hopper
    # measurement at the scale (mid: its seeds and checkpoints, far more pairs than one agent's cut sizes)
    (diag,) = data["diagnostics"]
    assert (diag["target"], diag["physics"], diag["placement"]) == ("fig-grad-true", "native", "default")
    assert diag["measured"] and diag["pairs"] > 0 and diag["run_s"] > 0 and diag["floor_s"] > 0
    assert diag["scale_pairs"] >= diag["pairs"] and diag["extrapolated_s"] >= diag["run_s"]
    # the closer look's report planned here at the smoke scale, as `pgdiag report --dry-run` plans it: every program
    # once, slowest first, with the physics auto takes (native MuJoCo for Hopper on a CPU, pure JAX for the LQR)
    from pgdiag.experiments.planner import plan_report
    (plan,) = data["plan"]
    assert (plan["paper"], plan["scale"], plan["measured"]) == ("cl", "smoke", True)
    frame = plan_report("cl", "smoke", show=False)
    assert len(plan["programs"]) == len(frame) and plan["pairs"] == int(frame.pairs.sum())
    estimated = [p["estimated_s"] for p in plan["programs"]]
    assert estimated == sorted(estimated, reverse=True) and plan["estimated_s"] == pytest.approx(sum(estimated))
    assert {p["task"]: p["backend"] for p in plan["programs"]} == {"hopper": "native", "lqr": "jax"}
    for heading in ("# Accelerator report: cpu", "## Physics", "an accelerator backend from batch", "first iterations timed",
                    "## Training throughput", "## The diagnostics' programs", "## Each paper's report planned"):
        assert heading in text
    assert text.count("| fig-value | point_mass |") == 2


def test_a_spent_budget_lists_what_was_not_measured(report_module, tmp_path, monkeypatch):
    monkeypatch.setattr(report_module.Budget, "left", lambda self: -1.0)
    path = pathlib.Path(report_module.run("tiny", str(tmp_path), 1, record=False))
    data = json.loads(path.with_suffix(".json").read_text())
    assert data["crossover"]["rows"] == [] and data["crossover"]["skipped"] == ["hopper/converged/4"]
    assert all(not p["measured"] for p in data["programs"]) and all(not r["measured"] for r in data["throughput"])
    assert data["diagnostics"] == [{"target": "fig-grad-true", "measured": False}]   # nothing trained for it
    assert data["plan"] == [{"paper": "cl", "measured": False}] and "not planned (budget)" in path.read_text()


def test_a_target_without_diagnostic_programs_is_named_with_those_that_have_them(report_module, tmp_path):
    with pytest.raises(SystemExit, match=r"the diagnostics section measures diagnostic programs, and table-3 has "
                                         r"none; targets with them: fig-grad-variance, fig-grad-true"):
        report_module.run("tiny", str(tmp_path), 30, sections=("diagnostics",), targets=("table-3",))


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


def test_a_report_in_pieces_keeps_what_earlier_pieces_measured(report_module, tmp_path, monkeypatch):
    """--sections measures some sections now; --merge takes the rest, and every program measured before,
    from an earlier report (a report measured across several short sessions on one host)."""
    with pytest.raises(SystemExit, match=r"unknown section\(s\) \['physics'\]; choose from: crossover, programs"):
        report_module.run("tiny", str(tmp_path), 30, sections=("physics",))
    with pytest.raises(SystemExit, match="cannot read the report to merge"):
        report_module.run("tiny", str(tmp_path), 30, sections=("throughput",), merge=str(tmp_path / "none.json"))
    earlier = {"crossover": {"rows": [{"task": "hopper", "solver": "converged", "batch": 4, "native_ms": 1.0,
                                       "mjx_ms": 2.0, "faster": "native"}], "skipped": [], "recorded": None},
               "programs": [], "throughput": [], "elapsed_s": 60.0,
               "pieces": [{"sections": ["crossover"], "budget_minutes": 5}]}
    (tmp_path / "earlier.json").write_text(json.dumps(earlier))
    monkeypatch.setattr(report_module.Budget, "left", lambda self: -1.0)    # nothing measured now
    path = pathlib.Path(report_module.run("tiny", str(tmp_path / "out"), 1, record=False, sections=("throughput",),
                                          merge=str(tmp_path / "earlier.json")))
    data = json.loads(path.with_suffix(".json").read_text())
    assert data["crossover"] == earlier["crossover"] and data["programs"] == []
    assert [p["sections"] for p in data["pieces"]] == [["crossover"], ["throughput"]]
    assert "in 2 pieces (crossover: budget 5 min; throughput: budget 1 min)" in path.read_text()


def test_a_report_stopped_midway_keeps_its_rows_and_a_merge_goes_on(report_module, tmp_path, monkeypatch):
    """The report is on disk from the start and after every row: stopped during the second program (a slot's end),
    it holds the first, marked in progress; merged, the next piece times only the program left."""
    import pgdiag

    real, calls = pgdiag.sweep, []

    def stop_on_second(*args, **kwargs):
        calls.append(args[0].static.algorithm)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(pgdiag, "sweep", stop_on_second)
    with pytest.raises(KeyboardInterrupt):
        report_module.run("tiny", str(tmp_path), 20, record=False, sections=("programs",))
    (md,) = tmp_path.glob("accelerator-report-*.md")
    data = json.loads(md.with_suffix(".json").read_text())
    assert not data["complete"] and "**In progress**" in md.read_text()
    assert [p["algorithms"] for p in data["programs"] if p["measured"]] == [calls[0]]
    calls.clear()
    path = pathlib.Path(report_module.run("tiny", str(tmp_path / "next"), 20, record=False, sections=("programs",),
                                          merge=str(md.with_suffix(".json"))))
    data = json.loads(path.with_suffix(".json").read_text())
    assert data["complete"] and len(calls) == 1 and all(p["measured"] for p in data["programs"])
    assert "In progress" not in path.read_text()


def test_filters_keep_the_named_tasks_and_targets_and_refuse_unknown_ones(report_module, tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match=r"unknown task\(s\) \['hoper'\]; tasks: "):
        report_module.run("tiny", str(tmp_path), 30, tasks=("hoper",))
    with pytest.raises(SystemExit, match=r"unknown target\(s\) \['fig-values'\]; targets: "):
        report_module.run("tiny", str(tmp_path), 30, targets=("fig-values",))
    monkeypatch.setattr(report_module.Budget, "left", lambda self: -1.0)    # listed, not measured
    data = json.loads(pathlib.Path(report_module.run("tiny", str(tmp_path), 1, record=False, tasks=("lqr",)))
                      .with_suffix(".json").read_text())
    assert data["crossover"]["skipped"] == [] and data["programs"] == [] and data["throughput"] == []
    assert data["diagnostics"] == []                                         # it measures Hopper's agents


def test_a_report_stopped_in_a_later_section_keeps_the_hosts_profile(report_module, tmp_path, monkeypatch):
    """The host's profile is written before each section after the first, so a report a slot's end stops in its
    plan still leaves the profile that plans this host elsewhere."""
    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_module.Budget, "left", lambda self: -1.0)    # nothing measured in the first
    monkeypatch.setattr(report_module.report_plan, "plan_section", stop)
    with pytest.raises(KeyboardInterrupt):
        report_module.run("tiny", str(tmp_path), 1, record=False, sections=("throughput", "plan"))
    from pgdiag.envs import hosts
    (profile,) = tmp_path.glob("accelerator-report-*-host.json")
    assert hosts.load(str(profile)).cores == hosts.cores()


def test_the_crossovers_ladder_narrows_to_the_named_solvers_and_batches(report_module):
    sc = report_module.ladder(report_module.SCALES["paper"], ("converged",), ("1024", "4096"))
    assert sc["solvers"] == ("converged",) and sc["batches"] == (1024, 4096)
    with pytest.raises(SystemExit, match="unknown solver"):
        report_module.ladder(report_module.SCALES["paper"], ("exact",), None)
    with pytest.raises(SystemExit, match="whole numbers >= 1, got 0"):
        report_module.ladder(report_module.SCALES["paper"], None, ("0",))


def test_the_crossover_names_the_accelerator_backend_that_wins_from_a_batch(report_module):
    """Warp wins from 1,024 and at every larger batch; native MuJoCo wins at the largest for Walker2d."""
    rows = [{"task": "hopper", "solver": "converged", "batch": b, "faster": f}
            for b, f in ((256, "native"), (1024, "warp"), (4096, "warp"))]
    rows += [{"task": "walker2d", "solver": "fast", "batch": b, "faster": f}
             for b, f in ((256, "mjx"), (1024, "native"))]
    assert report_module.crossover_batches(rows) == {("hopper", "converged"): (1024, "Warp"),
                                                     ("walker2d", "fast"): (None, "")}
