"""The claims' evidence extracted from constructed study tables, against answers worked out by hand; and the
constructed cases where a claim must fail (concentrated gradients, a perfect value function, a surrogate that
tracks the true reward, a policy inside its trust region) taken through extraction and the claim together."""

import types

import numpy as np
import pandas as pd
import pytest

from pgdiag.experiments import claims, evidence_rows
from pgdiag.studies.ablation.evidence import ablation_evidence, best_evidence
from pgdiag.studies.baselines.evidence import baseline_evidence, baseline_ratio_evidence
from pgdiag.studies.gradients.evidence import gradient_evidence
from pgdiag.studies.landscape.evidence import landscape_evidence
from pgdiag.studies.presets.evidence import score_evidence
from pgdiag.studies.theorem.evidence import theorem_evidence
from pgdiag.studies.trust_region.evidence import trust_region_evidence
from pgdiag.studies.value.evidence import value_evidence

BATCH = 1000
ITERATIONS = 20   # the constructed runs' length: checkpoint 10 is halfway (CL's "later"), unannealed


@pytest.fixture(autouse=True)
def _runs_of_twenty_iterations(monkeypatch):
    """The constructed studies name runs that are not on disk: each agent's run has 20 iterations, no annealing."""
    monkeypatch.setattr(evidence_rows, "_schedule", lambda run: _Every((ITERATIONS, False)))


class _Every(dict):
    """{any agent: value}."""

    def __init__(self, value):
        super().__init__()
        self.value = value

    def __getitem__(self, agent):
        return self.value


def _papers(rows):
    """Evidence rows as a frame, from runs of the papers' length and models (488 iterations on Gym's): the report
    adds these per study from its runs' manifests."""
    return pd.DataFrame(rows).assign(run_iterations=488, model="gym")


def _gradient_study(pairwise, to_true, agents=(0, 1, 2, 3, 4, 5), true_ratio=10.0):
    """pairwise[it][n] and to_true[it][n]: per agent the same value for every pair (K = 3) and estimate."""
    pairs, ests = [], []
    for agent in agents:
        for it, per_n in pairwise.items():
            for n, c in per_n.items():
                for i, j in ((0, 1), (0, 2), (1, 2)):
                    pairs.append({"run": "runs/ppo", "label": "ppo", "agent": agent, "iteration": it, "n": n,
                                  "i": i, "j": j, "cosine": c + 0.01 * agent})
        for it, per_n in to_true.items():
            for n, c in per_n.items():
                for k in range(3):
                    ests.append({"run": "runs/ppo", "label": "ppo", "agent": agent, "iteration": it, "n": n, "k": k,
                                 "to_true": c + 0.01 * agent})
    its = sorted(set(pairwise) | set(to_true))
    subjects = pd.DataFrame([{"run": "runs/ppo", "agent": a, "iteration": it, "true_ratio": true_ratio,
                              "truth_ceiling": CEILING} for a in agents for it in its])
    return types.SimpleNamespace(batch_size=BATCH, pairs=pd.DataFrame(pairs), estimates=pd.DataFrame(ests),
                                 subjects=subjects)


#: the truth's own cosine to the gradient: 1/√2, so the cosine over it crosses 1/√2 where the cosine crosses 0.5
CEILING = 2 ** -0.5


def _values(rows, name, iteration=None):
    return {r["agent"]: r["value"] for r in rows
            if r["evidence"] == name and (iteration is None or r.get("iteration") == iteration)}


def _all(values: dict, expected: float) -> bool:
    return len(values) > 0 and all(v == pytest.approx(expected) for v in values.values())


