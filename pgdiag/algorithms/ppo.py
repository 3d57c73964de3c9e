"""PPO (ref §2.5; Schulman et al. 2017, eq. 7): epochs of minibatch Adam on the clipped surrogate.

``epochs`` passes of ``num_minibatches`` shuffled minibatches, one Adam step
each, advantages normalized per minibatch, the gradient clipped in global
norm when IM opt. 9 is on. Its state is the policy's Adam moments. Training
runs the policy and value epochs in one loop when their counts are equal
([`ppo_update`][pgdiag.algorithms.ppo.ppo_update]), each network on its own shuffles, with the numbers of
one after the other.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from pgdiag import networks
from pgdiag.algorithms.base import Algorithm, Constraint, PolicyStep, StepInfo, Terms, ValueStep, WorkingSet
from pgdiag.algorithms.epochs import epochs, lockstep_epochs, value_minibatch
from pgdiag.config import Option, Range
from pgdiag.objectives import clipped_surrogate, entropy, normalize_advantages, probability_ratio
from pgdiag.optim import adam, apply_update, clip_by_global_norm
from pgdiag.rollout import UpdateBatch


@struct.dataclass
class PolicyLossInfo:
    surrogate_loss: jax.Array  # −L^C (entropy term excluded)
    clip_fraction: jax.Array   # fraction of samples with |r − 1| > ε


def policy_loss(params, obs, action, old_log_prob, advantages, knobs):
    """PPO's minibatch loss (ref §2.5): −L^C with advantages normalized over the
    minibatch, minus entropy_coef·H. Returns ``(loss, PolicyLossInfo)``."""
    mean, log_std = networks.policy_apply(params, obs, knobs)
    ratio = probability_ratio(networks.gaussian_log_prob(mean, log_std, action), old_log_prob)
    objective, clip = clipped_surrogate(ratio, normalize_advantages(advantages), knobs["clip_eps"])
    bonus = jnp.mean(entropy(log_std))
    return -objective - knobs["entropy_coef"] * bonus, PolicyLossInfo(surrogate_loss=-objective,
                                                                      clip_fraction=clip.clip_fraction)


@struct.dataclass
class PPOInfo:
    loss: jax.Array           # [E, M] surrogate loss (entropy term excluded)
    clip_fraction: jax.Array  # [E, M] fraction of samples with |r − 1| > ε
    grad_norm: jax.Array      # [E, M] global gradient norm before clipping


def policy_minibatch(batch: UpdateBatch, lr, knobs):
    """One PPO minibatch step (ref §2.5): the gradient of [`policy_loss`][pgdiag.algorithms.ppo.policy_loss] over the
    minibatch ``idx``, clipped in global norm (IM opt. 9), one Adam step:
    ``((params, opt_state), idx) -> ((params, opt_state), PPOInfo)``."""

    def minibatch(carry, idx):
        p, s = carry
        (_, info), grads = jax.value_and_grad(policy_loss, has_aux=True)(
            p, batch.obs[idx], batch.action[idx], batch.old_log_prob[idx], batch.advantages[idx], knobs)
        grads, norm = clip_by_global_norm(grads, knobs)
        p, s = apply_update(p, grads, s, lr, knobs["adam_eps"])
        return (p, s), PPOInfo(loss=info.surrogate_loss, clip_fraction=info.clip_fraction, grad_norm=norm)

    return minibatch


def ppo_step(params, opt_state, batch: UpdateBatch, lr, knobs, key, num_epochs: int, num_minibatches: int):
    """PPO's policy step (ref §2.5): ``num_epochs`` passes of
    [`policy_minibatch`][pgdiag.algorithms.ppo.policy_minibatch]. Returns the new parameters, optimizer state and a
    [`PPOInfo`][pgdiag.algorithms.ppo.PPOInfo] [epochs, minibatches]."""
    (params, opt_state), info = epochs(policy_minibatch(batch, lr, knobs), (params, opt_state), key,
                                       batch.obs.shape[0], num_epochs, num_minibatches)
    return params, opt_state, info


def ppo_update(policy, policy_opt, value, value_opt, batch: UpdateBatch, lr_policy, lr_value, knobs, key_value,
               key_policy, num_epochs: int, num_minibatches: int):
    """The value update and [`ppo_step`][pgdiag.algorithms.ppo.ppo_step] with equal epoch counts, run in one loop
    ([`lockstep_epochs`][pgdiag.algorithms.epochs.lockstep_epochs]); each result equals the separate call's with
    the same key. Returns ``((value, value_opt, losses), (policy, policy_opt, PPOInfo))``."""
    ((value, value_opt), (policy, policy_opt)), (losses, info) = lockstep_epochs(
        (value_minibatch(batch, lr_value, knobs), policy_minibatch(batch, lr_policy, knobs)),
        ((value, value_opt), (policy, policy_opt)), (key_value, key_policy), batch.obs.shape[0], num_epochs,
        num_minibatches)
    return (value, value_opt, losses), (policy, policy_opt, info)


def as_step(params, opt_state, info: PPOInfo) -> PolicyStep:
    """The [`PolicyStep`][pgdiag.algorithms.base.PolicyStep] of PPO's epochs: the last epoch's mean loss and clip
    fraction, the mean norm."""
    return PolicyStep(params=params, opt_state=opt_state,
                      info=StepInfo(policy_loss=jnp.mean(info.loss[-1]), clip_fraction=jnp.mean(info.clip_fraction[-1]),
                                    grad_norm=jnp.mean(info.grad_norm), step_scale=jnp.float32(jnp.nan)))


def step(static, params, opt_state, batch, lr, knobs, key) -> PolicyStep:
    return as_step(*ppo_step(params, opt_state, batch, lr, knobs, key, static.ppo_epochs, static.num_minibatches))


def update(static, policy, policy_opt, value, value_opt, batch, lr_policy, lr_value, knobs, key_value, key_policy):
    """Both networks' epochs in one loop where their counts are equal; ``None`` (run them apart) otherwise."""
    if static.value_epochs != static.ppo_epochs:
        return None
    (v, v_opt, losses), stepped = ppo_update(policy, policy_opt, value, value_opt, batch, lr_policy, lr_value,
                                             knobs, key_value, key_policy, static.ppo_epochs, static.num_minibatches)
    return ValueStep(params=v, opt_state=v_opt, losses=losses), as_step(*stepped)


