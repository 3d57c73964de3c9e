"""The natural policy gradient (Kakade 2001; TRPO's step without its line search, ref §2.7 steps 1–4).

Δ = √(2δ / sᵀ(F + λI)s)·s with s ≈ (F + λI)⁻¹g from a fixed number of CG
iterations on a random Fisher subset, always taken in full: the step's size
is set by the quadratic model of the KL alone, so nothing checks that the
surrogate improves or that the mean KL stays within δ (TRPO's line search
does both). Keeps no optimizer state.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from pgdiag.algorithms import trpo
from pgdiag.algorithms.base import Algorithm, Constraint, PolicyStep, StepInfo


def step(static, params, opt_state, batch, lr, knobs, key) -> PolicyStep:
    _, unravel = ravel_pytree(params)
    objective = trpo.surrogate_objective(params, batch, knobs)
    nat = trpo.natural_step(params, batch, knobs, key, cg_iterations=static.cg_iterations,
                            fisher_size=trpo.fisher_size(static), objective=objective)
    new = nat.flat + nat.full_step
    return PolicyStep(params=unravel(new), opt_state=opt_state,
                      info=StepInfo(policy_loss=-objective(new), clip_fraction=jnp.float32(jnp.nan),
                                    grad_norm=jnp.linalg.norm(nat.grad), step_scale=jnp.float32(1.0)))


NPG = Algorithm(
    name="npg", summary="natural gradient of KL size δ under the quadratic model, no line search",
    init_state=lambda policy, knobs: None, step=step, objective=trpo.objective,
    constraint=Constraint(kind="kl", knob="kl_bound", label="δ (quadratic model)"),
    knobs={k: trpo.KNOBS[k] for k in ("kl_bound", "damping")},
    static={k: trpo.STATIC[k] for k in ("cg_iterations", "fisher_fraction")})
