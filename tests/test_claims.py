"""The claims' rules on constructed evidence whose verdict is known by hand: every claim must hold where its
evidence lies on the paper's side, must fail where it lies on the other side, gives no verdict below five agents,
and none outside where the paper made it. Order statistics: with every agent's value on one side of a threshold,
the median's interval (between the smallest and the largest value) lies on that side too, whatever its ranks.
The levels themselves are checked on gradients drawn with a known noise-to-signal energy."""

import numpy as np
import pandas as pd
import pytest

from pgdiag.studies.gradients.measure import truth_ceiling
from pgdiag.experiments import claims, findings, levels
from pgdiag.experiments.paper_claims import WINDOWS

SIX = 6
#: a point of training inside each window (iteration, progress, lr_share), and one outside it
INSIDE = {"initial": (0, 0.0, 1.0), "after-first": (61, 0.61, 0.39), "later": (61, 0.61, 0.39),
          "stepping": (61, 0.61, 0.39), "whole": (61, 0.61, 0.39)}
OUTSIDE = {"initial": (61, 0.61, 0.39), "after-first": (0, 0.0, 1.0), "later": (92, 0.92, 0.08),
           "stepping": (92, 0.92, 0.08)}


def _ev(name, values, task="hopper", label="ppo", agents=None, point=(61, 0.61, 0.39), pairs=np.nan,
        run=(488, "gym")):
    """Evidence rows; ``run``: the run's length and models (the papers' by default: 488 iterations on Gym's)."""
    agents = agents if agents is not None else [str(i) for i in range(len(values))]
    it, progress, share = point
    return pd.DataFrame({"evidence": name, "task": task, "label": label, "agent": agents, "value": values,
                         "iteration": it, "progress": progress, "lr_share": share, "pairs": pairs,
                         "run_iterations": run[0], "model": run[1]})


def _where(claim):
    """(task, point, pairs) where the paper made ``claim``."""
    lo, hi = claim.scope.pairs
    pairs = np.nan if (lo, hi) == (0, float("inf")) else 2 * lo if hi == float("inf") else (lo + hi) / 2
    return (claim.tasks or ("hopper",))[0], INSIDE[claim.scope.window], pairs


def _side_values(test, threshold, on_side: bool, n: int = SIX):
    """n distinct values wholly on the paper's side (or wholly on the other side) of a rule."""
    spread = np.linspace(0.0, 1.0, n)
    if test == "within":
        lo, hi = threshold
        return list(lo + (hi - lo) * (0.25 + 0.5 * spread)) if on_side else list(hi + (hi - lo) * (0.5 + spread))
    sign = 1 if test == ">" else -1
    step = max(abs(threshold), 1.0)
    return list(threshold + sign * (1 if on_side else -1) * step * (0.5 + spread))


def _constructed(claim, on_side: bool, n: int = SIX, where=None):
    """Evidence for ``claim`` whose answer is ``on_side``, measured where the paper made it (or at ``where``)."""
    task, point, pairs = where or _where(claim)
    labels = claim.labels or ("ppo",)
    ev = lambda values, **kw: _ev(claim.evidence, values, point=point, pairs=pairs, **{"task": task, **kw})  # noqa
    if claim.kind in ("agents", "exact"):
        rows = [ev(_side_values(claim.test, claim.threshold, on_side, n), label=lab) for lab in labels]
        if claim.floor:   # a floor well below the band
            rows += [_ev(claim.floor, [0.01 * (i + 1) for i in range(n)], task=task, label=lab, point=point)
                     for lab in labels]
        return pd.concat(rows)
    if claim.kind in ("groups", "means"):
        diff = _side_values(claim.test, claim.threshold, on_side, 1)[0]
        base = np.linspace(1.0, 1.01, n)   # the interval of two groups' medians spans both groups' spreads
        if claim.versus == "tasks":
            return pd.concat([ev(list(base + diff), task="humanoid"), ev(list(base), task="hopper")])
        return pd.concat([ev(list(base + diff), label=labels[0]), ev(list(base), label=claim.versus)])
    if claim.kind in ("min-difference", "min-mean-difference"):
        means = {"ppo": 3000.0, "trpo": 2000.0, "trpo+": 3000.0, "ppo-m": 2000.0 + 2000.0 * (not on_side)}
        return pd.concat([ev(list(m + np.linspace(-10, 10, n)), label=lab) for lab, m in means.items()])
    raise AssertionError(claim.kind)


