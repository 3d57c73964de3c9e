"""``landscape_study(runs, …)``: fig-landscape-concentration and fig-landscape-surrogate on checkpointed runs.

    study = pgdiag.diagnostics.landscape_study(["runs/ppo", "runs/trpo"], iterations=[150],
                                                sizes=(2_000, 20_000, 100_000))
    study.returns      # true mean return per grid point and N, with its standard error, episode count and the
                       # pairs those episodes took
    study.surface      # the algorithm's surrogate, the unclipped surrogate, KL and (LQR) the exact J
    study.planes       # per plane: the step's norm and its ratio to the random direction's, L̂ and its SE
    study.agreement()  # per plane: sign agreement of surrogate and true return along the step, 95% CI

Validated before compiling; one compiled program per distinct training
configuration (PPO and TRPO steps differ), vmapped over subjects × planes ×
grid points (`pgdiag.studies.landscape.measure`); rows saved in each run's
``diagnostics/<name>/`` (`pgdiag.diagnostics.tables`).
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from pgdiag import algorithms
from pgdiag.diagnostics import engine, tables
from pgdiag.studies.landscape import measure as landscape
from pgdiag.diagnostics.protocol import Diagnostic, Group, Measured, Record, Shape
from pgdiag.diagnostics.subjects import DiagnosticError

NAME = "landscape"
TABLES = ("returns", "surface", "planes")
ESTIMATOR = ("true return at N pairs: mean raw return of n = round(N / L̂) complete episodes from reset, n fixed "
             "before sampling (unbiased); L̂: mean length of length_episodes complete episodes of the subject's "
             "policy, each from reset to its own end (termination or time limit), their number fixed before "
             "sampling: unbiased for E[L], SE SD(L)/√m (not the episodes ending inside one batch, which "
             "censoring biases short)")


def _constraint(algorithm: str, knobs, s: int) -> dict:
    """The subject's registered constraint ([`pgdiag.algorithms.Constraint`][pgdiag.algorithms.base.Constraint]):
    its kind ('ratio', 'kl' or '' for none) and its knob's value."""
    c = algorithms.get(algorithm).constraint
    return {"constraint": c.kind if c else "", "constraint_value": float(knobs[c.knob][s]) if c else float("nan")}


def _knob(knobs, name, subject) -> float:
    """A subject's value of an algorithm's own knob; NaN where its algorithm has no such knob."""
    return float(knobs[name][subject]) if name in knobs else float("nan")


def _frames(measured: Measured) -> dict:
    import pandas as pd

    r, out, subjects = measured.resolved, measured.outputs, measured.subjects

    G = len(r.coords)
    xs = np.repeat(r.coords, G)   # x major, as landscape.plane
    ys = np.tile(r.coords, G)
    knobs = jax.device_get(subjects.knobs)
    returns, surface, planes = [], [], []
    for s, row in enumerate(subjects.rows):
        for b, pairs in enumerate(r.step_pairs):
            ret = out["returns"]
            for k, n in enumerate(r.sizes):
                count = ret.n[s, b, :, k]
                se = np.sqrt(ret.m2[s, b, :, k] / np.maximum(count - 1, 1) / np.maximum(count, 1))
                returns.append(pd.DataFrame({**row, "step_pairs": pairs, "x": xs, "y": ys, "n": n,
                                             "episodes": count.astype(np.int64),
                                             "pairs": ret.pairs[s, b, :, k].astype(np.int64),
                                             "mean": np.where(count > 0, ret.mean[s, b, :, k], np.nan),
                                             "se": np.where(count > 1, se, np.nan)}))
            sur = out["surface"]
            surface.append(pd.DataFrame({**row, "step_pairs": pairs, "x": xs, "y": ys,
                                         "surrogate": sur.surrogate[s, b], "unclipped": sur.unclipped[s, b],
                                         "kl": sur.kl[s, b], "exact": out["exact"][s, b]}))
            step_norm = float(out["step_norm"][s, b])
            planes.append({**row, "step_pairs": pairs, "step_norm": step_norm,
                           "mean_length": float(out["mean_length"][s, b]),
                           "mean_length_se": float(out["mean_length_se"][s, b]),
                           "length_episodes": int(out["length_episodes"][s, b]),
                           "random_norm": r.random_norm, "step_norm_ratio": step_norm / r.random_norm,
                           "step_kl": float(out["step_kl"][s, b]),
                           "kl_bound": _knob(knobs, "kl_bound", s), "clip_eps": _knob(knobs, "clip_eps", s),
                           **_constraint(row["algorithm"], knobs, s),
                           "diverged": bool(np.asarray(subjects.states.diverged)[s])})
    return {"returns": pd.concat(returns, ignore_index=True), "surface": pd.concat(surface, ignore_index=True),
            "planes": pd.DataFrame(planes)}


