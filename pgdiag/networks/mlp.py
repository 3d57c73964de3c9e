"""The papers' network (also CleanRL's and Stable-Baselines3's default): a Gaussian MLP with a state-independent σ.

Its parameters: ``{"layers": [{"w", "b"}, ...], "log_std"}`` for the policy, ``{"layers": [...]}`` for the value
function; ``log_std`` starts at 0 (σ = 1, ref §1 "Standard deviation"); tanh or ReLU hidden units by knob (IM opt.
8); the action u itself goes to the task (which bounds it). Both initializations (IM opt. 3) are computed from the
same key and one is selected with ``jnp.where``, so the scheme is a traced knob.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from pgdiag.networks.protocol import Network

HIDDEN_GAIN = math.sqrt(2.0)
POLICY_HEAD_GAIN = 0.01
VALUE_HEAD_GAIN = 1.0


def layer_sizes(in_size: int, hidden: tuple, out_size: int):
    sizes = (in_size,) + tuple(hidden) + (out_size,)
    return list(zip(sizes[:-1], sizes[1:]))


# --- IM opt. 3: orthogonal initialization with layer scaling -------------------

def _householder_qr(a: jax.Array):
    """Thin QR of ``a`` [m, n], m ≥ n, by Householder reflections in plain JAX ops.

    Returns Q [m, n] and diag(R). Written out rather than calling
    ``jnp.linalg.qr`` because several concurrent LAPACK custom calls in one
    vmapped CPU program can wedge XLA's CPU runtime; this version has none.
    """
    m, n = a.shape
    rows = jnp.arange(m)

    def reflect(j, carry):
        r, vs = carry
        x = jnp.where(rows >= j, r[:, j], 0.0)
        xj = x[j]
        alpha = -jnp.where(xj >= 0, 1.0, -1.0) * jnp.linalg.norm(x)
        v = x - alpha * (rows == j)
        v = v / jnp.maximum(jnp.linalg.norm(v), 1e-30)
        r = r - 2.0 * jnp.outer(v, v @ r)
        return r, vs.at[:, j].set(v)

    r, vs = jax.lax.fori_loop(0, n, reflect, (a, jnp.zeros((m, n), a.dtype)))

    def apply(i, q):  # Q = H_0 H_1 ... H_{n-1} [I_n; 0]
        v = vs[:, n - 1 - i]
        return q - 2.0 * jnp.outer(v, v @ q)

    q = jax.lax.fori_loop(0, n, apply, jnp.eye(m, n, dtype=a.dtype))
    return q, jnp.diagonal(r)


def orthogonal_matrix(key, rows: int, cols: int) -> jax.Array:
    """A Haar-distributed matrix with orthonormal rows or columns: the Q factor
    of a Gaussian matrix's QR with R's diagonal made positive (the construction
    of torch's ``orthogonal_`` and ``jax.nn.initializers.orthogonal``)."""
    big, small = max(rows, cols), min(rows, cols)
    q, diag_r = _householder_qr(jax.random.normal(key, (big, small), jnp.float32))
    q = q * jnp.where(diag_r >= 0, 1.0, -1.0)
    return q if rows >= cols else q.T


def orthogonal_or_xavier(key, fan_in: int, fan_out: int, gain: float, use_orthogonal) -> jax.Array:
    """IM opt. 3 (ref §2.6): orthogonal weights scaled by ``gain`` (√2 hidden,
    0.01 policy head, 1 value head) when on; xavier-uniform with gain 1 on
    every layer, output layers included, when off. Biases are always 0."""
    ortho = gain * orthogonal_matrix(key, fan_in, fan_out)
    xavier = jax.nn.initializers.glorot_uniform()(key, (fan_in, fan_out), jnp.float32)
    return jnp.where(use_orthogonal, ortho, xavier)


def init_mlp(key, in_size: int, hidden: tuple, out_size: int, head_gain: float, use_orthogonal):
    layers = []
    sizes = layer_sizes(in_size, hidden, out_size)
    keys = jax.random.split(key, len(sizes))
    for i, ((fi, fo), k) in enumerate(zip(sizes, keys)):
        gain = head_gain if i == len(sizes) - 1 else HIDDEN_GAIN
        layers.append({"w": orthogonal_or_xavier(k, fi, fo, gain, use_orthogonal),
                       "b": jnp.zeros((fo,), jnp.float32)})
    return {"layers": layers}


# --- IM opt. 8: tanh activations ---------------------------------------------

def activation(x: jax.Array, use_tanh) -> jax.Array:
    """IM opt. 8: tanh when on, ReLU when off."""
    return jnp.where(use_tanh, jnp.tanh(x), jax.nn.relu(x))


def mlp_apply(params, x: jax.Array, use_tanh) -> jax.Array:
    layers = params["layers"]
    for layer in layers[:-1]:
        x = activation(x @ layer["w"] + layer["b"], use_tanh)
    return x @ layers[-1]["w"] + layers[-1]["b"]


# --- the network -------------------------------------------------------------------

def init_policy(key, obs_size: int, action_size: int, hidden: tuple, knobs):
    params = init_mlp(key, obs_size, hidden, action_size, POLICY_HEAD_GAIN, knobs["orthogonal_init"])
    params["log_std"] = jnp.zeros((action_size,), jnp.float32)
    return params


def init_value(key, obs_size: int, hidden: tuple, knobs):
    return init_mlp(key, obs_size, hidden, 1, VALUE_HEAD_GAIN, knobs["orthogonal_init"])


def policy(params, obs: jax.Array, knobs):
    mean = mlp_apply(params, obs, knobs["tanh_activations"])
    return mean, jnp.broadcast_to(params["log_std"], mean.shape)


def value(params, obs: jax.Array, knobs) -> jax.Array:
    return mlp_apply(params, obs, knobs["tanh_activations"])[..., 0]


MLP = Network(name="mlp", key="layers", init_policy=init_policy, init_value=init_value, policy=policy, value=value,
              summary="the papers' Gaussian MLP: a state-independent σ, tanh or ReLU units by knob, orthogonal or "
                      "xavier initialization by knob; also CleanRL's and Stable-Baselines3's default")
