"""How each kind of claim is tested on its agents ([`claims`][pgdiag.experiments.claims] reads the evidence in
scope and calls the test of its claim's kind). The unit is the **agent**: its rows in scope become one value (their
mean, or median where the claim says so or one is censored, ±inf). Tests:

* ``agents`` — the median agent with its distribution-free order-statistic interval
  ([`pgdiag.stats.median_interval`][pgdiag.stats.median_interval]; at 5 agents [min, max], coverage 0.9375); its
  p-values are the sign test's ([`pgdiag.stats.sign_test_p`][pgdiag.stats.sign_test_p],
  [`pgdiag.stats.band_p`][pgdiag.stats.band_p]);
* ``groups`` — two groups of agents (two algorithms, or Humanoid against an easier task): θ, the median of A − B over
  independent agents of the two (the difference of medians, and of means, where the groups differ by a shift), its
  Hodges–Lehmann estimate and the interval that inverts the studentized permutation Brunner–Munzel test
  ([`pgdiag.stats.shift_interval`][pgdiag.stats.shift_interval], [`pgdiag.stats.shift_p`][pgdiag.stats.shift_p]:
  coverage simulated 0.94–0.96 at 5–16 agents per group on normal, lognormal, unequal-spread and failed-seed
  agents; no complete separation needed);
* ``min-difference`` — the smallest of several such θs (all positive ⇔ the smallest is: the p-value is the largest
  of theirs, an intersection–union test; the intervals Bonferroni-simultaneous);
* ``means`` — two groups of agents by the difference of their MEAN agents, μ_A − μ_B (IM's tables report means):
  the difference of the groups' means with the interval that inverts the studentized permutation test of Welch's t
  ([`pgdiag.stats.mean_difference_interval`][pgdiag.stats.mean_difference_interval],
  [`pgdiag.stats.mean_difference_p`][pgdiag.stats.mean_difference_p]). A mean has no place for a failed seed
  (−inf): non-finite agents are left out and the row says how many ("7 vs 6 agents (1 failed seed left out)");
  five finite agents a group are needed for a verdict. Exact where the groups differ by a shift; where their shapes
  differ (skew, collapsed seeds in one) its coverage at 5–16 a group falls to 0.85–0.93 (its docstring's table), as
  Welch's does;
* ``min-mean-difference`` — the smallest of several differences of mean agents, as ``min-difference``;
* ``exact`` — a deterministic check of a theorem on one batch (a *check*, not a finding).

A per-test verdict: *holds* when the interval lies on the paper's side (its false rate ≤ (1 − coverage)/2), *does
not hold* when it lies on the other, *inconclusive* otherwise; below
[`MIN_AGENTS`][pgdiag.experiments.claim_tests.MIN_AGENTS] agents (per group) *too few agents* with *k of n agree*. A
band with a noise floor ([`floor`][pgdiag.experiments.paper_claims.Claim.floor]) holds only where the network's
error lies above the floor's on the same states (the paired excess, sign test; the larger p of the two). A
claim's stronger levels are read where it holds.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from pgdiag import stats
from pgdiag.experiments.paper_claims import Claim


class Estimand(NamedTuple):
    """What a comparison of two groups of agents estimates, and how: its interval (a, b, level) and one-sided
    p-value (a, b, threshold, side); whether a failed seed (±inf) keeps its rank or is left out."""

    name: str
    interval: Callable
    p: Callable
    ranks_failed: bool


#: θ, the median of A − B over independent agents of the two groups (the difference of medians, and of means, where
#: they differ by a shift): Hodges–Lehmann, the permutation Brunner–Munzel test
SHIFT = Estimand("θ = median of A − B (Hodges–Lehmann)", stats.shift_interval, stats.shift_p, True)
#: μ_A − μ_B, the difference of the groups' mean agents (IM's tables): the permutation test of Welch's t
MEANS = Estimand("difference of mean agents", stats.mean_difference_interval, stats.mean_difference_p, False)
#: the comparison each kind of claim makes
ESTIMANDS = {"groups": SHIFT, "min-difference": SHIFT, "means": MEANS, "min-mean-difference": MEANS}

VERDICTS = ("holds", "does not hold", "inconclusive", "too few agents", "not measured where the paper made it")
MIN_AGENTS = 5
NOT_HERE = VERDICTS[4]
#: tasks in the order of their complexity (CL §5.1: Humanoid the "hard" task)
COMPLEXITY = ("hopper", "walker2d", "humanoid")
COLUMNS = ["paper", "family", "role", "claim", "level", "where", "task", "label", "estimate", "value", "low", "high",
           "coverage", "agents", "agree", "test", "verdict", "scope", "p_for", "p_against", "why", "run"]


def per_agent(group, within: str = "mean") -> np.ndarray:
    """One value per agent: the mean of its measurements, or their median (``within="median"``, or where one is
    infinite: a censored value has a rank but no size)."""
    def one(values):
        v = values.to_numpy(np.float64)
        v = v[~np.isnan(v)]
        if v.size == 0:
            return np.nan
        return float(np.median(v)) if within == "median" or np.isinf(v).any() else float(np.mean(v))
    return group.groupby("agent", sort=True)["value"].agg(one).to_numpy(np.float64)


def _side(low: float, high: float, test: str, threshold) -> str:
    if np.isnan(low) or np.isnan(high):
        return "inconclusive"
    if test == "within":
        lo, hi = threshold
        if lo < low and high < hi:
            return "holds"
        return "does not hold" if high < lo or low > hi else "inconclusive"
    if test == "<":
        return "holds" if high < threshold else "does not hold" if low > threshold else "inconclusive"
    return "holds" if low > threshold else "does not hold" if high < threshold else "inconclusive"


def agrees(values, test: str, threshold) -> np.ndarray:
    """Which units lie on the paper's side (or inside its band)."""
    v = np.asarray(values, np.float64)
    if test == "within":
        return (v > threshold[0]) & (v < threshold[1])
    return v < threshold if test == "<" else v > threshold


