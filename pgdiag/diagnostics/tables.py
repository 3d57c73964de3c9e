"""Diagnostic results as tidy tables in the measured run's directory, their CIs and summaries.

    RUN_DIR/diagnostics/<study>/manifest.json   settings, subjects, seeds, versions, timings
    RUN_DIR/diagnostics/<study>/<table>.parquet one row per measured quantity

A study that measured several runs together writes each run's rows into that
run's own directory (each manifest names the runs measured with it); loading
a study from several run directories concatenates them. Curves and summaries
are functions of the saved rows, so figures redraw without recomputing.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from pgdiag.run import store
from pgdiag.run.distributed import lead_writes
from pgdiag import stats

DIAGNOSTICS = "diagnostics"
KEYS = ["run", "label", "algorithm", "agent", "seed", "iteration"]


def check_name(name: str) -> str:
    """A study's name is one directory under the run's ``diagnostics/``: letters, digits, '_', '-' and '.'
    (not starting with '.'), so that no name reaches outside it or onto the run's own files."""
    import re

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name):
        from pgdiag.diagnostics.subjects import DiagnosticError
        raise DiagnosticError(f"study name {name!r}: a name is letters, digits, '_', '-' and '.', not starting with "
                          f"'.' (it names the directory RUN/{DIAGNOSTICS}/NAME)")
    return name


def study_path(run_path: str, name: str) -> str:
    return os.path.join(run_path, DIAGNOSTICS, check_name(name))


def saved_manifest(run_path: str, name: str) -> dict | None:
    """The manifest of the ``name`` study saved in a run (None if it holds none)."""
    path = os.path.join(study_path(run_path, name), "manifest.json")
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, ValueError, UnicodeDecodeError) as err:
        from pgdiag.diagnostics.subjects import DiagnosticError
        raise DiagnosticError(f"{path} cannot be read ({err.__class__.__name__}): the saved {name!r} measurement "
                              f"is damaged; move {os.path.dirname(path)} aside to measure it again") from None
    return manifest if isinstance(manifest, dict) else {}


def differences(manifest: dict | None, settings: dict, subjects: set | None) -> list:
    """How a saved measurement differs from one made with ``settings`` (those fields only) on ``subjects``
    ((agent, iteration) of the manifest's run; None: any): ``["estimates: 10 saved, 5 asked", ...]``, [] when
    it is the same."""
    if manifest is None:
        return ["none saved"]
    have = manifest.get("settings", {})
    asked = {k: json.loads(json.dumps(v)) for k, v in settings.items()}   # as saved: tuples as lists
    out = [f"{k}: {have.get(k)!r} saved, {v!r} asked" for k, v in asked.items() if v != have.get(k)]
    if subjects is not None:
        mine = {(int(s["agent"]), int(s["iteration"])) for s in manifest.get("subjects", [])
                if s.get("run") == manifest.get("run")}
        if mine != subjects:
            out.append(f"subjects (agent, iteration): {sorted(mine)} saved, {sorted(subjects)} asked")
    return out


#: the studies that read a run's measurement, recorded beside it (RUN/diagnostics/NAME/readers.json), so that
#: whatever would replace it finds them first, wherever they are
READERS = "readers.json"


def recorded_readers(run_path: str, name: str) -> list:
    """The directories of the studies recorded as reading the run's ``name`` measurement."""
    try:
        with open(os.path.join(study_path(run_path, name), READERS)) as f:
            return list(json.load(f))
    except (OSError, ValueError, TypeError):
        return []


def record_reader(run_path: str, name: str, reader: str) -> None:
    """Record that the study in ``reader`` reads the run's ``name`` measurement (a run that cannot be written
    keeps the readers it has)."""
    readers = recorded_readers(run_path, name)
    if os.path.abspath(reader) not in readers:
        try:
            store.write_json(os.path.join(study_path(run_path, name), READERS),
                             sorted(readers + [os.path.abspath(reader)]))
        except store.RunDirError:
            pass


def write_study(tables: dict, manifest: dict, name: str) -> list:
    """Split every table by run and write each run's share under its diagnostics directory.
    Tables first, the manifest last (it is the record of a complete study)."""
    runs = sorted({r for t in tables.values() for r in t["run"].unique()})
    with lead_writes(f"{name} tables") as lead:  # on several processes, process 0 writes
        for run in runs if lead else ():
            path = study_path(run, name)
            os.makedirs(path, exist_ok=True)
            for table, frame in tables.items():
                part = frame[frame["run"] == run].reset_index(drop=True)
                store.write_metrics(os.path.join(path, f"{table}.parquet"), part)
            store.write_json(os.path.join(path, "manifest.json"), {**manifest, "run": run, "measured_with": runs})
    return [study_path(run, name) for run in runs]


