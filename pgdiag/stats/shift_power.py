"""What an inconclusive comparison of two groups could have seen: the relative effect, and the shift of normal
agents in SDs, that [`shift_p`][pgdiag.stats.shift_p] detects with probability 0.8 at the group sizes.

Unit of independence and simulated power: [`pgdiag.stats`][pgdiag.stats]."""

from __future__ import annotations

import math
from statistics import NormalDist

from pgdiag.stats.shifts import smallest_shift_p


def _normal_shift_power(p: float, na: int, nb: int, alpha: float) -> float:
    """The rank test's power at relative effect ``p`` = P(A > B) between normal agents of a common SD: p̂ is
    rejected above ½ + z_{1−α}·σ₀ (σ₀² = (na + nb + 1)/(12·na·nb), its variance under the null) and is
    ≈ N(p, σ₁²) with σ₁² = (p(1 − p) + (na + nb − 2)(q − p²))/(na·nb), q = P(A > B₁, A > B₂)
    = Φ₂(h, h; ½) = Φ(h) − 2·T(h, 1/√3) (Owen's T), h = Φ⁻¹(p)."""
    from scipy import special

    z, s0 = NormalDist().inv_cdf(1.0 - alpha), math.sqrt((na + nb + 1) / (12.0 * na * nb))
    h = NormalDist().inv_cdf(p)
    q = p - 2.0 * float(special.owens_t(h, 1.0 / math.sqrt(3.0)))
    v1 = (p * (1.0 - p) + (na + nb - 2) * (q - p * p)) / (na * nb)
    gap = p - 0.5 - z * s0
    return (1.0 if gap > 0 else 0.0) if v1 <= 0.0 else NormalDist().cdf(gap / math.sqrt(v1))


def shift_power_effect(na: int, nb: int, alpha: float, power: float = 0.8) -> float:
    """The relative effect P(A > B) that shift_p at one-sided level ``alpha`` detects with probability
    ``power`` at ``na`` v ``nb`` agents, from the normal approximation of the rank statistic p̂: the critical
    value from its null variance (Noether: ½ + z_{1−α}·√((na + nb + 1)/(12·na·nb))), its spread at the effect
    from its variance there for normal agents (_normal_shift_power; solved by bisection). 1.0 where the
    test cannot reach ``alpha`` (smallest_shift_p > alpha, e.g. 3 v 3 at 0.025). What a report prints for an
    inconclusive comparison: "detects P(A > B) ≥ 0.85 (a 1.5-SD shift of normal agents) with probability 0.8"
    (7 v 7, α = 0.05). Simulated power of shift_p there (normal agents, 4,000 draws): 0.81 / 0.80 / 0.81 / 0.80
    at 5 / 7 / 8 / 16 per group; at the same P(A > B) 0.75–0.78 for lognormal agents, 0.80–0.82 for
    lognormal v narrower lognormal (benchmarks/groups_power.py). Noether's
    formula with the null variance on both sides (p = ½ + (z_{1−α} + z_power)·σ₀) names larger effects, detected
    with probability 0.99 / 0.92 / 0.90 / 0.84 at those sizes, not 0.8."""
    if smallest_shift_p(na, nb) > alpha:
        return 1.0
    lo, hi = 0.5, 1.0
    if _normal_shift_power(1.0 - 1e-12, na, nb, alpha) < power:
        return 1.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _normal_shift_power(mid, na, nb, alpha) < power else (lo, mid)
    return hi


def shift_power_sd(na: int, nb: int, alpha: float, power: float = 0.8) -> float:
    """shift_power_effect as a shift between normal agents of a common SD, in units of that SD:
    δ = √2·Φ⁻¹(P(A > B)) (P(A > B) = Φ(δ/√2) for A ~ N(δ, 1), B ~ N(0, 1)); inf when that effect is 1.
    One-sided 0.05, power 0.8: 1.8 SD at 5 v 5, 1.5 at 7 v 7, 1.4 at 8 v 8, 0.93 at 16 v 16."""
    p = shift_power_effect(na, nb, alpha, power)
    return math.inf if p >= 1.0 else math.sqrt(2.0) * NormalDist().inv_cdf(p)
