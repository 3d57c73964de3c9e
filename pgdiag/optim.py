"""Adam with traced learning rate; LR annealing; global gradient-norm clipping."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

TORCH_CLIP_EPS = 1e-6  # torch.nn.utils.clip_grad_norm_ adds this to the norm


def adam(eps) -> optax.GradientTransformation:
    """Adam's moment scaling (β = 0.9, 0.999; ``eps`` added after the square
    root, as in torch). The learning rate is applied by [`apply_update`][pgdiag.optim.apply_update]."""
    return optax.scale_by_adam(b1=0.9, b2=0.999, eps=eps)


# --- IM opt. 4: Adam learning-rate annealing ---------------------------------

def annealed_learning_rate(lr0, iteration, num_iterations: int, knobs):
    """IM opt. 4 (ref §2.5): iteration k (0-indexed) uses lr0·(1 − k/K) when on,
    lr0 when off; the same factor applies to the policy and the value Adam."""
    frac = (num_iterations - iteration).astype(jnp.float32) / num_iterations
    return lr0 * jnp.where(knobs["lr_annealing"], frac, 1.0)


# --- IM opt. 9: global gradient-norm clipping ---------------------------------

def global_norm(tree) -> jax.Array:
    return jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(tree)))


def clip_by_global_norm(grads, knobs):
    """IM opt. 9 (ref §2.5): rescale the whole gradient so its L2 norm is at most
    max_grad_norm, exactly as torch's clip_grad_norm_; identity when off."""
    norm = global_norm(grads)
    coef = jnp.minimum(1.0, knobs["max_grad_norm"] / (norm + TORCH_CLIP_EPS))
    coef = jnp.where(knobs["grad_clipping"], coef, 1.0)
    return jax.tree.map(lambda g: g * coef, grads), norm


def apply_update(params, grads, opt_state, lr, eps):
    """One Adam step with learning rate ``lr`` (descent on ``grads``)."""
    updates, opt_state = adam(eps).update(grads, opt_state, params)
    params = jax.tree.map(lambda p, u: p - lr * u, params, updates)
    return params, opt_state
