"""A linear-quadratic task whose expected return, policy gradient and value function are closed-form.

Dynamics s' = A s + B a + w, w ~ N(0, W); reward r = −(sᵀQs + aᵀRa) for the
state and action of the step; initial state s₀ ~ N(μ₀, Σ₀). After every step
the episode ends with probability 1 − p (``terminated``), so an episode's
length is geometric (mean 1/(1 − p)) and, with a discount γ, the value of a
policy is stationary: V(s) = E[r | s] + γp·E[V(s')].

Under an affine Gaussian policy a = K s + k + diag(σ)ε — what a linear
policy network (``policy_hidden=()``) is, behind a frozen observation
normalizer — every quantity is exact:

* [`value_function`][pgdiag.envs.lqr.value_function] — V^π(s) = sᵀUs + uᵀs + c, from a discrete Lyapunov
  equation solved by doubling (Smith's method, no LAPACK call);
* [`expected_return`][pgdiag.envs.lqr.expected_return] — J(π) = E_{s₀}[V^π(s₀)] (γ = 1: the mean raw episode
  return the engine reports);
* [`exact_gradient`][pgdiag.envs.lqr.exact_gradient] — ∇_θ J by automatic differentiation through those
  closed forms with respect to the policy network's parameters;
* [`optimal_controller`][pgdiag.envs.lqr.optimal_controller] — the optimal linear controller K* of the
  discounted problem (discounted Riccati equation) and its return (σ = 0).

Exactness needs the policy to be affine in the state: a linear network
with observation clipping off (or never active). It ignores the time limit
(``MAX_STEPS``), which an episode reaches with probability p^MAX_STEPS ≈ 1e-88.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from pgdiag.envs.base import Env, EnvState, ExactAnswers, time_limit


@struct.dataclass
class LQRSpec:
    A: jax.Array
    B: jax.Array
    Q: jax.Array
    R: jax.Array
    W: jax.Array        # process-noise covariance
    mu0: jax.Array      # initial-state mean
    sigma0: jax.Array   # initial-state covariance
    p: float = struct.field(pytree_node=False, default=0.98)  # probability an episode continues after a step


def default_spec(dtype=jnp.float32) -> LQRSpec:
    """A double integrator (position, velocity; dt = 0.1) with velocity damping 0.9 per step, pushed
    by a force; cost x² + 0.1·v² + 0.01·a². Its optimal gain is moderate (K* ≈ −(4.1, 1.7)), so PPO
    and TRPO at CPU scale close most of the gap from a zero policy (J ≈ −585 with σ = 1) to J* ≈ −4.2."""
    f = lambda x: jnp.asarray(x, dtype)  # noqa: E731
    return LQRSpec(A=f([[1.0, 0.1], [0.0, 0.9]]), B=f([[0.025], [0.5]]), Q=f([[1.0, 0.0], [0.0, 0.1]]),
                   R=f([[0.01]]), W=f([[1e-4, 0.0], [0.0, 1e-3]]), mu0=f([0.0, 0.0]),
                   sigma0=f([[1.0, 0.0], [0.0, 0.25]]))


MAX_STEPS = 10_000


def make_lqr(spec: LQRSpec | None = None) -> Env:
    """The task. Its physics state carries its own PRNG key (noise and termination)."""
    spec = spec or default_spec()
    n, m = spec.B.shape
    chol0, chol_w = jnp.linalg.cholesky(spec.sigma0), jnp.linalg.cholesky(spec.W)

    def reset(key):
        k_s, k_next = jax.random.split(key)
        s = spec.mu0 + chol0 @ jax.random.normal(k_s, (n,))
        return EnvState(physics={"s": s, "key": k_next}, obs=s, reward=jnp.float32(0),
                        terminated=jnp.bool_(False), truncated=jnp.bool_(False), t=jnp.int32(0))

    def step(state, action):
        s = state.physics["s"]
        k_w, k_end, k_next = jax.random.split(state.physics["key"], 3)
        reward = -(s @ spec.Q @ s + action @ spec.R @ action)
        s_next = spec.A @ s + spec.B @ action + chol_w @ jax.random.normal(k_w, (n,))
        terminated = jax.random.uniform(k_end) >= spec.p
        t = state.t + 1
        return EnvState(physics={"s": s_next, "key": k_next}, obs=s_next, reward=reward.astype(jnp.float32),
                        terminated=terminated, truncated=time_limit(t, terminated, MAX_STEPS), t=t)

    return Env(name="lqr", obs_size=n, action_size=m, max_episode_steps=MAX_STEPS, reset=reset, step=step,
               description="Linear-quadratic double integrator with Gaussian noise and geometric episodes; "
                           "J, ∇J and V^π in closed form (pgdiag.envs.lqr).")


# --- closed forms ------------------------------------------------------------------

DOUBLINGS = 48  # Σ_k x^k summed to k < 2^48 terms: converged whenever the series converges


def _lyapunov(F, M, beta):
    """U = Σ_k β^k (Fᵀ)^k M F^k, the solution of U = M + β FᵀUF, by doubling."""
    H = jnp.sqrt(beta) * F

    def body(_, carry):
        X, G = carry
        return X + G.T @ X @ G, G @ G

    return jax.lax.fori_loop(0, DOUBLINGS, body, (M, H))[0]


def _neumann(T, v):
    """Σ_k T^k v = (I − T)⁻¹ v by doubling."""

    def body(_, carry):
        S, G = carry
        return S + G @ S, G @ G

    S, _ = jax.lax.fori_loop(0, DOUBLINGS, body, (jnp.eye(T.shape[0], dtype=T.dtype), T))
    return S @ v


def value_function(spec: LQRSpec, K, k, action_var, gamma=1.0):
    """V^π(s) = sᵀUs + uᵀs + c for a = Ks + k + noise of covariance diag(action_var).

    Matching powers of s in V(s) = r̄(s) + β E[V(s')], β = γp, with
    r̄(s) = −sᵀ(Q + KᵀRK)s − 2kᵀRKs − kᵀRk − tr(R·S) and s' = Fs + g + noise,
    F = A + BK, g = Bk, noise covariance N = BSBᵀ + W:
      U = −(Q + KᵀRK) + β FᵀUF,
      u = (I − βFᵀ)⁻¹(−2KᵀRk + 2β FᵀUg),
      c = [−kᵀRk − tr(RS) + β(gᵀUg + tr(UN) + uᵀg)] / (1 − β)."""
    beta = gamma * spec.p
    S = jnp.diag(action_var)
    F, g = spec.A + spec.B @ K, spec.B @ k
    N = spec.B @ S @ spec.B.T + spec.W
    U = _lyapunov(F, -(spec.Q + K.T @ spec.R @ K), beta)
    u = _neumann(beta * F.T, -2.0 * K.T @ spec.R @ k + 2.0 * beta * F.T @ U @ g)
    c = (-(k @ spec.R @ k) - jnp.trace(spec.R @ S) + beta * (g @ U @ g + jnp.trace(U @ N) + u @ g)) / (1.0 - beta)
    return U, u, c


def quadratic(U, u, c, s):
    """V(s) = sᵀUs + uᵀs + c for states ``s`` [..., n]."""
    return jnp.einsum("...i,ij,...j->...", s, U, s) + s @ u + c


def expected_return(spec: LQRSpec, K, k, action_var, gamma=1.0):
    """J = E_{s₀ ~ N(μ₀, Σ₀)}[V^π(s₀)] = tr(UΣ₀) + μ₀ᵀUμ₀ + uᵀμ₀ + c; −∞ when the closed loop
    diverges (the doubling series then overflows)."""
    U, u, c = value_function(spec, K, k, action_var, gamma)
    J = jnp.trace(U @ spec.sigma0) + spec.mu0 @ U @ spec.mu0 + u @ spec.mu0 + c
    return jnp.where(jnp.isfinite(J), J, -jnp.inf)


def affine_policy(params, obs_stat, knobs):
    """(K, k, action variance) of a linear policy network behind a frozen
    observation normalizer: mean = x·w + b with x = (s − μ)/(σ + 1e-8) when
    normalization is on, x = s when off (observation clipping is not affine: off)."""
    from pgdiag.normalize import NORM_EPS

    if len(params["layers"]) != 1:
        raise ValueError(f"the closed forms need a linear policy (policy_hidden=()), got "
                         f"{len(params['layers']) - 1} hidden layer(s)")
    w, b = params["layers"][0]["w"], params["layers"][0]["b"]
    scale = jnp.where(knobs["obs_normalization"], 1.0 / (obs_stat.std + NORM_EPS), 1.0)
    shift = jnp.where(knobs["obs_normalization"], obs_stat.mean, 0.0)
    K = (w * scale[:, None]).T
    return K, b - K @ shift, jnp.exp(2.0 * params["log_std"])


def policy_return(spec: LQRSpec, params, obs_stat, knobs, gamma=1.0):
    """J of the policy network ``params`` (see [`affine_policy`][pgdiag.envs.lqr.affine_policy])."""
    return expected_return(spec, *affine_policy(params, obs_stat, knobs), gamma)


def exact_gradient(spec: LQRSpec, params, obs_stat, knobs, gamma=1.0):
    """∇_θ J with respect to the policy network's parameters (a pytree like ``params``)."""
    return jax.grad(lambda p: policy_return(spec, p, obs_stat, knobs, gamma))(params)


def optimal_controller(spec: LQRSpec, gamma=1.0, iterations: int = 5000):
    """The optimal controller a = K*s of the discounted problem (β = γp; noise
    does not change it): iterate P ← Q + βAᵀPA − β²AᵀPB(R + βBᵀPB)⁻¹BᵀPA,
    K* = −β(R + βBᵀPB)⁻¹BᵀPA. Returns K* and its return with σ = 0."""
    A, B, Q, R = spec.A, spec.B, spec.Q, spec.R
    beta = gamma * spec.p

    def gain(P):
        return -beta * jnp.linalg.solve(R + beta * B.T @ P @ B, B.T @ P @ A)

    def body(_, P):
        return Q + beta * A.T @ P @ A + beta * A.T @ P @ B @ gain(P)

    P = jax.lax.fori_loop(0, iterations, body, Q)
    K = gain(P)
    m = B.shape[1]
    return K, expected_return(spec, K, jnp.zeros(m, A.dtype), jnp.zeros(m, A.dtype), gamma)


def exact_answers(spec: LQRSpec | None = None) -> ExactAnswers:
    """The task's closed forms for a linear policy
    ([`pgdiag.envs.base.ExactAnswers`][pgdiag.envs.base.ExactAnswers]): V^π of the scaled reward a·r + b is a·V^π
    + b/(1 − γp), p the probability an episode continues after a step. ``spec`` (default: the task's own, built when
    first used)."""

    def value(policy, obs_stat, knobs, gamma, scale=1.0, offset=0.0):
        sp = default_spec() if spec is None else spec
        U, u, c = value_function(sp, *affine_policy(policy, obs_stat, knobs), gamma)
        return lambda s: scale * quadratic(U, u, c, s) + offset / (1.0 - gamma * sp.p)

    def j(policy, obs_stat, knobs):
        return policy_return(default_spec() if spec is None else spec, policy, obs_stat, knobs)

    return ExactAnswers(applies=lambda hidden: tuple(hidden) == (), value=value, policy_return=j)