@pytest.mark.parametrize("claim", claims.CLAIMS, ids=lambda c: c.key)
def test_every_claim_holds_on_its_side_and_fails_on_the_other(claim):
    held = claims.evaluate(_constructed(claim, True), claims=[claim])
    failed = claims.evaluate(_constructed(claim, False), claims=[claim])
    main = lambda r: r[r.level == ""]   # noqa: E731
    assert len(main(held)) and (main(held).verdict == "holds").all(), held.to_string()
    assert len(main(failed)) and (main(failed).verdict == "does not hold").all(), failed.to_string()
    assert (held.scope == "paper").all() and (failed.scope == "paper").all()


@pytest.mark.parametrize("claim", [c for c in claims.CLAIMS if c.kind != "exact"], ids=lambda c: c.key)
def test_below_five_agents_there_is_no_verdict_only_a_count(claim):
    out = claims.evaluate(_constructed(claim, True, n=4), claims=[claim])
    assert len(out) and (out.verdict == "too few agents").all()
    if claim.kind == "agents":
        assert (out.agree == "4 of 4").all()


@pytest.mark.parametrize("claim", [c for c in claims.CLAIMS if c.versus != "tasks" and (
    c.scope.tasks or c.scope.window in OUTSIDE or c.scope.pairs != (0, float("inf")))], ids=lambda c: c.key)
def test_measured_elsewhere_a_claim_is_exploratory_never_a_verdict(claim):
    """Another task (Walker2d's claims read on the LQR task), another point of training (the annealed last
    checkpoint for "later"), or other sample sizes: every row says where the paper made it, no finding counts."""
    task, point, pairs = _where(claim)
    if claim.scope.tasks:
        task = "lqr"
    elif claim.scope.window in OUTSIDE:
        point = OUTSIDE[claim.scope.window]
    else:
        pairs = claim.scope.pairs[0] / 10
    out = claims.evaluate(_constructed(claim, True, where=(task, point, pairs)), claims=[claim])
    assert len(out) and (out.verdict == claims.NOT_HERE).all() and (out.scope == "exploratory").all(), out
    assert out.why.str.len().min() > 0 and out.p_for.isna().all()


def test_the_median_agent_and_its_interval_by_hand():
    """Six agents at 0.10 … 0.35 (below 0.5: "poorly concentrated"): median 0.225, the 95% order-statistic
    interval [min, max] = [0.10, 0.35] with coverage 1 − 2/64, the sign test's p 1/64; one agent measured at two
    checkpoints is one unit (its mean)."""
    ev = pd.concat([_ev("grad_pairwise_at_batch", [0.10, 0.15, 0.20, 0.25, 0.30]),
                    _ev("grad_pairwise_at_batch", [0.30, 0.40], agents=["5", "5"])])
    out = claims.evaluate(ev, claims=[claims.by_key("gradients-poorly-concentrated")])
    row = out[out.level == ""].iloc[0]
    assert row.agents == 6 and row.agree == "6 of 6" and row.verdict == "holds"
    assert row.value == pytest.approx(0.225) and (row.low, row.high) == (pytest.approx(0.10), pytest.approx(0.35))
    assert row.coverage == pytest.approx(1 - 2 / 64) and row.p_for == pytest.approx(1 / 64)
    level = out[out.level != ""].iloc[0]          # 0.10 … 0.35 against 0.2: 2 of 6 below, inconclusive
    assert level.verdict == "inconclusive" and level.agree == "2 of 6"


def test_windows_pick_cl_points_of_training():
    """"later" is CL's iteration 300 of 488 (and the mid scale's 61 of 100), never the annealed 450 or 99;
    "stepping" keeps an unannealed TRPO's last checkpoint but not an annealed PPO's."""
    frame = pd.DataFrame({"iteration": [0, 150, 300, 450, 61, 92, 99, 92],
                          "progress": [0, 150 / 488, 300 / 488, 450 / 488, 0.61, 0.92, 0.99, 0.92],
                          "lr_share": [1, 1 - 150 / 488, 1 - 300 / 488, 1 - 450 / 488, 0.39, 0.08, 0.01, 1.0]})
    assert list(claims.in_window(frame, "later")) == [False, False, True, False, True, False, False, False]
    assert list(claims.in_window(frame, "stepping")) == [False, True, True, False, True, False, False, True]
    assert list(claims.in_window(frame, "initial")) == [True] + [False] * 7
    assert set(WINDOWS) == {"initial", "after-first", "later", "stepping", "whole"}