def sign_agreement(true_mean, true_se, surrogate, resamples: int = 500, seed: int = 0):
    """Fraction of neighbouring grid pairs along x (the step direction, every row y) where the true
    return and the surrogate change with the same sign, and its 95% CI: a parametric bootstrap of the
    true returns' Monte-Carlo noise (each point ~ N(mean, se²); the surrogate is exact on its batch).
    Arrays are [G_x, G_y]; pairs with an unmeasured point are left out; a surrogate change of exactly 0
    counts as disagreement."""
    t, se, s = (np.asarray(a, np.float64) for a in (true_mean, true_se, surrogate))
    ds = np.sign(np.diff(s, axis=0))
    ok = np.isfinite(np.diff(t, axis=0)) & np.isfinite(ds)
    if not ok.any():
        return float("nan"), float("nan"), float("nan")
    value = float(np.mean(np.sign(np.diff(t, axis=0))[ok] == ds[ok]))
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", invalid="ignore"):
        draws = t[None] + np.nan_to_num(se)[None] * rng.standard_normal((resamples,) + t.shape)
        boot = np.mean(np.sign(np.diff(draws, axis=1))[:, ok] == ds[ok][None], axis=1)
    low, high = np.quantile(boot, [0.025, 0.975])
    return value, float(low), float(high)


