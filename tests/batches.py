"""A fixed update batch for tests of a single policy step: a small policy, states drawn at random, actions
sampled from it, advantages that reward the first action coordinate."""

import jax
import jax.numpy as jnp

from pgdiag import networks
from pgdiag.config import Config, Knobs
from pgdiag.rollout import UpdateBatch

OBS, ACT = 3, 2


def fixed_batch(seed=0, n=64, hidden=(16,), adv_scale=1.0):
    """``(policy params, UpdateBatch)`` of ``n`` pairs; ``hidden=()`` gives a linear-Gaussian policy."""
    knobs = Knobs().as_arrays()
    params = networks.init_policy(jax.random.PRNGKey(seed), OBS, ACT, hidden, knobs)
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(100 + seed), 3)
    obs = jax.random.normal(k1, (n, OBS))
    mean, log_std = networks.policy_apply(params, obs, knobs)
    action = mean + jnp.exp(log_std) * jax.random.normal(k2, mean.shape)
    adv = adv_scale * (action[:, 0] + 0.3 * jax.random.normal(k3, (n,)))
    batch = UpdateBatch(obs=obs, action=action, old_log_prob=networks.gaussian_log_prob(mean, log_std, action),
                        advantages=adv, old_values=jnp.zeros(n), value_targets=jnp.zeros(n),
                        value_mask=jnp.ones(n, bool))
    return params, batch


def settings(algorithm="ppo", **values):
    """``(static, knob arrays)`` of ``algorithm`` with ``values`` (shared settings or its own), as a Config
    holds them (its own settings complete, at their defaults unless given)."""
    cfg = Config().replace(algorithm=algorithm, **values)
    return cfg.static, cfg.knobs.as_arrays()
