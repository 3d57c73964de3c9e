"""Where the paper made a claim, read off evidence rows: the tasks, the point of training, the sample sizes, and the
experiment — the run's length and its models ([`Scope`][pgdiag.experiments.paper_claims.Scope]). A row outside is
*exploratory*: [`claims`][pgdiag.experiments.claims] shows it with the reason, never as a verdict."""

from __future__ import annotations

import numpy as np

from pgdiag.experiments.paper_claims import MODELS, RUN_LENGTH_TOLERANCE, WINDOWS

#: "later in training" (CL's iteration 300 of 488: 0.61 through the run); an annealed LR's share still ≥ 0.25
LATER, LR_SHARE = (0.45, 0.75), 0.25
#: how the scope's checks about the experiment itself begin
EXPERIMENT = ("the paper's run:", "the paper's models:")


def column(part, name):
    """A column of evidence rows as floats (NaN where the rows do not have it)."""
    return part[name].to_numpy(np.float64) if name in part else np.full(len(part), np.nan)


def in_window(part, window: str) -> np.ndarray:
    """Which rows lie in the claim's point of training
    ([`pgdiag.experiments.paper_claims.WINDOWS`][pgdiag.experiments.paper_claims.WINDOWS]); a row whose checkpoint
    is not known is only in "whole"."""
    it, progress, share = column(part, "iteration"), column(part, "progress"), column(part, "lr_share")
    if window == "whole":
        return np.ones(len(part), bool)
    if window == "initial":
        return it == 0
    if window == "after-first":
        return it > 0
    if window == "later":
        return (progress >= LATER[0]) & (progress <= LATER[1]) & ~(share < LR_SHARE)
    if window == "stepping":
        return (it > 0) & (share >= LR_SHARE)
    raise ValueError(f"unknown window {window!r}")


def scope_mask(claim, part) -> tuple:
    """(in scope, {reason: rows meeting it}) per row: the tasks, the point of training, the sample sizes, the run's
    length and its models."""
    sc = claim.scope
    task_ok = part.task.isin(sc.tasks).to_numpy() if sc.tasks else np.ones(len(part), bool)
    pairs = column(part, "pairs")
    pairs_ok = np.isnan(pairs) & (sc.pairs == (0, float("inf"))) | (pairs >= sc.pairs[0]) & (pairs <= sc.pairs[1])
    checks = {f"the paper's tasks: {'/'.join(sc.tasks)}": task_ok,
              "the paper's point of training: " + WINDOWS[sc.window]: in_window(part, sc.window),
              f"the paper's sample sizes: {sc.sizes}": pairs_ok}
    if sc.iterations:   # a checkpoint of a shorter run is another point of training than the paper's
        its = column(part, "run_iterations")
        checks[f"{EXPERIMENT[0]} {sc.iterations} iterations"] = \
            np.abs(its - sc.iterations) <= RUN_LENGTH_TOLERANCE * sc.iterations
    if sc.model:
        models = part["model"].astype(str).to_numpy() if "model" in part else np.full(len(part), "")
        checks[f"{EXPERIMENT[1]} {MODELS.get(sc.model, sc.model)}"] = models == sc.model
    return np.logical_and.reduce(list(checks.values())), checks


def but_the_experiment(checks: dict) -> np.ndarray:
    """Rows meeting every part of the scope but the experiment (run length, models): where another experiment is
    read as the paper read its own — its figure's tasks, point of training and sample sizes."""
    parts = [ok for why, ok in checks.items() if not why.startswith(EXPERIMENT)]
    return np.logical_and.reduce(parts)


def missing(checks: dict, rows) -> str:
    """What a task's (or algorithm's) measurements lack: each part of the scope none of them meets, or, where
    each part is met by some, that none meets all."""
    lacking = [why for why, ok in checks.items() if not ok[rows].any()]
    return "; ".join(lacking) or "no measurement meets all of: " + "; ".join(checks)


def _models(part) -> list:
    return sorted({m for m in part.get("model", []) if isinstance(m, str) and m})


def run_words(part) -> str:
    """The run length and models of evidence rows, in words ("100 iterations, Brax's"; "" where not known)."""
    its, models = column(part, "run_iterations"), _models(part)
    words = ([f"{int(np.nanmax(its))} iterations"] if np.isfinite(its).any() else []) + \
        (["/".join(MODELS.get(m, m) for m in models)] if models else [])
    return ", ".join(words)


def measured_at(claim, part) -> str:
    """Where rows outside the paper's experiment were measured, in words: "at 100 of 488 iterations on Brax's
    hopper" ("" where the run length and models are the paper's, or not known)."""
    sc, words = claim.scope, []
    its, models = column(part, "run_iterations"), _models(part)
    if sc.iterations and np.isfinite(its).any():
        run = int(np.nanmax(its))
        if abs(run - sc.iterations) > RUN_LENGTH_TOLERANCE * sc.iterations:
            words.append(f"at {run} of {sc.iterations} iterations")
    if sc.model and models and models != [sc.model]:
        words.append("on " + "/".join(MODELS.get(m, m) for m in models) + " " + "/".join(sorted(set(part.task))))
    return " ".join(words)


__all__ = ["EXPERIMENT", "LATER", "LR_SHARE", "but_the_experiment", "column", "in_window", "measured_at", "missing",
           "run_words", "scope_mask"]
