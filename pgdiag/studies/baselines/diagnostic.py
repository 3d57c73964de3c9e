"""``baseline_study(runs, …)``: fig-baselines on checkpointed runs.

    study = pgdiag.diagnostics.baseline_study(["runs/ppo"], iterations=[150, 300], fit_pairs=500_000)
    study.curves()     # mean pairwise cosine vs N per agent, iteration and baseline, 95% CIs
    study.fits         # V*'s held-out error beside the agent's network's, and whether V* is shown better
    study.summary()    # per baseline: mean cosine at the batch size and at the largest N

One compiled program per distinct training configuration, vmapped over
subjects × baselines × estimates (`pgdiag.studies.baselines.measure`); rows saved in each run's
``diagnostics/<name>/``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pgdiag.diagnostics import engine, tables
from pgdiag.studies.baselines import measure as baselines
from pgdiag.studies.baselines.memory import baseline_bytes
from pgdiag.studies.gradients.diagnostic import ObjectiveDiagnostic
from pgdiag.diagnostics.protocol import Group, Measured, Record, Shape

NAME = "baselines"
TABLES = ("pairs", "estimates", "fits")


def _cell(x):
    """A fits-table cell of the dtype the program computed: bool, int or float."""
    x = np.asarray(x)
    return bool(x) if x.dtype == bool else int(x) if np.issubdtype(x.dtype, np.integer) else float(x)


def _frames(measured: Measured) -> dict:
    import pandas as pd

    settings, r, out = measured.settings, measured.resolved, measured.outputs
    look_level = settings.fit_level / settings.fit_rounds
    K, sizes = r.estimates, list(r.grid.sizes)
    iu, ju = np.triu_indices(K, 1)
    pairs, ests, fits = [], [], []
    for s, row in enumerate(measured.subjects.rows):
        for b, baseline in enumerate(r.baselines):
            for g, n in enumerate(sizes):
                pairs.append(pd.DataFrame({**row, "baseline": baseline, "n": n, "i": iu, "j": ju,
                                           "cosine": out["pairwise"][s, b, g][iu, ju]}))
                ests.append(pd.DataFrame({**row, "baseline": baseline, "n": n, "k": np.arange(K),
                                          "norm": out["norm"][s, b, g]}))
        fit = out["fit"]
        fits.append({**row, "fit_pairs": r.fit_pairs, "heldout_pairs": r.heldout_chunks * r.own.chunk,
                     **{f.name: _cell(getattr(fit, f.name)[s]) for f in dataclasses.fields(fit)},
                     "fit_look_level": look_level})
    return {"pairs": pd.concat(pairs, ignore_index=True), "estimates": pd.concat(ests, ignore_index=True),
            "fits": pd.DataFrame(fits)}


@dataclasses.dataclass
class BaselineStudy:
    """A baseline study's tables (pandas DataFrames) and manifest, as
    [`baseline_study`][pgdiag.studies.baselines.diagnostic.baseline_study] returns it
    and [`load_baseline_study`][pgdiag.studies.baselines.diagnostic.load_baseline_study] reads it back."""

    manifest: dict
    pairs: object      # DataFrame: KEYS, baseline, n, i, j, cosine
    estimates: object  # DataFrame: KEYS, baseline, n, k, norm
    fits: object       # DataFrame: KEYS, fit_pairs, heldout_pairs, then value_fit.FitReport's fields (V*'s
    #                    held-out errors beside the agent's network's, the t-test, the rounds it took) and
    #                    fit_look_level (the level each round's test was taken at: fit_level / fit_rounds)

    @property
    def batch_size(self) -> int:
        return int(self.manifest["resolved"]["batch_size"])

    @property
    def baselines(self) -> list:
        return list(self.manifest["resolved"]["baselines"])

    def curves(self):
        """Per subject, baseline and N: the mean pairwise cosine and its 95% interval from the jackknife over
        the K estimates (`tables.pairwise_curve`)."""
        return tables.pairwise_curve(self.pairs, "cosine", tables.KEYS + ["baseline", "n"])

    def summary(self):
        """Per label, iteration and baseline (means over agents): the N at which the mean cosine reaches
        0.5 and 0.9, the mean cosine at the algorithm's batch size and at the largest N."""
        curves = self.curves()
        out = tables.summary(curves, self.batch_size, group=("label", "iteration", "baseline"))
        largest = curves[curves.n == curves.n.max()].groupby(["label", "iteration", "baseline"])["mean"].mean()
        return out.merge(largest.rename("at_largest_n").reset_index(), on=["label", "iteration", "baseline"])