def _gradients(rho: float, k: int, dim: int, rng, signal: np.ndarray):
    """k estimates g + e with E|e|² = ρ|g|² (isotropic noise)."""
    return signal + rng.normal(0.0, np.sqrt(rho / dim) * np.linalg.norm(signal), size=(k, dim))


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.mark.parametrize("key, words", [("gradients-poorly-concentrated", "pairwise"),
                                        ("gradients-far-from-true", "to-gradient")])
def test_each_level_switches_at_the_noise_to_signal_ratio_it_states(key, words):
    """Gradients drawn in 20,000 dimensions with a known noise-to-signal energy ρ: the main level switches
    between ρ = 0.8 and 1.25 (it states ρ = 1), the stronger ("virtually uncorrelated") between ρ = 3.2 and 5 (it
    states 4). The pairwise cosine of 10 estimates and the cosine to a truth of ρ_T = 0.05 over its split-half
    ceiling concentrate within ±0.01 of 1/(1 + ρ) and 1/√(1 + ρ) here (SD of a cosine ≈ 1/√dim = 0.007 per pair,
    averaged over 45 or 10), so a margin of 20% in ρ (≥ 0.03 in the cosine) is never crossed by chance."""
    claim = claims.by_key(key)
    rng = np.random.default_rng(0)
    dim = 20_000
    g = rng.normal(size=dim)

    def statistic(rho):
        est = _unit(_gradients(rho, 10, dim, rng, g))
        if words == "pairwise":
            c = est @ est.T
            return float(c[np.triu_indices(10, 1)].mean())
        halves = _unit(_gradients(0.1, 2, dim, rng, g))        # two halves of a truth of ρ_T = 0.05
        truth = _unit(halves.sum(axis=0))
        ceiling = float(truth_ceiling(halves[0] @ halves[1], 2))
        return float((est @ truth).mean() / ceiling)

    for test, threshold, stated in [(claim.test, claim.threshold, levels.NOISE_EQUALS_SIGNAL)] + \
            [(lv.test, lv.threshold, levels.NOISE_FOUR_TIMES) for lv in claim.stronger]:
        below, above = statistic(stated / 1.25), statistic(stated * 1.25)
        assert not claims.agrees([below], test, threshold)[0], (below, threshold)   # less noise: concentrated
        assert claims.agrees([above], test, threshold)[0], (above, threshold)       # more noise: the claim's side


def test_the_pairwise_level_is_not_carried_over_to_the_cosine_to_the_truth():
    assert levels.pairwise_level(4.0) == pytest.approx(0.2) and levels.to_gradient_level(4.0) == pytest.approx(0.4472, abs=1e-4)
    assert claims.by_key("gradients-far-from-true").threshold == pytest.approx(2 ** -0.5)
    assert levels.noise_ratio([0.5, 0.2, 0.0]).tolist() == [1.0, pytest.approx(4.0), np.inf]


