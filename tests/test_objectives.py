"""Every objective on fixed inputs, against numbers worked out by hand."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgdiag.config import Knobs
from pgdiag.objectives import (clipped_surrogate, entropy, kl, kl_stats, mean_relative_error, normalize_advantages,
                               original_gae_relative_error, probability_ratio, surrogate, value_loss)

RATIOS = np.array([1.5, 0.5, 1.1])
ADV = jnp.array([1.0, -1.0, 2.0])


def test_probability_ratio_is_exp_of_the_log_prob_difference():
    r = probability_ratio(jnp.array([0.0, math.log(3.0), -1.0]), jnp.array([0.0, 0.0, math.log(0.5)]))
    np.testing.assert_allclose(r, [1.0, 3.0, 2 * math.exp(-1.0)], rtol=1e-6)


def test_surrogate_by_hand():
    """CL eq. 15: (1.5·1 + 0.5·(−1) + 1.1·2)/3 = 3.2/3."""
    assert float(surrogate(jnp.asarray(RATIOS), ADV)) == pytest.approx(3.2 / 3, rel=1e-6)


def test_clipped_surrogate_by_hand():
    """ε = 0.2: min(1.5·1, 1.2·1) = 1.2; min(0.5·−1, 0.8·−1) = −0.8; min(2.2, 2.2) = 2.2;
    L^C = (1.2 − 0.8 + 2.2)/3. Clipped: |r − 1| > 0.2 for 1.5 and 0.5 → 2/3."""
    value, info = clipped_surrogate(jnp.asarray(RATIOS), ADV, 0.2)
    assert float(value) == pytest.approx((1.2 - 0.8 + 2.2) / 3, rel=1e-6)
    assert float(info.clip_fraction) == pytest.approx(2 / 3, rel=1e-6)


@pytest.mark.parametrize("eps", [math.inf, 1e32])
def test_no_clip_surrogate_is_the_plain_surrogate(eps):
    value, info = clipped_surrogate(jnp.asarray(RATIOS), ADV, eps)
    assert float(value) == pytest.approx(3.2 / 3, rel=1e-6)
    assert float(info.clip_fraction) == 0.0


def test_clipped_surrogate_gradient_vanishes_outside_the_clip_region():
    # ratio 1.5 with Â > 0 and ratio 0.5 with Â < 0 are clipped: no gradient through them;
    # d/dlog r of r·Â/3 = r·Â/3 for the unclipped third sample
    g = jax.grad(lambda lp: clipped_surrogate(probability_ratio(lp, jnp.zeros(3)), ADV, 0.2)[0])(jnp.log(RATIOS))
    np.testing.assert_allclose(g, [0.0, 0.0, 1.1 * 2.0 / 3], atol=1e-7)


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


def test_the_originals_gae_relative_error_by_hand():
    """ref §4.1 item 3: the per-sample value loss as configured over |target|, mean over non-terminal samples.
    Targets (2, 1, −2, 0, 5); sample 3's target is 0 (left out), sample 4 is a done step. Unclipped: squared
    errors 1, 1, 36 → 1/2, 1/1, 36/2 → (0.5 + 1 + 18)/3 = 6.5. Clipped, ε_v = 0.2: sample 0 takes
    (0.5 + 0.2 − 2)² = 1.69 → 0.845; sample 1 max(1, (2.1 − 0.1 − 1)²) = 1; sample 2 (V = V_old) 36 → 18:
    (0.845 + 1 + 18)/3 = 6.615. A true relative error of the same predictions: (1/2 + 1/1 + 6/2)/3 = 1.5."""
    v = jnp.array([1.0, 2.0, 4.0, 3.0, 0.0])
    v_old = jnp.array([0.5, 2.1, 4.0, 3.0, 0.0])
    targets = jnp.array([2.0, 1.0, -2.0, 0.0, 5.0])
    mask = jnp.array([True, True, True, True, False])
    plain = Knobs(value_clipping=False).as_arrays()
    clipping = Knobs(value_clipping=True, value_clip_eps=0.2).as_arrays()
    assert float(original_gae_relative_error(v, v_old, targets, mask, plain)) == pytest.approx(6.5, rel=1e-6)
    assert float(original_gae_relative_error(v, v_old, targets, mask, clipping)) == pytest.approx(6.615, rel=1e-6)
    assert float(mean_relative_error(v, targets, mask)) == pytest.approx(1.5, rel=1e-6)
    assert math.isnan(float(original_gae_relative_error(v, v_old, targets, jnp.zeros(5, bool), plain)))


def test_kl_mean_and_max_by_hand():
    """State 0, action dims: p = N(0, 1) vs q = N(1, 2): log 2 + (1 + 1)/8 − 1/2 = log 2 − 1/4;
    p = N(0, 1) vs q = N(0, 1): 0. State 1: identical policies, 0. Mean (log 2 − 1/4)/2, max log 2 − 1/4."""
    old_mean, old_log_std = jnp.zeros((2, 2)), jnp.zeros((2, 2))
    mean = jnp.array([[1.0, 0.0], [0.0, 0.0]])
    log_std = jnp.array([[math.log(2.0), 0.0], [0.0, 0.0]])
    per_state = kl(old_mean, old_log_std, mean, log_std)
    np.testing.assert_allclose(per_state, [math.log(2) - 0.25, 0.0], atol=1e-7)
    stats = kl_stats(old_mean, old_log_std, mean, log_std)
    assert float(stats.mean_kl) == pytest.approx((math.log(2) - 0.25) / 2, rel=1e-6)
    assert float(stats.max_kl) == pytest.approx(math.log(2) - 0.25, rel=1e-6)


def test_entropy_by_hand():
    """Σ_i (log σ_i + ½(1 + log 2π)) with σ = (1, 2): log 2 + (1 + log 2π)."""
    assert float(entropy(jnp.array([0.0, math.log(2.0)]))) == pytest.approx(
        math.log(2) + 1 + math.log(2 * math.pi), rel=1e-6)


def test_advantage_normalization_uses_unbiased_std():
    # mean 2.5, unbiased std √(5/3)
    out = normalize_advantages(jnp.array([1.0, 2.0, 3.0, 4.0]))
    s = math.sqrt(5 / 3)
    np.testing.assert_allclose(out, [-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s], rtol=1e-6)
