"""What an inconclusive finding could have seen: the sign test's power in closed form (checked against scipy's
binomial and a simulation), and the page's sentence for one and for two groups."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from pgdiag import stats
from pgdiag.experiments import claims, findings


def test_the_sign_tests_power_by_hand():
    """7 agents at α = 0.0125 (Holm's first step over 4 findings): 6 of 7 gives p = 8/128 = 0.0625, so all 7 must
    agree (1/128); the power is q⁷, 0.8 at q = 0.8^(1/7) = 0.9686."""
    assert stats.sign_test_power(7, 0.9, 0.0125) == pytest.approx(0.9 ** 7)
    assert stats.sign_test_detectable(7, 0.0125) == pytest.approx(0.8 ** (1 / 7), abs=1e-9)
    assert np.isnan(stats.sign_test_detectable(5, 0.0125))       # 1/32 > 0.0125: not even unanimity passes


@pytest.mark.parametrize("n, q, alpha", [(16, 0.9, 0.0125), (8, 0.8, 0.05), (13, 0.85, 0.01)])
def test_the_sign_tests_power_equals_the_binomial_tail_and_a_simulation(n, q, alpha):
    """Second method: the critical count from scipy's binomial survival function; third: 40,000 simulated
    samples of agents (SD of the estimate ≤ 0.0025; asserted within 0.012: false failure < 1e-6)."""
    s_star = next(s for s in range(n + 1) if sps.binom.sf(s - 1, n, 0.5) <= alpha)
    exact = sps.binom.sf(s_star - 1, n, q)
    assert stats.sign_test_power(n, q, alpha) == pytest.approx(exact, rel=1e-9)
    rng = np.random.default_rng(3)
    values = np.where(rng.uniform(size=(40_000, n)) < q, 1.0, -1.0)
    simulated = np.mean([stats.sign_test_p(v, 0.0, ">") <= alpha for v in values[:4000]])
    assert abs(simulated - exact) < 0.03    # 4,000 draws: SD ≤ 0.008, 0.03 is > 3.7 SD
    assert abs(np.mean((values > 0).sum(axis=1) >= s_star) - exact) < 0.012


def _ev(name, a, b, labels):
    rows = [pd.DataFrame({"evidence": name, "task": "humanoid", "label": lab, "agent": [f"{lab}{i}" for i in
                                                                                        range(len(v))],
                          "value": v, "iteration": 100, "progress": 0.5, "lr_share": 1.0, "pairs": np.nan,
                          "run_iterations": 488, "model": "gym"}) for lab, v in zip(labels, (a, b))]
    return pd.concat(rows)


def test_an_inconclusive_comparison_says_what_its_agents_could_detect():
    """PPO-M's log mean KL 0.3 above PPO's, the claim's threshold (log10 2): inconclusive either way, and the page
    names the effect 7 v 7 agents detect with probability 0.8 at α/m (shift_power_effect's own figure)."""
    a, b = np.linspace(0.0, 1.0, 7) + 0.30103, np.linspace(0.0, 1.0, 7)
    out = findings.findings(claims.evaluate(_ev("tr_log_mean_kl", a, b, ("ppo-m", "ppo")), paper="CL"), "CL")
    row = out[out.claim == "ppo-m-kl-above-ppo"].iloc[0]
    m = int(((out.family == row.family) & (out.tests > 0)).sum())
    effect = stats.shift_power_effect(7, 7, 0.05 / m)
    assert row.outcome == "inconclusive"
    assert f"at 7 v 7 agents the test detects with probability 0.8 P(A > B) ≥ {effect:.2f}" in row.why


def test_a_group_finding_can_pass_without_complete_separation():
    """7 v 7 with one agent of each group inside the other's range (no complete separation): the old interval
    needed separation up to 9 v 9; the permutation test rejects (p ≈ 3/3432 + …, well under 0.05)."""
    a = np.array([2.0, 2.2, 2.4, 2.6, 2.8, 3.0, 0.9])
    b = np.array([0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 2.1])
    assert stats.median_difference_p(a, b, 0.0, ">") > 0.05
    assert stats.shift_p(a, b, 0.0, ">") < 0.01


def test_the_mean_tests_detectable_difference_by_simulation():
    """mean_power_sd is the t test's power solved for δ; the studentized permutation test, simulated on normal
    agents at that δ (600 draws: SD 0.016), detects it with probability 0.8 ± 0.07 (false failure < 1e-4)."""
    rng = np.random.default_rng(11)
    for n in (7, 16):
        delta = stats.mean_power_sd(n, n, 0.05)
        a, b = rng.normal(delta, 1.0, (600, n)), rng.normal(0.0, 1.0, (600, n))
        power = np.mean([stats.mean_difference_p(x, y, 0.0, ">") <= 0.05 for x, y in zip(a, b)])
        assert abs(power - 0.8) < 0.07, (n, delta, power)


def test_a_row_with_failed_seeds_left_out_keeps_both_group_sizes():
    rows = pd.DataFrame({"agree": ["7 vs 6 agents (1 failed seed left out)", "5 of 7"], "agents": [6, 7]})
    assert findings._sizes(rows) == [(7, 6), (7,)]


def test_the_power_note_says_how_many_agents_must_agree():
    """By hand: at α/m = 0.05/6, 8 of 8 agents give p = 1/256 = 0.0039 and 7 of 8 give 9/256 = 0.035, so all 8 must
    agree; 10 of 11 give 12/2048 = 0.0059 (9 of 10: 11/1024 = 0.011), so 11 agents let one disagree. At 0.05,
    7 of 8 (0.035) pass."""
    from pgdiag.experiments.findings import _agreeing

    assert _agreeing(8, 0.05 / 6) == "it passes only when all 8 agree; 11 agents would let one disagree"
    assert _agreeing(8, 0.05) == "it passes when 7 of 8 agree"
