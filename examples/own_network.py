"""Networks of your own: a value head on the policy's trunk, and a policy whose σ depends on the state.

Each is a `Network` (its initializers and pure functions) registered under a name; a configuration then chooses it
with ``network=...``, and training, checkpoints and every study apply it like the built-in ones:

    import own_network                     # registers "shared-trunk" and "state-sigma"
    cfg = pgdiag.preset("ppo", "hopper", network="shared-trunk")
    pgdiag.sweep(cfg, None, seeds=5, out="runs/trunk")

* ``"shared-trunk"``: one tanh trunk, the policy's mean head and the value head on it. The trunk is the policy's:
  the value function holds a copy that training brings up to date after every update (``tie``) and reads through
  ``stop_gradient``, so the value loss trains its head and the policy's objective trains the trunk.
* ``"state-sigma"``: log σ(s) from a head of its own, bounded to [LOG_STD_MIN, LOG_STD_MAX] by a sigmoid and
  starting near σ = 1.
"""

import math

import jax
import jax.numpy as jnp

from pgdiag.networks import Network, register_network

LOG_STD_MIN, LOG_STD_MAX = -5.0, 1.0


def dense(key, fan_in: int, fan_out: int, scale: float = 1.0) -> dict:
    return {"w": scale * jax.nn.initializers.lecun_normal()(key, (fan_in, fan_out)), "b": jnp.zeros((fan_out,))}


def trunk_init(key, obs_size: int, hidden: tuple) -> list:
    sizes = (obs_size,) + tuple(hidden)
    return [dense(k, a, b) for k, a, b in zip(jax.random.split(key, len(hidden)), sizes[:-1], sizes[1:])]


def trunk_apply(layers: list, x):
    for layer in layers:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return x


def head(layer: dict, x):
    return x @ layer["w"] + layer["b"]


# --- a value head on the policy's trunk --------------------------------------------------

def trunk_policy_init(key, obs_size, action_size, hidden, knobs):
    k_trunk, k_mean = jax.random.split(key)
    return {"trunk": trunk_init(k_trunk, obs_size, hidden), "mean": dense(k_mean, hidden[-1], action_size, 0.01),
            "log_std": jnp.zeros((action_size,))}


def mean_and_log_std(mean, log_std):
    return mean, jnp.broadcast_to(log_std, mean.shape)


def trunk_value_init(key, obs_size, hidden, knobs):
    # the trunk is a placeholder of the policy's shape; training ties it to the policy's at initialization
    k_trunk, k_head = jax.random.split(key)
    return {"trunk": trunk_init(k_trunk, obs_size, hidden), "head": dense(k_head, hidden[-1], 1)}


SHARED_TRUNK = register_network(Network(
    name="shared-trunk", key="trunk", init_policy=trunk_policy_init, init_value=trunk_value_init,
    policy=lambda p, obs, knobs: mean_and_log_std(head(p["mean"], trunk_apply(p["trunk"], obs)), p["log_std"]),
    value=lambda p, obs, knobs: head(p["head"], jax.lax.stop_gradient(trunk_apply(p["trunk"], obs)))[..., 0],
    tie=lambda policy, value: {**value, "trunk": policy["trunk"]},
    summary="a value head on the policy's tanh trunk (trained by the policy's objective)"))


# --- a state-dependent σ ---------------------------------------------------------------

def sigma_policy_init(key, obs_size, action_size, hidden, knobs):
    k_body, k_mean, k_std = jax.random.split(key, 3)
    std = dense(k_std, hidden[-1], action_size, 0.01)
    # sigmoid(b) = (0 − LOG_STD_MIN) / (LOG_STD_MAX − LOG_STD_MIN): log σ starts near 0
    std["b"] = jnp.full((action_size,), math.log(-LOG_STD_MIN / LOG_STD_MAX))
    return {"body": trunk_init(k_body, obs_size, hidden), "mean": dense(k_mean, hidden[-1], action_size, 0.01),
            "std": std}


def sigma_policy(params, obs, knobs):
    h = trunk_apply(params["body"], obs)
    return head(params["mean"], h), LOG_STD_MIN + (LOG_STD_MAX - LOG_STD_MIN) * jax.nn.sigmoid(head(params["std"], h))


def sigma_value_init(key, obs_size, hidden, knobs):
    k_body, k_head = jax.random.split(key)
    return {"body": trunk_init(k_body, obs_size, hidden), "head": dense(k_head, hidden[-1], 1)}


STATE_SIGMA = register_network(Network(
    name="state-sigma", key="body", init_policy=sigma_policy_init, init_value=sigma_value_init, policy=sigma_policy,
    value=lambda p, obs, knobs: head(p["head"], trunk_apply(p["body"], obs))[..., 0],
    summary="a tanh MLP whose log σ(s) is a bounded head of its own"))
