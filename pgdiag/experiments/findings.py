"""A paper's findings as a referee counts them: one outcome per claim, the family-wise error controlled per paper
section.

A claim is tested on every task and algorithm it was measured for where the paper made it
([`claims`][pgdiag.experiments.claims]). As one *finding* it is **reproduced** when it holds on each of them — an
intersection–union test, its p-value the largest of theirs — and **not reproduced** when it fails on any — its
p-value the smallest of theirs times their number (Bonferroni). Within a family (a paper section: CL §5.1 gradients,
…) the findings' p-values are adjusted by Holm's step-down ([`pgdiag.stats.holm`][pgdiag.stats.holm]) in each
direction, so the chance that any finding of a family is wrongly called reproduced (or wrongly not reproduced) is at
most [`ALPHA`][pgdiag.experiments.findings.ALPHA], whatever their dependence. A claim's stronger level (one series,
two thresholds: "poorly concentrated" then "virtually uncorrelated") is one finding: tested only where the claim is
reproduced, at the level Holm gave it (a fixed sequence), so it adds no error. Extensions and checks are shown,
never counted; a claim measured only outside the paper's scope is *not measured where the paper made it*.

With five agents the sign test's smallest p-value is 1/32: one finding alone can be reproduced at 5%, two in a
family cannot (Holm asks 0.025 of the first) — the page says how many agents a family needs.
"""

from __future__ import annotations

import math

import numpy as np

from pgdiag import stats
from pgdiag.experiments.claims import CLAIMS, MIN_AGENTS, NOT_HERE

ALPHA = 0.05
OUTCOMES = ("reproduced", "not reproduced", "inconclusive", "too few agents", NOT_HERE, "not measured")
COLUMNS = ["paper", "family", "claim", "where", "outcome", "level", "p_for", "p_against", "adjusted_for",
           "adjusted_against", "tests", "why"]


def _claim_outcome(claim, rows) -> dict:
    main = rows[rows.level == ""]
    paper = main[main.scope == "paper"]
    tested = paper[np.isfinite(paper.p_for.to_numpy(np.float64))]
    out = {"paper": claim.paper.split()[0], "family": claim.family, "claim": claim.key, "where": claim.where,
           "level": "", "p_for": np.nan, "p_against": np.nan, "adjusted_for": np.nan, "adjusted_against": np.nan,
           "tests": len(tested), "why": ""}
    if tested.empty:
        if (paper.verdict == "too few agents").any():
            return {**out, "outcome": "too few agents", "why": _few(paper)}
        if len(main):
            return {**out, "outcome": NOT_HERE, "why": "; ".join(sorted({w for w in main.why if w}))}
        return {**out, "outcome": "not measured"}
    k = len(tested)
    return {**out, "outcome": "inconclusive", "p_for": float(tested.p_for.max()),
            "p_against": float(min(1.0, k * tested.p_against.min()))}


def _few(rows) -> str:
    least = int(rows.agents.min()) if len(rows) else 0
    return (f"{least} agents where a verdict needs {MIN_AGENTS} per algorithm (and a section of m findings "
            f"⌈log2(20 m)⌉ before Holm can pass any)")


def agents_for(m: int, alpha: float = ALPHA) -> int:
    """The agents a sign test needs for its smallest p-value, 2^−n, to pass Holm's first step in a family of
    ``m`` findings: 2^−n ≤ alpha/m."""
    return max(1, math.ceil(math.log2(m / alpha)))


def _holm_levels(out: list, alpha: float) -> None:
    """Holm within each family, in both directions; a reproduced finding's multiplier kept for its levels."""
    for family in dict.fromkeys(o["family"] for o in out):
        members = [o for o in out if o["family"] == family and o["tests"]]
        if not members:
            continue
        for key, adj in (("p_for", "adjusted_for"), ("p_against", "adjusted_against")):
            adjusted, rejected = stats.holm([o[key] for o in members], alpha)
            for o, a in zip(members, adjusted):
                o[adj] = float(a)
        for o in members:
            if o["adjusted_for"] <= alpha:
                o["outcome"] = "reproduced"
            elif o["adjusted_against"] <= alpha:
                o["outcome"] = "not reproduced"
            elif o["tests"] and not o["why"]:
                o["why"] = (f"not significant after Holm over the {len(members)} findings of the family "
                            f"(p {o['p_for']:.3g} for, {o['p_against']:.3g} against)")


def _levels(claim, rows, outcome: dict, alpha: float) -> None:
    """The strongest level reached: every test of the level passes at the finding's own Holm level."""
    if outcome["outcome"] != "reproduced" or not claim.stronger:
        return
    ratio = outcome["adjusted_for"] / outcome["p_for"] if outcome["p_for"] > 0 else 1.0
    for level in claim.stronger:
        lv = rows[(rows.level == level.name) & (rows.scope == "paper")]
        if len(lv) and np.isfinite(lv.p_for).all() and float(lv.p_for.max()) * ratio <= alpha:
            outcome["level"] = level.name


def findings(results, paper: str | None = None, alpha: float = ALPHA):
    """One row per finding (claims whose role is "finding") of ``paper`` (default both): its outcome, the level
    reached, its p-values before and after Holm, the tests it rests on, and why it has no verdict.

    Args:
        results: [`evaluate`][pgdiag.experiments.claims.evaluate]'s table.
        paper: ``"CL"`` or ``"IM"``; None: both.
        alpha: the family-wise level of the Holm correction.

    Returns:
        A DataFrame with one row per finding.
    """
    import pandas as pd

    out, by_claim = [], {}
    for claim in CLAIMS:
        if claim.role != "finding" or (paper and paper not in claim.paper.split()):
            continue
        rows = results[results.claim == claim.key]
        by_claim[claim.key] = (claim, rows)
        out.append(_claim_outcome(claim, rows))
    _holm_levels(out, alpha)
    for o in out:
        _levels(*by_claim[o["claim"]], o, alpha)
    return pd.DataFrame(out, columns=COLUMNS)


def summary(found):
    """Per paper and family: how many findings were reproduced, not reproduced, inconclusive, had too few agents,
    or were not measured where the paper made it."""
    if found.empty:
        return found
    counts = found.groupby(["paper", "family"], sort=False)["outcome"].value_counts().unstack(fill_value=0)
    return counts.reindex(columns=[o for o in OUTCOMES if o in counts.columns]).reset_index()


__all__ = ["ALPHA", "COLUMNS", "OUTCOMES", "agents_for", "findings", "summary"]
