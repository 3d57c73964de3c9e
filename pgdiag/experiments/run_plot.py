"""``pgdiag plot RUN_DIR --metric NAME``: any recorded metric of a run against iterations, one curve per
grid point (or label), the mean over seeds with its 95% Student-t band."""

from __future__ import annotations

import os

import numpy as np

from pgdiag.config import ConfigError
from pgdiag.experiments import figures
from pgdiag.run import load_run
from pgdiag.stats import t_interval
from pgdiag.metrics import METRICS


def point_names(run) -> dict:
    """Grid point -> a legend entry: its label, or its knob values, or the run's label."""
    m = run.manifest
    labels = m.get("labels") or []
    names = {}
    for i, point in enumerate(m["grid_points"] or [{}]):
        if labels:
            names[i] = labels[i]
        elif point:
            names[i] = ", ".join(f"{k}={v}" for k, v in point.items())
        else:
            names[i] = m.get("label", "run")
    return names


def curves(run, metric: str):
    """Per grid point and iteration: the mean of ``metric`` over seeds with its 95% Student-t interval (the
    seeds are the independent units; a bootstrap of 2–5 seeds covers far less than 95%) and the seed count
    (iterations where it was not measured, NaN for every seed, are left out)."""
    import pandas as pd

    rows = []
    for (point, it), part in run.metrics.groupby(["point", "iteration"], sort=True):
        values = part[metric].to_numpy(np.float64)
        if not np.isfinite(values).any():
            continue
        mean, low, high = t_interval(values)[:3]
        rows.append({"point": point, "iteration": it, "mean": mean, "low": low, "high": high,
                     "seeds": int(np.isfinite(values).sum())})
    return pd.DataFrame(rows, columns=["point", "iteration", "mean", "low", "high", "seeds"])


def check_figure_path(out: str) -> None:
    """``out`` names a figure file matplotlib can write (by its ending) that is not a directory."""
    from matplotlib.backend_bases import FigureCanvasBase

    endings = sorted(FigureCanvasBase.get_supported_filetypes())
    if os.path.isdir(out) or os.path.splitext(out)[1].lower().lstrip(".") not in endings:
        raise ConfigError(f"--out {out!r}: give a figure file ending in one of "
                          f"{', '.join('.' + e for e in endings)}")


def plot(run_dir: str, metric: str, out: str | None = None) -> str:
    """Draw ``metric`` of the run in ``run_dir`` to ``out`` (default RUN_DIR/plots/METRIC.png)."""
    try:
        run = load_run(run_dir)
    except FileNotFoundError as e:
        raise ConfigError(str(e)) from None
    recorded = run.manifest.get("metrics", METRICS)   # the shared metrics and the algorithm's own
    if metric not in recorded:
        raise ConfigError(f"unknown metric {metric!r}; recorded metrics are: {', '.join(recorded)}")
    if out is not None:
        check_figure_path(out)
    cur = curves(run, metric)
    if cur.empty:
        raise ConfigError(f"{metric!r} was not measured in {run_dir!r} (NaN at every iteration); held-out "
                          f"metrics need heldout_every > 0, exact ones the LQR task")
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    names = point_names(run)
    for point, part in cur.groupby("point"):
        line, = ax.plot(part.iteration, part["mean"], lw=1.4, label=names.get(point, str(point)))
        ax.fill_between(part.iteration, part.low, part.high, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("iteration")
    ax.set_ylabel(metric)
    seeds = int(cur.seeds.max())
    ax.legend(fontsize=7, title=f"mean over {seeds} seed{'s' if seeds > 1 else ''}, 95% CI", title_fontsize=7)
    out = out or os.path.join(run_dir, "plots", f"{metric}.png")
    return figures.save(fig, out, f"{run.manifest.get('label', '')}: {metric}")
