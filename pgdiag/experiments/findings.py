"""A paper's findings as a referee counts them: one outcome per claim, the family-wise error controlled per paper
section.

A claim is tested on every task and algorithm it was measured for where the paper made it
([`claims`][pgdiag.experiments.claims]). As one *finding* it is **reproduced** when it holds on each of them — an
intersection–union test, its p-value the largest of theirs — and **not reproduced** when it fails on any — its
p-value the smallest of theirs times their number (Bonferroni). Within a family (a paper section: CL §5.1 gradients,
…) the findings' p-values are adjusted by Holm's step-down ([`pgdiag.stats.holm`][pgdiag.stats.holm]) in each
direction, so the chance that any finding of a family is wrongly called reproduced (or wrongly not reproduced) is at
most [`ALPHA`][pgdiag.experiments.findings.ALPHA], whatever their dependence; over both directions a family's chance
of any wrong outcome is at most 2α. A claim's stronger level (one series, two thresholds: "poorly concentrated"
then "virtually uncorrelated") is gatekept behind its finding in the "for" direction
([`pgdiag.multiplicity.gatekept_holm`][pgdiag.multiplicity.gatekept_holm]): tested only once the finding is
reproduced, at the share of α the finding held, which passes on to the family's other findings only when the level
is reached too — the family-wise error over findings and levels together stays ≤ α. Extensions and checks are shown,
never counted; a claim measured only outside the paper's scope is *not measured where the paper made it*. An
intersection–union test needs every test of the paper's scope: one with too few agents keeps its finding from being
reproduced, and is named.

A test's smallest p-value bounds what a family can reach ([`smallest_p`][pgdiag.experiments.findings.smallest_p]):
the sign test's is 2^−n at n agents — with five, one finding alone can be reproduced at 5%, two in a family cannot
(Holm asks 0.025 of the first); two groups of n agents compared by permutation reach 1/C(2n, n) (1/252 at 5 v 5).
The page says how many agents a family needs ([`agents_for`][pgdiag.experiments.findings.agents_for]).
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np

from pgdiag import multiplicity, stats
from pgdiag.experiments.claims import CLAIMS, MIN_AGENTS, NOT_HERE

ALPHA = 0.05
OUTCOMES = ("reproduced", "not reproduced", "inconclusive", "too few agents", NOT_HERE, "not measured")
COLUMNS = ["paper", "family", "claim", "where", "outcome", "level", "p_for", "p_against", "adjusted_for",
           "adjusted_against", "tests", "why"]


def _claim_outcome(claim, rows) -> dict:
    main = rows[rows.level == ""]
    paper = main[main.scope == "paper"]
    tested = paper[np.isfinite(paper.p_for.to_numpy(np.float64))]
    few = paper[paper.verdict == "too few agents"]
    out = {"paper": claim.paper.split()[0], "family": claim.family, "claim": claim.key, "where": claim.where,
           "level": "", "p_for": np.nan, "p_against": np.nan, "adjusted_for": np.nan, "adjusted_against": np.nan,
           "tests": len(tested), "why": ""}
    if tested.empty:
        if len(few):
            return {**out, "outcome": "too few agents", "why": _few(claim, paper)}
        if len(main):
            return {**out, "outcome": NOT_HERE, "why": "; ".join(sorted({w for w in main.why if w}))}
        return {**out, "outcome": "not measured"}
    k = len(tested)
    if claim.holds_on == "most":
        p_for, p_against = _majority(tested, len(few))
        why = _short("it must hold on most tests", claim, few)
        return {**out, "outcome": "inconclusive", "p_for": p_for, "p_against": p_against, "why": why,
                "_levels": [], "_sizes": _sizes(tested)}
    # the intersection–union test needs every test the paper's scope has: one with too few agents cannot pass
    p_for = 1.0 if len(few) else float(tested.p_for.max())
    short = tested[tested.verdict != "holds"]   # the tests that fall short besides those with too few agents
    lead = "every test must hold" + (f" ({', '.join(f'{r.task} {r.label} {r.verdict}' for r in short.itertuples())})"
                                     if len(short) else "")
    why = _short(lead, claim, few)
    return {**out, "outcome": "inconclusive", "p_for": p_for, "p_against": float(min(1.0, k * tested.p_against.min())),
            "why": why, "_levels": _level_p(claim, rows, tested), "_sizes": _sizes(tested)}


def _majority(tested, few: int) -> tuple:
    """(p_for, p_against) of "holds on most of the n tests" (k = n // 2 + 1 of them; a test with too few agents
    counts as neither). Holding on k needs k tests' rejections, of which one at least is a true null when at most
    k − 1 hold: the k-th smallest p_for times the n − k + 1 nulls that may be true is a valid p-value (Bonferroni
    over them; k = n is the intersection–union test's largest p). Failing on n − k + 1 likewise: the (n − k + 1)-th
    smallest p_against times k."""
    n = len(tested) + few
    k = n // 2 + 1
    p_for = sorted(tested.p_for.astype(float)) + [1.0] * few
    p_against = sorted(tested.p_against.astype(float)) + [1.0] * few
    return float(min(1.0, (n - k + 1) * p_for[k - 1])), float(min(1.0, k * p_against[n - k]))


def _sizes(tested) -> list:
    """Per test, the agents it had: (n,) for one group, (na, nb) for two ("7 vs 8 agents")."""
    out = []
    for r in tested.itertuples():
        pair = re.match(r"(\d+) vs (\d+) agents", str(r.agree))
        out.append((int(pair[1]), int(pair[2])) if pair else (int(r.agents),))
    return out


def reasons(rows) -> str:
    """Each reason in ``rows``' why once, after the tests that give it ("hopper ppo, walker2d ppo: …")."""
    grouped: dict = {}
    for r in rows.itertuples(index=False):
        if isinstance(r.why, str) and r.why:
            grouped.setdefault(r.why, []).append(f"{r.task} {r.label}")
    return "; ".join(f"{', '.join(who)}: {text}" for text, who in grouped.items())


def _explained(few) -> bool:
    """Whether every test with too few agents says why (its statistic has no value on the rest)."""
    return bool(len(few)) and all(isinstance(w, str) and w for w in few.why)


def _short(lead: str, claim, few) -> str:
    """Why tests with too few agents keep a finding from its verdict: ``lead``, then which tests and why (a test
    whose statistic some agents lack names itself in its reason)."""
    if not len(few):
        return ""
    if _explained(few):
        return f"{lead}: {reasons(few)}"
    return f"{lead}, and {', '.join(f'{r.task} {r.label}' for r in few.itertuples())} had too few agents " \
           f"({_few(claim, few)})"


def _few(claim, rows) -> str:
    few = rows[rows.verdict == "too few agents"] if len(rows) else rows
    said = reasons(few)
    if _explained(few):
        return said
    least = int(rows.agents.min()) if len(rows) else 0
    unit = "algorithm" if claim.kind == "agents" else "group"
    return (f"{least} agents where a verdict needs {MIN_AGENTS} per {unit}; a section of m findings needs "
            f"{agents_for(2, kind=claim.kind)} (m = 2) to {agents_for(8, kind=claim.kind)} (m = 8) before Holm "
            f"can pass any") + (f"; {said}" if said else "")


def smallest_p(kind: str, n: int) -> float:
    """The smallest p-value a test of ``kind`` reaches with ``n`` agents (per group): the sign test's 2^−n for one
    group ("agents"); for two groups of n (and the smallest of several such differences) the permutation test's
    1/C(2n, n), every other relabelling of the 2n agents less extreme (1/20,001 where its relabellings are sampled:
    [`pgdiag.stats.smallest_shift_p`][pgdiag.stats.smallest_shift_p])."""
    return 2.0 ** -n if kind in ("agents", "exact") else stats.smallest_shift_p(n, n)


def agents_for(m: int, alpha: float = ALPHA, kind: str = "agents") -> int:
    """The agents (per group) a test of ``kind`` needs for its smallest p-value to pass Holm's first step in a
    family of ``m`` findings, α/m: for the sign test 2^−n ≤ α/m."""
    n = 1
    while smallest_p(kind, n) > alpha / m:
        n += 1
    return n


def _agreeing(n: int, alpha: float) -> str:
    """How many of ``n`` agents the sign test needs on the claim's side to pass at ``alpha`` (the caller has checked
    that all ``n`` can), and how many agents would let one disagree: P(at least k of n) = Σ C(n, i) / 2^n ≤ α."""
    def tail(n, k):
        return sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n

    k = min(k for k in range(n + 1) if tail(n, k) <= alpha)
    if k < n:
        return f"it passes when {k} of {n} agree"
    m = next(m for m in itertools.count(n + 1) if tail(m, m - 1) <= alpha)
    return f"it passes only when all {n} agree; {m} agents would let one disagree"


def detectable(kind: str, sizes, alpha: float, power: float = 0.8) -> str:
    """What a test with these agents could have seen: the effect its smallest test (fewest agents) detects with
    probability ``power`` at level ``alpha`` (Holm's first step, α/m: what passes whatever the family's other
    findings do)."""
    if not sizes:
        return ""
    n = min(sizes, key=lambda s: min(s))
    if kind == "agents":
        q = stats.sign_test_detectable(n[0], alpha, power)
        return (f"{n[0]} agents cannot reach p ≤ {alpha:.3g} even when all agree" if np.isnan(q) else
                f"at {n[0]} agents the test detects with probability {power:g} a claim that holds for ≥ {q:.0%} "
                f"of agents (sign test at α/m = {alpha:.3g}: {_agreeing(n[0], alpha)})")
    na, nb = (n * 2)[:2]
    if kind in ("means", "min-mean-difference"):
        return (f"at {na} v {nb} agents the test detects with probability {power:g} a difference of mean agents of "
                f"{stats.mean_power_sd(na, nb, alpha, power):.1f} agent SDs (normal agents; at α/m = {alpha:.3g})")
    effect, sd = stats.shift_power_effect(na, nb, alpha, power), stats.shift_power_sd(na, nb, alpha, power)
    return (f"at {na} v {nb} agents the test detects with probability {power:g} P(A > B) ≥ {effect:.2f} "
            f"(a {sd:.1f}-SD shift between normal agents; at α/m = {alpha:.3g})")


def _level_p(claim, rows, tested) -> list:
    """Each stronger level's p-value for the claim's paper-scope tests: the largest of its tests' (an
    intersection–union test), 1.0 where a test of the claim has no test of the level (it was not read there)."""
    out = []
    for level in claim.stronger:
        lv = rows[(rows.level == level.name) & (rows.scope == "paper")]
        ps = [lv[(lv.task == t) & (lv.label == lab)].p_for.max() for t, lab in zip(tested.task, tested.label)
              if not level.tasks or t in level.tasks]
        out.append(float(np.nanmax(ps)) if ps and not np.isnan(ps).any() else 1.0)
    return out


def _multiplicity(out: list, by_claim: dict, alpha: float) -> None:
    """Per family: "for" by Holm with each finding's stronger levels gatekept behind it
    ([`pgdiag.multiplicity.gatekept_holm`][pgdiag.multiplicity.gatekept_holm]: a level is tested only after its
    finding is reproduced, at the share of α the finding held, so the family-wise error over findings and levels
    stays ≤ α); "against" by Holm over the findings. Each direction's error is ≤ α; a family's chance of any wrong
    outcome in either direction ≤ 2α."""
    for family in dict.fromkeys(o["family"] for o in out):
        members = [o for o in out if o["family"] == family and o["tests"]]
        if not members:
            continue
        levels = [o.pop("_levels", []) for o in members]
        w, g, order = multiplicity.gatekept_holm([1 + len(lv) for lv in levels])
        p = [members[i]["p_for"] if d == 0 else levels[i][d - 1] for i, d in order]
        adjusted_for = multiplicity.graph_adjusted(p, w, g)
        adjusted_against, _ = stats.holm([o["p_against"] for o in members], alpha)
        for i, o in enumerate(members):
            mine = [a for (f, d), a in zip(order, adjusted_for) if f == i]
            o["adjusted_for"], o["adjusted_against"] = float(mine[0]), float(adjusted_against[i])
            reached = [d for d in range(1, len(mine)) if max(mine[:d + 1]) <= alpha]
            if o["adjusted_for"] <= alpha:
                o["outcome"] = "reproduced"
                o["level"] = by_claim[o["claim"]][0].stronger[max(reached) - 1].name if reached else ""
            elif o["adjusted_against"] <= alpha:
                o["outcome"] = "not reproduced"
            elif not o["why"]:
                o["why"] = (f"not significant after Holm over the {len(members)} findings of the family "
                            f"(p {o['p_for']:.3g} for, {o['p_against']:.3g} against); "
                            + detectable(by_claim[o["claim"]][0].kind, o.get("_sizes", []), alpha / len(members)))


def findings(results, paper: str | None = None, alpha: float = ALPHA, claims=None):
    """One row per finding (claims whose role is "finding") of ``paper`` (default both): its outcome, the level
    reached, its p-values before and after Holm, the tests it rests on, and why it has no verdict.

    Args:
        results: [`evaluate`][pgdiag.experiments.claims.evaluate]'s table.
        paper: ``"CL"`` or ``"IM"``; None: both.
        alpha: the family-wise level of the Holm correction.
        claims: the claims whose findings to count (as ``evaluate`` tested them); None: every claim.

    Returns:
        A DataFrame with one row per finding.
    """
    import pandas as pd

    out, by_claim = [], {}
    for claim in claims if claims is not None else CLAIMS:
        if claim.role != "finding" or (paper and paper not in claim.paper.split()):
            continue
        rows = results[results.claim == claim.key]
        by_claim[claim.key] = (claim, rows)
        out.append(_claim_outcome(claim, rows))
    _multiplicity(out, by_claim, alpha)
    for o in out:
        o.pop("_levels", None), o.pop("_sizes", None)
    return pd.DataFrame(out, columns=COLUMNS)


def summary(found):
    """Per paper and family: how many findings were reproduced, not reproduced, inconclusive, had too few agents,
    or were not measured where the paper made it."""
    if found.empty:
        return found
    counts = found.groupby(["paper", "family"], sort=False)["outcome"].value_counts().unstack(fill_value=0)
    return counts.reindex(columns=[o for o in OUTCOMES if o in counts.columns]).reset_index()


__all__ = ["ALPHA", "COLUMNS", "OUTCOMES", "agents_for", "findings", "reasons", "smallest_p", "summary"]
