"""Plans from Python (pgdiag.plan_sweep, pgdiag.plan_study): the programs a sweep or a study would compile,
counted by hand, printed with their memory and duration; nothing trains or is measured."""

import pytest

import pgdiag
from pgdiag import ConfigError, preset, sweep

SMALL = dict(num_envs=2, steps_per_env=16, num_iterations=3, num_minibatches=2, ppo_epochs=1, value_epochs=1)


def test_a_sweep_is_planned_as_one_program_of_every_agent(capsys):
    base = preset("ppo", "point_mass", **SMALL)
    table = pgdiag.plan_sweep(base, grid={"lr_policy": [1e-4, 3e-4], "value_clipping": [False, True]}, seeds=3)
    (row,) = table.itertuples()
    assert row.units == 2 * 2 * 3 and row.pairs == 12 * 3 * 2 * 16 and row.sequential_steps == 3 * 16
    assert row.width == 12 * 2 and row.fits
    out = capsys.readouterr().out
    assert "1 programs, 1,152 pairs; every program fits" in out and "estimated duration" in out
    with pytest.raises(ConfigError, match="seeds"):
        pgdiag.plan_sweep(base, seeds=0)


def test_a_study_is_planned_on_saved_runs_without_measuring(tmp_path):
    import os

    run = sweep(preset("ppo", "point_mass", **SMALL, checkpoint_at=(1, 2)), seeds=[0, 1], out=str(tmp_path / "r"))
    table = pgdiag.plan_study("gradients", [run.path], iterations=[2], estimates=4, sizes=(16, 64),
                               true_pairs=0, show=False)
    assert int(table.units.sum()) == 2                     # 2 agents at one checkpoint
    assert not os.path.exists(os.path.join(run.path, "diagnostics"))   # nothing measured or saved
    assert (table.estimated_s >= 0).all()
    with pytest.raises(ConfigError, match="plan_study: unknown study 'gradient'; studies are gradients, steps"):
        pgdiag.plan_study("gradient", [run.path])
    # the README's sizes up to 1e6 as written: the scale's true gradient follows them (10 × the largest N)
    big = pgdiag.plan_study("gradients", [run.path], iterations=[2], sizes=(100, 10_000, 1_000_000), show=False)
    assert int(big.units.sum()) == 2


def test_a_papers_report_is_planned_with_each_shared_program_once(monkeypatch, capsys):
    """`pgdiag report --dry-run`: every program of every target the report reads, a training that several targets
    share listed once with all of them (the smoke scale's three gradient figures train one set of runs), the
    estimate the sum of its programs'; a scale that only some targets have plans those and names the others."""
    from pgdiag.experiments import costs, planner, targets

    monkeypatch.setattr(costs, "recorded_step_ms", lambda *a, **k: lambda *b: 1.0)   # nothing timed
    table = planner.plan_report("cl", "smoke", show=False)
    separate = [p for t in targets.of_paper("cl") for p in t.dry_run("smoke")]
    assert len(table) == len(dict.fromkeys(separate)) < len(separate)
    shared = table[table.stage == "train"].targets.str.contains("fig-grad-variance")
    assert shared.any() and table[table.stage == "train"][shared].targets.str.contains("fig-step-variance").all()
    assert set(table.targets.str.split(", ").explode()) == {t.name for t in targets.of_paper("cl")}
    pgdiag.plan_report("im", "tasks")                         # the Python API's name
    out = capsys.readouterr().out
    assert "without scale tasks: fig-ablation (tasks)" in out and "programs," in out
    with pytest.raises(ConfigError, match="unknown paper; choose from"):
        planner.plan_report("xx", "smoke")
    from pgdiag.cli import main

    assert main(["report", "--dry-run", "--paper", "im", "--scale", "smoke"]) == 0   # the command line's way
    assert "fig-ablation" in capsys.readouterr().out
    assert main(["report", "--dry-run", "--scale", "huge"]) == 2
    assert "no target of the report has that scale" in capsys.readouterr().err
