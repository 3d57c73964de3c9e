"""Each claim ([`paper_claims`][pgdiag.experiments.paper_claims]) tested on measured evidence where the paper made
it, with an interval whose coverage is stated and the one-sided p-values the findings' multiplicity control reads
([`findings`][pgdiag.experiments.findings]).

A claim names one *evidence* series — rows of task, label, agent, value, with the point of training (iteration,
progress, lr_share) and the sample size (pairs) where they matter, extracted from saved studies by `evidence`. Rows
inside the claim's [`Scope`][pgdiag.experiments.paper_claims.Scope] (the figure's tasks, the point of training, the
sample sizes) are tested; a task or algorithm measured only outside it gives an *exploratory* row, verdict "not
measured where the paper made it", never counted. The unit is the **agent**: its rows in scope become one value
(their mean, or median where the claim says so or one is censored, ±inf).

The tests of each kind of claim, their intervals and verdicts: [`claim_tests`][pgdiag.experiments.claim_tests].
"""

from __future__ import annotations

import numpy as np

from pgdiag.experiments.claim_tests import (COLUMNS, COMPLEXITY, ESTIMANDS, EVALUATE, MEANS, MIN_AGENTS, NOT_HERE,
                                            SHIFT, VERDICTS, Estimand, agrees, per_agent)
from pgdiag.experiments.claims_cl import CL_CLAIMS
from pgdiag.experiments.claims_im import IM_CLAIMS
from pgdiag.experiments.paper_claims import KINDS, Claim
from pgdiag.experiments.scopes import but_the_experiment, in_window, measured_at, missing, run_words, scope_mask

CLAIMS = CL_CLAIMS + IM_CLAIMS


def claims() -> tuple:
    """Every claim of both papers."""
    return CLAIMS


def by_key(key: str) -> Claim:
    """The claim named ``key``."""
    for claim in CLAIMS:
        if claim.key == key:
            return claim
    raise KeyError(f"unknown claim {key!r}; claims: {', '.join(c.key for c in CLAIMS)}")



def _floors(claim: Claim, evidence) -> dict:
    if not claim.floor:
        return {}
    part = evidence[evidence.evidence == claim.floor]
    part = part[in_window(part, claim.scope.window)] if len(part) else part
    return {key: per_agent(g, claim.within) for key, g in part.groupby(["task", "label"], sort=True)}


def _claim_rows(claim: Claim, evidence) -> list:
    part = evidence[evidence.evidence == claim.evidence]
    if claim.labels and claim.kind == "agents":
        part = part[part.label.isin(claim.labels)]
    if part.empty:
        return []
    inside, checks = scope_mask(claim, part)
    args = (_floors(claim, evidence),) if claim.kind == "agents" else ()
    rows = EVALUATE[claim.kind](claim, part[inside], *args) if inside.any() else []
    read = {id(r): inside for r in rows}   # the rows each test read: its run is theirs
    measured = {(r["task"], r["label"]) for r in rows}
    # another experiment is read where the paper read its own (figure's tasks, point of training, sample sizes)
    near = but_the_experiment(checks)
    elsewhere = [(r, sub) for sub in (~inside & near, ~inside & ~near) if sub.any()
                 for r in EVALUATE[claim.kind](claim, part[sub], *args)]
    for r, sub in elsewhere:
        if (r["task"], r["label"]) in measured or r["level"]:
            continue
        measured.add((r["task"], r["label"]))
        mine = part.task.isin(r["task"].split(" − ")).to_numpy()
        where = measured_at(claim, part[mine] if mine.any() else part)
        said = f"{r['verdict']} {where} (exploratory); " if where and r["verdict"] in VERDICTS[:3] else ""
        rows.append({**r, "verdict": NOT_HERE, "scope": "exploratory", "p_for": np.nan, "p_against": np.nan,
                     "why": said + missing(checks, mine if mine.any() else np.ones(len(part), bool))})
        read[id(rows[-1])] = sub
    for r in rows:   # the run each row's task was measured on, in the rows its test read: "100 iterations, Brax's"
        r["run"] = run_words(part[read[id(r)] & part.task.isin(str(r["task"]).split(" − ")).to_numpy()])
    if not rows:   # measured, but nothing the claim's test can read (e.g. no Humanoid to rank the tasks against)
        rows.append({**{c: np.nan for c in COLUMNS}, "paper": claim.paper, "family": claim.family, "role": claim.role,
                     "claim": claim.key, "level": "", "where": claim.where, "task": "/".join(sorted(set(part.task))),
                     "label": "/".join(sorted(set(part.label))), "estimate": "", "agents": 0, "agree": "",
                     "test": claim.rule(), "verdict": NOT_HERE, "scope": "exploratory",
                     "why": f"the paper's tasks: {'/'.join(claim.scope.tasks)}"
                            + (" (Humanoid beside an easier task)" if claim.versus == "tasks" else "")})
    return rows


def evaluate(evidence, claims=None, paper: str | None = None):
    """Every claim (of ``paper``, default both) whose evidence was measured: per task and algorithm (or compared
    pair) the estimate, its interval and coverage, the agents, how many agree, the verdict, whether it was
    measured where the paper made it (``scope``: paper / exploratory, ``why``) and its one-sided p-values.
    ``evidence``: a DataFrame with columns evidence, task, label, agent, value (one row per measurement) and,
    where a claim reads them, iteration, progress, lr_share and pairs.

    Args:
        evidence: the measurements, one row each (above).
        claims: the claims to test; None: every claim of ``paper``.
        paper: ``"CL"`` or ``"IM"``; None: both.

    Returns:
        A DataFrame with one row per claim, task and algorithm (or pair).
    """
    import pandas as pd

    rows = []
    for claim in claims if claims is not None else CLAIMS:
        if paper is None or paper in claim.paper.split():
            rows += _claim_rows(claim, evidence)
    return pd.DataFrame(rows, columns=COLUMNS)


__all__ = ["CLAIMS", "COLUMNS", "COMPLEXITY", "ESTIMANDS", "Estimand", "KINDS", "MEANS", "MIN_AGENTS", "NOT_HERE",
           "SHIFT", "VERDICTS", "agrees", "by_key", "evaluate", "in_window", "per_agent"]
