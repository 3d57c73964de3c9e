"""Shared output plumbing for the study modules: a headless pyplot, one way to save a figure, one to write a table.
On several processes ([`pgdiag.run.distributed`][pgdiag.run.distributed]) every process draws and process 0
writes."""

from __future__ import annotations

import os

import numpy as np

from pgdiag.run.distributed import is_lead, lead_writes


def pyplot():
    """matplotlib.pyplot, on the non-interactive Agg backend unless pyplot was already set up by its user
    (figures are written to files, often with no display; a notebook's inline backend must stay, or its own
    plots would no longer show)."""
    import sys

    import matplotlib
    # in a Jupyter kernel (ipykernel loaded) the default backend is the inline one, which also writes files
    if "matplotlib.pyplot" not in sys.modules and "ipykernel" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


#: the size of a figure's legend and of its panels' own text, in points: legible at the figures' widths
LEGEND_SIZE = 9
#: the most panels a figure puts side by side. The documentation's text column is about 700 px wide in a
#: 1,280-px window: two 4.2-inch panels (8.4 in) show 9-point text there at 9 × 700 / (8.4 × 72) ≈ 10 px, three
#: at 7 px, five at 4 px
MAX_COLUMNS = 2


def panels(rows: int, cols: int, width: float, height: float, columns: int = MAX_COLUMNS):
    """A figure of ``rows`` × ``cols`` panels of ``width`` × ``height`` inches, at most ``columns`` side by side:
    a row of more panels wraps onto further lines (each row starts a line of its own; the slots a wrapped row
    leaves empty are blank). Returns ``(fig, axes)``, ``axes[r, c]`` the panel of row ``r`` and column ``c``."""
    per = max(1, min(cols, columns))
    lines = -(-cols // per)
    fig, grid = pyplot().subplots(rows * lines, per, figsize=(width * per, height * rows * lines), squeeze=False)
    axes = np.empty((rows, cols), dtype=object)
    for r in range(rows):
        for k in range(lines * per):
            slot = grid[r * lines + k // per, k % per]
            if k < cols:
                axes[r, k] = slot
            else:
                slot.axis("off")
    return fig, axes


def save(fig, path: str, title: str = "", dpi: int = 110, title_size: int = 11, legend: bool = False) -> str:
    """Add the suptitle, lay out, write ``path`` (creating its directory) and close the figure. ``legend``: one
    legend for the whole figure, below its panels, from every panel's labelled artists (each label once), in
    place of the panels' own."""
    bottom = _figure_legend(fig) if legend else 0.0
    top = 1.0
    if title:
        import textwrap

        width = max(int(fig.get_figwidth() * 72 / (title_size * 0.55)), 30)   # characters a line holds
        title = "\n".join(textwrap.fill(line, width) for line in title.split("\n"))
        fig.suptitle(title, fontsize=title_size)
        # the panels start below the suptitle's lines (a fixed fraction overlaps a tall figure's first titles)
        top = max(1 - ((title.count("\n") + 1) * title_size * 1.45 + 10) / 72 / fig.get_figheight(), 0.5)
    fig.tight_layout(rect=(0, bottom, 1, top))
    if is_lead():
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path


def _figure_legend(fig) -> float:
    """Move the panels' legends into one below them; returns the fraction of the height it takes."""
    handles, labels = [], []
    for ax in fig.axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels and not label.startswith("_"):
                handles.append(h)
                labels.append(label)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if not labels:
        return 0.0
    ncol = min(len(labels), max(1, int(fig.get_figwidth() * 72 // 190)))
    rows = -(-len(labels) // ncol)
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=LEGEND_SIZE, frameon=False)
    return min((rows * LEGEND_SIZE * 1.6 + 8) / 72 / fig.get_figheight(), 0.4)


def band_floor(lows, floor: float) -> float:
    """The y axis' lower limit: ``floor``, or lower where an interval reaches below it (bands are drawn whole)."""
    low = np.nanmin(np.asarray(lows, np.float64)) if len(lows) else np.nan
    return float(min(floor, low - 0.05)) if np.isfinite(low) else floor


def robust_range(values, low: float = 1.0, high: float = 99.0):
    """A colour scale for ``values``: ``(vmin, vmax, clipped)`` — the full finite range, unless values lie far
    outside the ``low``–``high`` percentiles (more than that range again beyond them: a diverged point, an
    unstable policy's return), which then bound the scale and ``clipped`` counts the cells beyond."""
    v = np.asarray(values, dtype=float)
    finite = v[np.isfinite(v)]
    if finite.size == 0:
        return 0.0, 1.0, 0
    lo, hi = np.percentile(finite, [low, high])
    span = max(hi - lo, 1e-12 * max(abs(lo), abs(hi), 1.0))
    if finite.min() >= lo - span and finite.max() <= hi + span:
        return float(finite.min()), float(finite.max()), 0
    return float(lo), float(hi), int(np.sum((finite < lo) | (finite > hi)))


def write_table(df, path_stem: str, title: str, note: str) -> tuple[str, str]:
    """Write ``df`` as ``path_stem.csv`` and as a Markdown table with ``title`` and ``note`` (``path_stem.md``)."""
    cols = list(df.columns)
    lines = [f"# {title}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    lines += ["", note, ""]
    with lead_writes(f"table {os.path.basename(path_stem)}") as lead:  # the CLI reads it back
        if lead:
            write_csv(df, path_stem + ".csv", index=False)
            with open(path_stem + ".md", "w") as f:
                f.write("\n".join(lines))
    return path_stem + ".md", path_stem + ".csv"


def write_csv(df, path: str, **kwargs) -> str:
    """``df.to_csv(path, **kwargs)`` (creating its directory), in process 0 only."""
    if is_lead():
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        df.to_csv(path, **kwargs)
    return path


# --- the algorithms' names and colours in every figure ---------------------------------------------------

class _Named(dict):
    """A lookup with a default for names it does not list (a user's algorithm or preset)."""

    def __init__(self, known: dict, default):
        super().__init__(known)
        self.default = default

    def __missing__(self, key):
        return self.default(key)


LABELS = _Named({"ppo": "PPO", "ppo-m": "PPO-M", "ppo-noclip": "PPO-NoClip", "trpo": "TRPO", "trpo+": "TRPO+",
                 "ppo-kl": "PPO-KL", "npg": "NPG", "vpg": "VPG", "ppo-nobaseline": "PPO without a baseline"},
                lambda name: str(name).upper())
COLORS = _Named({"ppo": "tab:blue", "ppo-m": "tab:orange", "ppo-noclip": "tab:purple", "trpo": "tab:green",
                 "trpo+": "tab:red", "ppo-kl": "tab:cyan", "npg": "tab:olive", "vpg": "tab:brown",
                 "ppo-nobaseline": "tab:pink"},
                lambda name: "tab:gray")
