"""Vanilla policy gradient (Williams 1992 with a learned baseline; CL eq. 15 at θ_old): one Adam step per batch.

The gradient of L(θ) = mean(r_θ·Â) + c·H(θ) over the whole batch at θ = θ_old,
advantages (GAE from the value network) normalized over the batch. At θ_old
∇r = ∇log π, so this is the REINFORCE estimate ĝ = mean(∇log π(a|s)·Â) plus
the entropy term; clipped in global norm when IM opt. 9 is on, then one Adam
step at the policy learning rate. Its state is the policy's Adam moments.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pgdiag import networks
from pgdiag.algorithms.base import Algorithm, PolicyStep, StepInfo, Terms
from pgdiag.objectives import entropy, normalize_advantages, probability_ratio, surrogate
from pgdiag.optim import adam, apply_update, clip_by_global_norm


def loss(params, batch, knobs):
    """−(mean(r·Â) + c·H) on the whole batch, advantages normalized over it."""
    mean, log_std = networks.policy_apply(params, batch.obs, knobs)
    ratio = probability_ratio(networks.gaussian_log_prob(mean, log_std, batch.action), batch.old_log_prob)
    return -surrogate(ratio, normalize_advantages(batch.advantages)) - knobs["entropy_coef"] * jnp.mean(
        entropy(log_std))


def step(static, params, opt_state, batch, lr, knobs, key) -> PolicyStep:
    value, grads = jax.value_and_grad(loss)(params, batch, knobs)
    grads, norm = clip_by_global_norm(grads, knobs)
    new, opt_state = apply_update(params, grads, opt_state, lr, knobs["adam_eps"])
    return PolicyStep(params=new, opt_state=opt_state,
                      info=StepInfo(policy_loss=value, clip_fraction=jnp.float32(jnp.nan), grad_norm=norm,
                                    step_scale=jnp.float32(jnp.nan)))


def objective(terms: Terms, knobs, state):
    """mean(r·Â) + c·H: the surrogate whose gradient at θ_old the step follows."""
    return surrogate(terms.ratio, terms.adv) + knobs["entropy_coef"] * jnp.mean(entropy(terms.log_std))


VPG = Algorithm(
    name="vpg", summary="one Adam step per batch along the policy gradient with a value baseline",
    init_state=lambda policy, knobs: adam(knobs["adam_eps"]).init(policy), step=step, objective=objective)