def test_gradient_evidence_by_hand():
    """Agent a's cosines are the table's plus 0.01·a; the truth's ceiling is 1/√2. At the batch size at
    checkpoint 10: 0.2 + 0.01a; change 0.2 − 0.6 = −0.4; to the gradient (its change −0.1·√2) (cosine to the truth over the ceiling)
    (0.3 + 0.01a)·√2 at the batch, (0.9 + 0.01a)·√2 at the largest N; it reaches 1/√2 where the cosine to the
    truth reaches 0.5, between N = 1,000 (0.3 + 0.01a) and 4,000 (0.5 + 0.01a), log-linearly at
    N = 1000 · 4^(1 − 0.05a) → 4^(1 − 0.05a) × the batch (4× for agent 0). Every row carries its checkpoint:
    checkpoint 10 of a 20-iteration run is halfway."""
    study = _gradient_study({0: {100: 0.3, 1000: 0.6, 10000: 0.9}, 10: {100: 0.1, 1000: 0.2, 10000: 0.5}},
                            {0: {100: 0.2, 1000: 0.4, 4000: 0.7, 10000: 0.9},
                             10: {100: 0.1, 1000: 0.3, 4000: 0.5, 10000: 0.9}})
    rows = gradient_evidence({"hopper": study})
    at_b = _values(rows, "grad_pairwise_at_batch", 10)
    assert at_b == {f"runs/ppo:{a}": pytest.approx(0.2 + 0.01 * a) for a in range(6)}
    assert _values(rows, "grad_pairwise_at_batch", 0)["runs/ppo:0"] == pytest.approx(0.6)
    assert {r["progress"] for r in rows if r["evidence"] == "grad_pairwise_at_batch"} == {0.0, 0.5}
    assert _all(_values(rows, "grad_pairwise_change"), -0.4)
    assert _all(_values(rows, "grad_true_change"), (0.3 - 0.4) * 2 ** 0.5)   # at the batch: 0.3 + 0.01a after 0.4 + 0.01a
    assert _values(rows, "grad_true_at_batch", 10)["runs/ppo:0"] == pytest.approx(0.3 * 2 ** 0.5)
    assert _values(rows, "grad_true_at_largest", 10)["runs/ppo:2"] == pytest.approx(0.92 * 2 ** 0.5)
    assert _values(rows, "grad_true_samples_ratio", 10) == {f"runs/ppo:{a}": pytest.approx(4 ** (1 - 0.05 * a))
                                                            for a in range(6)}
    out = claims.evaluate(_papers(rows), paper="CL")
    verdicts = out[out.level == ""].set_index("claim").verdict
    assert verdicts["gradients-poorly-concentrated"] == "holds" and verdicts["gradients-worsen-over-training"] == "holds"
    # the six ratios 4^(1 − 0.05a) run from 2.83 to 4: the median's interval at 6 agents, [min, max], straddles
    # the rule's 3×
    assert verdicts["gradients-need-several-fold-samples"] == "inconclusive"


def test_a_truth_from_too_few_pairs_gives_no_evidence_against_it_and_says_so():
    study = _gradient_study({0: {1000: 0.5}, 10: {1000: 0.2}}, {0: {1000: 0.4}, 10: {1000: 0.3}}, true_ratio=4.0)
    notes = []
    rows = gradient_evidence({"hopper": study}, notes)
    assert not any(r["evidence"].startswith("grad_true") for r in rows) and _values(rows, "grad_pairwise_at_batch")
    assert len(notes) == 1 and "4× the largest N (fewer than 10×" in notes[0]


def test_concentrated_gradients_fail_the_concentration_claims():
    study = _gradient_study({0: {100: 0.9, 1000: 0.9, 10000: 0.95}, 10: {100: 0.85, 1000: 0.9, 10000: 0.95}},
                            {0: {100: 0.9, 1000: 0.9, 10000: 0.9}, 10: {100: 0.9, 1000: 0.9, 10000: 0.9}})
    verdicts = claims.evaluate(_papers(gradient_evidence({"hopper": study})), paper="CL")
    verdicts = verdicts[verdicts.level == ""].set_index("claim").verdict
    for key in ("gradients-poorly-concentrated", "gradients-far-from-true", "gradients-need-several-fold-samples"):
        assert verdicts[key] == "does not hold", key


def test_a_truth_without_a_ceiling_gives_no_evidence_against_it():
    study = _gradient_study({10: {1000: 0.5}}, {10: {1000: 0.4}})
    study.subjects = study.subjects.drop(columns="truth_ceiling")
    notes = []
    rows = gradient_evidence({"hopper": study}, notes)
    assert not any(r["evidence"].startswith("grad_true") for r in rows) and "split-half ceiling" in notes[0]