def read_study(run_paths, name: str, tables, kind: str | None = None, title: str = "study") -> tuple:
    """(manifest of the first run, {table: frame}) of a study saved in one or more run directories, each
    run's rows under the path it is read from (``run``); refused where a run holds another ``kind`` of study
    under ``name``, or where the runs' measurements were made with different settings (pooled, their rows
    would read as one measurement's)."""
    import pandas as pd

    from pgdiag.diagnostics.subjects import DiagnosticError

    if isinstance(run_paths, (str, os.PathLike)):
        run_paths = [run_paths]
    run_paths = [os.fspath(r) for r in run_paths]
    manifests = []
    for run in run_paths:
        manifest = saved_manifest(run, name)
        if manifest is None:
            where = os.path.join(run, DIAGNOSTICS)   # (a name never starts with '.': .pieces holds kept blocks)
            have = sorted(d for d in os.listdir(where) if not d.startswith(".")) if os.path.isdir(where) else []
            raise FileNotFoundError(f"no {name!r} diagnostic in {run!r}; diagnostics there: {have or 'none'}")
        if kind is not None and manifest.get("kind") != kind:
            raise DiagnosticError(f"{name!r} in {run!r} is a {manifest.get('kind')!r} study, not a {title}")
        manifests.append(manifest)
    for run, manifest in zip(run_paths[1:], manifests[1:]):
        first, here = manifests[0].get("settings", {}), manifest.get("settings", {})
        diff = [f"{k}: {first.get(k)!r} against {here.get(k)!r}" for k in sorted(set(first) | set(here))
                if first.get(k) != here.get(k)]
        if diff:
            raise DiagnosticError(f"the {name!r} measurements in {run_paths[0]!r} and {run!r} were made with "
                                  f"different settings ({'; '.join(diff)}); load them separately")
    frames = {t: [] for t in tables}
    for run in run_paths:
        for t in tables:
            frame = pd.read_parquet(os.path.join(study_path(run, name), f"{t}.parquet"))
            if "run" in frame:
                frame["run"] = run    # where it is read from now (a path saved relative to another directory
                # would name no run, or another run of the same name)
            frames[t].append(frame)
    return manifests[0], {t: pd.concat(f, ignore_index=True) for t, f in frames.items()}


#: the tables' columns that hold cosines: a mean of cosines lies in [−1, 1], so an interval for it is cut
#: there (the true mean is never cut away, so the coverage stays what it was or rises)
COSINES = ("cosine", "to_true", "to_exact")


def curve(frame, value: str, by: list, **_):
    """Mean of ``value`` per group of ``by`` with its 95% Student-t interval, the group's rows taken as its
    independent units (the K estimates of one subject, or one value per agent), as columns mean, low, high,
    count. NaN rows dropped."""
    return _per_group(frame, by, lambda part: stats.t_interval(part[value].to_numpy()), value in COSINES)


def pairwise_curve(frame, value: str, by: list, **_):
    """Mean over the pairs (columns ``i`` < ``j``) of ``value`` per group of ``by`` with its 95% interval from the
    jackknife over the estimates ([`pgdiag.stats.pairwise_interval`][pgdiag.stats.pairwise_interval]: a pairwise
    mean's unit is the estimate, not the pair), as columns mean, low, high, count (the number of estimates)."""
    return _per_group(frame, by, lambda part: stats.pairwise_interval(part["i"].to_numpy(), part["j"].to_numpy(),
                                                                      part[value].to_numpy()), value in COSINES)


def _per_group(frame, by: list, interval, cosine: bool = False):
    import pandas as pd

    rows = []
    for group, part in frame.groupby(by, sort=True):
        est = interval(part)
        low, high = (max(est.low, -1.0), min(est.high, 1.0)) if cosine else (est.low, est.high)
        rows.append(dict(zip(by, group if isinstance(group, tuple) else (group,)), mean=est.estimate, low=low,
                         high=high, count=int(est.n)))
    return pd.DataFrame(rows, columns=list(by) + ["mean", "low", "high", "count"])


def crossing(n, values, level: float) -> float:
    """The smallest N at which ``values`` (increasing N) reaches ``level``, log-linearly interpolated
    between the grid points around the first crossing; NaN if it never does, n[0] if it starts above."""
    n, v = np.asarray(n, np.float64), np.asarray(values, np.float64)
    ok = np.isfinite(v)
    n, v = n[ok], v[ok]
    above = np.nonzero(v >= level)[0]
    if above.size == 0:
        return float("nan")
    i = int(above[0])
    if i == 0:
        return float(n[0])
    t = (level - v[i - 1]) / (v[i] - v[i - 1])
    return float(math.exp(math.log(n[i - 1]) + t * (math.log(n[i]) - math.log(n[i - 1]))))


def _at(n, values, size) -> float:
    """The curve's value at N = ``size``: measured there, else log-linearly between the measured N around it
    (a grid snapped to whole chunks of another width may step over the batch size); NaN outside them."""
    n, v = np.asarray(n, np.float64), np.asarray(values, np.float64)
    ok = np.isfinite(v)
    n, v = n[ok], v[ok]
    if n.size == 0 or not n[0] <= size <= n[-1]:
        return float("nan")
    return float(np.interp(math.log(size), np.log(n), v))


def summary(curves, batch_size: int, levels=(0.5, 0.9), group=("label", "iteration")):
    """Per ``group`` (mean over its agents' curves): the N at which the mean cosine first reaches each
    level, and the mean cosine at the algorithm's batch size ([`_at`][pgdiag.diagnostics.tables._at])."""
    import pandas as pd

    rows = []
    for key, part in curves.groupby(list(group), sort=True):
        mean = part.groupby("n")["mean"].mean()
        row = dict(zip(group, key))
        for level in levels:
            row[f"n_at_{level:g}"] = crossing(mean.index.to_numpy(), mean.to_numpy(), level)
        row["at_batch_size"] = _at(mean.index.to_numpy(), mean.to_numpy(), batch_size)
        row["agents"] = int(part["agent"].nunique()) if "agent" in part else 1
        rows.append(row)
    return pd.DataFrame(rows)
