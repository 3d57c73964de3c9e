"""Policy and value networks: the papers' Gaussian MLP and Brax PPO's tanh-squashed one.

A policy network maps parameters and an observation to the mean and log-std of a diagonal Gaussian over the
policy's own draw u; the environment receives ``env_action(params, u)``. Two networks are built in (``NETWORKS``);
the parameters say which they are by their keys, a structure fixed at trace time, so every stage, algorithm
and diagnostic calls the same ``policy_apply``/``value_apply`` whatever network it measures:

* ``"mlp"`` — the papers' (and CleanRL's and Stable-Baselines3's default) network: ``{"layers": [{"w", "b"},
  ...], "log_std"}``, a state-independent ``log_std`` initialized to 0 (σ = 1, ref §1 "Standard deviation"),
  tanh or ReLU hidden units by knob, the action u itself sent to the task (which bounds it). Both
  initializations are computed from the same key and one is selected with ``jnp.where``, so the init scheme is
  a traced knob.
* ``"brax"`` — Brax PPO's default (``brax.training.agents.ppo.networks.make_ppo_networks``): ``{"swish_layers":
  [...]}``, swish hidden units, an output of 2·|A| split into loc and a scale ``softplus(s) + 0.001``
  (state-dependent σ), and the action ``tanh(u)`` sent to the task (``NormalTanhDistribution``).

Log-probabilities inside training and the diagnostics are those of u. For a tanh-squashed policy the action's
density differs by log|det ∂tanh(u)/∂u|, a term free of the parameters: ratios, gradients and KL divergences are
the same either way, and `squashed_log_prob` gives the action's own density.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

HIDDEN_GAIN = math.sqrt(2.0)
POLICY_HEAD_GAIN = 0.01
VALUE_HEAD_GAIN = 1.0


def _layer_sizes(in_size: int, hidden: tuple, out_size: int):
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
    sizes = _layer_sizes(in_size, hidden, out_size)
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


# --- Brax PPO's networks (make_ppo_networks' defaults) ---------------------------

#: Brax's NormalTanhDistribution: σ = softplus(s) + min_std
BRAX_MIN_STD = 0.001
NETWORKS = ("mlp", "brax")


def init_swish_mlp(key, in_size: int, hidden: tuple, out_size: int):
    """Brax's MLP initialization: lecun-uniform kernels (every layer, the output's included), zero biases."""
    sizes = _layer_sizes(in_size, hidden, out_size)
    init = jax.nn.initializers.lecun_uniform()
    return {"swish_layers": [{"w": init(k, (fi, fo), jnp.float32), "b": jnp.zeros((fo,), jnp.float32)}
                             for k, (fi, fo) in zip(jax.random.split(key, len(sizes)), sizes)]}


def swish_mlp_apply(params, x: jax.Array) -> jax.Array:
    layers = params["swish_layers"]
    for layer in layers[:-1]:
        x = jax.nn.swish(x @ layer["w"] + layer["b"])
    return x @ layers[-1]["w"] + layers[-1]["b"]


def network_of(params) -> str:
    """Which of ``NETWORKS`` a policy's or value function's parameters are (read from their keys)."""
    return "brax" if "swish_layers" in params else "mlp"


def check_network(network: str) -> None:
    if network not in NETWORKS:
        raise ValueError(f"unknown network {network!r}; networks are {', '.join(NETWORKS)}")


# --- The interface every stage and diagnostic calls --------------------------------

def init_policy(key, obs_size: int, action_size: int, hidden: tuple, knobs, network: str = "mlp"):
    check_network(network)
    if network == "brax":
        return init_swish_mlp(key, obs_size, hidden, 2 * action_size)
    params = init_mlp(key, obs_size, hidden, action_size, POLICY_HEAD_GAIN, knobs["orthogonal_init"])
    params["log_std"] = jnp.zeros((action_size,), jnp.float32)
    return params


def init_value(key, obs_size: int, hidden: tuple, knobs, network: str = "mlp"):
    check_network(network)
    if network == "brax":
        return init_swish_mlp(key, obs_size, hidden, 1)
    return init_mlp(key, obs_size, hidden, 1, VALUE_HEAD_GAIN, knobs["orthogonal_init"])


def policy_apply(params, obs: jax.Array, knobs):
    """Mean and log-std of the policy's Gaussian over u at ``obs`` ([..., obs])."""
    if network_of(params) == "brax":
        loc, scale = jnp.split(swish_mlp_apply(params, obs), 2, axis=-1)
        return loc, jnp.log(jax.nn.softplus(scale) + BRAX_MIN_STD)
    mean = mlp_apply(params, obs, knobs["tanh_activations"])
    return mean, jnp.broadcast_to(params["log_std"], mean.shape)


def value_apply(params, obs: jax.Array, knobs) -> jax.Array:
    if network_of(params) == "brax":
        return swish_mlp_apply(params, obs)[..., 0]
    return mlp_apply(params, obs, knobs["tanh_activations"])[..., 0]


def squashes(params) -> bool:
    """Whether the policy sends tanh(u) to the task (a Python bool: the parameters' structure decides)."""
    return network_of(params) == "brax"


def env_action(params, u: jax.Array) -> jax.Array:
    """The action the task receives for the policy's draw u."""
    return jnp.tanh(u) if squashes(params) else u


def action_size(params) -> int:
    """|A|, read from the policy's parameter shapes."""
    if network_of(params) == "brax":
        return params["swish_layers"][-1]["b"].shape[-1] // 2
    return params["log_std"].shape[-1]


def state_independent_log_std(params):
    """The policy's log σ where it does not depend on the state (the "mlp" network), else None."""
    return params.get("log_std")


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
    import numpy as np

    z, w = np.polynomial.hermite_e.hermegauss(_HERMITE)
    z, w = jnp.asarray(z, jnp.float32), jnp.asarray(w / w.sum(), jnp.float32)
    u = mean[..., None] + jnp.exp(log_std)[..., None] * z            # [..., act, nodes]
    expected = jnp.sum(tanh_log_det_jacobian(u) * w, axis=-1)
    return gaussian_entropy(log_std) + jnp.sum(expected, axis=-1)