def test_crossing_ratio_by_hand():
    # 0.5 lies halfway from 0.4 (N = 1000) to 0.6 (N = 4000): log-linearly, N = 1000 · 4^0.5 = 2000
    assert evidence_rows.crossing_ratio([4000, 1000, 100], [0.6, 0.4, 0.1], 0.5, 1000) == pytest.approx(2.0)
    assert evidence_rows.crossing_ratio([100, 1000], [0.1, 0.2], 0.5, 1000) == np.inf
    assert evidence_rows.crossing_ratio([100, 1000], [0.7, 0.8], 0.5, 1000) == 0.1


def _per_agent(rows, name):
    """{agent: the mean of its rows} of evidence ``name`` (what a claim over the whole run reads)."""
    frame = pd.DataFrame([r for r in rows if r["evidence"] == name])
    return {} if frame.empty else frame.groupby("agent")["value"].mean().to_dict()


def test_value_evidence_is_one_row_per_measured_iteration_by_hand():
    """Iterations 0–9 of a 10-iteration run, held-out measured on odd iterations (7's complete-returns MRE NaN):
    each measured iteration is a row with its point of training. The original's GAE "MRE" 0.9 at 1, 3 and 0.05 at
    5, 7, 9: mean (1.8 + 0.15)/5 = 0.39; complete returns 0.5 at 5, 9 only; truncated held-out 0.6 + 0.01·it
    against the training batch's 0.2 + 0.01·it: generalization 0.4 at each odd iteration, the training batch's
    own 0.25 over them. Not the LQR task: no floor rows."""
    it = np.arange(10)
    late, held = it >= 5, it % 2 == 1
    m = pd.DataFrame({"task": "hopper", "algorithm": "ppo", "agent": 0, "iteration": it, "num_iterations": 10,
                      "lr_annealing": True,
                      "heldout_value_mre_gae_original": np.where(held, np.where(late, 0.05, 0.9), np.nan),
                      "heldout_value_mre_gae": np.where(held, 0.1, np.nan),
                      "heldout_value_mre_returns": np.where(held & late, np.where(it == 7, np.nan, 0.5), np.nan),
                      "value_mre_returns": 0.9,
                      "heldout_value_mre_returns_truncated": np.where(held, 0.6 + 0.01 * it, np.nan),
                      "value_mre_returns_truncated": 0.2 + 0.01 * it})
    rows = value_evidence(m)
    assert _per_agent(rows, "value_heldout_gae_mre") == {"0": pytest.approx(0.39)}
    assert _per_agent(rows, "value_heldout_gae_mre_true") == {"0": pytest.approx(0.1)}
    assert sorted(r["iteration"] for r in rows if r["evidence"] == "value_heldout_returns_mre") == [5, 9]
    assert _per_agent(rows, "value_heldout_truncated_mre") == {"0": pytest.approx(0.65)}
    assert _per_agent(rows, "value_returns_generalization") == {"0": pytest.approx(0.4)}
    # the training batch's (Fig 14) at the held-out iterations 1, 3, …, 9 alone: 0.2 + 0.01 · 5 = 0.25
    assert _per_agent(rows, "value_train_truncated_mre") == {"0": pytest.approx(0.25)}
    assert sorted(r["iteration"] for r in rows if r["evidence"] == "value_train_truncated_mre") == [1, 3, 5, 7, 9]
    first = next(r for r in rows if r["iteration"] == 3)
    assert first["progress"] == pytest.approx(0.3) and first["lr_share"] == pytest.approx(0.7)
    assert not any(r["evidence"].startswith("value_floor") for r in rows)
    # a run recorded before the original's GAE "MRE" existed: no row for it, the others as before
    old = value_evidence(m.drop(columns="heldout_value_mre_gae_original"))
    assert not _per_agent(old, "value_heldout_gae_mre") and _per_agent(old, "value_heldout_gae_mre_true")


def test_generalization_pairs_the_iterations_and_the_states():
    """Held-out measured at 6 and 8 only; the training batch's truncated MRE is 0.1 there and 0.5 at 5, 7, 9: the
    held-out 0.3 minus the training 0.1 on the same iterations is 0.2 (the training mean over the whole window,
    0.34, would give −0.04). The complete-return training MRE (an outcome-selected subset) is not read."""
    it = np.arange(10)
    m = pd.DataFrame({"task": "hopper", "algorithm": "trpo", "agent": 3, "iteration": it,
                      "heldout_value_mre_returns_truncated": np.where(np.isin(it, (6, 8)), 0.3, np.nan),
                      "value_mre_returns_truncated": np.where(it % 2 == 0, 0.1, 0.5),
                      "value_mre_returns": 5.0})
    assert _per_agent(value_evidence(m), "value_returns_generalization") == {"3": pytest.approx(0.2)}


