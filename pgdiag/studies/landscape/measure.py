"""Reward landscapes on a plane around a checkpointed policy: ONE compiled program (ref §4.2 items 6–7).

The plane (CL §5.3, Figs 6–8): θ(x, y) = θ + x·Δ + y·d, where

* Δ is the step the algorithm takes from θ ([`pgdiag.stages.policy_step`][pgdiag.stages.policy_step]
  on a batch of the frozen policy, from the checkpoint's optimizer state and
  learning rate): x = 1 is the policy the step produces;
* d is a Gaussian direction in parameter space rescaled to the L2 norm
  ``random_norm``, 2 by default: CL Fig 6, "one unit corresponds to moving
  along a random Gaussian vector, rescaled to norm 2" (read as the L2 norm).
  The paper adds that the step's norm is "typically an order of magnitude
  lower than the random direction"; every plane records ‖Δ‖ and
  ‖Δ‖ / ``random_norm`` so that can be read off;

both axes span 0 … ``extent`` on a ``points`` × ``points`` grid. At every grid
point the program estimates the true mean return of the perturbed policy
(observation normalizer and reward scaler frozen) from complete episodes
from reset ([`return_stream`][pgdiag.studies.landscape.return_streams.return_stream]). A sample of N pairs stands for
n = round(N / L̂) episodes; every one of the n episodes runs to termination or
the time limit, however long, and the estimate is their mean raw return, with
its standard error and the pairs the n episodes actually took (the returns
table's ``pairs``: near N where the perturbed policy lives as long as the
subject's, far from it where it falls sooner or later). Fixing the number of
episodes before sampling keeps the estimate unbiased: a rule that stops at a
pair budget keeps the episodes that fit (short ones, when it counts those
that end inside the budget) or stops after a long one (when it counts those
that start inside it), and either biases the mean toward one length. The
sizes are nested prefixes of one stream per point, and every point has its
own stream (independent noise, so the picture shows the noise an estimate
from N pairs has). Memory does not depend on N: streams run in chunks of
``chunk_steps``.

L̂, the subject's mean episode length ([`episode_length`][pgdiag.studies.landscape.return_streams.episode_length]), is
the mean length of m = ``length_episodes`` complete episodes of the subject's own policy, m environments each run
from reset to its own episode's end (termination or the time limit, as every episode of the task), their number
fixed before sampling: the lengths are i.i.d. draws of the episode length L, so E[L̂] = E[L] exactly (no censoring),
with standard error SD(L)/√m. Its stream is as deep as the longest of the m episodes (at most the time limit). The
mean length of the episodes that end inside one fixed-length batch would be biased short: an episode longer than the
batch never ends in it, and a long one is less likely to both start and end inside it. With a constant hazard h,
batches of B steps from reset and no time limit inside them, the ended episodes' total length over their number
tends to (B − (1−h)(1−(1−h)^B)/h) / (B·h) over many batches, against E[L] = 1/h: 0.37/h at B = 1/h. L̂ only sets how
many episodes a point's estimate uses, never which, so an error in L̂ moves the pairs a point uses (E[N / L̂] ≥ N /
E[L] by Jensen, by a factor about 1 + CV(L)²/m), not the estimate's mean.

Beside it, on the batch the step was computed from, the program evaluates the
surrogate the algorithm maximizes — PPO: the clipped objective plus its
entropy term; TRPO: the surrogate mean(r·Â) — the unclipped surrogate, and the
mean KL(π_θ ‖ π_θ(x,y)) over the batch's states (TRPO's constraint, whose
boundary KL = δ the figures draw). Advantages are normalized over the whole
batch. On the linear-quadratic task with a linear policy, J(θ(x, y)) is exact.

Several steps can share the study (``step_pairs``: the algorithm's own batch,
and e.g. 1e6 pairs); each has its own plane with the same random direction
and the same L̂.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from pgdiag import envs
from pgdiag.config import Range, check_record, setting
from pgdiag.studies.landscape.geometry import (plane, random_direction, step_batch, step_direction, surrogate_surface)
from pgdiag.studies.landscape.memory import landscape_bytes
from pgdiag.studies.landscape.return_streams import episode_counts, episode_length, return_stream
from pgdiag.diagnostics.sizes import MAX_PAIRS
from pgdiag.diagnostics.sampling import Sampling, algorithm_sampling, frozen_filters
from pgdiag.diagnostics.subjects import BATCHING, RESAMPLES, SEED_RANGE
from pgdiag.diagnostics.subjects import DiagnosticError, over_subjects, require
from pgdiag.optim import annealed_learning_rate


_POSITIVE = Range(0, low_open=True)


@dataclasses.dataclass(frozen=True)
class LandscapeSettings:
    """The plane a landscape study draws, the returns' sample sizes on it and the steps it draws."""

    points: int = setting(7, "Grid points per axis (CL: ticks every 0.5 on 0 … 3).", Range(2))
    extent: float = setting(3.0, "Both axes span 0 … extent (CL: 3).", _POSITIVE,
                            why="a plane axis of zero length has no landscape")
    random_norm: float = setting(2.0, "L2 norm of the random direction d, 1 unit on the y axis (CL Fig 6: \"a "
                                      "random Gaussian vector, rescaled to norm 2\").", _POSITIVE,
                                 why="CL: 2; a random direction of zero length spans no plane")
    sizes: tuple = setting((2_000, 20_000, 100_000), "Pairs per grid point of the true return (nested).",
                           items=Range(1, MAX_PAIRS), item="size", nonempty=True, why="pairs per grid point")
    step_pairs: tuple = setting((0,), "Pairs of each step's batch (rounded to whole segments of the run's "
                                      "steps_per_env); 0 = the algorithm's own batch.",
                                items=Range(0, MAX_PAIRS), nonempty=True, why="0 = the algorithm's own batch")
    envs: int = setting(16, "Environments per grid point (at most the smallest size).", Range(1))
    chunk_steps: int = setting(250, "Steps per environment per chunk of a return stream (memory, not N).",
                               Range(1, 100_000))
    length_episodes: int = setting(256, "Complete episodes from reset behind L̂, the subject's mean episode "
                                        "length (n = round(N / L̂) episodes per point), one per environment of "
                                        "its stream; SE of L̂: SD(L)/√m.", Range(2, MAX_PAIRS),
                                   why="2 at least for the standard error of the mean episode length")
    seed: int = setting(0, "Seed of the study's samples.", SEED_RANGE)
    batching: str = setting("vmap", "Subjects vmapped together, or \"map\": in turn (less memory).", BATCHING)
    resamples: int = setting(500, "Bootstrap resamples of the sign-agreement CIs.", RESAMPLES)

    def check(self) -> None:
        """Each field against its declaration, then the environments against the smallest size."""
        check_record(self, DiagnosticError)
        require(self.envs <= min(self.sizes),
                f"envs must be an integer between 1 and the smallest size ({min(self.sizes)}), got {self.envs!r}")


