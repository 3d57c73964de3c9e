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
