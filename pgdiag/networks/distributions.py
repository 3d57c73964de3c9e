"""The action distributions: the diagonal Gaussian over the policy's draw u, and Brax's tanh-squashed one.

Log-probabilities inside training and the diagnostics are those of u. For a tanh-squashed policy the action's
density differs by log|det ∂tanh(u)/∂u|, a term free of the parameters: ratios, gradients and KL divergences are
the same either way, and `squashed_log_prob` gives the action's own density.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

# --- Diagonal Gaussian (ref §1 "Actions", §2.7 KL formula) -----------------------

LOG_2PI = math.log(2.0 * math.pi)

def gaussian_log_prob(mean, log_std, action):
    z = (action - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * jnp.square(z) - log_std - 0.5 * LOG_2PI, axis=-1)

def gaussian_entropy(log_std):
    return jnp.sum(log_std + 0.5 * (1.0 + LOG_2PI), axis=-1)

def gaussian_kl(mean_p, log_std_p, mean_q, log_std_q):
    """KL(p ‖ q) per state, summed over action dimensions."""
    var_p, var_q = jnp.exp(2 * log_std_p), jnp.exp(2 * log_std_q)
    return jnp.sum(log_std_q - log_std_p + (var_p + jnp.square(mean_p - mean_q)) / (2 * var_q) - 0.5,
                   axis=-1)

# --- Tanh-squashed Gaussian (Brax's NormalTanhDistribution) -------------------------

def tanh_log_det_jacobian(u):
    """log|d tanh(u)/du| = log(1 − tanh²u) per dimension, written 2(log 2 − u − softplus(−2u)): exact where
    tanh(u) rounds to ±1 (|u| ≳ 9 in float32) and 1 − tanh²u to 0."""
    return 2.0 * (math.log(2.0) - u - jax.nn.softplus(-2.0 * u))

def squashed_log_prob(mean, log_std, u):
    """log density of the action a = tanh(u) (u drawn from the Gaussian): log N(u) − Σ log(1 − tanh²u).
    Taken from u, not from a: atanh(a) is infinite at the bounds that float32 rounds a large u to."""
    return gaussian_log_prob(mean, log_std, u) - jnp.sum(tanh_log_det_jacobian(u), axis=-1)

#: Gauss–Hermite nodes and weights (probabilists', for E over z ~ N(0, 1)) for the squashed entropy
_HERMITE = 32


def squashed_entropy(mean, log_std):
    """Entropy of a = tanh(u), u ~ N(mean, σ²): the Gaussian's entropy plus E[Σ log(1 − tanh²u)], the
    expectation by 32-point Gauss–Hermite quadrature per dimension (the dimensions are independent)."""
    z, w = np.polynomial.hermite_e.hermegauss(_HERMITE)
    z, w = jnp.asarray(z, jnp.float32), jnp.asarray(w / w.sum(), jnp.float32)
    u = mean[..., None] + jnp.exp(log_std)[..., None] * z            # [..., act, nodes]
    expected = jnp.sum(tanh_log_det_jacobian(u) * w, axis=-1)
    return gaussian_entropy(log_std) + jnp.sum(expected, axis=-1)
