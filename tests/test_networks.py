"""Initialization schemes, activations and the Gaussian policy's density, KL and entropy."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgdiag import networks
from pgdiag.config import Knobs


@pytest.mark.parametrize("shape", [(11, 64), (64, 64), (64, 3), (64, 1)])
def test_orthogonal_matrix_matches_numpy_qr_of_the_same_gaussian(shape):
    """Q of the QR of the same Gaussian draw, with R's diagonal made positive (unique)."""
    key = jax.random.PRNGKey(7)
    q = np.asarray(networks.orthogonal_matrix(key, *shape))
    a = np.asarray(jax.random.normal(key, (max(shape), min(shape))), np.float64)
    q_np, r_np = np.linalg.qr(a)
    q_np = q_np * np.sign(np.diag(r_np))
    if shape[0] < shape[1]:
        q_np = q_np.T
    np.testing.assert_allclose(q, q_np, atol=5e-6)


def test_orthogonal_init_gains_and_xavier_bounds():
    k_on = Knobs(orthogonal_init=True).as_arrays()
    k_off = Knobs(orthogonal_init=False).as_arrays()
    key = jax.random.PRNGKey(0)
    pol = networks.init_policy(key, 11, 3, (64, 64), k_on)
    val = networks.init_value(key, 11, (64, 64), k_on)
    w_hidden = np.asarray(pol["layers"][1]["w"])
    np.testing.assert_allclose(w_hidden.T @ w_hidden, 2.0 * np.eye(64), atol=1e-5)  # gain √2
    w_head = np.asarray(pol["layers"][2]["w"])
    np.testing.assert_allclose(w_head.T @ w_head, 0.01 ** 2 * np.eye(3), atol=1e-8)  # gain 0.01
    w_vhead = np.asarray(val["layers"][2]["w"])
    assert float(np.sum(w_vhead ** 2)) == pytest.approx(1.0, rel=1e-5)  # gain 1, one column
    assert all(float(jnp.abs(l["b"]).max()) == 0.0 for l in pol["layers"] + val["layers"])
    np.testing.assert_array_equal(pol["log_std"], np.zeros(3))

    xav = networks.init_policy(key, 11, 3, (64, 64), k_off)
    for layer, (fi, fo) in zip(xav["layers"], [(11, 64), (64, 64), (64, 3)]):
        bound = math.sqrt(6 / (fi + fo))  # xavier-uniform, gain 1, output layer included
        w = np.asarray(layer["w"])
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    np.testing.assert_array_equal(xav["log_std"], np.zeros(3))


def test_init_has_no_lapack_custom_calls():
    """Concurrent LAPACK calls in one vmapped CPU program can hang XLA's runtime;
    initialization must not contain any."""
    fn = jax.vmap(lambda k: networks.init_policy(k, 4, 2, (64, 64), Knobs().as_arrays()))
    text = jax.jit(fn).lower(jax.random.split(jax.random.PRNGKey(0), 3)).as_text()
    assert "custom_call" not in text


def test_activation_toggle():
    x = jnp.array([-2.0, 0.5])
    np.testing.assert_allclose(networks.activation(x, True), np.tanh([-2.0, 0.5]), rtol=1e-6)
    np.testing.assert_array_equal(networks.activation(x, False), [0.0, 0.5])


def test_gaussian_density_kl_entropy_against_closed_forms():
    mean_p, log_std_p = jnp.array([0.3, -1.0]), jnp.log(jnp.array([0.5, 2.0]))
    mean_q, log_std_q = jnp.array([0.0, 0.5]), jnp.log(jnp.array([1.0, 1.5]))
    a = jnp.array([0.1, 0.2])
    dens = np.prod(np.exp(-0.5 * ((np.array([0.1, 0.2]) - np.array([0.3, -1.0])) / np.array([0.5, 2.0])) ** 2)
                   / (np.array([0.5, 2.0]) * math.sqrt(2 * math.pi)))
    assert float(jnp.exp(networks.gaussian_log_prob(mean_p, log_std_p, a))) == pytest.approx(dens, rel=1e-5)
    # KL between univariate normals, summed: log(σq/σp) + (σp² + (μp−μq)²)/(2σq²) − ½
    kl = sum(math.log(sq / sp) + (sp ** 2 + (mp - mq) ** 2) / (2 * sq ** 2) - 0.5
             for mp, sp, mq, sq in [(0.3, 0.5, 0.0, 1.0), (-1.0, 2.0, 0.5, 1.5)])
    assert float(networks.gaussian_kl(mean_p, log_std_p, mean_q, log_std_q)) == pytest.approx(kl, rel=1e-5)
    ent = sum(0.5 * math.log(2 * math.pi * math.e * s ** 2) for s in (0.5, 2.0))
    assert float(networks.gaussian_entropy(log_std_p)) == pytest.approx(ent, rel=1e-5)
