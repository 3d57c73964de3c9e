"""`pgdiag aggregate RUN…`: saved runs' final scores as runs × tasks matrices per algorithm, normalized, and
their aggregates (the estimators themselves: tests/test_aggregates.py)."""

import numpy as np
import pandas as pd
import pytest

from pgdiag import load_run, preset, sweep
from pgdiag.cli import main
from pgdiag.config import ConfigError
from pgdiag.experiments.aggregate_runs import matrices

SMALL = dict(num_envs=2, steps_per_env=64, num_iterations=3, num_minibatches=4, ppo_epochs=2, value_epochs=2)


def _table(rows):
    return pd.DataFrame(rows, columns=["label", "task", "score"])


def test_scores_are_normalized_per_task_and_unequal_seed_counts_are_refused():
    scores = _table([("ppo", "a", 10.0), ("ppo", "a", 20.0), ("ppo", "b", 1.0), ("ppo", "b", 3.0),
                     ("trpo", "a", 30.0), ("trpo", "a", 0.0), ("trpo", "b", 2.0), ("trpo", "b", 2.0)])
    by_label, used = matrices(scores)
    # task a ranges over [0, 30] among the runs, task b over [1, 3]
    np.testing.assert_allclose(by_label["ppo"], [[1 / 3, 0.0], [2 / 3, 1.0]])
    np.testing.assert_allclose(by_label["trpo"], [[1.0, 0.5], [0.0, 0.5]])
    assert used["a"] == (0.0, 30.0, "the runs' own")
    by_label, used = matrices(scores, {"a": (0.0, 40.0)})
    assert by_label["ppo"][:, 0].tolist() == [0.25, 0.5] and used["a"] == (0.0, 40.0, "given")
    with pytest.raises(ConfigError, match="--range names c, not among the runs' tasks"):
        matrices(scores, {"c": (0.0, 1.0)})
    with pytest.raises(ConfigError, match="'ppo' has .* agents per task; every task needs the same number"):
        matrices(pd.concat([scores, _table([("ppo", "a", 5.0)])]))


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("aggregate") / "ppo")
    sweep(preset("ppo", "point_mass", **SMALL), seeds=[0, 1, 2], out=out)
    return out


def test_the_cli_aggregates_saved_runs(ppo_run, tmp_path, capsys):
    out = ppo_run
    m = load_run(out).metrics.dropna(subset=["mean_return"])
    final = m.sort_values("iteration").groupby("agent").tail(1).mean_return.to_numpy()   # each agent's last
    assert main(["aggregate", out, "--range", "point_mass=-200,0", "--reps", "200",
                 "--out", str(tmp_path / "agg")]) == 0
    table = pd.read_csv(tmp_path / "agg" / "aggregates.csv")
    got = table.set_index("estimator").value
    # one task: the mean and the median of the normalized scores are their plain mean (rounded to 4 places)
    assert got["mean"] == pytest.approx(np.mean((final + 200) / 200), abs=1e-4)
    assert got["median"] == pytest.approx(np.mean((final + 200) / 200), abs=1e-4)
    assert "point_mass [-200, 0] (given)" in capsys.readouterr().out
    assert main(["aggregate", out, "--range", "point_mass=0"]) == 2
    assert "expected TASK=LOW,HIGH with two numbers" in capsys.readouterr().err
    assert main(["aggregate", str(tmp_path / "missing")]) == 2


def test_the_bootstrap_is_the_same_whatever_the_order_of_the_algorithms():
    """One algorithm's intervals do not depend on which others are aggregated beside it, or in which order (its
    bootstrap stream is seeded by its name): the command line and a Python call give the same numbers."""
    from pgdiag import aggregates

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 2)), rng.normal(size=(5, 2)) + 0.5
    one = aggregates.aggregate({"ppo": a, "trpo": b}, reps=300).set_index(["algorithm", "estimator"]).sort_index()
    two = aggregates.aggregate({"trpo": b, "ppo": a}, reps=300).set_index(["algorithm", "estimator"]).sort_index()
    alone = aggregates.aggregate({"trpo": b}, reps=300).set_index(["algorithm", "estimator"]).sort_index()
    pd.testing.assert_frame_equal(one, two)
    pd.testing.assert_frame_equal(one.loc[["trpo"]], alone)


def test_the_cli_prints_the_probability_of_improvement_of_each_pair(ppo_run, tmp_path, capsys):
    runs = [ppo_run, str(tmp_path / "trpo")]
    sweep(preset("trpo", "point_mass", **{k: v for k, v in SMALL.items() if k != "ppo_epochs"}), seeds=[0, 1, 2],
          out=runs[1])
    assert main(["aggregate", *runs, "--reps", "200"]) == 0
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if "ppo vs trpo" in line]
    assert "P(x > y)" in row