@dataclasses.dataclass
class LandscapeStudy:
    """A landscape study's tables (pandas DataFrames) and manifest, as
    [`landscape_study`][pgdiag.studies.landscape.diagnostic.landscape_study] returns it
    and [`load_landscape_study`][pgdiag.studies.landscape.diagnostic.load_landscape_study] reads it back."""

    manifest: dict
    returns: object   # DataFrame: KEYS, step_pairs, x, y, n (pairs asked), episodes (n / L̂ complete episodes),
    #                   pairs (the pairs those episodes took: their total length), mean, se
    surface: object   # DataFrame: KEYS, step_pairs, x, y, surrogate, unclipped, kl, exact
    planes: object    # DataFrame: KEYS, step_pairs, step_norm (‖Δ‖), mean_length (L̂), mean_length_se,
    #                   length_episodes (episodes behind L̂), random_norm, step_norm_ratio (‖Δ‖ / random_norm;
    #                   CL Fig 6: "typically an order of magnitude lower"), step_kl, kl_bound, clip_eps,
    #                   constraint, constraint_value, diverged

    # the tables' planes and agreements once worked out (the tables are read, never changed, once loaded)
    _cache: dict = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def sizes(self) -> list:
        return list(self.manifest["resolved"]["sizes"])

    def _planes(self, table: str) -> dict:
        """``table``'s rows grouped by plane (subject, step and, for the returns, n), each in (x, y) order: one
        pass over the table, so a figure of many planes does not select each from the whole table."""
        if table not in self._cache:
            frame = getattr(self, table)
            keys = ["run", "agent", "iteration", "step_pairs"] + (["n"] if table == "returns" else [])
            ordered = frame.sort_values(keys + ["x", "y"], kind="stable")
            self._cache[table] = {key: part for key, part in ordered.groupby(keys, sort=False)}
        return self._cache[table]

    def grid(self, subject: dict, step_pairs: int, n: int | None = None, column: str = "mean"):
        """One plane as a [x, y] array: ``column`` of the returns at ``n`` pairs (default: the largest), or a
        column of the surface (surrogate, unclipped, kl, exact). ``subject``: run, agent, iteration."""
        key = (subject["run"], subject["agent"], subject["iteration"], step_pairs)
        if column in ("surrogate", "unclipped", "kl", "exact"):
            part = self._planes("surface").get(key)
        else:
            if n is not None and n not in self.sizes:
                raise DiagnosticError(f"n={n!r} was not measured; the study's sizes are {self.sizes}")
            part = self._planes("returns").get(key + (n or self.sizes[-1],))
        G = len(self.manifest["resolved"]["coords"])
        if part is None or len(part) != G * G:
            raise DiagnosticError(f"no plane of {column!r} for {subject} at step_pairs={step_pairs!r} in this "
                                  f"study")
        return part[column].to_numpy(copy=True).reshape(G, G)   # the cached table's stays as it is

    def agreement(self, n: int | None = None):
        """Per plane (subject × step): the sign agreement of surrogate and true return along the step
        ([`sign_agreement`][pgdiag.studies.landscape.diagnostic.sign_agreement]) with its CI, and the step's own
        effect: the true return at (1, 0) minus (0, 0) with its standard error, beside the surrogate's change (NaN
        where the grid has no x = 1); the step's norm and its ratio to the random direction's, and the pairs a
        point's true return used on average (asked: ``n``)."""
        if ("agreement", n) not in self._cache:
            self._cache[("agreement", n)] = self._agreement(n)
        return self._cache[("agreement", n)].copy()

    def _agreement(self, n: int | None):
        import pandas as pd

        coords = np.asarray(self.manifest["resolved"]["coords"])
        ones = np.flatnonzero(np.isclose(coords, 1.0))    # x = 1 is the step itself; elsewhere it is not read
        one = int(ones[0]) if ones.size else None
        settings = self.manifest["settings"]
        rows = []
        for _, p in self.planes.iterrows():
            subject = {"run": p.run, "agent": p.agent, "iteration": p.iteration}
            t, se = self.grid(subject, p.step_pairs, n), self.grid(subject, p.step_pairs, n, "se")
            used = self.grid(subject, p.step_pairs, n, "pairs") if "pairs" in self.returns else np.nan
            s = self.grid(subject, p.step_pairs, column="surrogate")
            value, low, high = sign_agreement(t, se, s, settings["resamples"], settings["seed"])
            rows.append({**{k: p[k] for k in tables.KEYS}, "step_pairs": p.step_pairs, "n": n or self.sizes[-1],
                         "agreement": value, "low": low, "high": high,
                         "true_step_change": t[one, 0] - t[0, 0] if one is not None else np.nan,
                         "true_step_change_se": float(np.hypot(se[one, 0], se[0, 0])) if one is not None
                         else np.nan,
                         "surrogate_step_change": s[one, 0] - s[0, 0] if one is not None else np.nan,
                         "step_norm": p.step_norm,
                         "step_norm_ratio": p.step_norm / p.random_norm if "random_norm" in p.index else np.nan,
                         "pairs_per_point": float(np.mean(used))})
        return pd.DataFrame(rows)


