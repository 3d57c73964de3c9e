"""Evidence from the landscape studies (CL §5.3)."""

from __future__ import annotations

import numpy as np

from pgdiag.experiments.evidence_rows import rows_of, with_point, with_unit


def landscape_evidence(concentration: dict, surrogate: dict) -> list:
    """Both landscape studies' evidence:
    [`concentration_evidence`][pgdiag.studies.landscape.evidence.concentration_evidence] and
    [`surrogate_evidence`][pgdiag.studies.landscape.evidence.surrogate_evidence]."""
    return concentration_evidence(concentration) + surrogate_evidence(surrogate)


def _plane_point(r, x: float, n) -> tuple:
    """(mean, se) of a plane's point (x, 0) at ``n`` pairs (NaN where the grid has none)."""
    at = r[(r.n == n) & np.isclose(r.x, x) & np.isclose(r.y, 0.0)]
    return (float(at["mean"].iloc[0]), float(at["se"].iloc[0])) if len(at) else (np.nan, np.nan)


def concentration_evidence(concentration: dict) -> list:
    """From concentration landscape studies, per plane of the algorithm's own step (CL Fig 6's construction: 1 on
    the step axis is the step taken, the points estimated at each N): how well the smallest N tells the step's
    point from the origin — |m(1, 0) − m(0, 0)| at the largest N over that difference's standard error at the
    smallest N — and how smooth the plane is at the largest N — the median standard error of a point over the
    spread of the point means there, their SD with the points' own noise taken out (√(SD² − median se²))."""
    rows = []
    for task, st in concentration.items():
        small, large = min(st.sizes), max(st.sizes)
        ret = st.returns[st.returns.step_pairs == st.returns.step_pairs.min()]
        for (label, run, agent, it), r in ret.groupby(["label", "run", "agent", "iteration"]):
            unit = {"label": label, "run": run, "agent": agent, "iteration": it}
            (m1, _), (m0, _) = _plane_point(r, 1.0, large), _plane_point(r, 0.0, large)
            (_, s1), (_, s0) = _plane_point(r, 1.0, small), _plane_point(r, 0.0, small)
            big = r[r.n == large]
            noise = float(np.nanmedian(big["se"]))
            signal = float(np.nanvar(big["mean"])) - noise ** 2
            rows.append({**unit, "evidence": "landscape_step_z_small", "pairs": small,
                         "value": abs(m1 - m0) / np.hypot(s1, s0) if np.hypot(s1, s0) > 0 else np.nan})
            rows.append({**unit, "evidence": "landscape_noise_ratio_large", "pairs": large,
                         "value": noise / np.sqrt(signal) if signal > 0 else np.inf})
        rows = rows if not rows else _framed(rows, task)
    return [r for r in rows if not np.isnan(r["value"])]


def _framed(rows: list, task: str) -> list:
    """Rows carrying run, agent and iteration as evidence rows with their point of training and ``run:agent``."""
    import pandas as pd

    done = [r for r in rows if "task" in r]
    todo = pd.DataFrame([r for r in rows if "task" not in r])
    if todo.empty:
        return done
    todo = with_point(with_unit(todo))
    return done + [{"evidence": r["evidence"], "task": task, "label": r["label"], "agent": r["unit"],
                    "value": float(r["value"]), "iteration": float(r["iteration"]), "progress": float(r["progress"]),
                    "lr_share": float(r["lr_share"]), "pairs": float(r["pairs"])} for r in todo.to_dict("records")]


def surrogate_evidence(surrogate: dict) -> list:
    """From surrogate landscape studies, per plane: the true return's change along the step in standard errors,
    for the step from the algorithm's own batch (``landscape_true_step_own``) and from the largest step sample
    (``landscape_true_step_many``, its ``pairs`` the step's)."""
    rows = []
    for task, st in surrogate.items():
        a = with_point(with_unit(st.agreement()))
        a = a.assign(z=a.true_step_change / a.true_step_change_se)
        own = a[a.step_pairs == a.step_pairs.min()]
        rows += rows_of("landscape_true_step_own", task, own, "z", "unit")
        if a.step_pairs.max() != a.step_pairs.min():
            many = a[a.step_pairs == a.step_pairs.max()]
            rows += rows_of("landscape_true_step_many", task, many.assign(pairs=many.step_pairs), "z", "unit")
    return [r for r in rows if not np.isnan(r["value"])]


__all__ = ["landscape_evidence", "concentration_evidence", "surrogate_evidence"]
