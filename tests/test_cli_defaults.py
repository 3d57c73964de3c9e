"""Every command-line default is the library's: an option that feeds a library function takes its default (and its
choices) from the declaration that function's signature takes its own from, so the command line, the function and
the documentation state one value. A bad value is refused in one line naming it and what is allowed."""

import inspect
import os

import pytest

from pgdiag import aggregates
from pgdiag.cli import build_parser, main
from pgdiag.cli.options import option
from pgdiag.config import STATIC_SETTINGS, Choices, Config, ConfigError, Range, Setting, Static
from pgdiag.config.presets import BASE_TASK, PRESETS
from pgdiag.experiments import aggregate_runs, planner, report, report_page, target_types, targets
from pgdiag.run import distributed, execute, rosters
from pgdiag.studies.presets import tables
from pgdiag.studies.presets import targets as preset_targets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _default(fn, name):
    return inspect.signature(fn).parameters[name].default


def _parsed(*argv):
    return vars(build_parser().parse_args(list(argv)))


#: (command line without the option, its dest, the declaration, [(function, parameter)], the documented value,
#: the documented choices): each default stated once, read by the parser and by every function's signature
DEFAULTS = [
    (["train"], "batching", execute.BATCHING, [(execute.sweep, "batching")], "vmap", ["vmap", "map"]),
    (["train"], "seed", execute.SEED, [(execute.train, "seed")], 0, None),
    (["sweep"], "seeds", rosters.SEEDS, [(rosters.roster, "seeds")], 1, None),
    (["train"], "preset", STATIC_SETTINGS["algorithm"], [(Static, "algorithm")], "ppo", None),
    (["sweep"], "task", STATIC_SETTINGS["task"], [(Static, "task")], "hopper", None),
    (["train"], "join_timeout", distributed.JOIN_TIMEOUT, [(distributed.initialize, "timeout")], 120, None),
    (["table-2"], "statistic", tables.STATISTIC,
     [(tables.agent_scores, "statistic"), (preset_targets.draw_table, "statistic")], "final", ["final", "max"]),
    (["table-3"], "reporting", tables.REPORTING_RULE,
     [(tables.agent_scores, "reporting"), (preset_targets.draw_table, "reporting")], "pgdiag", ["pgdiag", "original"]),
    (["report"], "paper", target_types.PAPER,
     [(report.report, "paper"), (report.find_studies, "paper"), (report_page.page, "paper"),
      (planner.plan_report, "paper")], "cl", None),
    (["report"], "from_dir", target_types.RESULTS, [], "results", None),
    (["aggregate", "RUN"], "metric", aggregate_runs.METRIC,
     [(aggregate_runs.aggregate_runs, "metric"), (aggregate_runs.final_scores, "metric")], "mean_return", None),
    (["aggregate", "RUN"], "reps", aggregates.REPS,
     [(aggregate_runs.aggregate_runs, "reps"), (aggregates.aggregate, "reps"), (aggregates.interval, "reps")],
     2000, None),
]


@pytest.mark.parametrize("argv, dest, declared, functions, documented, choices", DEFAULTS,
                         ids=[f"{d[0][0]}-{d[1]}" for d in DEFAULTS])
def test_a_default_is_the_librarys_and_the_documented_one(argv, dest, declared, functions, documented, choices):
    assert _parsed(*argv)[dest] == declared.default == documented
    for fn, name in functions:
        assert _default(fn, name) == declared.default, f"{fn.__qualname__}({name}=...)"
    if choices is not None:
        assert list(declared.allowed.all()) == choices
        action = next(a for a in build_parser()._subparsers._group_actions[0].choices[argv[0]]._actions
                      if a.dest == dest)
        assert action.choices == choices


def test_the_defaults_the_pages_state():
    """What the documentation says, independently of the code: the agents' batching, the aggregate's metric, the
    options' choices, a target's scale (make's SCALE) and the report's paper and directory."""
    def read(*path):
        with open(os.path.join(ROOT, *path), encoding="utf-8") as f:
            return f.read()
    assert 'default `batching="vmap"`' in read("docs", "reference", "reproducibility.md")
    assert "`--metric` (default `mean_return`)" in read("docs", "aggregates.md")
    cli = read("docs", "cli.md")
    for text in ("`--batching vmap|map`", "`--statistic final|max`", "`--reporting pgdiag|original`",
                 "pgdiag report --paper cl|im [--from results]"):
        assert text in cli
    assert "SCALE  ?= smoke" in read("Makefile") and "at `SCALE=smoke`" in read("README.md")
    assert target_types.SCALE.default == "smoke" and planner.REPORT_SCALE.default == "paper"