class Landscape(Diagnostic[landscape.Resolved]):
    """The landscape study as the engine runs it (`pgdiag.diagnostics.protocol`)."""

    kind, title, settings = NAME, "landscape", landscape.LandscapeSettings
    tables, result = TABLES, LandscapeStudy

    def resolve(self, settings, statics) -> landscape.Resolved:
        return landscape.resolve(settings, statics)

    def group_by(self, settings, static):
        """One program per distinct training configuration (PPO's and TRPO's steps differ)."""
        return static.program()

    def shape(self, group: Group) -> Shape:
        """The plan that fits (`landscape.fit`: subjects in turn, then shorter chunks); a point's stream is
        ⌈N / envs⌉ batched steps at the largest N."""
        r, n = group.resolved, group.units
        fitted, batching, need, changed = landscape.fit(group.static, r, n, *group.sizes, group.settings.batching,
                                                        group.memory)
        turns = n if batching == "map" else 1
        return Shape(
            batching=batching, units=n, pairs=landscape.pairs_total(r, n),
            sequential_steps=-(-max(r.sizes) // r.envs) * turns,
            width=r.envs * r.grid_points * len(r.step_envs) * (n // turns), bytes=need, fits=need <= group.memory,
            note=changed, resolved=fitted,
            refusal=("the landscape", f"{n} subjects × {len(r.step_envs)} planes × {r.grid_points} grid points × "
                                      f"{r.envs} environments, even with subjects in turn and chunks of "
                                      f"{fitted.chunk_steps} steps", "lower points or envs"))

    def describe(self, shape: Shape) -> str:
        r = shape.resolved
        return (f"landscape: {shape.units} subjects ({shape.static.algorithm}) × {len(r.step_envs)} planes × "
                f"{r.grid_points} points × N = {list(r.sizes)}: {shape.pairs:,} pairs"
                + (f" ({shape.note}, to fit the memory)" if shape.note else ""))

    def program(self, shape: Shape):
        return landscape.program(shape.static, shape.resolved, shape.batching)

    def record(self, shapes) -> Record:
        r = shapes[-1].resolved
        resolved = {"coords": list(r.coords), "sizes": list(r.sizes), "envs": r.envs, "chunk_steps": r.chunk_steps,
                    "estimator": ESTIMATOR, "step_pairs": list(r.step_pairs), "random_norm": r.random_norm,
                    "length_episodes": r.length_episodes, "exact": r.exact, "batch_size": r.own.envs * r.own.steps}
        splits = [{"algorithm": s.static.algorithm, "changed": s.note, "bytes": s.bytes} for s in shapes if s.note]
        return Record(resolved, {"fitted": splits})

    def frames(self, measured: Measured) -> dict:
        return _frames(measured)


#: the landscape study, as targets and `pgdiag.diagnostics.engine` take it
LANDSCAPE = Landscape()


def landscape_study(runs, iterations=None, agents=None, settings: landscape.LandscapeSettings | None = None, *,
                    labels=None, save: bool = True, replace: bool = False, name: str = NAME, verbose: bool = False,
                    **changes) -> LandscapeStudy:
    """The landscapes of every agent of ``runs`` (those with ``labels``, if given) at the checkpointed
    ``iterations``; ``changes`` override fields of
    [`LandscapeSettings`][pgdiag.studies.landscape.measure.LandscapeSettings].

    Args:
        runs: run directories with checkpoints (or loaded runs), one or several with the same task.
        iterations: checkpointed iterations to measure at; None: every saved one.
        agents: agent indices in each run; None: all.
        settings: the study's settings ([`LandscapeSettings`][pgdiag.studies.landscape.LandscapeSettings]);
            None: the defaults.
        labels: keep only the agents with these labels (a sweep's grid-point labels).
        save: save the tables in each run's ``diagnostics/`` directory.
        replace: save over a measurement made with other settings (otherwise refused).
        name: the name it is saved under (load it with ``name=``).
        verbose: print a line describing each compiled program (its subjects, sizes and chunks).
        **changes: fields of the settings to change, e.g. ``points=7, extent=3.0``.

    Returns:
        The study: its manifest and tables (returns, surface, planes).
    """
    return engine.run(LANDSCAPE, runs, iterations, agents, settings, labels=labels, save=save, replace=replace,
                      name=name, verbose=verbose, **changes)


def load_landscape_study(run_paths, name: str = NAME) -> LandscapeStudy:
    """A saved landscape study from one or more run directories (no recomputation).

    Args:
        run_paths: one or more run directories (or loaded runs) the study was saved in.
        name: the name it was saved under.

    Returns:
        The study, as it was saved.
    """
    return engine.load(LANDSCAPE, run_paths, name)
