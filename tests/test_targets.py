"""The one table of targets (pgdiag.experiments.targets): every place a target appears reads it."""

import ast
import dataclasses
import inspect
import pathlib
import subprocess

import pytest

from pgdiag import ConfigError
from pgdiag.cli import build_parser
from pgdiag.experiments import notebook, targets

ROOT = pathlib.Path(__file__).parent.parent


def test_the_makefile_include_is_written_from_the_table():
    assert (ROOT / "targets.mk").read_text() == targets.makefile(), \
        "targets.mk is stale: run `python -m pgdiag.experiments.targets > targets.mk`"


def test_make_runs_each_target_into_its_studys_directory():
    # make -n prints the command each target would run, without running it
    done = subprocess.run(["make", "-n", "--no-print-directory", *targets.TARGETS, "SCALE=mid", "OUT=o"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    commands = [line for line in done.stdout.splitlines() if "pgdiag " in line]
    assert len(commands) == len(targets.TARGETS)
    for line, t in zip(commands, targets.TARGETS.values()):
        assert f"pgdiag {t.name} --scale mid --out o/{t.study}-mid" in line
        assert ("--progress" in line) == (t.kind != "optimize")
    closer = subprocess.run(["make", "-n", "--no-print-directory", "closer-look-report"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    assert all(f"pgdiag {n} " in closer for n in targets.of_notebook("closer-look"))


def test_every_target_the_closer_look_report_runs_has_the_scale_it_is_asked_for():
    """`make closer-look-report SCALE=mid` runs fig-trust-region and fig-theorem besides the diagnostic targets
    and fig-value: each has a mid scale, and every study it writes sits beside the others (one OUT), where the
    report finds them and their shared runs."""
    done = subprocess.run(["make", "-n", "--no-print-directory", "closer-look-report", "SCALE=mid", "OUT=o"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    ran = [line.split("pgdiag ", 1)[1].split()[0] for line in done.stdout.splitlines() if "pgdiag " in line]
    assert ran[-1] == "report" and set(ran[:-1]) == set(targets.of_notebook("closer-look")) | {"fig-trust-region",
                                                                                              "fig-theorem"}
    for name in ran[:-1]:
        assert "mid" in targets.get(name).scales, name
        assert f"--out o/{targets.get(name).study}-mid" in done.stdout
    assert "report --from o --scale mid" in done.stdout


def test_the_implementation_matters_report_runs_at_the_mid_scale():
    """`make implementation-matters-report SCALE=mid` runs fig-ablation, table-2, fig-trust-region and fig-theorem,
    each at its mid scale into one OUT (where table-2 and fig-trust-region share their runs, OUT/runs), then the
    IM report of that scale; every target whose evidence the report reads has a mid scale."""
    done = subprocess.run(["make", "-n", "--no-print-directory", "implementation-matters-report", "SCALE=mid", "OUT=o"],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    ran = [line.split("pgdiag ", 1)[1].split()[0] for line in done.stdout.splitlines() if "pgdiag " in line]
    assert ran == ["fig-ablation", "table-2", "fig-trust-region", "fig-theorem", "report"]
    for name in ran[:-1]:
        assert f"pgdiag {name} --scale mid --out o/{targets.get(name).study}-mid" in done.stdout
    assert "report --paper im --from o --scale mid" in done.stdout
    assert all("mid" in t.scales for t in targets.of_paper("im"))


def test_the_closer_look_tasks_run_the_papers_own_tasks_and_read_them_beside_mid():
    """`make closer-look-tasks` runs fig-value, fig-trust-region and fig-landscape-concentration at SCALE=tasks
    (Walker2d, Humanoid) into OUT, then one report over the mid and tasks scales' studies."""
    done = subprocess.run(["make", "-n", "closer-look-tasks", "OUT=o"], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    assert "fig-value fig-trust-region fig-landscape-concentration SCALE=tasks OUT=o" in done.stdout
    assert "report --from o --scale mid,tasks --out o/closer-look-report-mid+tasks" in done.stdout
    assert targets.get("fig-value").scales["tasks"].tasks_of("fig-value") == ("walker2d",)
    assert targets.get("fig-trust-region").scales["tasks"].tasks_of("fig-trust-region") == ("humanoid",)


def test_every_target_has_its_command_functions_scales_and_study():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name, t in targets.TARGETS.items():
        assert t.kind in targets.KINDS
        p = sub.choices[name]                                  # a sub-command of its own
        options = {o for a in p._actions for o in a.option_strings}
        assert "--from" in options and "--dry-run" in options and "--scale" in options
        assert ("--diag" in options) == (t.kind == "diagnostic")
        assert ("--algorithm" in options) == ("algorithm" in t.options)
        assert p.get_default("default_out") == f"results/{t.study}"
        for which, first in (("run", "scale"), ("draw", "from_dir"), ("plan", "scale")):   # one signature each
            params = list(inspect.signature(getattr(t, which)).parameters)
            assert params[:2] == ["target", first], (name, which, params)
        if t.evidence is not None:
            assert list(inspect.signature(t.evidence).parameters) == ["target", "from_dir", "notes"], name
            assert t.papers and t.provides, name
        assert "smoke" in t.scales and "paper" in t.scales
        if t.kind == "diagnostic":
            m = t.measurement
            for scale in t.scales.values():                    # every scale has settings its class accepts
                m.settings(**scale.measuring(m.name)).check()
            m.settings(**m.tiny).check()
            assert notebook.TINY_DIAG[name] == dict(m.tiny)
            assert set(t.measured_presets) <= set(t.presets)
        if t.notebook:
            assert (ROOT / "notebooks" / f"{t.notebook}.ipynb").exists() and name in notebook.NOTEBOOKS[t.notebook]


def _target_names_tested(path: pathlib.Path, names: set) -> list:
    """Lines of ``path`` that test a target's name: a comparison with it, an index by it, or a lookup of it."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        strings = []
        if isinstance(node, ast.Compare):
            strings = [n for n in [node.left, *node.comparators] if isinstance(n, ast.Constant)]
            strings += [e for n in node.comparators if isinstance(n, (ast.Tuple, ast.List, ast.Set))
                        for e in n.elts if isinstance(e, ast.Constant)]
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            strings = [node.slice]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "get" and node.args:
            strings = [a for a in node.args[:1] if isinstance(a, ast.Constant)]
        found += [f"{path.name}:{node.lineno}" for c in strings if c.value in names]
    return found


def test_no_module_outside_the_declarations_tests_a_targets_name():
    """Behaviour lives in the targets: no comparison with, index by or lookup of a target's name anywhere in the
    package (the study modules declare their targets; everything else iterates the table)."""
    names = set(targets.TARGETS)
    found = [line for path in sorted((ROOT / "pgdiag").rglob("*.py")) for line in _target_names_tested(path, names)]
    assert found == []
    # the check itself finds such a line
    probe = ROOT / "tests" / "_probe_name_test.py"
    try:
        probe.write_text('def f(target):\n    return target == "fig-value" or {}["table-2"]\n')
        assert len(_target_names_tested(probe, names)) == 2
    finally:
        probe.unlink()


def test_the_built_in_measurements_declare_every_target_and_each_once():
    from pgdiag import studies

    declared = [t.name for m in studies.BUILT_IN for t in m.TARGETS]
    assert len(declared) == len(set(declared)) == len(targets.BUILT_IN)
    assert set(declared) <= set(targets.TARGETS) and list(targets.TARGETS)[:len(declared)] == declared
    assert all(isinstance(m.TARGETS, tuple) for m in studies.BUILT_IN)


def test_registering_a_target_is_checked():
    own = targets.get("fig-value")
    with pytest.raises(ConfigError, match="a target named 'fig-value' exists"):
        targets.register(own)
    with pytest.raises(ConfigError, match="expected a pgdiag.experiments.target_types.Target, got dict"):
        targets.register({"name": "x"})
    with pytest.raises(ConfigError, match="'fig-value' is one of pgdiag's own targets"):
        targets.unregister("fig-value")
    with pytest.raises(ConfigError, match="kind 'figure' is not one of training, diagnostic, optimize"):
        dataclasses.replace(own, name="x", kind="figure")
    with pytest.raises(ConfigError, match="a diagnostic target, and only one, carries a Measurement"):
        dataclasses.replace(own, name="x", kind="diagnostic")


def test_an_unknown_target_is_named_with_the_targets_there_are():
    with pytest.raises(ConfigError, match=r"unknown target 'fig-nope'; targets: fig-ablation, .*solver-compare"):
        targets.get("fig-nope")


def test_the_replication_scale_trains_the_papers_experiment_and_its_plan_says_so():
    """SCALE=replication trains Gym's Humanoid (the papers' model) for CL's 488 iterations with checkpoints after
    0/150/300/450 and 8 agents per preset; the dry-run plans that model, not the default (a task's own settings
    reach the plan as they reach the training)."""
    from pgdiag.experiments import dry_run

    t = targets.get("fig-trust-region")
    sc = t.scales["replication"]
    assert sc.training("humanoid") == {"num_iterations": 488, "checkpoint_at": (0, 150, 300, 450),
                                       "heldout_every": 10, "model": "gym"}
    assert sc.seeds == 8 and set(sc.presets) == {"ppo", "ppo-m", "trpo"}
    plan = dry_run.training_plan(t, "replication")
    assert {p.model for p in plan} == {"gym"}
    assert sum(p.units for p in plan) == 24 and {p.sequential_steps for p in plan} == {488 * 2048}