class Baselines(ObjectiveDiagnostic):
    """The baseline study as the engine runs it (`pgdiag.diagnostics.protocol`). One program for every
    subject of the surrogate: its estimates read only the task, the value network's shape and the batch's
    shape (`resolve` checks the last agrees), so PPO's and TRPO's agents are measured together."""

    kind, title, settings = NAME, "baseline-study", baselines.BaselineSettings
    tables, result = TABLES, BaselineStudy

    def resolve(self, settings, statics) -> baselines.Resolved:
        return baselines.resolve(settings, statics)

    def shape(self, group: Group) -> Shape:
        """Subjects that do not fit together run in turn (the same numbers: each subject's keys are its own)."""
        s, r, n, have = group.static, group.resolved, group.units, group.memory
        together = group.settings.batching == "vmap" and baseline_bytes(s, r, n, *group.sizes, "vmap") <= have
        batching = "vmap" if together else "map"
        need, turns = baseline_bytes(s, r, n, *group.sizes, batching), 1 if together else n
        # the fit's segments (each steps + tail long, fit_lanes side by side) then the K streams' chunks
        seq = (r.fit_chunks // r.fit_lanes * (r.own.steps + r.tail) + r.grid.num_chunks * r.own.steps) * turns
        return Shape(
            batching=batching, units=n, pairs=baselines.pairs_total(r, n), sequential_steps=seq,
            width=(n // turns) * r.estimates * r.own.envs, bytes=need, fits=need <= have,
            note="" if together else "subjects in turn", resolved=r,
            refusal=("the baseline study", f"a fit set of {r.fit_pairs:,} pairs and {r.estimates} streams per "
                                           f"subject, subjects in turn", "lower fit_pairs or estimates (K)"))

    def describe(self, shape: Shape) -> str:
        r = shape.resolved
        return (f"baseline study: {shape.units} subjects × baselines {', '.join(r.baselines)} × {r.estimates} "
                f"estimates at N = {list(r.grid.sizes)}"
                f"{f'; value fit on {r.fit_pairs:,} pairs' if r.fit_chunks else ''}; objective: {r.objective}")

    def program(self, shape: Shape):
        return baselines.program(shape.static, dataclasses.replace(shape.settings, batching=shape.batching),
                                 shape.resolved)

    def record(self, shapes) -> Record:
        r, settings = shapes[-1].resolved, shapes[-1].settings
        return Record({"baselines": list(r.baselines), "sizes": list(r.grid.sizes), "chunk_pairs": r.grid.chunk,
                       "fit_pairs": r.fit_pairs, "heldout_pairs": r.heldout_chunks * r.own.chunk,
                       "start": r.own.start, "heldout_chunks": r.heldout_chunks, "fit_rounds": settings.fit_rounds,
                       "fit_look_level": settings.fit_level / settings.fit_rounds,
                       "exact": r.exact, "batch_size": r.batch_size, "fit_lanes": r.fit_lanes,
                       "batching": shapes[-1].batching, "objective": r.objective})

    def frames(self, measured: Measured) -> dict:
        return _frames(measured)


#: the baseline study, as targets and `pgdiag.diagnostics.engine` take it
BASELINES = Baselines()


def baseline_study(runs, iterations=None, agents=None, settings: baselines.BaselineSettings | None = None, *,
                   save: bool = True, replace: bool = False, name: str = NAME, verbose: bool = False,
                   **changes) -> BaselineStudy:
    """Gradient-estimate concentration under each baseline for every agent of ``runs`` at the checkpointed
    ``iterations``; ``changes`` override fields of
    [`BaselineSettings`][pgdiag.studies.baselines.measure.BaselineSettings].

    Args:
        runs: run directories with checkpoints (or loaded runs), one or several with the same task.
        iterations: checkpointed iterations to measure at; None: every saved one.
        agents: agent indices in each run; None: all.
        settings: the study's settings ([`BaselineSettings`][pgdiag.studies.baselines.BaselineSettings]);
            None: the defaults.
        save: save the tables in each run's ``diagnostics/`` directory.
        replace: save over a measurement made with other settings (otherwise refused).
        name: the name it is saved under (load it with ``name=``).
        verbose: print a line describing each compiled program (its subjects, sizes and chunks).
        **changes: fields of the settings to change, e.g. ``fit_pairs=500_000``.

    Returns:
        The study: its manifest and tables (pairs, estimates, fits).
    """
    return engine.run(BASELINES, runs, iterations, agents, settings, save=save, replace=replace, name=name,
                      verbose=verbose, **changes)


def load_baseline_study(run_paths, name: str = NAME) -> BaselineStudy:
    """A saved baseline study from one or more run directories (no recomputation).

    Args:
        run_paths: one or more run directories (or loaded runs) the study was saved in.
        name: the name it was saved under.

    Returns:
        The study, as it was saved.
    """
    return engine.load(BASELINES, run_paths, name)
