"""The claims' rules on constructed evidence whose verdict is known by hand: every claim must hold where its
evidence lies on the paper's side, must fail where it lies on the other side, and gives no verdict below five
agents. Order statistics: with every agent's value on one side of a threshold, the median's interval (between
the smallest and the largest value) lies on that side too, whatever the interval's ranks."""

import numpy as np
import pandas as pd
import pytest

from pg_diag.experiments import claims

SIX = 6


def _ev(name, values, task="hopper", label="ppo", agents=None):
    agents = agents if agents is not None else [str(i) for i in range(len(values))]
    return pd.DataFrame({"evidence": name, "task": task, "label": label, "agent": agents, "value": values})


def _side_values(claim, on_side: bool, n: int = SIX):
    """n distinct values wholly on the paper's side (or wholly on the other side) of the claim's rule."""
    spread = np.linspace(0.0, 1.0, n)
    if claim.test == "within":
        lo, hi = claim.threshold
        return list(lo + (hi - lo) * (0.25 + 0.5 * spread)) if on_side else list(hi + (hi - lo) * (0.5 + spread))
    t, sign = claim.threshold, (1 if claim.test == ">" else -1)
    step = max(abs(t), 1.0)
    return list(t + sign * (1 if on_side else -1) * step * (0.5 + spread))


def _constructed(claim, on_side: bool, n: int = SIX):
    """Evidence for ``claim`` whose answer is ``on_side``."""
    labels = claim.labels or ("ppo",)
    tasks = claim.tasks or ("hopper",)
    if claim.kind in ("agents", "exact"):
        return pd.concat([_ev(claim.evidence, _side_values(claim, on_side, n), task=tasks[0], label=lab)
                          for lab in labels])
    if claim.kind == "groups":
        diff = _side_values(claim, on_side, 1)[0]
        base = np.linspace(1.0, 1.1, n)
        if claim.versus == "tasks":
            return pd.concat([_ev(claim.evidence, base + diff, task="humanoid"), _ev(claim.evidence, base)])
        return pd.concat([_ev(claim.evidence, base + diff, label=labels[0]), _ev(claim.evidence, base,
                                                                                 label=claim.versus)])
    if claim.kind == "min-difference":
        diff = 0.0 if on_side else -1.0
        # every difference (a − b) equals +1000 on the paper's side; one of them −1000 otherwise
        means = {"ppo": 3000.0, "trpo": 2000.0, "trpo+": 3000.0, "ppo-m": 2000.0 + 2000.0 * (not on_side) + diff}
        return pd.concat([_ev(claim.evidence, list(m + np.linspace(-10, 10, n)), label=lab)
                          for lab, m in means.items()])
    raise AssertionError(claim.kind)


@pytest.mark.parametrize("claim", claims.CLAIMS, ids=lambda c: c.key)
def test_every_claim_holds_on_its_side_and_fails_on_the_other(claim):
    held = claims.evaluate(_constructed(claim, True), claims=[claim])
    failed = claims.evaluate(_constructed(claim, False), claims=[claim])
    assert len(held) and (held.verdict == "holds").all(), held.to_string()
    assert len(failed) and (failed.verdict == "does not hold").all(), failed.to_string()


@pytest.mark.parametrize("claim", [c for c in claims.CLAIMS if c.kind != "exact"], ids=lambda c: c.key)
def test_below_five_agents_there_is_no_verdict_only_a_count(claim):
    out = claims.evaluate(_constructed(claim, True, n=4), claims=[claim])
    assert len(out) and (out.verdict == "too few agents").all()
    if claim.kind == "agents":
        assert (out.agree == "4 of 4").all()


def test_the_median_agent_and_its_interval_by_hand():
    """Six agents at 0.10 … 0.35 (below 0.5: "poorly concentrated"): median 0.225, the 95% order-statistic
    interval [min, max] = [0.10, 0.35] with coverage 1 − 2/64; one agent measured at two checkpoints is one unit
    (its mean)."""
    ev = pd.concat([_ev("grad_pairwise_at_batch", [0.10, 0.15, 0.20, 0.25, 0.30]),
                    _ev("grad_pairwise_at_batch", [0.30, 0.40], agents=["5", "5"])])
    row = claims.evaluate(ev, claims=[claims.by_key("gradients-poorly-concentrated")]).iloc[0]
    assert row.agents == 6 and row.agree == "6 of 6" and row.verdict == "holds"
    assert row.value == pytest.approx(0.225) and (row.low, row.high) == (pytest.approx(0.10), pytest.approx(0.35))
    assert row.coverage == pytest.approx(1 - 2 / 64)


def test_a_straddling_interval_is_inconclusive_and_mixed_agents_are_counted():
    ev = _ev("grad_pairwise_at_batch", [0.1, 0.2, 0.3, 0.6, 0.7, 0.8])
    row = claims.evaluate(ev, claims=[claims.by_key("gradients-poorly-concentrated")]).iloc[0]
    assert row.verdict == "inconclusive" and row.agree == "3 of 6"


