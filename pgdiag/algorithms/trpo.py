"""TRPO (ref §2.7; Schulman et al. 2015): a natural-gradient step of KL size δ with a backtracking line search.

1. Surrogate L(θ) = mean(r_θ·Â) over the whole batch, advantages normalized
   over the batch; g = ∇L at θ_old.
2. Fisher-vector products: the Hessian of the mean KL(π_old ‖ π_θ) on a
   fixed-size random subset of the batch, plus damping: (F + λI)v.
3. Conjugate gradient, a fixed number of iterations from 0: s ≈ (F + λI)⁻¹g.
4. Full step Δ = β·s with β = √(2δ / sᵀ(F + λI)s).
5. Backtracking line search over the scales 2^0 … 2^-(K-1), evaluated for all
   candidates at once and the first acceptable one taken (no data-dependent
   Python control flow): accept when the surrogate improves, the mean KL over
   the whole batch is ≤ δ, and actual / expected improvement > accept_ratio
   (expected = scale·g·Δ). If none is acceptable the policy is unchanged.

Steps 1–4 are [`natural_step`][pgdiag.algorithms.trpo.natural_step] (the natural policy gradient,
[`npg`][pgdiag.algorithms.npg], takes it as it is). The value network is trained as in PPO
([`pgdiag.algorithms.epochs.value_update`][pgdiag.algorithms.epochs.value_update]). The step is returned, never
applied: the caller keeps it or not. The entropy coefficient and gradient clipping do not act here: the original
TRPO step has no entropy term, and rescaling g leaves the natural-gradient step unchanged (ref §8 B2).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from jax.flatten_util import ravel_pytree

from pgdiag import networks
from pgdiag.algorithms.base import Algorithm, Constraint, PolicyStep, StepInfo, Terms, WorkingSet
from pgdiag.config import Option, Range
from pgdiag.objectives import kl_stats, normalize_advantages, probability_ratio, surrogate
from pgdiag.rollout import UpdateBatch

TINY = 1e-30


def conjugate_gradient(matvec, b: jax.Array, iterations: int) -> jax.Array:
    """Solve A x = b for symmetric positive-definite A, given x ↦ A x, with a
    fixed number of CG iterations from x₀ = 0 (no early stopping, ref §2.7).
    A converged residual stays at zero instead of dividing by it."""

    def body(_, carry):
        x, r, p, rr = carry
        ap = matvec(p)
        alpha = rr / jnp.maximum(p @ ap, TINY)
        x = x + alpha * p
        r = r - alpha * ap
        rr_new = r @ r
        p = r + (rr_new / jnp.maximum(rr, TINY)) * p
        return x, r, p, rr_new

    x0 = jnp.zeros_like(b)
    return jax.lax.fori_loop(0, iterations, body, (x0, b, b, b @ b))[0]


def mean_kl(params, obs, old_mean, old_log_std, knobs) -> jax.Array:
    """Mean over ``obs`` of KL(π_old ‖ π_params), π_old given by its outputs."""
    return kl_stats(old_mean, old_log_std, *networks.policy_apply(params, obs, knobs)).mean_kl


def fisher_vector_product(params, obs, knobs, damping):
    """v ↦ (F + λI)v for flat vectors v, F the Hessian of the mean KL at
    ``params`` on ``obs`` (forward-over-reverse differentiation; ref §2.7 step 2)."""
    flat, unravel = ravel_pytree(params)
    old_mean, old_log_std = jax.lax.stop_gradient(networks.policy_apply(params, obs, knobs))
    kl_grad = jax.grad(lambda th: mean_kl(unravel(th), obs, old_mean, old_log_std, knobs))
    return lambda v: jax.jvp(kl_grad, (flat,), (v,))[1] + damping * v


@struct.dataclass
class TRPOInfo:
    surrogate_after: jax.Array  # L at the accepted parameters (L at θ_old when none was accepted)
    step_scale: jax.Array       # accepted 2^-i, or 0 when the line search failed
    grad_norm: jax.Array        # |g|


@struct.dataclass
class NaturalStep:
    flat: jax.Array       # θ_old, flattened
    full_step: jax.Array  # Δ = β·s, the step of mean KL ≈ δ under the quadratic model
    loss0: jax.Array      # L(θ_old)
    grad: jax.Array       # g = ∇L(θ_old)
    expected: jax.Array   # g·Δ, the improvement the linear model predicts


def natural_step(params, batch: UpdateBatch, knobs, key, *, cg_iterations: int, fisher_size: int, objective=None):
    """Steps 1–4 above: g, the CG solve s ≈ (F + λI)⁻¹g on a random Fisher subset of ``fisher_size`` states drawn
    with ``key``, and the full step Δ = √(2δ / sᵀ(F + λI)s)·s. ``objective`` is the flat surrogate θ ↦ L(θ) (built
    by [`surrogate_objective`][pgdiag.algorithms.trpo.surrogate_objective] when not given)."""
    flat, _ = ravel_pytree(params)
    objective = objective or surrogate_objective(params, batch, knobs)
    loss0, g = jax.value_and_grad(objective)(flat)
    subset = jax.random.permutation(key, batch.obs.shape[0])[:fisher_size]
    fvp = fisher_vector_product(params, batch.obs[subset], knobs, knobs["damping"])
    s = conjugate_gradient(fvp, g, cg_iterations)
    shs = s @ fvp(s)
    full_step = jnp.sqrt(2.0 * knobs["kl_bound"] / jnp.maximum(shs, TINY)) * s
    return NaturalStep(flat=flat, full_step=full_step, loss0=loss0, grad=g, expected=g @ full_step)


def surrogate_objective(params, batch: UpdateBatch, knobs):
    """θ (flat) ↦ L(θ) = mean(r_θ·Â), advantages normalized over the whole batch (ref §6)."""
    _, unravel = ravel_pytree(params)
    adv = normalize_advantages(batch.advantages)

    def objective(theta):
        mean, log_std = networks.policy_apply(unravel(theta), batch.obs, knobs)
        return surrogate(probability_ratio(networks.gaussian_log_prob(mean, log_std, batch.action),
                                           batch.old_log_prob), adv)

    return objective


def trpo_step(params, batch: UpdateBatch, knobs, key, *, cg_iterations: int, line_search_steps: int,
              fisher_size: int):
    """One TRPO policy update on ``batch``. Returns the new parameters and a
    [`TRPOInfo`][pgdiag.algorithms.trpo.TRPOInfo]."""
    _, unravel = ravel_pytree(params)
    objective = surrogate_objective(params, batch, knobs)
    old_mean, old_log_std = jax.lax.stop_gradient(networks.policy_apply(params, batch.obs, knobs))
    nat = natural_step(params, batch, knobs, key, cg_iterations=cg_iterations, fisher_size=fisher_size,
                       objective=objective)
    flat, full_step, loss0, g, expected = nat.flat, nat.full_step, nat.loss0, nat.grad, nat.expected

    scales = 0.5 ** jnp.arange(line_search_steps, dtype=jnp.float32)

    def try_scale(scale):
        theta = flat + scale * full_step
        return objective(theta), mean_kl(unravel(theta), batch.obs, old_mean, old_log_std, knobs)

    losses, kls = jax.vmap(try_scale)(scales)
    improvement = losses - loss0
    ok = ((improvement > 0) & (kls <= knobs["kl_bound"])
          & (improvement > knobs["accept_ratio"] * scales * expected))
    accepted = jnp.any(ok)
    first = jnp.argmax(ok)
    scale = jnp.where(accepted, scales[first], 0.0)
    new_flat = jnp.where(accepted, flat + scale * full_step, flat)
    info = TRPOInfo(surrogate_after=jnp.where(accepted, losses[first], loss0), step_scale=scale,
                    grad_norm=jnp.linalg.norm(g))
    return unravel(new_flat), info


def step(static, params, opt_state, batch, lr, knobs, key) -> PolicyStep:
    new, info = trpo_step(params, batch, knobs, key, cg_iterations=static.cg_iterations,
                          line_search_steps=static.line_search_steps, fisher_size=fisher_size(static))
    return PolicyStep(params=new, opt_state=opt_state,
                      info=StepInfo(policy_loss=-info.surrogate_after, clip_fraction=jnp.float32(jnp.nan),
                                    grad_norm=info.grad_norm, step_scale=info.step_scale))


def objective(terms: Terms, knobs, state):
    """The surrogate L = mean(r·Â) (CL eq. 15), as the step maximizes it (no entropy term)."""
    return surrogate(terms.ratio, terms.adv)


def fisher_size(static) -> int:
    """States in the Fisher-vector-product subset: int(fraction · batch), truncated as the original's
    ``int(0.1 * T)`` (ref §2.7): 204 of 2,048, 25 of 256."""
    return max(1, int(static.fisher_fraction * static.batch_size))


_nonnegative = Range(0)
#: TRPO's own settings (ref §2.7); NPG declares the ones it shares.
KNOBS = {
    "kl_bound": Option(0.01, "TRPO/NPG mean-KL step size δ (the original's max_kl).", Range(0, low_open=True)),
    "damping": Option(0.1, "TRPO/NPG Fisher damping λ: CG solves (F + λI)x = g.", _nonnegative),
    "accept_ratio": Option(0.1, "TRPO line search: accept when actual/expected improvement exceeds this.",
                           _nonnegative),
}
STATIC = {
    "cg_iterations": Option(10, "TRPO/NPG conjugate-gradient iterations (fixed, no early stop).", Range(1)),
    "line_search_steps": Option(10, "TRPO backtracking line search: step scales 2^0 … 2^-(n-1).", Range(1)),
    "fisher_fraction": Option(0.1, "TRPO/NPG: fraction of the batch (a random subset, fixed size) for the "
                                   "Fisher-vector product.", Range(0, 1, low_open=True)),
}

def working_set(static) -> WorkingSet:
    """Its line search evaluates the policy at every scale at once (vmapped) over the whole batch."""
    return WorkingSet(forward_passes=static.line_search_steps)


TRPO = Algorithm(
    name="trpo", summary="natural gradient of KL size δ with a backtracking line search (ref §2.7)",
    init_state=lambda policy, knobs: None, step=step, objective=objective,
    constraint=Constraint(kind="kl", knob="kl_bound", label="δ"),
    knobs=KNOBS, static=STATIC, working_set=working_set)
