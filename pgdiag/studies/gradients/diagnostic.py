"""``gradient_study(runs, …)``: fig-grad-variance and fig-grad-true on checkpointed runs.

    study = pgdiag.diagnostics.gradient_study(["runs/ppo", "runs/trpo"], iterations=[0, 150],
                                               true_pairs=10_000_000)   # CL Fig 3: 10 × the largest N
    study.curves("pairwise")      # mean pairwise cosine vs N per agent and iteration, 95% CIs
    study.curves("true")          # mean cosine to the true gradient
    study.summary("pairwise")     # N at which the mean cosine reaches 0.5 and 0.9, cosine at the batch size

The subjects table records the truth's own convergence beside it (``true_ratio``,
``truth_split_half``, ``truth_ceiling``: `_frames`). Everything is
validated against the runs before compiling; the measurement is one compiled
program over all subjects, estimates and sample sizes (`pgdiag.studies.gradients.measure`), and
its rows are saved in each run's ``diagnostics/gradients/`` (`pgdiag.diagnostics.tables`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pgdiag.diagnostics import engine, tables
from pgdiag.studies.gradients import measure as gradients, widening
from pgdiag.studies.gradients.memory import gradient_bytes
from pgdiag.diagnostics.protocol import Diagnostic, Group, Measured, Record, Shape
from pgdiag.diagnostics.sizes import TRUE_RATIO

NAME = "gradients"
TABLES = ("pairs", "estimates", "subjects")
MEASURES = {"pairwise": ("pairs", "cosine"), "true": ("estimates", "to_true"), "exact": ("estimates", "to_exact")}


@dataclasses.dataclass
class GradientStudy:
    """A gradient study's tables (pandas DataFrames) and manifest, as
    [`gradient_study`][pgdiag.studies.gradients.diagnostic.gradient_study] returns it
    and [`load_gradient_study`][pgdiag.studies.gradients.diagnostic.load_gradient_study] reads it back."""

    manifest: dict
    pairs: object      # DataFrame: KEYS, n, i, j, cosine (i < j)
    estimates: object  # DataFrame: KEYS, n, k, norm, to_true, to_exact
    subjects: object   # DataFrame: KEYS, diverged, statistics_warmed, true_norm, exact_norm, true_to_exact,
    #                    true_pairs, true_ratio, truth_split_half, truth_ceiling (see _frames)

    @property
    def batch_size(self) -> int:
        return int(self.manifest["resolved"]["batch_size"])

    @property
    def sizes(self) -> list:
        return list(self.manifest["resolved"]["sizes"])

    def curves(self, measure: str = "pairwise"):
        """Per subject and N: the mean of ``measure`` ('pairwise', 'true' or 'exact') and its 95% interval
        with the K estimates as units: the jackknife over estimates for the pairwise mean, Student-t over
        the K cosines to the true (or exact) gradient."""
        if measure not in MEASURES:
            raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
        table, column = MEASURES[measure]
        by = tables.KEYS + ["n"]
        if measure == "pairwise":
            return tables.pairwise_curve(self.pairs, column, by)
        return tables.curve(getattr(self, table), column, by)

    def summary(self, measure: str = "pairwise"):
        return tables.summary(self.curves(measure), self.batch_size)


class ObjectiveDiagnostic(Diagnostic):
    """A study of gradient estimates of either objective (`gradients.OBJECTIVES`: its settings' `objective`)."""

    def group_by(self, settings, static):
        """The surrogate's gradient is the same program for every algorithm (optimizer states are not read); an
        algorithm's own objective is its own program, fed its optimizer state (PPO-KL's β)."""
        return static.algorithm if settings.objective == "own" else None

    def reads_optimizer(self, settings) -> bool:
        return settings.objective == "own"


class Gradients(ObjectiveDiagnostic):
    """The gradient study as the engine runs it (`pgdiag.diagnostics.protocol`)."""

    kind, title, settings = NAME, "gradient-study", gradients.GradientSettings
    tables, result = TABLES, GradientStudy

    def resolve(self, settings, statics) -> gradients.Resolved:
        return gradients.resolve(settings, statics)

    def shape(self, group: Group) -> Shape:
        """One program: the streams widened on MJX while they fit (`widening.widen`)."""
        settings, n, batching = group.settings, group.units, group.settings.batching

        def need(r):
            return gradient_bytes(group.static, r, n, *group.sizes, batching)

        r = widening.widen(settings, list(group.statics), n, lambda r: need(r) <= group.memory)
        turns = 1 if batching == "vmap" else n
        return Shape(
            batching=batching, units=n, pairs=gradients.pairs_total(r, n),
            sequential_steps=(r.grid.num_chunks * r.sampling.steps + r.sampling.burn_in) * turns,
            width=n // turns * (r.estimates + r.truth_streams) * r.sampling.envs, bytes=need(r),
            fits=need(r) <= group.memory, resolved=r,
            refusal=("the study", f"{n} subjects × {r.estimates + r.truth_streams} streams × {r.sampling.chunk} "
                                  f"pairs per chunk", "lower envs or steps (smaller chunks), or use batching='map' "
                                                      "(subjects in turn)"))

    def describe(self, shape: Shape) -> str:
        r, n = shape.resolved, shape.units
        truth = (f" + a true gradient from {r.true_pairs:,} pairs, {r.true_ratio:.3g}× the largest N"
                 f"{f' (fewer than {TRUE_RATIO}×)' if r.true_ratio < TRUE_RATIO else ''}") if r.truth_streams else ""
        return (f"gradient study: {n} subjects × {r.estimates} estimates at N = {list(r.grid.sizes)}{truth}; "
                f"{shape.pairs:,} pairs in chunks of {r.sampling.envs} envs × {r.sampling.steps} steps "
                f"({r.sampling.start}); objective: {r.objective}")

    def program(self, shape: Shape):
        return gradients.program(shape.static, shape.resolved, shape.batching)

    def record(self, shapes) -> Record:
        """The manifest's resolved shape: the last program's (the groups differ only in their subjects)."""
        r = shapes[-1].resolved
        return Record({"sizes": list(r.grid.sizes), "chunk_pairs": r.grid.chunk, "envs": r.sampling.envs,
                       "steps": r.sampling.steps, "start": r.sampling.start, "truth_streams": r.truth_streams,
                       "true_pairs": r.true_pairs, "exact": r.exact, "batch_size": r.batch_size,
                       "stream_pairs": r.grid.num_chunks * r.grid.chunk, "objective": r.objective,
                       # how the truth compares with the estimates (CL Fig 3: ≥ TRUE_RATIO × the largest N) and
                       # where sizes below the batch draw their pairs from
                       "true_ratio": r.true_ratio, "true_ratio_required": TRUE_RATIO,
                       "half_streams": r.half_streams, "subset_pool": r.grid.pool})

    def frames(self, measured: Measured) -> dict:
        return _frames(measured)


def _frames(measured: Measured) -> dict:
    """The tables. Per subject, beside the truth's norm and cosine to ∇J (``true_to_exact``, LQR only):
    ``true_pairs`` and ``true_ratio`` (the truth's pairs, and them over the largest N), ``truth_split_half``
    (the cosine between the truth's two halves of ⌊R/2⌋ streams; NaN for R < 2) and ``truth_ceiling`` (the
    truth's own cosine to g estimated from it, the ceiling of the cosines to the truth:
    `gradients.truth_ceiling`)."""
    import pandas as pd

    r, out, subjects = measured.resolved, measured.outputs, measured.subjects
    sizes, K = list(r.grid.sizes), r.estimates
    iu, ju = np.triu_indices(K, 1)
    pairs, ests, subs = [], [], []
    split = np.asarray(out["split_half"], np.float64)
    ceiling = gradients.truth_ceiling(split, r.truth_streams)
    for s, row in enumerate(subjects.rows):
        diverged = bool(np.asarray(subjects.states.diverged)[s])
        subs.append({**row, "diverged": diverged, "statistics_warmed": bool(out["warmed"][s]),
                     "true_norm": float(out["true_norm"][s]), "exact_norm": float(out["exact_norm"][s]),
                     "true_to_exact": float(out["true_to_exact"][s]), "true_pairs": r.true_pairs,
                     "true_ratio": r.true_ratio, "truth_split_half": float(split[s]),
                     "truth_ceiling": float(ceiling[s])})
        for g, n in enumerate(sizes):
            cos = out["pairwise"][s, g]
            pairs.append(pd.DataFrame({**row, "n": n, "i": iu, "j": ju, "cosine": cos[iu, ju]}))
            ests.append(pd.DataFrame({**row, "n": n, "k": np.arange(K), "norm": out["norm"][s, g],
                                      "to_true": out["to_true"][s, g], "to_exact": out["to_exact"][s, g]}))
    return {"pairs": pd.concat(pairs, ignore_index=True), "estimates": pd.concat(ests, ignore_index=True),
            "subjects": pd.DataFrame(subs)}


#: the gradient study, as targets and `pgdiag.diagnostics.engine` take it
GRADIENTS = Gradients()


def gradient_study(runs, iterations=None, agents=None, settings: gradients.GradientSettings | None = None, *,
                   save: bool = True, replace: bool = False, name: str = NAME, verbose: bool = False,
                   **changes) -> GradientStudy:
    """Measure the gradient estimates of every agent of ``runs`` (run directories) at the checkpointed
    ``iterations`` (default: all saved). ``changes`` override fields of
    [`GradientSettings`][pgdiag.studies.gradients.measure.GradientSettings].

    Args:
        runs: run directories with checkpoints (or loaded runs), one or several with the same task.
        iterations: checkpointed iterations to measure at; None: every saved one.
        agents: agent indices in each run; None: all.
        settings: the study's settings ([`GradientSettings`][pgdiag.studies.gradients.GradientSettings]);
            None: the defaults.
        save: save the tables in each run's ``diagnostics/`` directory.
        replace: save over a measurement made with other settings (otherwise refused).
        name: the name it is saved under (load it with ``name=``).
        verbose: print a line describing each compiled program (its subjects, sizes and chunks).
        **changes: fields of the settings to change, e.g. ``estimates=10, true_pairs=10_000_000``.

    Returns:
        The study: its manifest and tables (pairs, estimates, subjects).
    """
    return engine.run(GRADIENTS, runs, iterations, agents, settings, save=save, replace=replace, name=name,
                      verbose=verbose, **changes)


def load_gradient_study(run_paths, name: str = NAME) -> GradientStudy:
    """A saved gradient study from one or more run directories (no recomputation).

    Args:
        run_paths: one or more run directories (or loaded runs) the study was saved in.
        name: the name it was saved under.

    Returns:
        The study, as it was saved.
    """
    return engine.load(GRADIENTS, run_paths, name)
