"""Family-wise error control by a graph of hypotheses (Bretz, Maurer, Brannath & Posch 2009, "A graphical approach
to sequentially rejective multiple test procedures", Statistics in Medicine 28:586–604).

Each hypothesis j holds a share w_j of the level α (Σ w ≤ 1) and passes it on along the graph's edges once it is
rejected: G[j, k] is the fraction of j's share that goes to k (each row sums to ≤ 1). The procedure rejects any j
with p_j ≤ w_j α, moves its share, updates the graph (their Algorithm 1) and repeats. It is a shortcut of a closed
test whose every intersection is tested by a weighted Bonferroni test, so the chance of any false rejection is at
most α under any dependence of the p-values (their Theorem 1). Holm's step-down is the graph with equal shares and
every edge 1/(m − 1); a *gatekeeper* is a hypothesis whose edge to another is 1 and which holds that other's
whole share: the second is tested only after the first is rejected, at the level the first held.

The adjusted p-value of j (their §4, Algorithm 2 written for adjusted p-values): the smallest α at which the
procedure rejects j; j is rejected at α ⇔ its adjusted p-value ≤ α.
"""

from __future__ import annotations

import numpy as np


def _check(p, weights, transitions) -> tuple:
    p = np.asarray(p, np.float64).ravel()
    w = np.asarray(weights, np.float64).ravel()
    g = np.asarray(transitions, np.float64).reshape(p.size, p.size) if p.size else np.zeros((0, 0))
    if w.size != p.size:
        raise ValueError(f"weights has {w.size} entries for {p.size} p-values")
    if (w < 0).any() or w.sum() > 1 + 1e-12:
        raise ValueError(f"weights must be ≥ 0 and sum to ≤ 1, got {w.tolist()}")
    if (g < 0).any() or (g.sum(axis=1) > 1 + 1e-12).any() or np.diag(g).any():
        raise ValueError("transitions must be ≥ 0, zero on the diagonal, each row summing to ≤ 1")
    return p, w.copy(), g.copy()


def _pass_on(w: np.ndarray, g: np.ndarray, j: int, live: np.ndarray) -> None:
    """Remove hypothesis j: its share moves along its edges, and the edges through j are joined (Algorithm 1)."""
    others = live & (np.arange(w.size) != j)
    w[others] += w[j] * g[j, others]
    g_new = g.copy()
    for l in np.flatnonzero(others):
        denom = 1.0 - g[l, j] * g[j, l]
        for k in np.flatnonzero(others):
            g_new[l, k] = 0.0 if l == k or denom <= 0 else (g[l, k] + g[l, j] * g[j, k]) / denom
    g[:] = g_new
    w[j] = 0.0
    live[j] = False


def graph_adjusted(p, weights, transitions) -> np.ndarray:
    """The adjusted p-values of the graphical procedure: hypothesis j is rejected at family-wise level α exactly when
    its adjusted p-value is ≤ α (NaN p-values are never rejected: adjusted 1).

    Args:
        p: one p-value per hypothesis.
        weights: each hypothesis' initial share of α (≥ 0, summing to ≤ 1).
        transitions: G[j, k], the fraction of j's share passed to k when j is rejected (rows ≤ 1, diagonal 0).

    Returns:
        The adjusted p-values, in the order of ``p``.
    """
    p, w, g = _check(p, weights, transitions)
    p = np.where(np.isnan(p), 1.0, p)
    adjusted = np.ones(p.size)
    live, running = np.ones(p.size, bool), 0.0
    while live.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(live & (w > 0), p / w, np.inf)
        j = int(np.argmin(ratio))
        if not np.isfinite(ratio[j]):
            break            # what is left holds no share of α: never rejected
        running = max(running, float(ratio[j]))
        adjusted[j] = min(1.0, running)
        _pass_on(w, g, j, live)
    return adjusted


def holm_graph(m: int) -> tuple:
    """(weights, transitions) of Holm's step-down over ``m`` hypotheses as a graph."""
    g = np.full((m, m), 1.0 / (m - 1)) if m > 1 else np.zeros((m, m))
    np.fill_diagonal(g, 0.0)
    return np.full(m, 1.0 / m), g


def gatekept_holm(chains) -> tuple:
    """(weights, transitions, order) for findings tested by Holm, each followed by its stronger readings as
    gatekept hypotheses: ``chains`` lists, per finding, the number of hypotheses in its chain (1 for a finding
    without stronger readings). Each finding holds 1/m of α; rejected, its share passes wholly to its next reading
    (tested only then, at that share); the last of a chain passes its share to the other findings equally (Holm).
    ``order`` maps each hypothesis to (finding, depth) in the flattened order of the returned arrays."""
    m, order = len(chains), [(i, d) for i, n in enumerate(chains) for d in range(n)]
    size = len(order)
    w, g = np.zeros(size), np.zeros((size, size))
    heads = [order.index((i, 0)) for i in range(m)]
    for idx, (i, d) in enumerate(order):
        if d == 0:
            w[idx] = 1.0 / m
        if d + 1 < chains[i]:
            g[idx, order.index((i, d + 1))] = 1.0
        elif m > 1:
            for h in heads:
                if order[h][0] != i:
                    g[idx, h] = 1.0 / (m - 1)
    return w, g, order


__all__ = ["gatekept_holm", "graph_adjusted", "holm_graph"]
