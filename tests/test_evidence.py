"""The claims' evidence extracted from constructed study tables, against answers worked out by hand; and the
constructed cases where a claim must fail (concentrated gradients, a perfect value function, a surrogate that
tracks the true reward, a policy inside its trust region) taken through extraction and the claim together."""

import types

import numpy as np
import pandas as pd
import pytest

from pg_diag.experiments import claims, evidence

BATCH = 1000


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
    subjects = pd.DataFrame({"agent": list(agents), "true_ratio": true_ratio})
    return types.SimpleNamespace(batch_size=BATCH, pairs=pd.DataFrame(pairs), estimates=pd.DataFrame(ests),
                                 subjects=subjects)


def _values(rows, name):
    return {r["agent"]: r["value"] for r in rows if r["evidence"] == name}


def _all(values: dict, expected: float) -> bool:
    return len(values) > 0 and all(v == pytest.approx(expected) for v in values.values())


def test_gradient_evidence_by_hand():
    """Agent a's cosines are the table's plus 0.01·a. At the batch size after checkpoint 0: 0.2 + 0.01a;
    change 0.2 − 0.6 = −0.4; to the true gradient 0.3 + 0.01a at the batch, 0.9 + 0.01a at the largest N; the
    cosine to the truth reaches 0.5 between N = 1,000 (0.3 + 0.01a) and 4,000 (0.5 + 0.01a), log-linearly at
    N = 1000 · 4^(1 − 0.05a) → 4^(1 − 0.05a) × the batch (4× for agent 0)."""
    study = _gradient_study({0: {100: 0.3, 1000: 0.6, 10000: 0.9}, 10: {100: 0.1, 1000: 0.2, 10000: 0.5}},
                            {0: {100: 0.2, 1000: 0.4, 4000: 0.7, 10000: 0.9},
                             10: {100: 0.1, 1000: 0.3, 4000: 0.5, 10000: 0.9}})
    rows = evidence.gradient_evidence({"hopper": study})
    at_b = _values(rows, "grad_pairwise_at_batch")
    assert at_b == {f"runs/ppo:{a}": pytest.approx(0.2 + 0.01 * a) for a in range(6)}
    assert _all(_values(rows, "grad_pairwise_change"), -0.4)
    assert _values(rows, "grad_true_at_batch")["runs/ppo:0"] == pytest.approx(0.3)
    assert _values(rows, "grad_true_at_largest")["runs/ppo:2"] == pytest.approx(0.92)
    assert _values(rows, "grad_true_samples_ratio") == {f"runs/ppo:{a}": pytest.approx(4 ** (1 - 0.05 * a))
                                                        for a in range(6)}
    verdicts = claims.evaluate(pd.DataFrame(rows), paper="CL").set_index("claim").verdict
    assert verdicts["gradients-poorly-concentrated"] == "holds" and verdicts["gradients-worsen-over-training"] == "holds"
    # the six ratios 4^(1 − 0.05a) run from 2.83 to 4: the median's interval at 6 agents, [min, max], straddles
    # the rule's 3×
    assert verdicts["gradients-need-several-fold-samples"] == "inconclusive"


def test_a_truth_from_too_few_pairs_gives_no_evidence_against_it_and_says_so():
    study = _gradient_study({0: {1000: 0.5}, 10: {1000: 0.2}}, {0: {1000: 0.4}, 10: {1000: 0.3}}, true_ratio=4.0)
    notes = []
    rows = evidence.gradient_evidence({"hopper": study}, notes)
    assert not any(r["evidence"].startswith("grad_true") for r in rows) and _values(rows, "grad_pairwise_at_batch")
    assert len(notes) == 1 and "4× the largest N (fewer than 10×" in notes[0]


def test_concentrated_gradients_fail_the_concentration_claims():
    study = _gradient_study({0: {100: 0.9, 1000: 0.9, 10000: 0.95}, 10: {100: 0.85, 1000: 0.9, 10000: 0.95}},
                            {0: {100: 0.9, 1000: 0.9, 10000: 0.9}, 10: {100: 0.9, 1000: 0.9, 10000: 0.9}})
    verdicts = claims.evaluate(pd.DataFrame(evidence.gradient_evidence({"hopper": study})), paper="CL")
    verdicts = verdicts.set_index("claim").verdict
    for key in ("gradients-poorly-concentrated", "gradients-far-from-true", "gradients-need-several-fold-samples",
                "gradients-virtually-uncorrelated"):
        assert verdicts[key] == "does not hold", key


def test_crossing_ratio_by_hand():
    # 0.5 lies halfway from 0.4 (N = 1000) to 0.6 (N = 4000): log-linearly, N = 1000 · 4^0.5 = 2000
    assert evidence.crossing_ratio([4000, 1000, 100], [0.6, 0.4, 0.1], 0.5, 1000) == pytest.approx(2.0)
    assert evidence.crossing_ratio([100, 1000], [0.1, 0.2], 0.5, 1000) == np.inf
    assert evidence.crossing_ratio([100, 1000], [0.7, 0.8], 0.5, 1000) == 0.1