def test_a_target_trains_and_plans_at_the_declared_scale():
    t = targets.get("table-2")
    assert _default(t.train, "scale") == _default(t.dry_run, "scale") == target_types.SCALE.default
    assert _parsed("table-2")["scale"] is None   # None: --from can tell a scale given from none
    scale = next(a for a in build_parser()._subparsers._group_actions[0].choices["table-2"]._actions
                 if a.dest == "scale")
    assert scale.help.startswith(f"{target_types.SCALE.default} (default): ")
    assert t.default_out == f"{target_types.RESULTS.default}/{t.study}"


def test_a_reports_plan_is_at_the_declared_scale(capsys):
    assert _default(planner.plan_report, "scale") == planner.REPORT_SCALE.default
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert f"(default {planner.REPORT_SCALE.default})" in " ".join(capsys.readouterr().out.split())


def test_the_papers_a_report_takes_are_the_declared_ones():
    assert set(report_page.PAPERS) == set(target_types.PAPER.allowed.all()) == set(target_types.PAPERS)
    with pytest.raises(ConfigError, match="unknown paper; choose from cl, im"):
        report_page.check_paper("xx")


def test_the_base_task_is_the_presets_own():
    """A task without presets takes the base task's (the command line's fallback for a user's task, the pure-JAX
    tasks' knobs here)."""
    assert BASE_TASK == "hopper"
    for algo in {a for a, _ in PRESETS}:
        assert (algo, BASE_TASK) in PRESETS


@pytest.mark.parametrize("argv, bad, allowed", [
    (["train", "--batching", "foo"], "foo", ("vmap", "map")),
    (["sweep", "--batching", "loop"], "loop", ("vmap", "map")),
    (["table-2", "--statistic", "mean"], "mean", ("final", "max")),
    (["table-3", "--reporting", "gym"], "gym", ("pgdiag", "original")),
])
def test_a_bad_choice_exits_with_one_line_naming_it_and_the_allowed(argv, bad, allowed, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    last = capsys.readouterr().err.strip().split("\n")[-1]
    assert "error" in last and repr(bad) in last and all(repr(a) in last for a in allowed)


@pytest.mark.parametrize("argv, words", [
    (["aggregate", "RUN", "--reps", "50"], ["--reps 50", "at least 100"]),
    (["report", "--paper", "xx"], ["'xx'", "unknown paper; choose from cl, im"]),
])
def test_a_value_the_library_refuses_is_one_line(argv, words, tmp_path, capsys):
    assert main([*argv, "--from" if argv[0] == "report" else "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pgdiag: error: ") and all(w in err for w in words)


def test_the_library_refuses_in_the_declarations_words():
    with pytest.raises(ConfigError, match="unknown batching 'foo'; choose one of: vmap, map"):
        execute.sweep(Config().replace(task="point_mass", num_iterations=2), batching="foo")
    with pytest.raises(ConfigError, match="unknown statistic 'mean'; choose 'final' or 'max'"):
        tables.check_rules("mean", "pgdiag")
    with pytest.raises(ConfigError, match="unknown reporting rule 'gym'; choose one of: pgdiag, original"):
        tables.check_rules("final", "gym")
    with pytest.raises(ConfigError, match="timeout must be a positive number of seconds"):
        distributed.initialize("localhost:1", 2, 0, timeout=0)


def test_option_reads_a_declaration():
    kw = option(Setting(5, "How many, in %.", Range(1)))
    assert kw == {"default": 5, "type": int, "help": "how many, in %%: a positive int; default 5"}
    kw = option(Setting("a", "MuJoCo's pick.", Choices(("a", "b"))))
    assert kw["choices"] == ["a", "b"] and kw["help"] == "MuJoCo's pick; default a" and "type" not in kw
    assert "choices" not in option(Setting("a", "One.", ("a", "b")), choices=False)
    assert option(Setting("a", "One."), help="mine", metavar="X") == {"default": "a", "help": "mine; default a",
                                                                     "metavar": "X"}


def test_resamples_is_a_setting_only_where_a_bootstrap_reads_it():
    """The gradient, step and baseline studies' intervals are not bootstrapped: no ``resamples`` there; the
    landscape's sign agreement is, and keeps it."""
    from pgdiag.diagnostics import BaselineSettings, GradientSettings, LandscapeSettings, StepSettings, subjects
    from pgdiag.diagnostics.subjects import DiagnosticError, parse_settings

    for record in (GradientSettings, StepSettings, BaselineSettings):
        with pytest.raises(TypeError):
            record(resamples=100)
        with pytest.raises(DiagnosticError, match="--diag expects name=value"):
            parse_settings(record, ["resamples=100"])
    assert LandscapeSettings(resamples=100).resamples == 100
    assert not hasattr(subjects, "check_batching")