def _sign_p(values, test: str, threshold) -> tuple:
    """(p for the paper's side, p against it) of the median of ``values``."""
    if test == "within":
        lo, hi = threshold
        against = min(1.0, 2.0 * min(stats.sign_test_p(values, lo, "<"), stats.sign_test_p(values, hi, ">")))
        return stats.band_p(values, lo, hi), against
    other = ">" if test == "<" else "<"
    return stats.sign_test_p(values, threshold, test), stats.sign_test_p(values, threshold, other)


def _row(claim: Claim, task: str, label: str, iv, agree: str, verdict: str, estimate: str, p=(np.nan, np.nan),
         level=None, scope="paper", why="") -> dict:
    test = level.rule() if level else claim.rule()
    return {"paper": claim.paper, "family": claim.family, "role": claim.role, "claim": claim.key,
            "level": level.name if level else "", "where": claim.where, "task": task, "label": label,
            "estimate": estimate, "value": float(iv.estimate), "low": float(iv.low), "high": float(iv.high),
            "coverage": float(iv.coverage), "agents": int(iv.n), "agree": agree, "test": test, "verdict": verdict,
            "scope": scope, "p_for": float(p[0]), "p_against": float(p[1]), "why": why}


def _agents_test(claim, task, label, values, test, threshold, level=None, floor=None) -> dict:
    total, values = values.size, values[~np.isnan(values)]
    iv = stats.median_interval(values)
    on = int(agrees(values, test, threshold).sum())
    few = values.size < MIN_AGENTS
    verdict = "too few agents" if few else _side(iv.low, iv.high, test, threshold)
    p = (np.nan, np.nan) if few else _sign_p(values, test, threshold)
    # too few because the statistic has no value on the others (measured, not resolved): said, with why
    why = _defined_on(claim, values.size, total) if few and values.size < total else ""
    if verdict == "holds" and claim.floor and level is None:
        verdict, why, p_floor = _floor_check(floor)
        p = (max(p[0], p_floor), p[1])      # both must hold: the intersection–union test's p is the larger
    return _row(claim, task, label, iv, f"{on} of {values.size}", verdict, "median agent", p, level, why=why)


