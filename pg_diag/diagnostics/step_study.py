"""``step_study(runs, …)``: fig-step-variance on checkpointed runs (the program: :mod:`.steps`).

    study = pg_diag.diagnostics.step_study(["runs/ppo", "runs/trpo"], iterations=[150], batches=100)
    study.curves("cosine")   # per subject: mean pairwise cosine of the M steps, 95% CI
    study.curves("kl")       # mean pairwise KL between the policies the steps reach
    study.summary()          # per label and iteration: step cosine, pairwise KL, step norm

One compiled program per distinct training configuration (PPO's and TRPO's steps differ); rows saved in
each run's ``diagnostics/<name>/``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from pg_diag import envs
from pg_diag.diagnostics import engine, gradients, tables
from pg_diag.diagnostics.steps import StepSettings, batching_that_fits, subject_program
from pg_diag.diagnostics.subjects import compile_and_run, load_by_program, over_subjects

NAME = "steps"
TABLES = ("pairs", "steps")


def _measure(planned, settings: StepSettings, verbose) -> engine.Measured:
    """One compiled program per distinct training configuration (PPO's and TRPO's steps differ)."""
    import pandas as pd

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
    return engine.Measured(frames={t: pd.concat(f, ignore_index=True) for t, f in frames.items()},
                           resolved={"batching": [{"algorithm": s.algorithm, "batching": b} for s, b in batching.items()]}, timings=timings)


@dataclasses.dataclass
class StepStudy:
    manifest: dict
    pairs: object   # DataFrame: KEYS, i, j, cosine, kl_ij, kl_ji (i < j)
    steps: object   # DataFrame: KEYS, m, norm, kl_from_old

    def curves(self, measure: str = "cosine"):
        """Per subject: the mean over pairs of 'cosine' or 'kl' (both directions averaged) with its 95% interval
        from the jackknife over the M steps (:func:`tables.pairwise_curve`)."""
        if measure not in ("cosine", "kl"):
            raise ValueError(f"measure must be 'cosine' or 'kl', got {measure!r}")
        frame = self.pairs
        if measure == "kl":
            frame = frame.assign(kl=(frame.kl_ij + frame.kl_ji) / 2.0)
        return tables.pairwise_curve(frame, measure, tables.KEYS)

    def summary(self):
        """Per label and iteration: mean pairwise step cosine and KL over agents, mean step norm."""
        cos = self.curves("cosine").groupby(["label", "iteration"])["mean"].mean().rename("step_cosine")
        kls = self.curves("kl").groupby(["label", "iteration"])["mean"].mean().rename("pairwise_kl")
        norm = self.steps.groupby(["label", "iteration"])["norm"].mean().rename("step_norm")
        return cos.to_frame().join(kls).join(norm).reset_index()


SPEC = engine.Spec(kind=NAME, title="step-study", settings=StepSettings, tables=TABLES, study=StepStudy,
                   measure=_measure)


def step_study(runs, iterations=None, agents=None, settings: StepSettings | None = None, *, save: bool = True,
               name: str = NAME, verbose: bool = False, **changes) -> StepStudy:
    """The step variance of every agent of ``runs`` at the checkpointed ``iterations``."""
    return engine.run(SPEC, runs, iterations, agents, settings, save=save, name=name, verbose=verbose, **changes)


def load_step_study(run_paths, name: str = NAME) -> StepStudy:
    """A saved step study from one or more run directories (no recomputation)."""
    return engine.load(SPEC, run_paths, name)