def test_a_perfect_value_function_on_noisy_returns_cannot_pass_off_by_half():
    """A value network exactly at V^π reads an MRE equal to the returns' own noise (the floor): its MRE 0.5 is in
    the band [0.25, 0.75], but its paired excess over the floor on the same states is 0 up to ±0.01, so the claim
    is inconclusive, never "holds"; with every agent's excess 0.3 above the floor it holds (the excess's sign
    test, 2^-6 = 0.016, is the larger p beside the band's); without a floor measured it says so. The floor read
    at iteration 0 (the untrained network) is outside the claim's window and does not count."""
    claim = claims.by_key("value-off-by-about-half")
    agent = _ev(claim.evidence, [0.45, 0.48, 0.5, 0.5, 0.52, 0.55])
    at_floor = claims.evaluate(pd.concat([agent, _ev(claim.floor, [-0.01, 0.005, 0.0, 0.01, -0.005, 0.002])]),
                               claims=[claim]).iloc[0]
    assert at_floor.verdict == "inconclusive" and "not shown above the noise floor" in at_floor.why
    above = _ev(claim.floor, [0.3] * 6)
    untrained = _ev(claim.floor, [-5.0] * 6, point=(0, 0.0, 1.0))
    low = claims.evaluate(pd.concat([agent, above, untrained]), claims=[claim]).iloc[0]
    assert low.verdict == "holds" and low.p_for == pytest.approx(2.0 ** -6)
    only_untrained = claims.evaluate(pd.concat([agent, untrained]), claims=[claim]).iloc[0]
    assert only_untrained.verdict == "inconclusive" and "no noise floor" in only_untrained.why
    none = claims.evaluate(agent, claims=[claim]).iloc[0]
    assert none.verdict == "inconclusive" and "no noise floor" in none.why


def test_the_largest_cosine_gap_of_a_noise_ratio_by_brute_force():
    """The gap 1/(1 + ρ) − 1/(1 + rρ) maximised over a fine grid of ρ equals (√r − 1)/(√r + 1): 1/3 at r = 4."""
    rho = np.logspace(-4, 4, 200_001)
    for r in (1.25, 2.0, 4.0):
        assert np.max(1 / (1 + rho) - 1 / (1 + r * rho)) == pytest.approx(levels.largest_gap(r), abs=1e-8)
    assert levels.largest_gap(4.0) == pytest.approx(1 / 3)


def test_marginal_at_2k_reads_the_cosine_gap_not_the_ratio():
    """On Walker2d (Fig 5's task), a value network that halves the noise energy (ratio 2) at every N: at 2K, where
    the noise is 8× the signal (ρ = 8 with the network, 16 without), the cosines 1/9 and 1/17 differ by 0.052 —
    marginal, as CL Fig 5 shows — and the claim holds; where ρ = 1/√2 the same ratio opens the largest gap,
    (√2 − 1)/(√2 + 1) = 0.172, and it does not hold."""
    claim = claims.by_key("value-baseline-marginal-at-2k")
    for rho, verdict in ((8.0, "holds"), (2 ** -0.5, "does not hold")):
        gap = 1 / (1 + rho) - 1 / (1 + 2 * rho)
        ev = _ev(claim.evidence, list(gap + np.linspace(-0.002, 0.002, 8)), pairs=2_048, task="walker2d")
        assert claims.evaluate(ev, claims=[claim]).verdict.iloc[0] == verdict, (rho, gap)


def test_ppo_m_at_1_2_times_ppos_kl_has_not_lost_the_region():
    """PPO-M's agents at 1.2× PPO's mean KL (log10 1.2 = 0.079 apart, each agent within ±0.01): the contrast's
    interval lies below log10 2, so "does not hold"; at 5× it holds."""
    claim = claims.by_key("ppo-m-kl-above-ppo")
    ppo = np.log10(0.01) + np.linspace(-0.01, 0.01, 6)
    for factor, verdict in ((1.2, "does not hold"), (5.0, "holds")):
        ev = pd.concat([_ev(claim.evidence, list(ppo + np.log10(factor)), task="humanoid", label="ppo-m"),
                        _ev(claim.evidence, list(ppo), task="humanoid", label="ppo")])
        assert claims.evaluate(ev, claims=[claim]).verdict.iloc[0] == verdict


def test_the_harder_task_claim_needs_humanoid():
    claim = claims.by_key("gradients-harder-on-harder-tasks")
    ev = pd.concat([_ev(claim.evidence, list(np.linspace(0.1, 0.15, 6)), task="humanoid"),
                    _ev(claim.evidence, list(np.linspace(0.3, 0.35, 6)), task="walker2d"),
                    _ev(claim.evidence, list(np.linspace(0.5, 0.55, 6)), task="hopper")])
    rows = claims.evaluate(ev, claims=[claim])
    assert set(rows.task) == {"humanoid − hopper", "humanoid − walker2d"} and (rows.verdict == "holds").all()
    assert rows[rows.task == "humanoid − hopper"].value.iloc[0] == pytest.approx(-0.4)
    no_humanoid = claims.evaluate(ev[ev.task != "humanoid"], claims=[claim])   # Walker2d against Hopper: never
    assert (no_humanoid.verdict == claims.NOT_HERE).all()