def _floor_check(excess) -> tuple:
    """(verdict, why, p): an error band about the true value holds only where the network's error lies above the
    noise floor — the error a perfect value function reads against the same noisy returns — on the same states.
    ``excess`` is per agent the network's error minus the floor's on the same batches (a paired difference:
    the returns' noise is common to both sides and cancels from its spread); it must be above 0 (sign test)."""
    excess = np.asarray(excess if excess is not None else (), np.float64)
    excess = excess[~np.isnan(excess)]
    if excess.size < MIN_AGENTS:
        return "inconclusive", f"no noise floor measured on {MIN_AGENTS}+ agents (run fig-baselines: the " \
                               f"replication's baselines parts; or the LQR task's fig-value)", 1.0
    iv = stats.median_interval(excess)
    p = stats.sign_test_p(excess, 0.0, ">")
    if not iv.low > 0:
        return "inconclusive", f"not shown above the noise floor on the same states (the network's error minus " \
                               f"a perfect value function's: median agent {iv.estimate:.3g} [{iv.low:.3g}, " \
                               f"{iv.high:.3g}])", p
    return "holds", "", p


def _agents_rows(claim: Claim, part, floors) -> list:
    rows = []
    for (task, label), group in part.groupby(["task", "label"], sort=True):
        values = per_agent(group, claim.within)
        if np.isnan(values).all():
            rows.append(_undefined(claim, task, label, values.size))
            continue
        floor = floors.get((task, label))
        row = _agents_test(claim, task, label, values, claim.test, claim.threshold, floor=floor)
        rows.append(row)
        for level in claim.stronger:
            if row["verdict"] == "holds" and (not level.tasks or task in level.tasks):
                rows.append(_agents_test(claim, task, label, values, level.test, level.threshold, level))
    return rows


def _defined_on(claim: Claim, k: int, n: int) -> str:
    """Why a test has ``k`` of its ``n`` agents: the statistic has a value on those alone."""
    head = f"its statistic has no value on any of its {n} agents" if k == 0 else \
        f"its statistic has a value on {k} of its {n} agents"
    return head + (f" ({claim.undefined})" if claim.undefined else "")


def _undefined(claim: Claim, task: str, label: str, n: int) -> dict:
    """A test none of whose ``n`` agents has a value of the statistic (measured, but not resolved where it is
    read): no agent to test, and the page says why rather than that the task was not measured."""
    return _row(claim, task, label, stats.Interval(np.nan, np.nan, np.nan, 0, np.nan), f"0 of {n}", "too few agents",
                "median agent", why=_defined_on(claim, 0, n))


def _units(values, est: Estimand) -> tuple:
    """(the agents a comparison reads, how many failed seeds it left out): NaN is no agent; a failed seed (±inf)
    keeps its rank in a rank estimand and is left out of a mean, which has no place for it."""
    v = np.asarray(values, np.float64)
    v = v[~np.isnan(v)]
    return (v, 0) if est.ranks_failed else (v[np.isfinite(v)], int(np.sum(~np.isfinite(v))))


def _difference_p(est: Estimand, a, b, test: str, threshold) -> tuple:
    """(p for the paper's side, p against it) of the estimand; a band by its two one-sided tests (TOST)."""
    if test == "within":
        lo, hi = threshold
        p_for = max(est.p(a, b, lo, ">"), est.p(a, b, hi, "<"))
        return p_for, min(1.0, 2.0 * min(est.p(a, b, lo, "<"), est.p(a, b, hi, ">")))
    other = ">" if test == "<" else "<"
    return est.p(a, b, threshold, test), est.p(a, b, threshold, other)


def _left_out(k: int) -> str:
    return f" ({k} failed seed{'s' if k != 1 else ''} left out)" if k else ""


def _groups_rows(claim: Claim, part) -> list:
    if claim.versus == "tasks":   # Humanoid against each easier task it was measured beside
        if "humanoid" not in set(part.task):
            return []
        hard = part[part.task == "humanoid"]
        return [_compare(claim, f"humanoid − {easy}", label, per_agent(hard[hard.label == label], claim.within),
                         per_agent(g, claim.within))
                for (easy, label), g in part[part.task != "humanoid"].groupby(["task", "label"], sort=True)
                if easy in COMPLEXITY and label in set(hard.label)]
    rows = []
    for task, group in part.groupby("task", sort=True):
        a = per_agent(group[group.label.isin(claim.labels)], claim.within)
        b = per_agent(group[group.label == claim.versus], claim.within)
        if a.size and b.size:
            rows.append(_compare(claim, task, f"{'/'.join(claim.labels)} − {claim.versus}", a, b))
    return rows


