"""The graphical multiple-test procedure: Holm as a graph, gatekept stronger levels, and the family-wise error the
findings' outcomes are held to (worked out in closed form, checked by simulation)."""

import numpy as np
import pandas as pd
import pytest

from pgdiag import multiplicity, stats
from pgdiag.experiments import claims, findings


def test_holm_as_a_graph_equals_holm_step_down():
    rng = np.random.default_rng(0)
    for m in (1, 2, 3, 6):
        for _ in range(100):
            p = rng.uniform(0, 0.3, m)
            w, g = multiplicity.holm_graph(m)
            assert np.allclose(multiplicity.graph_adjusted(p, w, g), stats.holm(p)[0])


def test_a_gatekept_level_by_hand():
    """Finding 1 (p 0.01) with one level (p 0.02), finding 2 (p 0.03), α shares ½, 0, ½. Finding 1 falls first at
    0.01/½ = 0.02; its share goes to its level: 0.02/½ = 0.04 against finding 2's 0.03/½ = 0.06, so the level
    falls at 0.04 and passes its ½ on: finding 2 holds all of α, 0.03 — adjusted max(0.04, 0.03) = 0.04."""
    w, g, order = multiplicity.gatekept_holm([2, 1])
    assert order == [(0, 0), (0, 1), (1, 0)]
    assert np.allclose(w, [0.5, 0.0, 0.5])
    assert np.allclose(multiplicity.graph_adjusted([0.01, 0.02, 0.03], w, g), [0.02, 0.04, 0.04])


def test_a_level_is_never_reached_before_its_finding():
    w, g, _ = multiplicity.gatekept_holm([3])
    adjusted = multiplicity.graph_adjusted([0.2, 0.001, 0.001], w, g)
    assert (adjusted >= 0.2).all()


def _errors(p_level, p_null, gatekept: bool, alpha=0.05) -> np.ndarray:
    """Any false rejection when finding 1 is true (p = 0), its stronger level sits at the boundary of its null
    (p_level uniform) and finding 2 is null (p_null uniform)."""
    out = []
    for pl, pn in zip(p_level, p_null):
        if gatekept:
            w, g, _ = multiplicity.gatekept_holm([2, 1])
            adj = multiplicity.graph_adjusted([0.0, pl, pn], w, g)
            out.append(adj[1] <= alpha or adj[2] <= alpha)
        else:   # the rule it replaces: the level at the finding's Holm multiplier (here 2), the findings by Holm
            holm, _ = stats.holm([0.0, pn], alpha)
            out.append(2 * pl <= alpha or holm[1] <= alpha)
    return np.array(out)


def test_gatekept_levels_keep_the_family_wise_error():
    """Closed form: gatekept, the level and the null finding each hold α/2 and pass it on when rejected, so an
    error happens iff one p ≤ α/2: 1 − (1 − α/2)² = 0.0494 ≤ α. The replaced rule (the level at its finding's
    Holm multiplier, after Holm passed α on) errs with 1 − (1 − α/2)(1 − α) = 0.0738. Simulated with 20,000
    draws (SD 0.0015–0.0018): asserted within 4 SD of each closed form — false failure < 1e-4."""
    rng = np.random.default_rng(7)
    pl, pn = rng.uniform(size=(2, 20_000))
    new, old = _errors(pl, pn, True).mean(), _errors(pl, pn, False).mean()
    assert abs(new - (1 - 0.975 ** 2)) < 4 * 0.0016 and 1 - 0.975 ** 2 <= 0.05
    assert abs(old - (1 - 0.975 * 0.95)) < 4 * 0.0019


def _ev(evidence, values, task="hopper", label="ppo"):
    return pd.DataFrame({"evidence": evidence, "task": task, "label": label, "agent": [f"a{i}" for i in
                                                                                           range(len(values))],
                         "value": values, "iteration": 10, "progress": 0.5, "lr_share": 1.0, "pairs": np.nan,
                         "run_iterations": 488, "model": "gym"})


def test_a_test_with_too_few_agents_keeps_its_finding_from_being_reproduced():
    """PPO's 8 agents all on the side, TRPO's 3 too: the intersection–union test cannot pass TRPO's test, which has
    no p-value; the finding is inconclusive and names it."""
    ev = pd.concat([_ev("grad_pairwise_at_batch", list(np.linspace(0.01, 0.1, 8))),
                    _ev("grad_pairwise_at_batch", [0.02, 0.03, 0.04], label="trpo")])
    out = findings.findings(claims.evaluate(ev, paper="CL"), "CL")
    row = out[out.claim == "gradients-poorly-concentrated"].iloc[0]
    assert row.outcome == "inconclusive" and row.p_for == 1.0 and "hopper trpo" in row.why


@pytest.mark.parametrize("kind, m, n", [("agents", 1, 5), ("agents", 2, 6), ("agents", 7, 8), ("agents", 8, 8),
                                        ("groups", 1, 3), ("groups", 2, 4), ("groups", 12, 5), ("groups", 13, 6)])
def test_agents_a_family_needs_per_test_kind(kind, m, n):
    """2^−n ≤ 0.05/m for the sign test; 1/C(2n, n) ≤ 0.05/m for two groups (C(6, 3) = 20, C(8, 4) = 70, C(10, 5) = 252: 5 v 5
    passes up to m = 12, since 12/252 = 0.048)."""
    assert findings.agents_for(m, kind=kind) == n