def test_on_lqr_a_perfect_value_function_reads_the_floor():
    """The noise floor is what it says: a value function equal to V^π, read against noisy returns, gives
    exactly V^π's MRE. On LQR-like numbers worked in numpy — V^π(s) = −(1 + s²) on 200 states, returns
    R = V^π + noise of half V^π's size (R = V^π·(1 + ε), ε = ±0.5 alternately, no sign flip), truncated returns
    0.8·R — the perfect network's MREs against R and against the cut returns (0.5 and |1 − 0.8·1.5|, |1 −
    0.8·0.5| averaged: (0.2/1.2 + 0.6/0.4)/2, from numpy) are put in the metrics as the network's, and V^π's in
    the floor's columns: the floor and agent evidence coincide, and "off by 50%" against complete returns
    reads 0.5 for a perfect network."""
    s = np.linspace(-2.0, 2.0, 200)
    v_pi = -(1.0 + s ** 2)
    eps = np.where(np.arange(200) % 2 == 0, 0.5, -0.5)
    returns = v_pi * (1.0 + eps)
    cut = 0.8 * returns
    mre = lambda v, t: float(np.mean(np.abs(v - t) / np.abs(t)))  # noqa: E731
    v_net = v_pi.copy()                               # the perfect value function
    net_full, net_cut = mre(v_net, returns), mre(v_net, cut)
    floor_full, floor_cut = mre(v_pi, returns), mre(v_pi, cut)
    assert floor_full == pytest.approx((0.5 / 1.5 + 0.5 / 0.5) / 2)
    assert floor_cut == pytest.approx((abs(1 - 1.2) / 1.2 + abs(1 - 0.4) / 0.4) / 2)
    it = np.arange(4)
    m = pd.DataFrame({"task": "lqr", "algorithm": "ppo", "agent": 1, "iteration": it,
                      "heldout_value_mre_returns": net_full, "heldout_value_mre_returns_truncated": net_cut,
                      "value_mre_returns_truncated": net_cut,
                      "heldout_value_mre_floor": floor_full, "heldout_value_mre_floor_truncated": floor_cut})
    rows = value_evidence(m)
    assert _per_agent(rows, "value_floor_mre") == {"1": pytest.approx(floor_full)}
    assert _per_agent(rows, "value_floor_agent_mre") == _per_agent(rows, "value_floor_mre")
    assert _per_agent(rows, "value_floor_truncated_mre") == {"1": pytest.approx(floor_cut)}
    assert _per_agent(rows, "value_floor_agent_truncated_mre") == _per_agent(rows, "value_floor_truncated_mre")
    assert _per_agent(rows, "value_floor_excess_mre") == {"1": pytest.approx(0.0)}
    assert _per_agent(rows, "value_floor_excess_truncated_mre") == {"1": pytest.approx(0.0)}
    assert _per_agent(rows, "value_returns_generalization") == {"1": pytest.approx(0.0)}


def _baseline_study(agent_mse, fitted_mse, better, agents=range(6), floor=True):
    pairs, fits = [], []
    for a in agents:
        for n in (BATCH, 4 * BATCH):
            for base, c in (("value", 0.3), ("zero", 0.1), ("fitted", 0.5)):
                pairs += [{"run": "r", "label": "ppo", "agent": a, "iteration": 5, "n": n, "baseline": base, "i": i,
                           "j": j, "cosine": c + (0.1 if n > BATCH else 0.0)} for i, j in ((0, 1), (0, 2), (1, 2))]
        # the t-test's batches: the agent's MSE 10× what it is on the floor's, which the evidence reads
        fit = {"run": "r", "label": "ppo", "agent": a, "iteration": 5, "agent_mse": 10 * agent_mse,
               "fitted_mse": fitted_mse, "fitted_better": better[a], "fitted_mre": 0.01, "agent_mre": 0.02}
        if floor:
            fit.update(floor_agent_mse=agent_mse, floor_fitted_mse=fitted_mse, floor_fitted_mre=0.3 + 0.01 * a,
                       floor_agent_mre=0.45, floor_fitted_mre_truncated=0.5, floor_agent_mre_truncated=0.55)
        fits.append(fit)
    return types.SimpleNamespace(batch_size=BATCH, pairs=pd.DataFrame(pairs), fits=pd.DataFrame(fits))


