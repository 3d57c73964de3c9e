"""Policy and value networks behind one protocol, and the functions every stage calls on their parameters.

A network ([`Network`][pgdiag.networks.protocol.Network]) is a record of pure functions: fresh policy and value
parameters, the policy's Gaussian over its draw u at a state, V(s), whether the task receives tanh(u), and, for a
value function that shares a trunk with the policy, how the value's copy of it is kept current. Two are built in
and registered like a user's ([`register_network`][pgdiag.networks.protocol.register_network]):

* ``"mlp"`` ([`pgdiag.networks.mlp`][pgdiag.networks.mlp]) — the papers' Gaussian MLP with a state-independent σ
  (also CleanRL's and Stable-Baselines3's default);
* ``"brax"`` ([`pgdiag.networks.swish`][pgdiag.networks.swish]) — Brax PPO's default: swish units, a
  state-dependent σ, actions squashed by tanh.

The parameters say which network they are by their top-level key, so `policy_apply`, `value_apply` and the rest
serve every network without a name beside them; the action distributions are in
[`pgdiag.networks.distributions`][pgdiag.networks.distributions].
"""

from __future__ import annotations

import jax

# the distributions and the built-in networks' pieces, named as networks.X where the stages use them
from pgdiag.networks.distributions import (LOG_2PI, gaussian_entropy, gaussian_kl, gaussian_log_prob,
                                           squashed_entropy, squashed_log_prob, tanh_log_det_jacobian)
from pgdiag.networks.mlp import (HIDDEN_GAIN, MLP, POLICY_HEAD_GAIN, VALUE_HEAD_GAIN, activation, init_mlp,
                                 mlp_apply, orthogonal_matrix, orthogonal_or_xavier)
from pgdiag.networks.protocol import (InitPolicy, InitValue, Network, NetworkError, PolicyApply, Tie, ValueApply,
                                      abstract_knobs, get, names, network_of, register_network, unregister_network)
from pgdiag.networks.swish import BRAX, BRAX_MIN_STD, init_swish_mlp, swish_mlp_apply

for _network in (MLP, BRAX):
    register_network(_network, trace=False)   # tests/test_own_network.py traces them


def init_policy(key, obs_size: int, action_size: int, hidden: tuple, knobs, network: str = "mlp"):
    """Fresh parameters of the registered network ``network``'s policy."""
    return get(network).init_policy(key, obs_size, action_size, tuple(hidden), knobs)


def init_value(key, obs_size: int, hidden: tuple, knobs, network: str = "mlp"):
    """Fresh parameters of the registered network ``network``'s value function."""
    return get(network).init_value(key, obs_size, tuple(hidden), knobs)


def policy_apply(params, obs: jax.Array, knobs):
    """Mean and log-std of the policy's Gaussian over u at ``obs`` ([..., obs])."""
    return network_of(params).policy(params, obs, knobs)


def value_apply(params, obs: jax.Array, knobs) -> jax.Array:
    """V(s) at ``obs`` ([..., obs])."""
    return network_of(params).value(params, obs, knobs)


def tie(policy, value):
    """The value's parameters with its copy of the policy's shared ones brought to the policy's (unchanged for a
    network that shares nothing)."""
    network = network_of(value)
    return value if network.tie is None else network.tie(policy, value)


def squashes(params) -> bool:
    """Whether the policy sends tanh(u) to the task (a Python bool: the parameters' structure decides)."""
    return network_of(params).squashes


def env_action(params, u: jax.Array) -> jax.Array:
    """The action the task receives for the policy's draw u."""
    return jax.numpy.tanh(u) if squashes(params) else u


def action_size(params, obs_size: int) -> int:
    """|A|, from the shapes the policy returns for one observation (traced, not run)."""
    obs = jax.ShapeDtypeStruct((obs_size,), jax.numpy.float32)
    mean = jax.eval_shape(policy_apply, params, obs, abstract_knobs())[0]
    return mean.shape[-1]


def state_independent_log_std(params):
    """The policy's log σ where it does not depend on the state (a top-level ``"log_std"``), else None."""
    return params.get("log_std")


__all__ = ["Network", "NetworkError", "get", "init_policy", "init_value", "names", "policy_apply", "register_network",
           "unregister_network", "value_apply"]
