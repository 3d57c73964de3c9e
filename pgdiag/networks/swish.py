"""Brax PPO's default network (``brax.training.agents.ppo.networks.make_ppo_networks``): swish MLPs and a
tanh-squashed Gaussian.

Its parameters: ``{"swish_layers": [{"w", "b"}, ...]}``; lecun-uniform kernels, zero biases; the policy's output
of 2·|A| split into loc and a scale ``softplus(s) + 0.001`` (a state-dependent σ), the action ``tanh(u)`` sent to
the task (``NormalTanhDistribution``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pgdiag.networks.mlp import layer_sizes
from pgdiag.networks.protocol import Network

#: Brax's NormalTanhDistribution: σ = softplus(s) + min_std
BRAX_MIN_STD = 0.001


def init_swish_mlp(key, in_size: int, hidden: tuple, out_size: int):
    """Brax's MLP initialization: lecun-uniform kernels (every layer, the output's included), zero biases."""
    sizes = layer_sizes(in_size, hidden, out_size)
    init = jax.nn.initializers.lecun_uniform()
    return {"swish_layers": [{"w": init(k, (fi, fo), jnp.float32), "b": jnp.zeros((fo,), jnp.float32)}
                             for k, (fi, fo) in zip(jax.random.split(key, len(sizes)), sizes)]}


def swish_mlp_apply(params, x: jax.Array) -> jax.Array:
    layers = params["swish_layers"]
    for layer in layers[:-1]:
        x = jax.nn.swish(x @ layer["w"] + layer["b"])
    return x @ layers[-1]["w"] + layers[-1]["b"]


def init_policy(key, obs_size: int, action_size: int, hidden: tuple, knobs):
    return init_swish_mlp(key, obs_size, hidden, 2 * action_size)


def init_value(key, obs_size: int, hidden: tuple, knobs):
    return init_swish_mlp(key, obs_size, hidden, 1)


def policy(params, obs: jax.Array, knobs):
    loc, scale = jnp.split(swish_mlp_apply(params, obs), 2, axis=-1)
    return loc, jnp.log(jax.nn.softplus(scale) + BRAX_MIN_STD)


def value(params, obs: jax.Array, knobs) -> jax.Array:
    return swish_mlp_apply(params, obs)[..., 0]


BRAX = Network(name="brax", key="swish_layers", init_policy=init_policy, init_value=init_value, policy=policy,
               value=value, squashes=True,
               summary="Brax PPO's default: swish units, a state-dependent σ, actions squashed by tanh")