def test_baseline_evidence_by_hand_and_gated_on_v_star():
    """Pairwise cosines at N = 1,000 (4,000): zero 0.1 (0.2), value 0.3 (0.4), V* 0.5 (0.6), so ρ = 1/c − 1 is
    9 (4), 7/3 (1.5), 1 (2/3): the variance ratio of returns over the agent's network 8/3 at 4,000 (at 1,000
    returns' cosine 0.1 is below 0.2, where ρ is not read: NaN), of the network over V* 7/3 (9/4), the latter only for
    the agents whose V* was shown better (0, 2, 4); the cosine gap of the network over returns 0.2 at each N; excess
    error on the floor's batches 2.0/1.6 − 1 = 0.25 (on the t-test's, 20/1.6 − 1 = 11.5, not read); the
    floor's MREs per agent and checkpoint, with the checkpoint."""
    study = _baseline_study(2.0, 1.6, [True, False] * 3)
    rows = baseline_evidence({"hopper": study})
    ratios = pd.DataFrame(baseline_ratio_evidence({"hopper": study}))
    value = ratios[ratios.evidence == "baseline_variance_ratio_value"]
    assert len(value[value.pairs == BATCH]) == 6 and value[value.pairs == BATCH].value.isna().all()   # kept, unread
    assert value[value.pairs == 4 * BATCH].value.to_numpy() == pytest.approx([8 / 3] * 6)
    gap = ratios[ratios.evidence == "baseline_cosine_gap_value"]
    assert sorted(gap.pairs) == [BATCH] * 6 + [4 * BATCH] * 6 and gap.value.to_numpy() == pytest.approx([0.2] * 12)
    fitted = ratios[ratios.evidence == "baseline_variance_ratio_fitted"]
    assert sorted(set(fitted.agent)) == ["r:0", "r:2", "r:4"]
    assert sorted(fitted.value) == pytest.approx([9 / 4] * 3 + [7 / 3] * 3)
    assert _all(_values(rows, "value_excess_error"), 0.25)
    assert _values(rows, "value_floor_mre") == {f"r:{a}": pytest.approx(0.3 + 0.01 * a) for a in range(6)}
    assert _all(_values(rows, "value_floor_agent_mre"), 0.45)
    assert _all(_values(rows, "value_floor_truncated_mre"), 0.5)
    assert _all(_values(rows, "value_floor_agent_truncated_mre"), 0.55)
    # the paired excess on the floor's states: the network's MRE minus V*'s
    assert _values(rows, "value_floor_excess_mre") == {f"r:{a}": pytest.approx(0.15 - 0.01 * a) for a in range(6)}
    assert _all(_values(rows, "value_floor_excess_truncated_mre"), 0.05)
    assert {r["iteration"] for r in rows if r["evidence"].startswith("value_")} == {5}
    out = claims.evaluate(_papers(rows), paper="CL").set_index("claim")
    assert out.loc["value-not-the-true-value", "verdict"] == "holds"


def test_a_study_without_the_floor_gives_no_floor_evidence_and_says_so():
    """A study saved before the floor was read apart: its agent_mse / fitted_mse were read on the batches that
    stopped V*'s fit, so no value_excess_error or value_floor_* comes from it, and a note says so."""
    notes = []
    rows = baseline_evidence({"hopper": _baseline_study(2.0, 1.6, [True] * 6, floor=False)}, notes)
    assert not any(r["evidence"].startswith("value_") for r in rows)
    assert len(notes) == 1 and "measure it again" in notes[0]


def test_a_perfect_value_function_fails_not_the_true_value():
    """The agent's network at the noise floor: its held-out MSE below V*'s (V* is itself an estimate)."""
    rows = baseline_evidence({"hopper": _baseline_study(1.0, 1.05, [False] * 6)})
    out = claims.evaluate(_papers(rows), paper="CL").set_index("claim")
    assert out.loc["value-not-the-true-value", "verdict"] == "does not hold"
    assert "true-value-baseline-helps-more" not in out.index      # never gated in: V* never shown better


