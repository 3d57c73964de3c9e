"""``step_study(runs, …)``: fig-step-variance on checkpointed runs (the program: `pgdiag.studies.steps.measure`).

    study = pgdiag.diagnostics.step_study(["runs/ppo", "runs/trpo"], iterations=[150], batches=100)
    study.curves("cosine")   # per subject: mean pairwise cosine of the M steps, 95% CI
    study.curves("kl")       # mean pairwise KL between the policies the steps reach
    study.summary()          # per label and iteration: step cosine, pairwise KL, step norm

One compiled program per distinct training configuration (PPO's and TRPO's steps differ); rows saved in
each run's ``diagnostics/<name>/``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pgdiag import envs
from pgdiag.diagnostics import engine, tables
from pgdiag.diagnostics.protocol import Diagnostic, Group, Measured, Record, Shape
from pgdiag.studies.steps.measure import StepSettings, subject_program
from pgdiag.studies.steps.memory import step_bytes
from pgdiag.diagnostics.subjects import over_subjects

NAME = "steps"
TABLES = ("pairs", "steps")


@dataclasses.dataclass
class StepStudy:
    """A step study's tables (pandas DataFrames) and manifest, as
    [`step_study`][pgdiag.studies.steps.diagnostic.step_study] returns it
    and [`load_step_study`][pgdiag.studies.steps.diagnostic.load_step_study] reads it back."""

    manifest: dict
    pairs: object   # DataFrame: KEYS, i, j, cosine, kl_ij, kl_ji (i < j)
    steps: object   # DataFrame: KEYS, m, norm, kl_from_old

    def curves(self, measure: str = "cosine"):
        """Per subject: the mean over pairs of 'cosine' or 'kl' (both directions averaged) with its 95% interval
        from the jackknife over the M steps (`tables.pairwise_curve`)."""
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


class Steps(Diagnostic[StepSettings]):
    """The step study as the engine runs it (`pgdiag.diagnostics.protocol`); its plan is its settings."""

    kind, title, settings, tables, result = NAME, "step-study", StepSettings, TABLES, StepStudy

    def group_by(self, settings, static):
        """One program per distinct training configuration (PPO's and TRPO's steps differ)."""
        return static.program()

    def shape(self, group: Group) -> Shape:
        """Subjects together when they fit, else in turn; each samples M batches and a held-out one."""
        s, settings, n, (obs, act, _) = group.static, group.settings, group.units, group.sizes
        together = step_bytes(s, settings, n, obs, act, "vmap") <= group.memory
        batching = "vmap" if together else "map"
        need, turns = step_bytes(s, settings, n, obs, act, batching), 1 if together else n
        return Shape(
            batching=batching, units=n, pairs=n * (settings.batches + 1) * s.batch_size,
            sequential_steps=s.steps_per_env * turns, width=(n // turns) * (settings.batches + 1) * s.num_envs,
            bytes=need, fits=need <= group.memory, note="" if together else "subjects in turn", resolved=settings,
            refusal=("the step study", f"{settings.batches} batches of {s.num_envs} × {s.steps_per_env} pairs "
                                       f"per subject, subjects in turn", "lower batches (M)"))

    def describe(self, shape: Shape) -> str:
        static = shape.static
        return (f"step study: {shape.units} subjects ({static.algorithm}) × {shape.resolved.batches} batches of "
                f"{static.num_envs} × {static.steps_per_env}"
                + (" (subjects in turn, to fit the memory)" if shape.batching == "map" else ""))

    def program(self, shape: Shape):
        static = shape.static
        env = envs.make(static.task, static.physics, static.physics_threads, static.solver, static.model)
        return over_subjects(subject_program(env, static, shape.resolved), shape.batching)

    def frames(self, measured: Measured) -> dict:
        import pandas as pd

        batches, out = measured.resolved.batches, measured.outputs
        iu, ju = np.triu_indices(batches, 1)
        pairs, steps = [], []
        for s, row in enumerate(measured.subjects.rows):
            pairs.append(pd.DataFrame({**row, "i": iu, "j": ju, "cosine": out["cosine"][s][iu, ju],
                                       "kl_ij": out["kl"][s][iu, ju], "kl_ji": out["kl"][s][ju, iu]}))
            steps.append(pd.DataFrame({**row, "m": np.arange(batches), "norm": out["norm"][s],
                                       "kl_from_old": out["kl_from_old"][s]}))
        return {"pairs": pd.concat(pairs, ignore_index=True), "steps": pd.concat(steps, ignore_index=True)}

    def record(self, shapes) -> Record:
        return Record({"batching": [{"algorithm": s.static.algorithm, "batching": s.batching} for s in shapes]})


#: the step study, as targets and `pgdiag.diagnostics.engine` take it
STEPS = Steps()


def step_study(runs, iterations=None, agents=None, settings: StepSettings | None = None, *, save: bool = True,
               replace: bool = False, name: str = NAME, verbose: bool = False, **changes) -> StepStudy:
    """The step variance of every agent of ``runs`` at the checkpointed ``iterations``.

    Args:
        runs: run directories with checkpoints (or loaded runs), one or several with the same task.
        iterations: checkpointed iterations to measure at; None: every saved one.
        agents: agent indices in each run; None: all.
        settings: the study's settings ([`StepSettings`][pgdiag.studies.steps.StepSettings]);
            None: the defaults.
        save: save the tables in each run's ``diagnostics/`` directory.
        replace: save over a measurement made with other settings (otherwise refused).
        name: the name it is saved under (load it with ``name=``).
        verbose: print a line describing each compiled program (its subjects, sizes and chunks).
        **changes: fields of the settings to change, e.g. ``batches=100``.

    Returns:
        The study: its manifest and tables (pairs, steps).
    """
    return engine.run(STEPS, runs, iterations, agents, settings, save=save, replace=replace, name=name,
                      verbose=verbose, **changes)


def load_step_study(run_paths, name: str = NAME) -> StepStudy:
    """A saved step study from one or more run directories (no recomputation).

    Args:
        run_paths: one or more run directories (or loaded runs) the study was saved in.
        name: the name it was saved under.

    Returns:
        The study, as it was saved.
    """
    return engine.load(STEPS, run_paths, name)
