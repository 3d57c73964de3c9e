"""PPO's surrogate, value loss and advantage normalization on fixed inputs (worked by hand)."""

import math

import jax.numpy as jnp
import numpy as np
import pytest

from pg_diag.config import Knobs
from pg_diag.ppo import normalize_advantages, ppo_surrogate_loss, value_loss

RATIOS = np.array([1.5, 0.5, 1.1])
ADV = jnp.array([1.0, -1.0, 2.0])


def test_clipped_surrogate_by_hand():
    """ε = 0.2: min(1.5·1, 1.2·1) = 1.2; min(0.5·−1, 0.8·−1) = −0.8; min(2.2, 2.2) = 2.2;
    loss = −(1.2 − 0.8 + 2.2)/3."""
    loss, ratio = ppo_surrogate_loss(jnp.log(RATIOS), jnp.zeros(3), ADV, 0.2)
    assert float(loss) == pytest.approx(-(1.2 - 0.8 + 2.2) / 3, rel=1e-6)
    np.testing.assert_allclose(ratio, RATIOS, rtol=1e-6)


@pytest.mark.parametrize("eps", [math.inf, 1e32])
def test_no_clip_surrogate_is_plain_importance_weighted_advantage(eps):
    loss, _ = ppo_surrogate_loss(jnp.log(RATIOS), jnp.zeros(3), ADV, eps)
    assert float(loss) == pytest.approx(-(1.5 - 0.5 + 2.2) / 3, rel=1e-6)


def test_clipped_surrogate_gradient_vanishes_outside_the_clip_region():
    import jax
    # ratio 1.5 with positive advantage is clipped: no gradient through that sample
    g = jax.grad(lambda lp: ppo_surrogate_loss(lp, jnp.zeros(3), ADV, 0.2)[0])(jnp.log(RATIOS))
    # d/dlogp of −r·A/3 = −r·A/3 where unclipped
    np.testing.assert_allclose(g, [0.0, 0.0, -1.1 * 2.0 / 3], atol=1e-7)


V = jnp.array([1.0, 2.0, 0.0])
V_OLD = jnp.array([0.5, 2.1, 0.0])
TARGETS = jnp.array([2.0, 1.0, 5.0])
MASK = jnp.array([True, True, False])  # the last sample is a done step: excluded


def test_value_loss_clipped_takes_max_of_squared_errors():
    """ε_v = 0.2. Sample 0: unclipped (1−2)² = 1, clipped (0.5 + 0.2 − 2)² = 1.69 → 1.69.
    Sample 1: unclipped (2−1)² = 1, clipped (2.1 − 0.1 − 1)² = 1 → 1. Mean over the
    two non-terminal samples = 1.345."""
    k = Knobs(value_clipping=True, value_clip_eps=0.2).as_arrays()
    assert float(value_loss(V, V_OLD, TARGETS, MASK, k)) == pytest.approx(1.345, rel=1e-6)


def test_value_loss_unclipped_and_masking():
    k = Knobs(value_clipping=False).as_arrays()
    assert float(value_loss(V, V_OLD, TARGETS, MASK, k)) == pytest.approx(1.0, rel=1e-6)
    assert float(value_loss(V, V_OLD, TARGETS, jnp.zeros(3, bool), k)) == 0.0


def test_advantage_normalization_uses_unbiased_std():
    # mean 2.5, unbiased std √(5/3)
    out = normalize_advantages(jnp.array([1.0, 2.0, 3.0, 4.0]))
    s = math.sqrt(5 / 3)
    np.testing.assert_allclose(out, [-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s], rtol=1e-6)
