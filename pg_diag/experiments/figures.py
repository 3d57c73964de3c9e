"""Shared figure plumbing for the study modules: a headless pyplot and one way to save."""

from __future__ import annotations

import os


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (figures are written to files, often with no display)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, path: str, title: str = "", dpi: int = 110, title_size: int = 11) -> str:
    """Add the suptitle, lay out, write ``path`` (creating its directory) and close the figure."""
    if title:
        fig.suptitle(title, fontsize=title_size)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path
