"""The claims' evidence rows — one per measurement: evidence, task, label, agent, value, and where it was made
(iteration, progress, lr_share, pairs) — and what every study's evidence extractor shares.

Each study's extractor (`pgdiag.studies.<study>.evidence`) is a pure function of the tables the
study saves, tested on constructed tables with answers worked out by hand (tests/test_evidence.py). `agent`
names the independent unit: the trained agent ([`claims`][pgdiag.experiments.claims] makes one value of an
agent's rows), or for the ablation the seed. Every checkpoint is kept, the initial policy's too: which ones a
claim reads is its scope ([`paper_claims.Scope`][pgdiag.experiments.paper_claims.Scope]), decided in
[`claims`][pgdiag.experiments.claims] from `iteration`, `progress` (iteration over the run's iterations) and
`lr_share` (the annealed learning rate's share of its start there; 1 without annealing); `pairs` is the sample
size a row rests on where a claim's scope names one.
"""

from __future__ import annotations

import functools

import numpy as np

from pgdiag.diagnostics import tables as diag_tables
from pgdiag.config import Config
from pgdiag.run.store import read_manifest


#: the columns of every evidence row; ``run_iterations`` and ``model`` (the run's length and MuJoCo models, which
#: the report adds per study and task: [`experiment_of`][pgdiag.experiments.evidence_rows.experiment_of]) say whether
#: it is the paper's experiment
COLUMNS = ["evidence", "task", "label", "agent", "value", "iteration", "progress", "lr_share", "pairs",
           "run_iterations", "model"]


def rows_of(evidence: str, task: str, frame, value: str, agent: str = "agent", pairs=None) -> list:
    """Rows of ``frame``; its iteration, progress and lr_share go along where it has them."""
    out = []
    for r in frame.to_dict("records"):
        row = {"evidence": evidence, "task": task, "label": r["label"], "agent": str(r[agent]),
               "value": float(r[value])}
        for key in ("iteration", "progress", "lr_share"):
            if key in r:
                row[key] = float(r[key])
        if pairs is not None or "pairs" in r:
            row["pairs"] = float(r["pairs"] if pairs is None else pairs)
        out.append(row)
    return out


def experiment_of(from_dir: str) -> dict:
    """{task: (iterations, model)} of the runs a study lists (its record's ``runs``): the longest run's iterations
    and the model name where every run of the task has one model ("mixed" where they differ); {} where the study
    lists no run directories (or they cannot be read)."""
    import json
    import os

    from pgdiag.experiments.study_dir import STUDY_FILE

    try:
        with open(os.path.join(from_dir, STUDY_FILE)) as f:
            runs = json.load(f).get("runs") or {}
    except (OSError, ValueError):
        return {}
    out = {}
    for task, names in runs.items():
        seen = []
        for name in names:
            try:
                base = Config.from_dict(read_manifest(os.path.join(from_dir, name))["base_config"])
            except (OSError, KeyError, ValueError):
                continue
            seen.append((int(base.num_iterations), str(base.static.model)))
        if seen:
            models = {m for _, m in seen}
            out[task] = (max(i for i, _ in seen), models.pop() if len(models) == 1 else "mixed")
    return out


def with_unit(frame):
    """A unit id unique across run directories: ``run:agent``."""
    return frame.assign(unit=frame["run"].astype(str) + ":" + frame["agent"].astype(str))


@functools.lru_cache(maxsize=512)
def _schedule(run: str) -> dict:
    """{agent: (iterations of its run, whether its learning rate anneals)} from a run directory's manifest."""

    manifest = read_manifest(run)
    base = Config.from_dict(manifest["base_config"])
    points = [base.replace(**p) for p in manifest.get("grid_points") or [{}]]
    return {i: (int(c.num_iterations), bool(c.get("lr_annealing", False)))
            for i, c in ((i, points[a["point"]]) for i, a in enumerate(manifest["agents"]))}


def training_point(iteration, iterations, anneals):
    """(progress, lr_share) at ``iteration`` of a run of ``iterations``: the fraction of the run behind it, and the
    learning rate's share of its start (IM opt. 4: lr₀·(1 − k/K) when annealed; 1 otherwise)."""
    it, total = np.asarray(iteration, np.float64), np.asarray(iterations, np.float64)
    progress = it / total
    return progress, np.where(np.asarray(anneals, bool), np.clip(1.0 - progress, 0.0, 1.0), 1.0)


def with_point(frame):
    """``frame`` (with run, agent, iteration columns) with each row's progress and lr_share; a run whose manifest
    cannot be read gives NaN (its rows are then outside every window but "whole")."""
    total, anneals = [], []
    for run, agent in zip(frame["run"].astype(str), frame["agent"].astype(int)):
        try:
            k, a = _schedule(run)[agent]
        except (OSError, KeyError, ValueError, IndexError):
            k, a = np.nan, False
        total.append(k)
        anneals.append(a)
    progress, share = training_point(frame["iteration"].to_numpy(), np.asarray(total, np.float64), anneals)
    return frame.assign(progress=progress, lr_share=share)


def crossing_ratio(n, cosine, level: float, batch: int) -> float:
    """The N at which the cosine reaches ``level`` — log-linearly interpolated between the grid points around the
    crossing, as the studies' summaries
    ([`pgdiag.diagnostics.tables.crossing`][pgdiag.diagnostics.tables.crossing]) — over the batch size; +inf when
    none does (the unit keeps its rank in the median: it needed more than the grid holds). The grid point at or
    above the crossing instead would move a "> 3×" rule to wherever the grid has its next point (with the paper's
    sizes, any crossing above 2.27× the batch read as 4.9×)."""
    n, c = np.asarray(n, np.float64), np.asarray(cosine, np.float64)
    order = np.argsort(n)
    at = diag_tables.crossing(n[order], c[order], level)
    return float(at / batch) if np.isfinite(at) else float("inf")


__all__ = ["COLUMNS", "crossing_ratio", "experiment_of", "rows_of", "training_point", "with_point", "with_unit"]