def _surrogate(changes_first, changes_last, large):
    rows = []
    for a in range(6):
        for it, ch in ((0, changes_first), (10, changes_last)):
            rows.append({"run": "r", "label": "ppo", "agent": a, "iteration": it, "step_pairs": 0,
                         "true_step_change": ch * (1 + 0.1 * a), "true_step_change_se": 2.0})
            rows.append({"run": "r", "label": "ppo", "agent": a, "iteration": it, "step_pairs": 10 ** 6,
                         "true_step_change": large, "true_step_change_se": 1.0})
    frame = pd.DataFrame(rows)
    return types.SimpleNamespace(agreement=lambda: frame)


def test_landscape_evidence_by_hand_and_a_surrogate_that_tracks_the_true_reward():
    """Own-batch steps change the true return by 4(1 + 0.1a) at checkpoint 0 and −6(1 + 0.1a) at 10 (halfway:
    "later"), standard error 2; steps from 1e6 pairs by −3, SE 1."""
    rows = landscape_evidence({}, {"hopper": _surrogate(4.0, -6.0, -3.0)})
    assert _values(rows, "landscape_true_step_own", 0)["r:0"] == pytest.approx(2.0)      # 4 / 2 standard errors
    assert _values(rows, "landscape_true_step_own", 10)["r:5"] == pytest.approx(-4.5)    # −6 · 1.5 / 2
    assert _all(_values(rows, "landscape_true_step_many"), -3.0)
    assert {r["pairs"] for r in rows if r["evidence"] == "landscape_true_step_many"} == {1e6}
    out = claims.evaluate(_papers(rows), paper="CL").set_index("claim").verdict
    assert out["surrogate-aligned-early"] == "holds" and out["surrogate-misleads-later"] == "holds"
    assert out["ppo-step-lowers-true-reward-with-many-samples"] == "holds"
    tracks = claims.evaluate(_papers(landscape_evidence({}, {"hopper": _surrogate(4.0, 3.0, 2.0)})),
                             paper="CL").set_index("claim").verdict
    assert tracks["surrogate-misleads-later"] == "does not hold"
    assert tracks["ppo-step-lowers-true-reward-with-many-samples"] == "does not hold"


def test_landscape_concentration_by_hand():
    """A 2 × 2 plane on {0, 1}²: means at the largest N 1 (origin), 2 (the step's point), 3, 4; standard errors 2.236
    at the smallest N, 0.1118 at the largest. The step's point against the origin: |2 − 1| / √(2 · 2.236²) =
    0.316 standard errors at the small N (cannot be told apart, < 1); the plane at the largest N: 0.1118 over
    √(1.25 − 0.1118²) (the means' population variance less a point's own noise) = 0.1005."""
    se_small, se_large = np.sqrt(5.0), 0.1118
    returns = pd.DataFrame([{"label": "trpo", "run": "r", "agent": 0, "iteration": 10, "step_pairs": 0, "n": n,
                             "x": x, "y": y, "mean": m, "se": se_small if n == 2_000 else se_large}
                            for n in (2_000, 100_000) for (x, y, m) in ((0, 0, 1.0), (1, 0, 2.0), (0, 1, 3.0),
                                                                       (1, 1, 4.0))])
    study = types.SimpleNamespace(sizes=[2_000, 100_000], returns=returns)
    rows = landscape_evidence({"humanoid": study}, {})
    assert _values(rows, "landscape_step_z_small") == {"r:0": pytest.approx(1 / np.sqrt(10.0))}
    assert _values(rows, "landscape_noise_ratio_large") == {"r:0": pytest.approx(se_large / np.sqrt(1.25 - se_large ** 2))}
    assert {r["pairs"] for r in rows} == {2_000.0, 100_000.0} and {r["progress"] for r in rows} == {0.5}
    verdicts = claims.evaluate(_papers(rows), paper="CL")
    assert set(verdicts.verdict) == {"too few agents"}             # one agent: a count, no verdict


