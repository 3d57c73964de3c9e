"""Aggregates over tasks × seeds (pgdiag.aggregates): rliable's own numbers on fixed score tables
(tests/data/rliable_fixtures.json, made by tests/data/make_rliable_fixtures.py where rliable 1.2.0 runs), and
closed forms worked out by hand."""

import json
import pathlib

import numpy as np
import pytest

from pgdiag import aggregates as ag

FIXTURES = json.loads((pathlib.Path(__file__).parent / "data" / "rliable_fixtures.json").read_text())
TABLES = {k: np.asarray(v) for k, v in FIXTURES["tables"].items()}
REPS = FIXTURES["reps"]


@pytest.mark.parametrize("estimator", ag.ESTIMATORS)
def test_point_estimates_equal_rliables(estimator):
    for name, scores in TABLES.items():
        assert ag.FUNCTIONS[estimator](scores) == pytest.approx(FIXTURES["estimates"][estimator][name], abs=1e-12)


def _within_bootstrap(values: np.ndarray, endpoint: float, p: float) -> bool:
    """Whether ``endpoint`` (rliable's percentile-p endpoint from its own REPS replicates) is one our REPS
    replicates could give: each side's empirical quantile sits within its rank's binomial spread,
    sd_p = √(p(1−p)/REPS), of the true one; six times √2 of it, widened by one replicate, fails a right answer
    with probability below 1e-8. Atoms (discrete scores) are handled by the CDF's left and right limits."""
    tol = 6 * np.sqrt(2) * np.sqrt(p * (1 - p) / REPS) + 1 / REPS
    below, at_most = np.mean(values < endpoint), np.mean(values <= endpoint)
    return below <= p + tol and at_most >= p - tol


@pytest.mark.parametrize("estimator", ag.ESTIMATORS)
def test_stratified_bootstrap_intervals_agree_with_rliables(estimator):
    for k, (name, scores) in enumerate(TABLES.items()):
        boot = ag.stratified_resample(scores, REPS, np.random.default_rng(k))
        values = np.array([ag.FUNCTIONS[estimator](b) for b in boot])
        low, high = FIXTURES["intervals"][estimator][name]
        assert _within_bootstrap(values, low, 0.025) and _within_bootstrap(values, high, 0.975), (name, low, high)


def test_probability_of_improvement_and_its_interval_agree_with_rliables():
    for key, expected in FIXTURES["improvement"].items():
        x, y = (TABLES[n] for n in key.split(","))
        assert ag.probability_of_improvement(x, y) == pytest.approx(expected["value"], abs=1e-12)
        rng = np.random.default_rng(1)
        bx, by = ag.stratified_resample(x, REPS, rng), ag.stratified_resample(y, REPS, rng)
        values = np.array([ag.probability_of_improvement(a, b) for a, b in zip(bx, by)])
        low, high = expected["interval"]
        assert _within_bootstrap(values, low, 0.025) and _within_bootstrap(values, high, 0.975)


def test_performance_profiles_agree_with_rliables():
    taus = FIXTURES["profile"]["taus"]
    for name, scores in TABLES.items():
        mine = ag.performance_profile(scores, taus, reps=REPS, seed=3)
        np.testing.assert_allclose(mine[:, 0], FIXTURES["profile"][name]["value"], atol=1e-12)
        boot = ag.stratified_resample(scores, REPS, np.random.default_rng(3))
        for t, tau in enumerate(taus):
            values = (boot > tau).mean(axis=(1, 2))
            assert _within_bootstrap(values, FIXTURES["profile"][name]["low"][t], 0.025)
            assert _within_bootstrap(values, FIXTURES["profile"][name]["high"][t], 0.975)


def test_estimators_by_hand():
    x = np.arange(1.0, 9.0).reshape(4, 2)              # runs × tasks: 1 … 8
    assert ag.iqm(x) == 4.5                             # ⌊8/4⌋ = 2 cut at each end: mean of 3 … 6
    assert ag.iqm(np.arange(1.0, 11.0).reshape(5, 2)) == 5.5   # ⌊10/4⌋ = 2: mean of 3 … 8
    assert ag.median(x) == 4.5                          # task means 4 and 5
    assert ag.mean(x) == 4.5
    assert ag.optimality_gap(np.array([[0.5, 2.0], [1.0, 0.0]])) == pytest.approx(1 - (0.5 + 1 + 1 + 0) / 4)
    # one task: pairs (1, 2) no, (1, 0) yes, (2, 2) a tie, (2, 0) yes: 2.5 of 4
    assert ag.probability_of_improvement([[1.0], [2.0]], [[2.0], [0.0]]) == 0.625
    assert ag.probability_of_improvement(x, x) == 0.5
    assert ag.normalize([50.0, 150.0], 50.0, 250.0).tolist() == [0.0, 0.5]


def test_each_task_is_resampled_from_its_own_runs():
    x = np.stack([np.arange(6.0), 100 + np.arange(6.0)], axis=1)   # task 0: 0 … 5, task 1: 100 … 105
    boot = ag.stratified_resample(x, 500, np.random.default_rng(0))
    assert boot.shape == (500, 6, 2)
    assert np.isin(boot[..., 0], x[:, 0]).all() and np.isin(boot[..., 1], x[:, 1]).all()
    # every run of a task is drawn about as often as the others (a uniform draw: 500 × 6 draws per task)
    counts = np.bincount(boot[..., 0].astype(int).ravel(), minlength=6)
    assert (np.abs(counts - 500) < 6 * np.sqrt(3000 * (1 / 6) * (5 / 6))).all()


def test_the_table_has_every_estimator_and_bad_input_is_named():
    table = ag.aggregate({"ppo": TABLES["a"], "trpo": TABLES["b"]}, reps=200)
    assert len(table) == 2 * len(ag.ESTIMATORS)
    assert (table.low <= table.value).all() and (table.value <= table.high).all()
    with pytest.raises(ValueError, match="unknown estimator 'iqr'; estimators: median, iqm"):
        ag.interval(TABLES["a"], "iqr")
    with pytest.raises(ValueError, match=r"runs × tasks matrix, got shape \(3,\)"):
        ag.interval([1.0, 2.0, 3.0], "iqm")
    with pytest.raises(ValueError, match="x has 3 tasks, y 4"):
        ag.probability_of_improvement(TABLES["a"], TABLES["c"])
    with pytest.raises(ValueError, match="high must exceed the low"):
        ag.normalize([1.0], 2.0, 2.0)
