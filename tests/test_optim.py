"""LR annealing and global gradient-norm clipping (torch semantics)."""

import jax.numpy as jnp
import numpy as np
import pytest

from pgdiag.config import Knobs
from pgdiag.optim import annealed_learning_rate, clip_by_global_norm


def test_linear_annealing_to_zero():
    on, off = Knobs(lr_annealing=True).as_arrays(), Knobs(lr_annealing=False).as_arrays()
    # iteration k of K = 488 uses lr0·(1 − k/488) (torch LambdaLR stepping after each iteration)
    for k in (0, 1, 244, 487):
        assert float(annealed_learning_rate(3e-4, jnp.int32(k), 488, on)) == pytest.approx(3e-4 * (1 - k / 488),
                                                                                           rel=1e-6)
        assert float(annealed_learning_rate(3e-4, jnp.int32(k), 488, off)) == pytest.approx(3e-4)


def test_global_norm_clipping():
    grads = {"a": jnp.array([3.0, 0.0]), "b": jnp.array([[4.0]])}  # global norm 5
    clipped, norm = clip_by_global_norm(grads, Knobs(grad_clipping=True, max_grad_norm=1.0).as_arrays())
    assert float(norm) == pytest.approx(5.0)
    scale = 1.0 / (5.0 + 1e-6)  # torch: max_norm / (norm + 1e-6)
    np.testing.assert_allclose(clipped["a"], [3.0 * scale, 0.0], rtol=1e-6)
    np.testing.assert_allclose(clipped["b"], [[4.0 * scale]], rtol=1e-6)
    # below the bound: unchanged; toggle off: unchanged
    same, _ = clip_by_global_norm(grads, Knobs(grad_clipping=True, max_grad_norm=10.0).as_arrays())
    np.testing.assert_array_equal(same["a"], grads["a"])
    off, _ = clip_by_global_norm(grads, Knobs(grad_clipping=False, max_grad_norm=1.0).as_arrays())
    np.testing.assert_array_equal(off["b"], grads["b"])