def test_value_evidence_reads_the_second_half_by_hand():
    """Iterations 0–9, second half 5–9 (≥ 9/2): held-out GAE MRE 0.1 there, held-out returns MRE 0.5, training
    returns MRE 0.2 → generalization gap 0.3; the first half (0.9 everywhere) is not read, NaNs skipped."""
    it = np.arange(10)
    late = it >= 5
    m = pd.DataFrame({"task": "hopper", "algorithm": "ppo", "agent": 0, "iteration": it,
                      "heldout_value_mre_gae": np.where(late, 0.1, 0.9),
                      "heldout_value_mre_returns": np.where(late, np.where(it == 7, np.nan, 0.5), 0.9),
                      "value_mre_returns": np.where(late, 0.2, 0.9),
                      "heldout_value_mre_returns_truncated": np.where(late, 0.6, 0.1)})
    rows = evidence.value_evidence(m)
    assert _values(rows, "value_heldout_gae_mre") == {"0": pytest.approx(0.1)}
    assert _values(rows, "value_heldout_returns_mre") == {"0": pytest.approx(0.5)}
    assert _values(rows, "value_returns_generalization") == {"0": pytest.approx(0.3)}
    assert _values(rows, "value_heldout_truncated_mre") == {"0": pytest.approx(0.6)}


def _baseline_study(agent_mse, fitted_mse, better, agents=range(6)):
    pairs, fits = [], []
    for a in agents:
        for n in (BATCH, 4 * BATCH):
            for base, c in (("value", 0.3), ("zero", 0.1), ("fitted", 0.5)):
                pairs += [{"run": "r", "label": "ppo", "agent": a, "iteration": 5, "n": n, "baseline": base, "i": i,
                           "j": j, "cosine": c + (0.1 if n > BATCH else 0.0)} for i, j in ((0, 1), (0, 2), (1, 2))]
        fits.append({"run": "r", "label": "ppo", "agent": a, "iteration": 5, "agent_mse": agent_mse,
                     "fitted_mse": fitted_mse, "fitted_better": better[a]})
    return types.SimpleNamespace(batch_size=BATCH, pairs=pd.DataFrame(pairs), fits=pd.DataFrame(fits))


def test_baseline_evidence_by_hand_and_gated_on_v_star():
    """value − zero at the largest N: 0.4 − 0.2 = 0.2; fitted − value at the batch: 0.2, only for the agents
    whose V* was shown better (0, 2, 4); excess error 2.0/1.6 − 1 = 0.25."""
    rows = evidence.baseline_evidence({"hopper": _baseline_study(2.0, 1.6, [True, False] * 3)})
    assert _all(_values(rows, "baseline_value_vs_zero"), 0.2)
    assert sorted(_values(rows, "baseline_fitted_vs_value")) == ["r:0", "r:2", "r:4"]
    assert _all(_values(rows, "baseline_fitted_vs_value"), 0.2)
    assert _all(_values(rows, "value_excess_error"), 0.25)
    out = claims.evaluate(pd.DataFrame(rows), paper="CL").set_index("claim")
    assert out.loc["true-value-baseline-helps-more", "verdict"] == "too few agents"   # 3 gated agents
    assert out.loc["value-not-the-true-value", "verdict"] == "holds"


def test_a_perfect_value_function_fails_not_the_true_value():
    """The agent's network at the noise floor: its held-out MSE below V*'s (V* is itself an estimate)."""
    rows = evidence.baseline_evidence({"hopper": _baseline_study(1.0, 1.05, [False] * 6)})
    out = claims.evaluate(pd.DataFrame(rows), paper="CL").set_index("claim")
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
    rows = evidence.landscape_evidence({}, {"hopper": _surrogate(4.0, -6.0, -3.0)})
    assert _values(rows, "landscape_true_step_first")["r:0"] == pytest.approx(2.0)      # 4 / 2 standard errors
    assert _values(rows, "landscape_true_step_last")["r:5"] == pytest.approx(-4.5)      # −6 · 1.5 / 2
    assert _all(_values(rows, "landscape_true_step_large"), -3.0)
    out = claims.evaluate(pd.DataFrame(rows), paper="CL").set_index("claim").verdict
    assert out["surrogate-misleads-later"] == "holds" and out["ppo-step-lowers-true-reward-with-many-samples"] == "holds"
    tracks = claims.evaluate(pd.DataFrame(evidence.landscape_evidence({}, {"hopper": _surrogate(4.0, 3.0, 2.0)})),
                             paper="CL").set_index("claim").verdict
    assert tracks["surrogate-misleads-later"] == "does not hold"
    assert tracks["ppo-step-lowers-true-reward-with-many-samples"] == "does not hold"