def objective(terms: Terms, knobs, state):
    """L^C + c·H: the clipped surrogate (CL eq. 13) plus the entropy bonus, as PPO's loss maximizes."""
    clipped, _ = clipped_surrogate(terms.ratio, terms.adv, knobs["clip_eps"])
    return clipped + knobs["entropy_coef"] * jnp.mean(entropy(terms.log_std))


def init_state(policy, knobs):
    return adam(knobs["adam_eps"]).init(policy)


#: PPO's own settings (ref §2.5): the ratio clip ε and the number of policy epochs.
KNOBS = {"clip_eps": Option(0.2, "PPO ratio clip ε; float('inf') (or 1e32) disables it: PPO-NoClip.",
                            Range(0, low_open=True), allow_inf=True, why="inf disables the clip")}
STATIC = {"ppo_epochs": Option(10, "Passes over the batch in the policy update.", Range(1))}

def working_set(static) -> WorkingSet:
    """Its epochs differentiate one minibatch at a time."""
    return WorkingSet(differentiated=1 / static.num_minibatches)


PPO = Algorithm(
    name="ppo", summary="clipped surrogate, epochs of minibatch Adam (ref §2.5)",
    init_state=init_state, step=step, objective=objective, update=update,
    constraint=Constraint(kind="ratio", knob="clip_eps", label="1 ± ε"),
    knobs=KNOBS, static=STATIC, working_set=working_set)
