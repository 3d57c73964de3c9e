"""Sample sizes: the grids of N the studies estimate at, the papers' own, and the largest allowed."""

from __future__ import annotations

import math

#: 2^24: the largest count a float32 mean update keeps exact.
MAX_PAIRS = 2 ** 24


def log_sizes(lo: float, hi: float, per_decade: int = 3) -> tuple:
    """A log grid lo … hi with ``per_decade`` points per decade."""
    a, b = math.log10(lo), math.log10(hi)
    k = int(round((b - a) * per_decade))
    return tuple(sorted({int(round(10 ** (a + i * (b - a) / k))) for i in range(k + 1)}))


#: A true gradient from at least this many times the largest N: CL Fig 3 takes it from ten million pairs
#: against estimates up to 1e6 (CL §5.1). Studies record the ratio they reached (``true_ratio``).
TRUE_RATIO = 10

#: The papers' N per study (state–action pairs; ref §4.2): the gradient and step figures (CL Figs 2/3) 1e2 … 1e6
#: at three points per decade; the baseline figure (CL Fig 5) its linear axis 0 … 1e4 with the log grid 1e2 … 1e4;
#: the landscapes (CL Figs 6/7) 2K/20K/100K pairs per point (concentration) and 1e6 (surrogate).
PAPER_SIZES = {
    "gradients": log_sizes(1e2, 1e6),
    "baselines": tuple(sorted(set(range(1_000, 10_001, 1_000)) | set(log_sizes(1e2, 1e4)))),
    "landscape-concentration": (2_000, 20_000, 100_000),
    "landscape-surrogate": (1_000_000,),
}

__all__ = ["MAX_PAIRS", "PAPER_SIZES", "TRUE_RATIO", "log_sizes"]
