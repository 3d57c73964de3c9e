"""Reward landscapes on a plane around a checkpointed policy: ONE compiled program (ref §4.2 items 6–7).

The plane (CL §5.3, Figs 6–8): θ(x, y) = θ + x·Δ + y·d, where

* Δ is the step the algorithm takes from θ (:func:`pg_diag.stages.policy_step`
  on a batch of the frozen policy, from the checkpoint's optimizer state and
  learning rate): x = 1 is the policy the step produces;
* d is a Gaussian direction in parameter space rescaled to the L2 norm
  ``random_norm`` (our reading of the paper's "random norm 2 Gaussian
  vector": "norm 2" as the L2 norm, the length a setting, 1 by default);

both axes span 0 … ``extent`` on a ``points`` × ``points`` grid. At every grid
point the program estimates the true mean return by sampling the perturbed
policy (observation normalizer and reward scaler frozen): ``envs`` environments
from reset run on through episode ends, and the estimate after N pairs is the
mean raw return of the episodes that ended within them (complete episodes,
as training's ``mean_return``; the count is reported), with its standard
error. The sizes are nested prefixes of one stream per point, and every point
has its own stream (independent noise, so the picture shows the noise an
estimate from N pairs has).

Beside it, on the batch the step was computed from, the program evaluates the
surrogate the algorithm maximizes — PPO: the clipped objective plus its
entropy term; TRPO: the surrogate mean(r·Â) — the unclipped surrogate, and the
mean KL(π_θ ‖ π_θ(x,y)) over the batch's states (TRPO's constraint, whose
boundary KL = δ the figures draw). Advantages are normalized over the whole
batch. On the linear-quadratic task with a linear policy, J(θ(x, y)) is exact.

Several steps can share the study (``step_pairs``: the algorithm's own batch,
and e.g. 1e6 pairs); each has its own plane with the same random direction.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct
from jax.flatten_util import ravel_pytree

from pg_diag import envs, networks, stages
from pg_diag.diagnostics.gradients import MAX_PAIRS
from pg_diag.diagnostics.sampling import Sampling, frozen_filters, start_carry
from pg_diag.diagnostics.subjects import DiagnosticError, check_batching, over_subjects, require
from pg_diag.envs import lqr
from pg_diag.objectives import clipped_surrogate, entropy, kl, normalize_advantages, probability_ratio, surrogate
from pg_diag.optim import annealed_learning_rate
from pg_diag.rollout import collect, reset_envs


@dataclasses.dataclass(frozen=True)
class LandscapeSettings:
    points: int = 7                         # grid points per axis (CL: ticks every 0.5 on 0 … 3)
    extent: float = 3.0                     # both axes span 0 … extent (CL: 3)
    random_norm: float = 1.0                # L2 norm of the random direction d (1 unit on the y axis)
    sizes: tuple = (2_000, 20_000, 100_000)  # pairs per grid point of the true return (nested)
    step_pairs: tuple = (0,)                # pairs of each step's batch (rounded to whole segments of the run's
    #                                         steps_per_env); 0 = the algorithm's own batch
    envs: int = 16                          # environments per grid point
    seed: int = 0
    batching: str = "vmap"                  # subjects vmapped together, or "map": in turn (less memory)
    resamples: int = 500                    # bootstrap resamples of the sign-agreement CIs

    def check(self) -> None:
        require(isinstance(self.points, int) and self.points >= 2,
             f"points must be an integer ≥ 2 (grid points per axis), got {self.points!r}")
        require(self.extent > 0,
                f"extent must be > 0: a plane axis of zero length has no landscape; got {self.extent!r}")
        require(self.random_norm > 0, f"random_norm must be > 0: a random direction of zero length spans no plane; "
                                   f"got {self.random_norm!r}")
        sizes = tuple(self.sizes)
        require(len(sizes) > 0 and all(isinstance(n, int) and n > 0 for n in sizes),
             f"sizes must be a non-empty list of positive integers, got {self.sizes!r}")
        require(max(sizes) <= MAX_PAIRS, f"sizes: {max(sizes)} pairs per point is beyond the largest allowed, "
                                      f"2^24 = {MAX_PAIRS}")
        require(isinstance(self.envs, int) and 1 <= self.envs <= min(sizes),
             f"envs must be an integer between 1 and the smallest size ({min(sizes)}), got {self.envs!r}")
        steps = tuple(self.step_pairs)
        require(len(steps) > 0 and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_PAIRS
                                    for n in steps),
             f"step_pairs must be a non-empty list of integers in 0 … 2^24 (0 = the algorithm's own batch), got "
             f"{self.step_pairs!r}")
        check_batching(self.batching, self.resamples)


@dataclasses.dataclass(frozen=True)
class Resolved:
    """The static shape of a landscape program, resolved against the runs."""

    coords: tuple       # the axis values 0 … extent
    random_norm: float
    envs: int           # environments per grid point
    chunk_steps: int    # steps per environment per chunk
    record: tuple       # chunk index at which each size is complete
    sizes: tuple        # the pairs each size stands for: envs × chunk_steps × (record + 1)
    step_envs: tuple    # environments of each step's batch (× the run's steps_per_env)
    own: Sampling       # the algorithm's own batch shape
    exact: bool         # J is closed-form (the LQR task with a linear policy)

    @property
    def num_chunks(self) -> int:
        return self.record[-1] + 1

    @property
    def step_pairs(self) -> tuple:
        return tuple(e * self.own.steps for e in self.step_envs)

    @property
    def grid_points(self) -> int:
        return len(self.coords) ** 2


def resolve(settings: LandscapeSettings, statics: list) -> Resolved:
    settings.check()
    first = statics[0]
    own = Sampling(envs=first.num_envs, steps=first.steps_per_env,
                   start="reset" if first.reset_every_iteration else "checkpoint")
    for s in statics[1:]:
        if (s.num_envs, s.steps_per_env, s.reset_every_iteration) != (own.envs, own.steps, own.start == "reset"):
            raise DiagnosticError("the runs' batches differ in shape (num_envs, steps_per_env or "
                                  "reset_every_iteration): measure them in separate studies")
    sizes = sorted(set(int(n) for n in settings.sizes))
    chunk_steps = max(1, sizes[0] // settings.envs)
    per_chunk = settings.envs * chunk_steps
    record = tuple(sorted({max(1, round(n / per_chunk)) - 1 for n in sizes}))
    step_envs = []
    for n in settings.step_pairs:
        e = own.envs if n == 0 else max(1, round(n / own.steps))
        if (e * own.steps) % first.num_minibatches:
            raise DiagnosticError(f"step_pairs: a batch of {e * own.steps} pairs ({e} environments × "
                                  f"{own.steps} steps) does not divide into the runs' {first.num_minibatches} "
                                  f"minibatches")
        if e not in step_envs:
            step_envs.append(e)
    coords = tuple(float(settings.extent) * i / (settings.points - 1) for i in range(settings.points))
    exact = first.task == "lqr" and tuple(first.policy_hidden) == ()
    return Resolved(coords=coords, random_norm=float(settings.random_norm), envs=settings.envs,
                    chunk_steps=chunk_steps, record=record, sizes=tuple(per_chunk * (c + 1) for c in record),
                    step_envs=tuple(step_envs), own=own, exact=exact)


@struct.dataclass
class ReturnSums:
    """Episodes that ended, and the Chan-merged mean and M2 of their raw returns."""

    n: jax.Array
    mean: jax.Array
    m2: jax.Array

    @staticmethod
    def of(returns, ended) -> "ReturnSums":
        w = ended.astype(jnp.float32)
        n = jnp.sum(w)
        mean = jnp.sum(w * returns) / jnp.maximum(n, 1.0)
        return ReturnSums(n=n, mean=mean, m2=jnp.sum(w * jnp.square(returns - mean)))

    def merge(self, other: "ReturnSums") -> "ReturnSums":
        n = self.n + other.n
        delta = other.mean - self.mean
        safe = jnp.maximum(n, 1.0)
        return ReturnSums(n=n, mean=self.mean + delta * other.n / safe,
                          m2=self.m2 + other.m2 + delta * delta * self.n * other.n / safe)


def return_stream(env, r: Resolved, policy, filters, knobs, key) -> ReturnSums:
    """The episodes of ``r.envs`` environments from reset under ``policy`` (filters frozen), cumulated at
    every recorded size: a [sizes]-stacked :class:`ReturnSums`."""
    k_reset, k_run = jax.random.split(key)
    carry, _ = reset_envs(env, k_reset, r.envs, filters, knobs, frozen=True)

    def body(state, c):
        carry, acc = state
        carry, _, tr = collect(env, policy, carry, filters, jax.random.fold_in(k_run, c), knobs, r.chunk_steps,
                               frozen=True)
        acc = acc.merge(ReturnSums.of(tr.finished_return, tr.done))
        return (carry, acc), acc

    zero = ReturnSums(n=jnp.float32(0), mean=jnp.float32(0), m2=jnp.float32(0))
    _, history = jax.lax.scan(body, (carry, zero), jnp.arange(r.num_chunks))
    return jax.tree.map(lambda x: x[jnp.asarray(r.record)], history)


@struct.dataclass
class Surface:
    surrogate: jax.Array    # the objective the algorithm maximizes, on its batch
    unclipped: jax.Array    # mean(r·Â)
    kl: jax.Array           # mean over the batch's states of KL(π_θ ‖ π_θ(x,y))


def surrogate_surface(static, policy, old, batch, knobs) -> Surface:
    """The surrogate of the algorithm at ``policy`` on ``batch`` (collected by ``old``), advantages
    normalized over the whole batch (objectives.py: CL eqs. 13/15)."""
    mean, log_std = networks.policy_apply(policy, batch.obs, knobs)
    ratio = probability_ratio(networks.gaussian_log_prob(mean, log_std, batch.action), batch.old_log_prob)
    adv = normalize_advantages(batch.advantages)
    plain = surrogate(ratio, adv)
    if static.algorithm == "ppo":
        clipped, _ = clipped_surrogate(ratio, adv, knobs["clip_eps"])
        objective = clipped + knobs["entropy_coef"] * jnp.mean(entropy(log_std))
    else:
        objective = plain
    old_mean, old_log_std = networks.policy_apply(old, batch.obs, knobs)
    return Surface(surrogate=objective, unclipped=plain, kl=jnp.mean(kl(old_mean, old_log_std, mean, log_std)))


def step_batch(env, static, own: Sampling, agent, knobs, key, num_envs: int):
    """A batch of ``num_envs`` × ``steps_per_env`` pairs of the frozen policy, from where the algorithm would
    sample next."""
    k_start, k_roll = jax.random.split(key)
    carry = start_carry(env, dataclasses.replace(own, envs=num_envs), agent, knobs, k_start)
    return stages.collect_batch(env, agent.policy, agent.value, carry, agent.filters, knobs, k_roll, own.steps,
                                frozen=True).batch


def step_direction(static, agent, batch, lr, knobs, key):
    """Δ = the algorithm's step from ``agent`` on ``batch`` (flat), computed with the static of a run whose
    batch has this size (minibatch and Fisher-subset sizes scale with it)."""
    sized = dataclasses.replace(static, num_envs=batch.obs.shape[0] // static.steps_per_env)
    new = stages.policy_step(sized, agent.policy, agent.policy_opt, batch, lr, knobs, key).params
    return ravel_pytree(new)[0] - ravel_pytree(agent.policy)[0]


def random_direction(key, size: int, norm: float):
    d = jax.random.normal(key, (size,))
    return d * (norm / jnp.linalg.norm(d))


def plane(theta, delta, direction, coords):
    """θ(x, y) for every grid point, [G·G, P] with x major."""
    c = jnp.asarray(coords, jnp.float32)
    grid = theta + c[:, None, None] * delta + c[None, :, None] * direction
    return grid.reshape(-1, theta.shape[0])


def subject_program(env, static, r: Resolved):
    """(agent, knobs, key) -> per subject: the returns, surfaces and step statistics of every plane."""

    def subject(agent, knobs, key):
        agent = agent.replace(filters=frozen_filters(env, r.own, agent, knobs, key))
        theta, unravel = ravel_pytree(agent.policy)
        k_dir, k_steps, k_true = jax.random.split(key, 3)
        d = random_direction(k_dir, theta.shape[0], r.random_norm)
        lr = annealed_learning_rate(knobs["lr_policy"], agent.iteration, static.num_iterations, knobs)
        out = {"returns": [], "surface": [], "exact": [], "step_norm": [], "step_kl": []}
        for b, num_envs in enumerate(r.step_envs):
            k_batch, k_step = jax.random.split(jax.random.fold_in(k_steps, b))
            batch = step_batch(env, static, r.own, agent, knobs, k_batch, num_envs)
            delta = step_direction(static, agent, batch, lr, knobs, k_step)
            thetas = plane(theta, delta, d, r.coords)
            keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.fold_in(k_true, b), i))(
                jnp.arange(thetas.shape[0]))
            out["returns"].append(jax.vmap(lambda th, k: return_stream(env, r, unravel(th), agent.filters, knobs,
                                                                       k))(thetas, keys))
            surface = jax.vmap(lambda th: surrogate_surface(static, unravel(th), agent.policy, batch, knobs))(thetas)
            out["surface"].append(surface)
            out["step_norm"].append(jnp.linalg.norm(delta))
            out["step_kl"].append(surrogate_surface(static, unravel(theta + delta), agent.policy, batch, knobs).kl)
            if r.exact:
                spec = lqr.default_spec()
                out["exact"].append(jax.vmap(lambda th: lqr.policy_return(spec, unravel(th), agent.filters.obs,
                                                                          knobs))(thetas))
            else:
                out["exact"].append(jnp.full(thetas.shape[0], jnp.nan))
        return {k: jax.tree.map(lambda *x: jnp.stack(x), *v) for k, v in out.items()}

    return subject


def program(static, r: Resolved, batching: str = "vmap"):
    env = envs.make(static.task, static.physics, static.physics_threads, static.solver)
    subject = subject_program(env, static, r)
    return over_subjects(subject, batching)


def memory_estimate(static, r: Resolved, num_subjects: int, obs_size: int, action_size: int, num_params: int,
                    batching: str) -> int:
    """A rough upper estimate of the program's peak bytes: every grid point's chunk of transitions in flight,
    the step batches with their activations, the plane's parameter sets."""
    per_pair = 2 * obs_size + 2 * action_size + 12 + 3 * sum(static.policy_hidden) + 3 * sum(static.value_hidden)
    streams = len(r.step_envs) * r.grid_points
    per_subject = (streams * (r.envs * r.chunk_steps * per_pair + 2 * num_params)
                   + max(r.step_envs) * r.own.steps * per_pair * 2)
    return 4 * per_subject * (num_subjects if batching == "vmap" else 1)


def pairs_total(r: Resolved, num_subjects: int) -> int:
    """State–action pairs sampled: the true-return streams and the step batches."""
    return num_subjects * (len(r.step_envs) * r.grid_points * r.sizes[-1] + sum(r.step_pairs))
