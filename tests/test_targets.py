"""The one table of targets (pg_diag.experiments.targets): every place a target appears reads it."""

import inspect
import pathlib
import subprocess

import pytest

from pg_diag import ConfigError, diagnostics
from pg_diag.cli import build_parser
from pg_diag.experiments import notebook, plan, study_dir, targets

ROOT = pathlib.Path(__file__).parent.parent


def test_the_makefile_include_is_written_from_the_table():
    assert (ROOT / "targets.mk").read_text() == targets.makefile(), \
        "targets.mk is stale: run `python -m pg_diag.experiments.targets > targets.mk`"


def test_make_runs_each_target_into_its_studys_directory():
    # make -n prints the command each target would run, without running it
    done = subprocess.run(["make", "-n", "--no-print-directory", *targets.TARGETS, "SCALE=mid", "OUT=o"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    commands = [line for line in done.stdout.splitlines() if "pg-diag " in line]
    assert len(commands) == len(targets.TARGETS)
    for line, t in zip(commands, targets.TARGETS.values()):
        assert f"pg-diag {t.name} --scale mid --out o/{t.study}-mid" in line
        assert ("--progress" in line) == (t.kind != "optimize")
    closer = subprocess.run(["make", "-n", "--no-print-directory", "closer-look-report"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    assert all(f"pg-diag {n} " in closer for n in targets.of_notebook("closer-look"))


def test_every_target_the_closer_look_report_runs_has_the_scale_it_is_asked_for():
    """`make closer-look-report SCALE=mid` runs fig-trust-region and fig-theorem besides the diagnostic targets
    and fig-value: each has a mid scale, and every study it writes sits beside the others (one OUT), where the
    report finds them and their shared runs."""
    done = subprocess.run(["make", "-n", "--no-print-directory", "closer-look-report", "SCALE=mid", "OUT=o"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    ran = [line.split("pg-diag ", 1)[1].split()[0] for line in done.stdout.splitlines() if "pg-diag " in line]
    assert ran[-1] == "report" and set(ran[:-1]) == set(targets.of_notebook("closer-look")) | {"fig-trust-region",
                                                                                              "fig-theorem"}
    for name in ran[:-1]:
        assert "mid" in targets.get(name).scales, name
        assert f"--out o/{targets.get(name).study}-mid" in done.stdout
    assert "report --from o --scale mid" in done.stdout


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
        for which in ("run", "draw"):                          # both functions resolve; named ones take the name
            module, fn = getattr(t, which).split(":")
            params = list(inspect.signature(getattr(__import__(f"pg_diag.experiments.{module}", fromlist=[fn]),
                                                    fn)).parameters)
            assert (params[0] in ("target", "kind")) == (which in t.named), (name, which, params)
        assert "smoke" in t.scales and "paper" in t.scales
        assert name in study_dir.TARGETS[t.study]
        if t.kind == "diagnostic":
            cls = getattr(diagnostics, t.settings_class)
            for scale in t.scales.values():                    # every scale has settings its class accepts
                cls(**scale.measuring(t.measurement)).check()
            cls(**t.tiny).check()
            assert notebook.TINY_DIAG[name] == t.tiny
        assert (name in plan.DIAGNOSTIC_TARGETS) == (t.kind == "diagnostic")
        assert (name in plan.TRAINING_TARGETS) == (t.kind != "diagnostic")
        if t.notebook:
            assert (ROOT / "notebooks" / f"{t.notebook}.ipynb").exists() and name in notebook.NOTEBOOKS[t.notebook]


def test_an_unknown_target_is_named_with_the_targets_there_are():
    with pytest.raises(ConfigError, match=r"unknown target 'fig-nope'; targets: fig-ablation, .*solver-compare"):
        targets.get("fig-nope")
