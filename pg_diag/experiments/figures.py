"""Shared output plumbing for the study modules: a headless pyplot, one way to save a figure, one to write a
table. On several processes (:mod:`pg_diag.run.distributed`) every process draws and process 0 writes."""

from __future__ import annotations

import os

from pg_diag.run.distributed import is_lead, lead_writes


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


def save(fig, path: str, title: str = "", dpi: int = 110, title_size: int = 11) -> str:
    """Add the suptitle, lay out, write ``path`` (creating its directory) and close the figure."""
    if title:
        fig.suptitle(title, fontsize=title_size)
    fig.tight_layout()
    if is_lead():
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path


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