def _planes(step_gain: float, se_small: float, agents: int = 6):
    """Six TRPO planes on Humanoid at checkpoint 10: the step's point ``step_gain`` above the origin at 100K
    pairs, every point's standard error ``se_small`` at 2K."""
    return pd.DataFrame([{"label": "trpo", "run": "r", "agent": a, "iteration": 10, "step_pairs": 0, "n": n, "x": x,
                          "y": y, "mean": m + (step_gain if (x, y) == (1, 0) else 0.0),
                          "se": se_small if n == 2_000 else 0.1}
                         for a in range(agents) for n in (2_000, 100_000)
                         for (x, y, m) in ((0, 0, 100.0), (1, 0, 100.0), (0, 1, 90.0), (1, 1, 80.0))])


def test_a_landscape_of_known_noise_is_noisy_only_where_its_noise_hides_the_step():
    """The step gains 10 (at 100K pairs). With a 2K standard error of 20 a point, the step's difference has SE
    20√2 = 28.3: 0.35 standard errors — the small sample cannot tell the points apart, "noisy" holds; with SE 2
    (difference SE 2.83: 3.5 SEs) it is told apart and the claim fails."""
    claim = claims.by_key("landscape-noisy-at-small-n")
    for se, verdict, z in ((20.0, "holds", 10 / (20 * np.sqrt(2))), (2.0, "does not hold", 10 / (2 * np.sqrt(2)))):
        study = types.SimpleNamespace(sizes=[2_000, 100_000], returns=_planes(10.0, se))
        rows = landscape_evidence({"humanoid": study}, {})
        assert _all(_values(rows, "landscape_step_z_small"), z)
        assert claims.evaluate(_papers(rows), claims=[claim]).verdict.iloc[0] == verdict


def _trust_region(algorithm, constraint, bound, max_ratio, mean_kl, max_kl, heldout=np.nan, agents=6):
    rows = []
    for a in range(agents):
        for it in range(5):
            rows.append({"task": "humanoid", "algorithm": algorithm, "agent": a, "iteration": it,
                         "constraint": constraint, "constraint_value": bound, "max_ratio": max_ratio[it],
                         "mean_kl": mean_kl * (1 + a), "max_kl": max_kl, "heldout_mean_kl": heldout if it % 2 else np.nan,
                         "num_iterations": 5, "lr_annealing": False})
    return pd.DataFrame(rows)


def test_trust_region_evidence_by_hand_and_a_policy_inside_its_region():
    """PPO, ε = 0.2: iterations 1–4 (0 is the initial policy) with max ratios 1.1, 1.5, 1.6, 1.7 → 3/4 outside;
    its mean KL 0.01(1 + a) over TRPO's δ = 0.1 → 0.1 … 0.6, kept; TRPO: max KL 100 → log10(1000) = 3 orders;
    held-out KL 0.08 ≤ δ at every check."""
    ppo = _trust_region("ppo", "ratio", 0.2, [9.0, 1.1, 1.5, 1.6, 1.7], 0.01, 1.0)
    trpo = _trust_region("trpo", "kl", 0.1, [1.0] * 5, 0.09, 100.0, heldout=0.08)
    rows = pd.DataFrame(trust_region_evidence(pd.concat([ppo, trpo])))
    per = lambda name, label: claims.per_agent(rows[(rows.evidence == name) & (rows.label == label)  # noqa: E731
                                                    & (rows.iteration > 0)])
    assert set(per("tr_ratio_outside", "ppo")) == {0.75}
    assert per("tr_max_kl_orders", "trpo") == pytest.approx([3.0] * 6)
    assert per("tr_mean_kl_over_bound", "ppo") == pytest.approx([0.1 * (1 + a) for a in range(6)])
    assert set(per("tr_heldout_within_bound", "trpo")) == {1.0}
    out = claims.evaluate(_papers(rows), paper="CL").set_index("claim").verdict
    assert out["ppo-max-ratio-leaves-region"] == "holds" and out["max-kl-orders-above-bound"] == "holds"
    assert out["trpo-kl-holds-on-heldout"] == "holds" and out["ppo-constrains-mean-kl"] == "holds"
    inside = _trust_region("ppo", "ratio", 0.2, [1.1, 1.05, 1.1, 1.15, 1.19], 0.01, 1.0)
    out = claims.evaluate(_papers(trust_region_evidence(inside)), paper="CL").set_index("claim").verdict
    assert out["ppo-max-ratio-leaves-region"] == "does not hold"