@dataclasses.dataclass(frozen=True)
class Resolved:
    """The static shape of a landscape program, resolved against the runs."""

    coords: tuple       # the axis values 0 … extent
    random_norm: float
    envs: int           # environments per grid point
    chunk_steps: int    # steps per environment per chunk (independent of the sizes)
    sizes: tuple        # pairs per grid point each estimate stands for (sorted)
    max_chunks: int     # a bound on a stream's chunks: every episode of the largest size at the time limit
    step_envs: tuple    # environments of each step's batch (× the run's steps_per_env)
    own: Sampling       # the algorithm's own batch shape
    exact: bool         # J is closed-form (the LQR task with a linear policy)
    length_episodes: int = 256  # complete episodes from reset behind L̂, one per environment

    @property
    def step_pairs(self) -> tuple:
        return tuple(e * self.own.steps for e in self.step_envs)

    @property
    def grid_points(self) -> int:
        return len(self.coords) ** 2


def resolve(settings: LandscapeSettings, statics: list) -> Resolved:
    settings.check()
    first = statics[0]
    own = algorithm_sampling(first)
    for s in statics[1:]:
        if (s.num_envs, s.steps_per_env, s.reset_every_iteration) != (own.envs, own.steps, own.start == "reset"):
            raise DiagnosticError("the runs' batches differ in shape (num_envs, steps_per_env or "
                                  "reset_every_iteration): measure them in separate studies")
    sizes = tuple(sorted(set(int(n) for n in settings.sizes)))
    # n ≤ N episodes (L̂ ≥ 1), each at most the time limit: a bound the loop never reaches in practice (and
    # ≥ one episode per environment, the length stream's)
    episodes_per_env = -(-sizes[-1] // settings.envs)
    max_chunks = min(-(-episodes_per_env * envs.episode_limit(first.task) // settings.chunk_steps), 2 ** 30)
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
    exact = envs.exact_answers(first.task, first.policy_hidden, first.network) is not None
    return Resolved(coords=coords, random_norm=float(settings.random_norm), envs=settings.envs,
                    chunk_steps=settings.chunk_steps, sizes=sizes, max_chunks=max_chunks,
                    step_envs=tuple(step_envs), own=own, exact=exact, length_episodes=settings.length_episodes)


LENGTH_KEY = 0x4C454E  # fold_in data of the length stream's key, apart from the subject key's three splits


def subject_program(env, static, r: Resolved):
    """(agent, knobs, key) -> per subject: the returns, surfaces and step statistics of every plane."""

    def subject(agent, knobs, key):
        agent = agent.replace(filters=frozen_filters(env, r.own, agent, knobs, key))
        theta, unravel = ravel_pytree(agent.policy)
        k_dir, k_steps, k_true = jax.random.split(key, 3)
        d = random_direction(k_dir, theta.shape[0], r.random_norm)
        lr = annealed_learning_rate(knobs["lr_policy"], agent.iteration, static.num_iterations, knobs)
        # L̂ from the subject's own policy, its own stream: the same episode counts on every plane
        length = episode_length(env, r, agent.policy, agent.filters, knobs, jax.random.fold_in(key, LENGTH_KEY))
        counts = episode_counts(r.sizes, length.mean)
        length_se = jnp.sqrt(length.m2 / jnp.maximum(length.n - 1, 1) / jnp.maximum(length.n, 1))
        out = {"returns": [], "surface": [], "exact": [], "step_norm": [], "step_kl": [], "mean_length": [],
               "mean_length_se": [], "length_episodes": []}
        for b, num_envs in enumerate(r.step_envs):
            k_batch, k_step = jax.random.split(jax.random.fold_in(k_steps, b))
            batch = step_batch(env, static, r.own, agent, knobs, k_batch, num_envs)
            delta = step_direction(static, agent, batch, lr, knobs, k_step)
            thetas = plane(theta, delta, d, r.coords)
            keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.fold_in(k_true, b), i))(
                jnp.arange(thetas.shape[0]))
            out["returns"].append(jax.vmap(lambda th, k: return_stream(env, r, unravel(th), agent.filters, knobs,
                                                                       k, counts))(thetas, keys))
            out["mean_length"].append(length.mean)
            out["mean_length_se"].append(length_se)
            out["length_episodes"].append(length.n)
            # the grid points in turn: each holds a forward pass over the whole step batch
            surface = jax.lax.map(lambda th: surrogate_surface(static, unravel(th), agent.policy, batch, knobs,
                                                                           agent.policy_opt), thetas)
            out["surface"].append(surface)
            out["step_norm"].append(jnp.linalg.norm(delta))
            out["step_kl"].append(surrogate_surface(static, unravel(theta + delta), agent.policy, batch, knobs,
                                                    agent.policy_opt).kl)
            if r.exact:  # the task's closed-form J
                answers = envs.REGISTRY[static.task].exact
                out["exact"].append(jax.vmap(lambda th: answers.policy_return(unravel(th), agent.filters.obs,
                                                                              knobs))(thetas))
            else:
                out["exact"].append(jnp.full(thetas.shape[0], jnp.nan))
        return {k: jax.tree.map(lambda *x: jnp.stack(x), *v) for k, v in out.items()}

    return subject


def program(static, r: Resolved, batching: str = "vmap"):
    env = envs.make(static.task, static.physics, static.physics_threads, static.solver, static.model)
    subject = subject_program(env, static, r)
    return over_subjects(subject, batching)


def fit(static, r: Resolved, num_subjects: int, obs_size: int, action_size: int, num_params: int, batching: str,
        have: int) -> tuple:
    """The plan that fits in ``have`` bytes: as asked; else the subjects in turn (``batching="map"``); else
    also shorter chunks (halved down to 1 step while that lowers the peak, i.e. while the streams and not
    the step batch set it; only the memory changes, not the estimates' distribution). Returns (resolved,
    batching, estimated bytes, what was changed: "" when nothing)."""
    need = landscape_bytes(static, r, num_subjects, obs_size, action_size, num_params, batching)
    if need <= have:
        return r, batching, need, ""
    changes = []
    if batching == "vmap" and num_subjects > 1:
        batching, changes = "map", ["subjects in turn"]
        need = landscape_bytes(static, r, num_subjects, obs_size, action_size, num_params, batching)
    asked = r.chunk_steps
    while need > have and r.chunk_steps > 1:
        shorter = dataclasses.replace(r, chunk_steps=r.chunk_steps // 2, max_chunks=min(2 * r.max_chunks, 2 ** 30))
        shorter_need = landscape_bytes(static, shorter, num_subjects, obs_size, action_size, num_params, batching)
        if shorter_need >= need:
            break
        r, need = shorter, shorter_need
    if r.chunk_steps != asked:
        changes.append(f"chunks of {r.chunk_steps} steps instead of {asked}")
    return r, batching, need, ", ".join(changes)


def pairs_total(r: Resolved, num_subjects: int) -> int:
    """State–action pairs sampled, as planned: the true-return streams (N pairs per point at the largest size;
    the episodes actually sampled take about that many where the plane's policies live as long as the
    subject's) and the step batches; not the length stream's ``length_episodes`` episodes, whose length is
    not known before they run (at most that many times the time limit, typically far below one grid
    point's N)."""
    return num_subjects * (len(r.step_envs) * r.grid_points * r.sizes[-1] + sum(r.step_pairs))
