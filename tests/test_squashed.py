"""The tanh-squashed Gaussian (Brax's NormalTanhDistribution; pgdiag.networks): its log-density right at the
bounds, its KL and its entropy, each against an independent float64 computation in the action's own space."""

import math

import jax.numpy as jnp
import numpy as np
import pytest

from pgdiag import networks


def normal_logpdf(u, mean, std):
    return -0.5 * ((u - mean) / std) ** 2 - math.log(std) - 0.5 * math.log(2 * math.pi)


def log_sech2(u):
    """log(1 − tanh²u) = log 4 − 2·logaddexp(u, −u), float64, exact for any u."""
    return math.log(4.0) - 2.0 * np.logaddexp(u, -u)


def squashed_logpdf(a, mean, std):
    """The action's density in its own space: N(atanh a)/(1 − a²), float64 (|a| < 1)."""
    return normal_logpdf(np.arctanh(a), mean, std) - np.log1p(-a * a)


@pytest.mark.parametrize("u", [-40.0, -20.0, -9.5, -3.0, 0.0, 2.0, 9.5, 20.0, 40.0])
def test_log_density_is_right_at_the_bounds(u):
    """Where float32 rounds tanh(u) to ±1 (|u| ≳ 9), atanh of the action is infinite; the log-density taken from
    u is the closed form to float32 rounding of its terms (≈ 1e-7 of u²/σ² and of 2|u|)."""
    mean, log_std = 0.5, math.log(0.8)
    got = float(networks.squashed_log_prob(jnp.float32([mean]), jnp.float32([log_std]), jnp.float32([u])))
    want = normal_logpdf(u, mean, 0.8) - log_sech2(u)
    assert math.isfinite(got)
    assert abs(got - want) <= 1e-6 * (abs(want) + 10)
    if abs(u) >= 20:
        assert abs(float(np.tanh(np.float32(u)))) == 1.0   # the naive path has nothing left to invert


GRID = np.linspace(-12, 12, 400_001)   # u-space quadrature, σ-units below; float64


def in_action_space(fn, mean, std):
    """∫ N(u; mean, std)·fn(a = tanh u) du by the trapezoid rule over mean ± 12σ, cut to |u| ≤ 15 where float64
    still inverts tanh (the mass cut off is below 1e-12 for the parameters here)."""
    u = np.linspace(max(mean - 12 * std, -15.0), min(mean + 12 * std, 15.0), GRID.size)
    weights = np.exp(normal_logpdf(u, mean, std))
    return np.trapezoid(weights * fn(np.tanh(u)), u)


@pytest.mark.parametrize("p,q", [((1.5, 0.6), (0.7, 0.9)), ((0.0, 1.0), (0.2, 0.5)), ((2.5, 0.2), (2.0, 0.3))])
def test_kl_is_the_gaussians_kl(p, q):
    """tanh is a bijection, so KL(π_p ‖ π_q) over actions equals the Gaussians' KL over u: checked against
    ∫ p(a) log p(a)/q(a) da with both densities computed in action space."""
    want = in_action_space(lambda a: squashed_logpdf(a, *p) - squashed_logpdf(a, *q), *p)
    got = float(networks.gaussian_kl(jnp.float32([p[0]]), jnp.float32([math.log(p[1])]),
                                     jnp.float32([q[0]]), jnp.float32([math.log(q[1])])))
    assert abs(got - want) <= 1e-5 * max(1.0, abs(want))


@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (1.5, 0.6), (3.0, 0.3), (0.0, 2.0), (-2.0, 1.5)])
def test_entropy_by_quadrature_matches_integration_in_action_space(mean, std):
    """H = −∫ p(a) log p(a) da in action space (float64, 400,001 points) against the Gauss–Hermite value. The
    32-point rule integrates log sech² of a Gaussian to ~1e-4 at σ ≤ 2 (its error falls with the smoothness of
    log sech² over the ±6σ its nodes span)."""
    want = -in_action_space(lambda a: squashed_logpdf(a, mean, std), mean, std)
    got = float(networks.squashed_entropy(jnp.float32([mean]), jnp.float32([math.log(std)])))
    assert abs(got - want) <= 2e-4 * max(1.0, abs(want))