def test_groups_keep_failed_agents_and_an_unmeasured_exact_check_is_inconclusive():
    """A failed agent (−inf) keeps its rank: five PPO-M agents with one failed are still five, and their
    median stays above PPO's. (IM's NoClip claims now read means: tests/test_im_means.py.) A deterministic check
    with a value not measured (NaN) is neither side."""
    claim = claims.by_key("ppo-m-kl-above-ppo")
    ev = pd.concat([_ev(claim.evidence, [10.0, 11.0, 12.0, 13.0, -np.inf], task="humanoid", label="ppo-m"),
                    _ev(claim.evidence, [1.0, 2.0, 3.0, 4.0, 5.0], task="humanoid", label="ppo",
                        agents=list("abcde"))])
    row = claims.evaluate(ev, claims=[claim]).iloc[0]
    assert row.agree == "5 vs 5 agents" and row.value == pytest.approx(11.0 - 3.0)
    exact = claims.by_key("theorem-first-step-unclipped")
    row = claims.evaluate(_ev(exact.evidence, [np.nan], agents=["batch"]), claims=[exact]).iloc[0]
    assert row.verdict == "inconclusive"


def test_claims_quote_the_papers_and_are_filtered_by_paper():
    assert len({c.key for c in claims.CLAIMS}) == len(claims.CLAIMS)
    for c in claims.CLAIMS:
        assert c.kind in claims.KINDS and c.test in ("<", ">", "within") and c.quote and c.reason
        assert set(c.paper.split()) <= {"CL", "IM"} and c.where and c.family and c.scope.figure
        assert c.scope.window in WINDOWS and c.role in ("finding", "extension", "check")
    ev = pd.concat([_ev("grad_pairwise_at_batch", [0.1] * 6), _ev("tr_ratio_outside", [0.9] * 6)])
    assert set(claims.evaluate(ev, paper="IM").claim) == {"ratios-leave-region"}
    assert "gradients-poorly-concentrated" in set(claims.evaluate(ev, paper="CL").claim)
    with pytest.raises(KeyError, match="unknown claim 'nope'"):
        claims.by_key("nope")


# --- findings: one outcome per claim, Holm within each paper section -----------------------------------------

def _two_findings(n: int):
    """Two §5.1 findings, every agent on the paper's side: gradients poorly concentrated, steps varying."""
    return pd.concat([_ev("grad_pairwise_at_batch", list(np.linspace(0.1, 0.3, n))),
                      _ev("step_pairwise", list(np.linspace(0.01, 0.1, n)))])


def test_five_agents_cannot_pass_holm_in_a_family_of_two_and_seven_can():
    """The sign test's smallest p at 5 agents is 1/32 = 0.031: Holm asks 0.025 of the first of two findings,
    so neither is reproduced though each holds per test; at 7 agents (1/128) both are."""
    five = findings.findings(claims.evaluate(_two_findings(5), paper="CL"), "CL")
    tested = five[five.tests > 0]
    assert set(tested.claim) == {"gradients-poorly-concentrated", "steps-vary"}
    assert (tested.outcome == "inconclusive").all() and np.allclose(tested.adjusted_for, 2 / 32)
    seven = findings.findings(claims.evaluate(_two_findings(7), paper="CL"), "CL")
    assert (seven[seven.tests > 0].outcome == "reproduced").all()
    assert findings.agents_for(1) == 5 and findings.agents_for(2) == 6 and findings.agents_for(7) == 8


