"""fig-step-variance (CL Fig 13, footnote 1; ref §4.2 item 3): how much the algorithm's actual step varies.

At a checkpoint, M independent batches of the algorithm's own shape
(num_envs × steps_per_env, from the states the algorithm would sample next)
are drawn from the frozen policy, and from each the algorithm's own step is
computed with :func:`pg_diag.stages.policy_step` — PPO: its full epochs of
minibatch Adam from the checkpoint's optimizer state and learning rate;
TRPO: the natural-gradient step with its line search — never applied. The
M steps Δθ_m are vmapped; per subject the program returns their pairwise
cosines, the pairwise KL(π_m ‖ π_l) between the resulting policies (mean over
held-out states from the pre-update policy), each step's norm and its KL from
the pre-update policy.

Unlike a training iteration, the batches are sampled with the observation
normalizer and reward scaler frozen (a training batch would push its own
observations first; empty statistics are warmed first, see
:mod:`.sampling`), so the M steps are from one fixed policy.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from pg_diag import envs, networks, stages
from pg_diag.diagnostics import gradients, tables
from pg_diag.diagnostics.sampling import algorithm_sampling, frozen_filters, start_carry
from pg_diag.diagnostics.subjects import DiagnosticError, compile_and_run, load_by_program, over_subjects, plan_subjects
from pg_diag.objectives import kl
from pg_diag.optim import annealed_learning_rate
from pg_diag.run import store

NAME = "steps"
TABLES = ("pairs", "steps")


def memory_estimate(static, settings: "StepSettings", num_subjects: int, obs_size: int, action_size: int,
                    batching: str) -> int:
    """A rough upper estimate of the program's peak bytes: every subject's M + 1 batches (the steps' and the
    held-out one) in flight with their activations."""
    per_pair = 2 * obs_size + 2 * action_size + 12 + 3 * sum(static.policy_hidden) + 3 * sum(static.value_hidden)
    held = (settings.heldout_envs or static.num_envs) * static.steps_per_env
    per_subject = (settings.batches * static.num_envs * static.steps_per_env + held) * per_pair
    return 4 * per_subject * (num_subjects if batching == "vmap" else 1)


def batching_that_fits(static, settings: "StepSettings", num_subjects: int, obs_size: int, action_size: int,
                       have: int) -> str:
    """"vmap" (subjects together) when it fits in ``have`` bytes, else "map" (subjects in turn); a study that
    does not fit even so is refused, naming what to lower."""
    if memory_estimate(static, settings, num_subjects, obs_size, action_size, "vmap") <= have:
        return "vmap"
    gradients.require_memory(memory_estimate(static, settings, num_subjects, obs_size, action_size, "map"),
                             "the step study", f"{settings.batches} batches of {static.num_envs} × "
                                               f"{static.steps_per_env} pairs per subject, subjects in turn",
                             "lower batches (M)")
    return "map"


@dataclasses.dataclass(frozen=True)
class StepSettings:
    batches: int = 100        # M independent batches per subject (CL: 100)
    heldout_envs: int = 0     # held-out states: environments × the run's steps_per_env (0: the run's num_envs)
    seed: int = 0
    resamples: int = 500

    def check(self):
        if not isinstance(self.batches, int) or isinstance(self.batches, bool) or self.batches < 2:
            raise DiagnosticError(f"batches (M) must be an integer ≥ 2: a pairwise cosine needs two steps; "
                                  f"got {self.batches!r}")
        if self.heldout_envs < 0 or self.resamples < 10:
            raise DiagnosticError(f"heldout_envs must be ≥ 0 and resamples ≥ 10, got {self.heldout_envs}, "
                                  f"{self.resamples}")


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


def step_study(runs, iterations=None, agents=None, settings: StepSettings | None = None, *, save: bool = True,
               name: str = NAME, verbose: bool = False, **changes) -> "StepStudy":
    """The step variance of every agent of ``runs`` at the checkpointed ``iterations``: one compiled
    program per distinct training configuration (PPO and TRPO runs differ)."""
    import pandas as pd

    try:
        settings = dataclasses.replace(settings or StepSettings(), **changes)
    except TypeError as e:
        fields = ", ".join(f.name for f in dataclasses.fields(StepSettings))
        raise DiagnosticError(f"{e}; step-study settings are: {fields}") from None
    settings.check()
    planned = plan_subjects(runs, iterations, agents)
    loaded = load_by_program(planned)
    batching = {}
    for static, subjects in loaded.items():   # every program's memory checked before the first compiles
        obs_size, action_size, _ = subjects.shapes
        batching[static] = batching_that_fits(static, settings, len(subjects), obs_size, action_size,
                                              gradients.available_memory())
    frames, timings = {t: [] for t in TABLES}, []
    for static, subjects in loaded.items():
        if verbose:
            print(f"step study: {len(subjects)} subjects ({static.algorithm}) × {settings.batches} batches of "
                  f"{static.num_envs} × {static.steps_per_env}"
                  + (" (subjects in turn, to fit the memory)" if batching[static] == "map" else ""), flush=True)
        env = envs.make(static.task, static.physics, static.physics_threads, static.solver, static.model)
        prog = over_subjects(subject_program(env, static, settings), batching[static])
        keys = jnp.stack([jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(settings.seed), r["seed"]),
                                             r["iteration"]) for r in subjects.rows])
        pairs = len(subjects) * settings.batches * static.batch_size
        out, timing = compile_and_run(prog, subjects, keys, pairs)
        timings.append(timing)
        iu, ju = np.triu_indices(settings.batches, 1)
        for s, row in enumerate(subjects.rows):
            frames["pairs"].append(pd.DataFrame({**row, "i": iu, "j": ju, "cosine": out["cosine"][s][iu, ju],
                                                 "kl_ij": out["kl"][s][iu, ju], "kl_ji": out["kl"][s][ju, iu]}))
            frames["steps"].append(pd.DataFrame({**row, "m": np.arange(settings.batches), "norm": out["norm"][s],
                                                 "kl_from_old": out["kl_from_old"][s]}))
    manifest = {"format": "pg_diag.diagnostic/1", "study": name, "kind": "steps",
                "settings": dataclasses.asdict(settings), "subjects": [dict(run=r.path, agent=a, iteration=i)
                                                                       for r, a, i in planned],
                "versions": store.versions(), "device": store.device_info(), "timings": timings}
    study = StepStudy(manifest=manifest, **{t: pd.concat(f, ignore_index=True) for t, f in frames.items()})
    if save:
        tables.write_study({t: getattr(study, t) for t in TABLES}, manifest, name)
    return study


@dataclasses.dataclass
class StepStudy:
    manifest: dict
    pairs: object   # DataFrame: KEYS, i, j, cosine, kl_ij, kl_ji (i < j)
    steps: object   # DataFrame: KEYS, m, norm, kl_from_old

    def curves(self, measure: str = "cosine"):
        """Per subject: the mean over pairs of 'cosine' or 'kl' (both directions) with its 95% bootstrap CI."""
        if measure not in ("cosine", "kl"):
            raise ValueError(f"measure must be 'cosine' or 'kl', got {measure!r}")
        frame = self.pairs
        if measure == "kl":
            frame = frame.melt(id_vars=tables.KEYS, value_vars=["kl_ij", "kl_ji"], value_name="kl")
        return tables.curve(frame, measure, tables.KEYS, resamples=self.manifest["settings"]["resamples"],
                            seed=self.manifest["settings"]["seed"])

    def summary(self):
        """Per label and iteration: mean pairwise step cosine and KL over agents, mean step norm."""
        cos = self.curves("cosine").groupby(["label", "iteration"])["mean"].mean().rename("step_cosine")
        kls = self.curves("kl").groupby(["label", "iteration"])["mean"].mean().rename("pairwise_kl")
        norm = self.steps.groupby(["label", "iteration"])["norm"].mean().rename("step_norm")
        return cos.to_frame().join(kls).join(norm).reset_index()


def load_step_study(run_paths, name: str = NAME) -> StepStudy:
    manifest, frames = tables.read_study(run_paths, name, TABLES)
    if manifest.get("kind") != "steps":
        raise DiagnosticError(f"{name!r} in {run_paths!r} is a {manifest.get('kind')!r} study, not a step study")
    return StepStudy(manifest=manifest, **frames)
