"""A study of a sweep keeps its swept settings apart: each agent's label names its grid point, and the study's
tables carry the grid's columns."""

import numpy as np

from pgdiag import preset, sweep
from pgdiag.diagnostics import step_study


def test_a_swept_grid_is_not_pooled(tmp_path):
    cfg = preset("ppo", "point_mass").replace(num_envs=2, steps_per_env=16, num_iterations=2, num_minibatches=2,
                                              ppo_epochs=1, value_epochs=1, checkpoint_at=(1,))
    run = sweep(cfg, grid={"value_clipping": [False, True]}, seeds=[0, 1], out=str(tmp_path / "run"))
    study = step_study([run.path], batches=2, save=False)
    summary = study.summary()
    assert sorted(summary.label) == ["ppo value_clipping=False", "ppo value_clipping=True"]
    assert set(study.steps.value_clipping) == {False, True}
    # each label's rows are its grid point's agents: 2 seeds × 2 batches
    for value, part in study.steps.groupby("value_clipping"):
        assert set(part.label) == {f"ppo value_clipping={value}"} and len(part) == 2 * 2
    assert np.isfinite(summary.step_cosine).all()