def test_a_finding_holds_on_every_algorithm_or_is_not_reproduced_on_one():
    """Intersection–union: PPO's agents on the side and TRPO's straddling leave the finding inconclusive;
    TRPO's wholly on the other side make it "not reproduced". The stronger level is reached where every
    algorithm's agents pass it at the finding's own Holm level."""
    ppo = _ev("grad_pairwise_at_batch", list(np.linspace(0.01, 0.1, 8)))
    straddle = _ev("grad_pairwise_at_batch", list(np.linspace(0.3, 0.7, 8)), label="trpo")
    other = _ev("grad_pairwise_at_batch", list(np.linspace(0.6, 0.9, 8)), label="trpo")
    low = _ev("grad_pairwise_at_batch", list(np.linspace(0.02, 0.12, 8)), label="trpo")

    def outcome(ev):
        out = findings.findings(claims.evaluate(ev, paper="CL"), "CL")
        return out[out.claim == "gradients-poorly-concentrated"].iloc[0]

    assert outcome(pd.concat([ppo, straddle])).outcome == "inconclusive"
    assert outcome(pd.concat([ppo, other])).outcome == "not reproduced"
    both = outcome(pd.concat([ppo, low]))
    assert both.outcome == "reproduced" and both.level.startswith("virtually uncorrelated")


def test_extensions_and_checks_are_never_counted():
    ev = pd.concat([_ev("value_heldout_returns_mre", [0.5] * 8), _ev("theorem_first_step", [0.0], agents=["b"])])
    out = findings.findings(claims.evaluate(ev), None)
    assert "value-off-by-about-half-complete" not in set(out.claim)
    assert "theorem-first-step-unclipped" not in set(out.claim)


def test_every_claim_hopper_cannot_carry_has_a_scale_on_the_papers_tasks():
    """A claim whose figures exclude Hopper (CL Figs 6, 9, 26, 27, 29: Humanoid; IM Fig 1: Humanoid, Walker2d) is
    measured by its target's ``tasks`` scale on those tasks, at the mid scale's shape, or where the target has none
    (the 2^4 ablation) by its paper scale; the ranking of tasks needs the paper scale."""
    from pgdiag.experiments import targets

    for claim in claims.CLAIMS:
        if not claim.tasks or "hopper" in claim.tasks or claim.versus == "tasks":
            continue
        target = next(t for t in targets.TARGETS.values() if t.provides and claim.evidence.startswith(t.provides))
        scale = target.scales.get("tasks", target.scales["paper"])
        trained = set(scale.tasks_of(target.name))
        # the scale trains the claim's tasks, never Hopper (one ablation serves CL Fig 1's Humanoid and IM Fig 1's
        # Humanoid and Walker2d)
        assert trained & set(claim.tasks) and "hopper" not in trained, (claim.key, target.name)
        assert scale.seeds >= claims.MIN_AGENTS


def test_a_toggle_whose_best_configuration_loses_is_not_crucial():
    """CL Fig 1 and IM Fig 1 read the best configuration with a toggle against the best without, one unit per
    seed: eight seeds all 50 below (above) the best without → does not hold (holds); the average effect over the
    other toggles is an extension beside it, never counted."""
    for key in ("reward-scaling-crucial", "reward-scaling-needed"):
        claim = claims.by_key(key)
        assert claim.evidence == "ablation_best_reward_scaling" and claim.role == "finding"
        assert claims.by_key(key + "-on-average").role == "extension"
        for sign, verdict in ((-1, "does not hold"), (1, "holds")):
            ev = _ev(claim.evidence, list(sign * (50 + np.arange(8.0))), task="humanoid",
                     run=(claim.scope.iterations, "gym"))
            assert claims.evaluate(ev, claims=[claim]).verdict.iloc[0] == verdict


def test_often_is_read_as_most_of_a_findings_tests_by_hand():
    """"Often" (holds_on="most"): 8 agents at 0.1 on Humanoid and Walker2d (each test's p for the rule < 0.5 is
    2^-8) and at 0.9 on Hopper (p against 2^-8). Holding on 2 of 3 needs the 2nd smallest p_for times the 2 nulls
    that may be true: 2·2^-8 ≈ 0.0078 → reproduced; failing on 2 needs the 2nd smallest p_against (1) → never. Read
    on all three (the intersection–union test), Hopper fails it: 3·2^-8 ≈ 0.0117 → not reproduced."""
    import dataclasses

    base = claims.by_key("gradients-poorly-concentrated")
    _, point, _ = _where(base)
    ev = pd.concat([_ev(base.evidence, [v] * 8, task=t, point=point) for t, v in
                    (("humanoid", 0.1), ("walker2d", 0.1), ("hopper", 0.9))])
    for holds_on, outcome, p_for, p_against in (("most", "reproduced", 2 * 2 ** -8, 1.0),
                                                 ("all", "not reproduced", 1.0, 3 * 2 ** -8)):
        claim = dataclasses.replace(base, holds_on=holds_on, stronger=())
        row = findings.findings(claims.evaluate(ev, claims=[claim]), claims=[claim]).iloc[0]
        assert (row.outcome, row.p_for, row.p_against) == (outcome, pytest.approx(p_for), pytest.approx(p_against))
    assert claims.by_key("noclip-matches-ppo").rule().endswith("on most of its tests (a majority of its tasks and "
                                                               "algorithms)")