def _compare(claim: Claim, task: str, label: str, a, b) -> dict:
    est = ESTIMANDS[claim.kind]
    (a, ka), (b, kb) = _units(a, est), _units(b, est)
    iv = est.interval(a, b)
    few = min(a.size, b.size) < MIN_AGENTS
    verdict = "too few agents" if few else _side(iv.low, iv.high, claim.test, claim.threshold)
    p = (np.nan, np.nan) if few else _difference_p(est, a, b, claim.test, claim.threshold)
    return _row(claim, task, label, iv, f"{a.size} vs {b.size} agents{_left_out(ka + kb)}", verdict, est.name, p)


def _min_difference_rows(claim: Claim, part) -> list:
    """The smallest of the claim's differences: each interval at 1 − 0.05/m (Bonferroni over the m), the smallest
    ends; p for the paper's side the largest of theirs (intersection–union), against it m times the smallest."""
    est, rows = ESTIMANDS[claim.kind], []
    needed = sorted({x for pair in claim.differences for x in pair})
    for task, group in part.groupby("task", sort=True):
        units = {lab: _units(per_agent(group[group.label == lab], claim.within), est) for lab in needed}
        if any(v.size + k == 0 for v, k in units.values()):
            continue
        scores, m = {lab: v for lab, (v, _) in units.items()}, len(claim.differences)
        ivs = [est.interval(scores[a], scores[b], 1.0 - 0.05 / m) for a, b in claim.differences]
        cover = np.nan if any(np.isnan(i.coverage) for i in ivs) else \
            max(0.0, 1.0 - sum(1.0 - i.coverage for i in ivs))
        iv = stats.Interval(min(i.estimate for i in ivs), min(i.low for i in ivs), min(i.high for i in ivs),
                            min(i.n for i in ivs), cover)
        few = min(v.size for v in scores.values()) < MIN_AGENTS
        ps = [] if few else [_difference_p(est, scores[a], scores[b], ">", 0.0) for a, b in claim.differences]
        p = (np.nan, np.nan) if few else (max(x[0] for x in ps), min(1.0, m * min(x[1] for x in ps)))
        sizes = ", ".join(f"{lab} {v.size}{_left_out(k)}" for lab, (v, k) in units.items())
        rows.append(_row(claim, task, " / ".join(f"{a} − {b}" for a, b in claim.differences), iv, sizes,
                         "too few agents" if few else _side(iv.low, iv.high, claim.test, claim.threshold),
                         "smallest " + est.name, p))
    return rows


def _exact_rows(claim: Claim, part) -> list:
    rows = []
    for (task, label), group in part.groupby(["task", "label"], sort=True):
        values = group["value"].to_numpy(np.float64)
        on = agrees(values, claim.test, claim.threshold)
        iv = stats.Interval(float(np.max(values) if claim.test == "<" else np.min(values)), float(np.min(values)),
                            float(np.max(values)), int(values.size), 1.0)
        # a value not measured (NaN) is neither side of a deterministic check
        verdict = "inconclusive" if np.isnan(values).any() else "holds" if on.all() else "does not hold"
        rows.append(_row(claim, task, label, iv, f"{int(on.sum())} of {values.size}", verdict,
                         "worst unit (deterministic)"))
    return rows


#: how each kind of claim is tested: (claim, its rows in one scope[, floors]) -> result rows
EVALUATE = {"agents": _agents_rows, "groups": _groups_rows, "min-difference": _min_difference_rows,
             "means": _groups_rows, "min-mean-difference": _min_difference_rows, "exact": _exact_rows}


__all__ = ["COLUMNS", "COMPLEXITY", "ESTIMANDS", "EVALUATE", "Estimand", "MEANS", "MIN_AGENTS", "NOT_HERE", "SHIFT",
           "VERDICTS", "agrees", "per_agent"]