def test_a_level_is_tested_not_only_a_sign():
    """"Off by about 50%": held-out returns MREs of 0.05 (a near-perfect value network) fail the band
    [0.25, 0.75]; 0.45–0.55 hold."""
    claim = claims.by_key("value-off-by-about-half")
    near_perfect = claims.evaluate(_ev(claim.evidence, [0.03, 0.04, 0.05, 0.05, 0.06, 0.07]), claims=[claim])
    about_half = claims.evaluate(_ev(claim.evidence, [0.45, 0.47, 0.5, 0.5, 0.52, 0.55]), claims=[claim])
    assert near_perfect.verdict.iloc[0] == "does not hold" and about_half.verdict.iloc[0] == "holds"
    several = claims.by_key("gradients-need-several-fold-samples")
    out = claims.evaluate(_ev(several.evidence, [1.5, 2.0, 2.0, 2.5, 1.0, 2.0]), claims=[several])
    assert out.verdict.iloc[0] == "does not hold"          # 2× the batch is not "several-fold"
    out = claims.evaluate(_ev(several.evidence, [4.0, 8.0, np.inf, np.inf, 16.0, 8.0]), claims=[several])
    assert out.verdict.iloc[0] == "holds"                  # never reached within the grid counts as more
    # one censored checkpoint of three does not make an agent censored: five agents at (1.05, 1.05, ∞) are at
    # 1.05 (their median), not ∞ — the claim of more than 3× does not hold; at (4, ∞, ∞) each is ∞
    rows = [(a, v) for a in range(5) for v in (1.05, 1.05, np.inf)]
    mostly_fine = _ev(several.evidence, [v for _, v in rows], agents=[str(a) for a, _ in rows])
    assert claims.evaluate(mostly_fine, claims=[several]).verdict.iloc[0] == "does not hold"
    rows = [(a, v) for a in range(5) for v in (4.0, np.inf, np.inf)]
    mostly_censored = _ev(several.evidence, [v for _, v in rows], agents=[str(a) for a, _ in rows])
    row = claims.evaluate(mostly_censored, claims=[several]).iloc[0]
    assert row.verdict == "holds" and row.value == np.inf


def test_the_harder_task_claim_compares_the_hardest_and_easiest_measured_tasks():
    claim = claims.by_key("gradients-harder-on-harder-tasks")
    ev = pd.concat([_ev(claim.evidence, list(np.linspace(0.1, 0.15, 6)), task="humanoid"),
                    _ev(claim.evidence, list(np.linspace(0.3, 0.35, 6)), task="walker2d"),
                    _ev(claim.evidence, list(np.linspace(0.5, 0.55, 6)), task="hopper")])
    row = claims.evaluate(ev, claims=[claim]).iloc[0]
    assert row.task == "humanoid − hopper" and row.value == pytest.approx(-0.4) and row.verdict == "holds"
    assert claims.evaluate(_ev(claim.evidence, [0.1] * 6, task="lqr"), claims=[claim]).empty   # not ranked


def test_claims_quote_the_papers_and_are_filtered_by_paper():
    assert len({c.key for c in claims.CLAIMS}) == len(claims.CLAIMS)
    for c in claims.CLAIMS:
        assert c.kind in claims.KINDS and c.test in ("<", ">", "within") and c.quote and c.reason
        assert set(c.paper.split()) <= {"CL", "IM"} and c.where
    ev = pd.concat([_ev("grad_pairwise_at_batch", [0.1] * 6), _ev("tr_ratio_outside", [0.9] * 6)])
    assert set(claims.evaluate(ev, paper="IM").claim) == {"ppo-max-ratio-leaves-region"}
    assert "gradients-poorly-concentrated" in set(claims.evaluate(ev, paper="CL").claim)
    with pytest.raises(KeyError, match="unknown claim 'nope'"):
        claims.by_key("nope")


def test_a_group_counts_the_agents_its_interval_reads_and_an_unmeasured_exact_check_is_inconclusive():
    """Welch's interval reads finite agents only: five PPO-NoClip agents with one at +∞ are four, below the
    five a verdict needs. A deterministic check with a value not measured (NaN) is neither side."""
    claim = claims.by_key("noclip-beats-ppo-m")
    ev = pd.concat([_ev(claim.evidence, [10.0, 11.0, 12.0, 13.0, np.inf], label="ppo-noclip"),
                    _ev(claim.evidence, [1.0, 2.0, 3.0, 4.0, 5.0], label="ppo-m", agents=list("abcde"))])
    row = claims.evaluate(ev, claims=[claim]).iloc[0]
    assert row.agree == "4 vs 5 agents" and row.verdict == "too few agents"
    exact = claims.by_key("theorem-first-step-unclipped")
    row = claims.evaluate(_ev(exact.evidence, [np.nan], agents=["batch"]), claims=[exact]).iloc[0]
    assert row.verdict == "inconclusive"