def test_a_statistic_no_agent_resolves_is_said_so_not_called_unmeasured():
    """value-baseline-helps on Walker2d (its paper's task) where no agent's cosines clear 0.2 at 10,000 pairs: the
    ratio is NaN for all eight, so the test has no agent — "too few agents", saying why — and is not read as a task
    no part measured. Beside six agents wholly above 1.25 on Hopper (outside its scope), the finding still waits."""
    claim = next(c for c in claims.CLAIMS if c.key == "value-baseline-helps")
    nan = _ev(claim.evidence, [np.nan] * 8, task="walker2d", pairs=10_000)
    hopper = _ev(claim.evidence, [2.0] * 6, task="hopper", pairs=10_000)
    tests = claims.evaluate(pd.concat([nan, hopper]), claims=[claim])
    walker = tests[tests.task == "walker2d"].iloc[0]
    assert walker.verdict == "too few agents" and walker.agree == "0 of 8" and walker.scope == "paper"
    assert "no value on any of its 8 agents" in walker.why and "at least 0.2" in walker.why
    found = findings.findings(tests, "CL", claims=[claim]).iloc[0]
    assert found.outcome == "too few agents" and found.why.startswith("walker2d ppo: its statistic has no value")


def test_a_test_left_with_few_agents_by_its_statistic_says_how_many_had_one():
    """gradients-worsen-over-training where the true gradient's ceiling is 0 at the last checkpoint for six of eight
    agents (their change is NaN): 2 agents remain, too few, and the row and the finding say that 2 of 8 had a value
    and why — where a run of 4 agents in all gets the count alone."""
    claim = next(c for c in claims.CLAIMS if c.key == "gradients-worsen-over-training")
    sparse = _ev(claim.evidence, [-0.3, -0.2] + [np.nan] * 6, task="walker2d")
    tests = claims.evaluate(sparse, claims=[claim])
    row = tests[tests.scope == "paper"].iloc[0]
    assert row.verdict == "too few agents" and row.agree == "2 of 2"
    assert row.why.startswith("its statistic has a value on 2 of its 8 agents (it needs the true gradient resolved")
    found = findings.findings(tests, "CL", claims=[claim]).iloc[0]
    assert found.outcome == "too few agents" and found.why.startswith("walker2d ppo: its statistic has a value on 2")
    four = claims.evaluate(_ev(claim.evidence, [-0.3, -0.2, -0.1, -0.4], task="walker2d"), claims=[claim])
    assert four.iloc[0].why == "" and findings.findings(four, "CL", claims=[claim]).iloc[0].why.startswith("4 agents")


def test_a_finding_waiting_on_a_sparse_test_names_the_others_that_fall_short():
    """gradients-worsen-over-training with Walker2d PPO left at 2 agents (its statistic NaN on 6) and Hopper PPO's
    8 agents straddling the rule (< 0: −0.3 … 0.3, inconclusive): the finding's reason names both, not only the
    sparse one — fixing Walker2d alone would not decide it."""
    claim = next(c for c in claims.CLAIMS if c.key == "gradients-worsen-over-training")
    sparse = _ev(claim.evidence, [-0.3, -0.2] + [np.nan] * 6, task="walker2d")
    straddle = _ev(claim.evidence, list(np.linspace(-0.3, 0.3, 8)), task="hopper")
    tests = claims.evaluate(pd.concat([sparse, straddle]), claims=[claim])
    found = findings.findings(tests, "CL", claims=[claim]).iloc[0]
    assert found.outcome == "inconclusive"
    assert found.why.startswith("every test must hold (hopper ppo inconclusive): walker2d ppo: its statistic has a "
                                "value on 2 of its 8 agents")
