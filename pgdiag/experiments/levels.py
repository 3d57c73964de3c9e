"""The levels the claims' words mean, each derived for the statistic it is applied to.

A gradient (or step) estimate from N pairs is ĝ = g + e with E|e|² = tr Σ / N. Its noise-to-signal energy ratio
is ρ = tr Σ / (N |g|²). With many parameters the cross terms g·e and e₁·e₂ are small against |g|² and |e|², so

* the **pairwise cosine** of two independent estimates is c ≈ |g|² / (|g|² + tr Σ/N) = 1 / (1 + ρ);
* the **cosine to the gradient itself** is cos(ĝ, g) ≈ |g| / √(|g|² + tr Σ/N) = 1/√(1 + ρ) = √c.

A "true" gradient from T pairs is itself g + e_T: the cosine of an estimate to it is ≈ cos(ĝ, g) · κ, with κ its own
cosine to g (its *ceiling*,
[`pgdiag.studies.gradients.measure.truth_ceiling`][pgdiag.studies.gradients.measure.truth_ceiling], from
its split-half cosine). The claims read the cosine to the truth over κ, so a level on cos(ĝ, g) applies to it
unchanged.

The words: "poorly concentrated" / "far from the true gradient" — the noise's energy exceeds the signal's,
ρ > 1; "virtually uncorrelated" — the noise carries at least four times the signal's energy, ρ ≥ 4. A level on
the pairwise cosine is never carried over to the cosine to the truth (at ρ = 4 the first is 0.2 and the second
0.447). Tested: gradients drawn with a known ρ switch each rule at its stated ratio (tests/test_claims.py).
"""

from __future__ import annotations

import math

#: ρ where the noise's energy equals the signal's: "poorly concentrated", "far from the true gradient"
NOISE_EQUALS_SIGNAL = 1.0
#: ρ where the noise carries four times the signal's energy: "virtually uncorrelated"
NOISE_FOUR_TIMES = 4.0


def pairwise_level(rho: float) -> float:
    """The pairwise cosine of two independent estimates whose noise-to-signal energy ratio is ``rho``."""
    return 1.0 / (1.0 + rho)


def to_gradient_level(rho: float) -> float:
    """The cosine of one estimate to the gradient it estimates (read as the cosine to a true gradient over
    that truth's ceiling) at noise-to-signal energy ratio ``rho``."""
    return 1.0 / math.sqrt(1.0 + rho)


def noise_ratio(pairwise_cosine):
    """ρ = 1/c − 1 from a pairwise cosine (the inverse of
    [`pairwise_level`][pgdiag.experiments.levels.pairwise_level]; +inf at c ≤ 0)."""
    import numpy as np

    c = np.asarray(pairwise_cosine, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(c > 0, 1.0 / c - 1.0, np.inf)


def largest_gap(ratio: float) -> float:
    """The largest gap in pairwise cosine two baselines can show when one's noise energy is ``ratio`` times the
    other's: with ρ the better one's, the gap 1/(1 + ρ) − 1/(1 + ratio·ρ) peaks at ρ = 1/√ratio, where it is
    (√ratio − 1)/(√ratio + 1). A gap below it at one N is what a ratio below ``ratio`` allows at any noise level."""
    r = math.sqrt(ratio)
    return (r - 1.0) / (r + 1.0)


def reason(rho: float, statistic: str = "pairwise") -> str:
    """The reason a level states: the noise-to-signal energy ratio it means, for its statistic."""
    if statistic == "pairwise":
        return (f"pairwise cosine c ≈ 1/(1 + ρ), ρ = tr Σ/(N|g|²) the noise-to-signal energy ratio: "
                f"{pairwise_level(rho):.3g} is ρ = {rho:g}")
    return (f"cosine to the gradient ≈ 1/√(1 + ρ) (the truth's cosine over its own ceiling): "
            f"{to_gradient_level(rho):.3g} is ρ = {rho:g}")


__all__ = ["NOISE_EQUALS_SIGNAL", "NOISE_FOUR_TIMES", "largest_gap", "noise_ratio", "pairwise_level", "reason",
           "to_gradient_level"]