def test_landscape_noise_ratio_by_hand():
    """Four points: means at the largest N 1, 2, 3, 4 (population SD √1.25); standard errors at the smallest N
    all 2.236 → ratio 2; at the largest 0.1118 → 0.1."""
    sd = np.sqrt(1.25)
    returns = pd.DataFrame([{"label": "ppo", "run": "r", "agent": 0, "iteration": 5, "step_pairs": 0, "n": n,
                             "mean": m, "se": 2 * sd if n == 100 else 0.1 * sd}
                            for n in (100, 10_000) for m in (1.0, 2.0, 3.0, 4.0)])
    rows = evidence.landscape_evidence({"hopper": types.SimpleNamespace(sizes=[100, 10_000], returns=returns)}, {})
    assert _values(rows, "landscape_noise_ratio") == {"r:0": pytest.approx(2.0)}
    assert _values(rows, "landscape_noise_ratio_large") == {"r:0": pytest.approx(0.1)}


def _trust_region(algorithm, constraint, bound, max_ratio, mean_kl, max_kl, heldout=np.nan, agents=6):
    rows = []
    for a in range(agents):
        for it in range(5):
            rows.append({"task": "hopper", "algorithm": algorithm, "agent": a, "iteration": it, "constraint": constraint,
                         "constraint_value": bound, "max_ratio": max_ratio[it], "mean_kl": mean_kl * (1 + a),
                         "max_kl": max_kl, "heldout_mean_kl": heldout if it % 2 else np.nan})
    return pd.DataFrame(rows)


def test_trust_region_evidence_by_hand_and_a_policy_inside_its_region():
    """PPO, ε = 0.2: iterations 1–4 (0 is skipped) with max ratios 1.1, 1.5, 1.6, 1.7 → 3/4 outside; TRPO δ = 0.01:
    max KL 10 → log10(1000) = 3 orders; held-out KL 0.012 → 1.2 δ."""
    ppo = _trust_region("ppo", "ratio", 0.2, [9.0, 1.1, 1.5, 1.6, 1.7], 0.01, 1.0)
    trpo = _trust_region("trpo", "kl", 0.01, [1.0] * 5, 0.009, 10.0, heldout=0.012)
    rows = evidence.trust_region_evidence(pd.concat([ppo, trpo]))
    assert set(_values([r for r in rows if r["label"] == "ppo"], "tr_ratio_outside").values()) == {0.75}
    assert _all(_values(rows, "tr_max_kl_orders"), 3.0)
    assert _all(_values(rows, "tr_heldout_kl_over_bound"), 1.2)
    out = claims.evaluate(pd.DataFrame(rows), paper="CL").set_index("claim").verdict
    assert out["ppo-max-ratio-leaves-region"] == "holds" and out["max-kl-orders-above-bound"] == "holds"
    assert out["trpo-kl-holds-on-heldout"] == "holds"
    inside = _trust_region("ppo", "ratio", 0.2, [1.1, 1.05, 1.1, 1.15, 1.19], 0.01, 1.0)
    out = claims.evaluate(pd.DataFrame(evidence.trust_region_evidence(inside)), paper="CL").set_index("claim").verdict
    assert out["ppo-max-ratio-leaves-region"] == "does not hold"


def test_ablation_pairs_agents_that_differ_in_one_toggle_by_hand():
    """Two toggles, two seeds: score = 10 + 5·a + (1 + seed)·b + seed. a's effect is +5 in each of the 2 pairs
    of a seed; b's is 1 for seed 0 and 2 for seed 1: one unit per seed, the mean of its pairs."""
    rows = [{"seed": s, "a": a, "b": b, "score": 10 + 5 * a + (1 + s) * b + s} for s in (0, 1)
            for a in (False, True) for b in (False, True)]
    out = evidence.ablation_evidence({"hopper": pd.DataFrame(rows)}, ("a", "b"))
    assert _values(out, "ablation_a") == {"0": 5.0, "1": 5.0}
    assert _values(out, "ablation_b") == {"0": 1.0, "1": 2.0}


def test_scores_and_theorem_evidence_by_hand():
    scores = pd.DataFrame({"task": "hopper", "algorithm": ["ppo", "ppo", "ppo-noclip"], "agent": [0, 1, 2],
                           "score": [2000.0, 3000.0, 2750.0]})
    rows = evidence.score_evidence(scores)
    assert _values(rows, "im_score_relative") == {"0": 0.8, "1": 1.2, "2": 1.1}
    trace = pd.DataFrame({"optimizer": ["sgd", "sgd", "adam", "adam"], "step": [0, 9, 0, 9],
                          "max_ratio": [1.0, 1.1, 1.0, 5.0]})
    rows = evidence.theorem_evidence({"tasks": ["hopper"], "first_step_relative_difference": 3e-7, "clip_eps": 0.2},
                                     trace)
    assert _values(rows, "theorem_first_step") == {"batch": 3e-7}
    assert _values(rows, "theorem_max_ratio_excess") == {"sgd": pytest.approx(-0.1), "adam": pytest.approx(3.8)}
    out = claims.evaluate(pd.DataFrame(rows), paper="IM").set_index("claim").verdict
    assert out["theorem-first-step-unclipped"] == "holds" and out["theorem-ratios-leave-clip"] == "does not hold"
