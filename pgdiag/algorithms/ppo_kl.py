"""PPO with an adaptive KL penalty (Schulman et al. 2017, §4).

Epochs of minibatch Adam (as PPO's, [`ppo`][pgdiag.algorithms.ppo]) on
L^KLPEN(θ) = mean(r·Â) − β·mean KL(π_old ‖ π_θ) + c·H, advantages normalized
per minibatch and the gradient clipped in global norm when IM opt. 9 is on.
After the epochs, d = the mean KL over the whole batch sets the next
iteration's coefficient: β ← β/2 if d < d_targ/1.5, β ← 2β if d > 1.5·d_targ
(the paper's rule, its constants). The state carries Adam's moments and β,
which starts at ``kl_beta_init``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from pgdiag import networks
from pgdiag.algorithms.base import Algorithm, Constraint, PolicyStep, StepInfo, Terms
from pgdiag.algorithms.epochs import epochs
from pgdiag.algorithms.ppo import STATIC as PPO_STATIC
from pgdiag.algorithms.ppo import working_set
from pgdiag.config import Option, Range
from pgdiag.objectives import entropy, kl, kl_stats, normalize_advantages, probability_ratio, surrogate
from pgdiag.optim import adam, apply_update, clip_by_global_norm

ADAPT = 1.5   # the paper's tolerance band around d_targ
FACTOR = 2.0  # and its multiplicative change of β


@struct.dataclass
class State:
    adam: object
    beta: jax.Array  # the KL coefficient the next step uses


def adapt_beta(beta, mean_kl, target):
    """The paper's rule (§4): halve β below d_targ/1.5, double it above 1.5·d_targ, else keep it."""
    return jnp.where(mean_kl < target / ADAPT, beta / FACTOR, jnp.where(mean_kl > target * ADAPT, beta * FACTOR, beta))


def penalized_loss(params, obs, action, old_log_prob, old_mean, old_log_std, advantages, beta, knobs):
    mean, log_std = networks.policy_apply(params, obs, knobs)
    ratio = probability_ratio(networks.gaussian_log_prob(mean, log_std, action), old_log_prob)
    objective = surrogate(ratio, normalize_advantages(advantages)) - beta * jnp.mean(
        kl(old_mean, old_log_std, mean, log_std))
    return -objective - knobs["entropy_coef"] * jnp.mean(entropy(log_std)), -objective


def step(static, params, state: State, batch, lr, knobs, key) -> PolicyStep:
    old_mean, old_log_std = jax.lax.stop_gradient(networks.policy_apply(params, batch.obs, knobs))

    def minibatch(carry, idx):
        p, s = carry
        (_, penalized), grads = jax.value_and_grad(penalized_loss, has_aux=True)(
            p, batch.obs[idx], batch.action[idx], batch.old_log_prob[idx], old_mean[idx], old_log_std[idx],
            batch.advantages[idx], state.beta, knobs)
        grads, norm = clip_by_global_norm(grads, knobs)
        p, s = apply_update(p, grads, s, lr, knobs["adam_eps"])
        return (p, s), (penalized, norm)

    (new, adam_state), (losses, norms) = epochs(minibatch, (params, state.adam), key, batch.obs.shape[0],
                                                static.ppo_epochs, static.num_minibatches)
    d = kl_stats(old_mean, old_log_std, *networks.policy_apply(new, batch.obs, knobs)).mean_kl
    beta = adapt_beta(state.beta, d, knobs["kl_target"])
    return PolicyStep(params=new, opt_state=State(adam=adam_state, beta=beta),
                      info=StepInfo(policy_loss=jnp.mean(losses[-1]), clip_fraction=jnp.float32(jnp.nan),
                                    grad_norm=jnp.mean(norms), step_scale=jnp.float32(jnp.nan),
                                    penalty=state.beta))


def objective(terms: Terms, knobs, state: State):
    """L^KLPEN + c·H with the β the next step would use."""
    return (surrogate(terms.ratio, terms.adv) - state.beta * jnp.mean(terms.kl)
            + knobs["entropy_coef"] * jnp.mean(entropy(terms.log_std)))


def init_state(policy, knobs) -> State:
    return State(adam=adam(knobs["adam_eps"]).init(policy), beta=jnp.asarray(knobs["kl_beta_init"], jnp.float32))


#: PPO-KL's own settings (PPO paper §4): d_targ and β₀; its epochs are PPO's setting.
KNOBS = {
    "kl_target": Option(0.01, "PPO-KL: the target mean KL d_targ that adapts the penalty coefficient β.",
                        Range(0, low_open=True)),
    "kl_beta_init": Option(1.0, "PPO-KL: the initial KL penalty coefficient β.", Range(0)),
}

PPO_KL = Algorithm(
    name="ppo-kl", summary="PPO's epochs on the surrogate with an adaptive KL penalty (PPO paper §4)",
    init_state=init_state, step=step, objective=objective,
    constraint=Constraint(kind="kl", knob="kl_target", label="d_targ"),
    knobs=KNOBS, static=PPO_STATIC, working_set=working_set)
