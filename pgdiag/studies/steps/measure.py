"""fig-step-variance (CL Fig 13, footnote 1; ref §4.2 item 3): how much the algorithm's actual step varies.

At a checkpoint, M independent batches of the algorithm's own shape
(num_envs × steps_per_env, from the states the algorithm would sample next)
are drawn from the frozen policy, and from each the algorithm's own step is
computed with [`pgdiag.stages.policy_step`][pgdiag.stages.policy_step] — PPO: its full epochs of
minibatch Adam from the checkpoint's optimizer state and learning rate;
TRPO: the natural-gradient step with its line search — never applied. The
M steps Δθ_m are vmapped; per subject the program returns their pairwise
cosines, the pairwise KL(π_m ‖ π_l) between the resulting policies (mean over
held-out states from the pre-update policy), each step's norm and its KL from
the pre-update policy.

Unlike a training iteration, the batches are sampled with the observation
normalizer and reward scaler frozen (a training batch would push its own
observations first; empty statistics are warmed first, see
[`pgdiag.diagnostics.sampling`][pgdiag.diagnostics.sampling]), so the M steps are from one fixed policy.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from pgdiag import networks, stages
from pgdiag.config import Range, check_record, setting
from pgdiag.diagnostics.subjects import SEED_RANGE
from pgdiag.diagnostics.sampling import algorithm_sampling, frozen_filters, start_carry
from pgdiag.diagnostics.subjects import DiagnosticError
from pgdiag.objectives import kl
from pgdiag.optim import annealed_learning_rate


@dataclasses.dataclass(frozen=True)
class StepSettings:
    """What a step study samples: M batches per subject, the held-out states its KLs are read on."""

    batches: int = setting(100, "M independent batches per subject (CL: 100).", Range(2), label="batches (M)",
                           why="a pairwise cosine needs two steps")
    heldout_envs: int = setting(0, "Held-out states: environments × the run's steps_per_env (0: the run's "
                                   "num_envs).", Range(0))
    seed: int = setting(0, "Seed of the study's samples.", SEED_RANGE)

    def check(self):
        """Each field against its declaration (the errors name the value and what is allowed)."""
        check_record(self, DiagnosticError)


def _cosines(x):
    norm = jnp.linalg.norm(x, axis=-1)
    cos = (x @ x.T) / (norm[:, None] * norm[None, :])
    return jnp.where((norm[:, None] > 0) & (norm[None, :] > 0), cos, jnp.nan), norm


def subject_program(env, static, settings: StepSettings):
    own = algorithm_sampling(static)
    held_shape = dataclasses.replace(own, envs=settings.heldout_envs or static.num_envs)

    def subject(agent, knobs, key):
        agent = agent.replace(filters=frozen_filters(env, own, agent, knobs, key))
        k_batches, k_held = jax.random.split(key)
        lr = annealed_learning_rate(knobs["lr_policy"], agent.iteration, static.num_iterations, knobs)
        theta0 = ravel_pytree(agent.policy)[0]

        def one(k):
            k_start, k_roll, k_step = jax.random.split(k, 3)
            carry = start_carry(env, own, agent, knobs, k_start)
            data = stages.collect_batch(env, agent.policy, agent.value, carry, agent.filters, knobs, k_roll,
                                        own.steps, frozen=True)
            step = stages.policy_step(static, agent.policy, agent.policy_opt, data.batch, lr, knobs, k_step)
            return ravel_pytree(step.params)[0] - theta0, step.params

        keys = jax.vmap(lambda i: jax.random.fold_in(k_batches, i))(jnp.arange(settings.batches))
        deltas, params = jax.vmap(one)(keys)
        k_start, k_roll = jax.random.split(k_held)
        carry = start_carry(env, held_shape, agent, knobs, k_start)
        obs = stages.collect_batch(env, agent.policy, agent.value, carry, agent.filters, knobs, k_roll,
                                   held_shape.steps, frozen=True).batch.obs
        means, log_stds = jax.vmap(lambda p: networks.policy_apply(p, obs, knobs))(params)  # [M, B, act]
        old_mean, old_log_std = networks.policy_apply(agent.policy, obs, knobs)
        pair_kl = jax.lax.map(lambda m: jnp.mean(kl(m[0][None], m[1][None], means, log_stds), axis=-1),
                              (means, log_stds))                                            # [M, M]
        cos, norm = _cosines(deltas)
        return {"cosine": cos, "kl": pair_kl, "norm": norm,
                "kl_from_old": jnp.mean(kl(old_mean[None], old_log_std[None], means, log_stds), axis=-1)}

    return subject