def test_ablation_pairs_agents_that_differ_in_one_toggle_by_hand():
    """Two toggles, two seeds: score = 10 + 5·a + (1 + seed)·b + seed. a's effect is +5 in each of the 2 pairs
    of a seed; b's is 1 for seed 0 and 2 for seed 1: one unit per seed, the mean of its pairs."""
    rows = [{"seed": s, "a": a, "b": b, "score": 10 + 5 * a + (1 + s) * b + s} for s in (0, 1)
            for a in (False, True) for b in (False, True)]
    out = ablation_evidence({"hopper": pd.DataFrame(rows)}, ("a", "b"))
    assert _values(out, "ablation_a") == {"0": 5.0, "1": 5.0}
    assert _values(out, "ablation_b") == {"0": 1.0, "1": 2.0}


def test_the_best_configuration_with_a_toggle_against_the_best_without_by_hand():
    """Two toggles, two learning rates, three seeds; score = base(a, b, lr) + seed, and seed 0 alone scores +100 at
    (a, b, lr) = (on, on, 2). Bases: off/off 10, 12; off/on 20, 15; on/off 18, 11; on/on 14, 13 (lr 1, 2).
    Held out, seed 0 sees the others' means (base + 1.5): with a the best is on/off/1 (18), without off/on/1 (20):
    its own 18 − 20 = −2. Seeds 1 and 2 see seed 0's spike in the others' mean of on/on/2 (≈ 64), which becomes
    the best with a and with b; their own scores there are 13 + seed: a: 14 − 21 = −7, 15 − 22 = −7; b against
    on/off/1: 14 − 19 = −5, 15 − 20 = −5; seed 0's b: 20 − 18 = 2. (The average effect of a at each combination's
    best LR would read 0: +6 without b, −6 with it.) One seed gives no row: nothing chooses its configuration."""
    base = {(False, False, 1): 10, (False, False, 2): 12, (False, True, 1): 20, (False, True, 2): 15,
            (True, False, 1): 18, (True, False, 2): 11, (True, True, 1): 14, (True, True, 2): 13}
    rows = [{"seed": s, "a": a, "b": b, "lr_policy": lr, "score": v + s + (100 if (s, a, b, lr) == (0, True, True, 2)
                                                                           else 0)}
            for s in (0, 1, 2) for (a, b, lr), v in base.items()]
    out = best_evidence({"humanoid": pd.DataFrame(rows)}, ("a", "b"))
    assert _values(out, "ablation_best_a") == {"0": -2.0, "1": -7.0, "2": -7.0}
    assert _values(out, "ablation_best_b") == {"0": 2.0, "1": -5.0, "2": -5.0}
    assert best_evidence({"humanoid": pd.DataFrame([r for r in rows if r["seed"] == 1])}, ("a", "b")) == []


def test_scores_and_theorem_evidence_by_hand():
    scores = pd.DataFrame({"task": "hopper", "algorithm": ["ppo", "ppo", "ppo-noclip"], "agent": [0, 1, 2],
                           "score": [2000.0, 3000.0, 2750.0]})
    rows = score_evidence(scores)
    assert _values(rows, "im_score_relative") == {"0": 0.8, "1": 1.2, "2": 1.1}
    trace = pd.DataFrame({"optimizer": ["sgd", "sgd", "adam", "adam"], "step": [0, 9, 0, 9],
                          "max_ratio": [1.0, 1.1, 1.0, 5.0]})
    rows = theorem_evidence({"tasks": ["hopper"], "first_step_relative_difference": 3e-7, "clip_eps": 0.2},
                                     trace)
    assert _values(rows, "theorem_first_step") == {"batch": 3e-7}
    assert _values(rows, "theorem_max_ratio_excess") == {"sgd": pytest.approx(-0.1), "adam": pytest.approx(3.8)}
    out = claims.evaluate(_papers(rows), paper="IM").set_index("claim").verdict
    assert out["theorem-first-step-unclipped"] == "holds" and out["theorem-ratios-leave-clip"] == "does not hold"
