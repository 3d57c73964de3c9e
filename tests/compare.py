"""Comparing two runs (or studies) that two *different* compiled programs computed.

Bitwise equality holds only where one compiled program computes both sides at the same shapes. A loop over
2 agents and a loop over 3, a program sharded over 2 devices and one on 1, or a vmapped and an unbatched
program are different programs: XLA fuses, vectorizes and orders their sums differently (and differently again
on another CPU's instruction set), so their float32 results may differ in the last bits, and training carries
those differences forward. The tolerances here follow from that:

* ``RTOL`` = 1e-4, relative to the scale of the whole column (or array): a few units of float32 roundoff
  (2^-24 ≈ 6e-8) at the start, amplified by the few optimizer steps of a test-sized run, stay below 1e-5; a
  different agent, seed, knob or iteration changes a column by ≥ 1e-2 of its scale.
* Quantities computed by cancellation carry an *absolute* error set by the terms that cancel, not by their
  result: the Gaussian KL sums, per action dimension, log σ₂/σ₁ + (σ₁² + Δμ²)/(2σ₂²) − 1/2, terms of order 1,
  so its float32 error is up to ~4 · dims · 2^-24 ≈ 4e-6 for a 17-dimensional action, whatever the KL; PPO's
  loss is a mean of normalized advantages (terms of order 1) that nearly cancel. ``CANCELLING_ATOL`` = 1e-5.
* Integer and boolean columns (episode counts, flags) are compared exactly.
* The normalizer's running statistics are double-float pairs hi + lo (pgdiag.normalize.RunningStat): a lo
  part is a rounding residue of its hi part and may differ entirely between programs, so it is held to the
  scale of its hi part (the pair's value agrees to ``RTOL``), not to its own.
* A mean relative error (``*_mre_*``, CL §5.2) averages |V − R| / |R| over states whose target R can come
  arbitrarily close to 0 (a return truncated after one step's reward, a state near balance): perturbing V and
  R by δ moves a term by about (1 + its value) · δ / |R|, so the condition number is scale(R) / min |R| over
  the batch, which no a-priori bound limits (a factor ~10 was seen between two programs on one CPU). Such
  columns are held to ``ILL_CONDITIONED_RTOL`` = 2e-2 of each value here — a wrong batch, agent or
  iteration moves them by O(1) — and bitwise wherever one program computes both sides (tests/test_sweep.py).
"""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd

RTOL = 1e-4
CANCELLING_ATOL = 1e-5
CANCELLING = ("kl", "policy_loss", "surrogate", "unclipped")
ILL_CONDITIONED = ("mre",)
ILL_CONDITIONED_RTOL = 2e-2


def assert_frames_close(a: pd.DataFrame, b: pd.DataFrame, rtol: float = RTOL, exact: tuple = ()):
    """Same rows and columns; non-float columns (and those named in ``exact``) equal, float columns within
    ``rtol`` of the column's scale (plus ``CANCELLING_ATOL`` for quantities computed by cancellation)."""
    assert list(a.columns) == list(b.columns) and len(a) == len(b) > 0
    floats = [c for c in a.columns if a[c].dtype.kind == "f" and c not in exact]
    pd.testing.assert_frame_equal(a.drop(columns=floats), b.drop(columns=floats), check_exact=True)
    for c in floats:
        x, y = a[c].to_numpy(np.float64), b[c].to_numpy(np.float64)
        np.testing.assert_array_equal(np.isnan(x), np.isnan(y), err_msg=c)
        scale = np.nanmax(np.abs(y)) if np.isfinite(y).any() else 0.0
        if any(k in c for k in ILL_CONDITIONED):  # each value to its own size: their sizes differ by 100x
            np.testing.assert_allclose(x, y, rtol=max(rtol, ILL_CONDITIONED_RTOL), err_msg=c, equal_nan=True)
            continue
        atol = rtol * scale + (CANCELLING_ATOL if any(k in c for k in CANCELLING) else 0.0)
        np.testing.assert_allclose(x, y, rtol=0, atol=max(atol, np.finfo(np.float32).tiny), err_msg=c,
                                   equal_nan=True)


def assert_trees_close(a, b, rtol: float = RTOL):
    """Leaf by leaf: integer and boolean leaves equal, float leaves within ``rtol`` of the leaf's largest
    magnitude (norm-wise, so entries near 0 are held to the leaf's scale); a double-float ``*_lo`` leaf within
    ``rtol`` of its ``*_hi`` sibling's."""
    la = jax.tree_util.tree_leaves_with_path(a)
    lb = jax.tree.leaves(b)
    assert len(la) == len(lb)
    names = [jax.tree_util.keystr(path) for path, _ in la]
    by_name = {n: np.asarray(y) for n, y in zip(names, lb)}
    for name, (_, x), y in zip(names, la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, name
        if x.dtype.kind != "f":
            np.testing.assert_array_equal(x, y, err_msg=name)
            continue
        ref = by_name.get(name[:-3] + "_hi", y) if name.endswith("_lo") else y
        scale = float(np.nanmax(np.abs(ref))) if ref.size and np.isfinite(ref).any() else 0.0
        np.testing.assert_allclose(x, y, rtol=0, atol=max(rtol * scale, np.finfo(np.float32).tiny), equal_nan=True,
                                   err_msg=name)


#: the healthy-range edges a task's termination compares its observations with: {observation index: edges}
#: (Hopper's z and torso angle are obs[0] and obs[1], Humanoid's z obs[0]; pgdiag/envs/mujoco_tasks.py).
#: Hopper's |state| ≥ 100 edge reads velocities the observation clips at ±10, so it cannot be excused here;
#: no test's horizon comes near it.
TERMINATION_EDGES = {"hopper": {0: (0.7,), 1: (-0.2, 0.2)}, "walker2d": {0: (0.8, 2.0), 1: (-1.0, 1.0)},
                     "humanoid": {0: (1.0, 2.0)}}


def assert_terminations_match(task: str, obs, done_a, done_b, tol: float, most_edges: int = 2):
    """Terminations of two physics computations whose observations agree to ``tol`` are equal wherever no
    terminating observation lies within ``tol`` of its edge: there the two may legitimately fall on either
    side (a float32 and a float64 integration, or one float32 program on two CPUs). At most ``most_edges``
    such steps are excused, so the comparison cannot be emptied."""
    obs = np.asarray(obs)
    edge = np.zeros(np.shape(done_a), bool)
    for i, edges in TERMINATION_EDGES[task].items():
        for e in edges:
            edge |= np.abs(obs[..., i] - e) < tol
    assert edge.sum() <= most_edges, f"{edge.sum()} steps within {tol} of a termination edge"
    np.testing.assert_array_equal(np.asarray(done_a)[~edge], np.asarray(done_b)[~edge])
