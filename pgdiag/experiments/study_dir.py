"""A study's output directory, and reading it back to redraw its figures and tables.

Every figure/table target writes ``OUT/study.json`` next to its results once
they are complete: the study's name, scale and tasks, and whatever its drawing
function needs besides the run directories and CSVs. ``--from OUT`` reads it
back, so a figure is a function of what is on disk and a wrong or half-made
directory is refused before anything is loaded or compiled.
"""

from __future__ import annotations

import contextlib
import json
import os

import numpy as np

from pgdiag.config import Config, ConfigError
from pgdiag.run.distributed import lead_writes
from pgdiag.run.store import write_json

STUDY_FILE = "study.json"
FORMAT = "pgdiag.study/1"

#: the names studies were saved under before each was named after its study rather than its first target: a
#: saved study under one of them reads as the study it is now
FORMER_NAMES = {"fig-ablation": "ablation", "fig-baselines": "baselines", "fig-theorem": "theorem",
                "fig-trust-region": "trust-region", "fig-value": "value"}


def study_of(record) -> str | None:
    """The study a study record holds (a former name read as today's)."""
    found = record.get("study") if isinstance(record, dict) else None
    return FORMER_NAMES.get(found, found)


#: a clip ε at or above this disables clipping (PPO-NoClip uses 1e32): no 1 + ε line for it
NO_CLIP = 1e30


def write(out: str, study: str, scale: str, tasks, **extra) -> dict:
    """Record ``study`` in ``out`` (written whole and renamed into place)."""
    record = {"format": FORMAT, "study": study, "scale": scale, "tasks": list(tasks), **extra}
    with lead_writes("study record") as lead:
        if lead:
            write_json(os.path.join(out, STUDY_FILE), record)
    return record


def prepare(out: str, study: str, target: str) -> None:
    """Check ``out`` for ``study`` before anything trains or compiles: a directory that can be written (or made),
    not a run's directory and not another study's (a [`ConfigError`][pgdiag.config.setting.ConfigError] naming it
    otherwise)."""
    from pgdiag.run.claim import holds_training_run

    where = f"{target} --out {out!r}"
    if os.path.lexists(out) and not os.path.isdir(out):
        raise ConfigError(f"{where}: it is an existing file; give a directory")
    if holds_training_run(out):
        raise ConfigError(f"{where}: it is a run's directory (a sweep wrote it), whose files a study's would mix "
                          f"with; give a directory of its own")
    try:
        with open(os.path.join(out, STUDY_FILE)) as f:
            found = study_of(json.load(f))
    except (OSError, ValueError, AttributeError):
        found = None
    if found not in (None, study):
        raise ConfigError(f"{where}: it holds the {found!r} study; {target} writes the {study!r} study: give "
                          f"another directory")
    missing, near = [], os.path.abspath(out)   # the directories to make, below the nearest one there
    while not os.path.lexists(near):
        missing.append(near)
        near = os.path.dirname(near)
    if not os.path.isdir(near):
        raise ConfigError(f"{where}: {near!r} is a file, not a directory")
    made = []                                  # made to try, and removed again: nothing is left on a refusal
    try:
        for d in reversed(missing):
            os.mkdir(d)
            made.append(d)
        probe = os.path.join(out, f".pgdiag-probe-{os.getpid()}")
        open(probe, "w").close()
        os.remove(probe)
    except OSError as err:
        raise ConfigError(f"{where}: it cannot be written ({err.strerror or err})") from None
    finally:
        for d in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(d)


def _needs(study: str, target: str) -> str:
    return f"the output directory of `pgdiag {target} --out DIR` (the {study!r} study)"


def _holds(path: str) -> str:
    """What a directory without a study holds, in a few words."""
    entries = sorted(os.listdir(path))
    if not entries:
        return "nothing (it is empty)"
    if "manifest.json" in entries:
        return "a single run directory (manifest.json), not a figure's study"
    shown = ", ".join(entries[:6]) + (f", … ({len(entries)} entries)" if len(entries) > 6 else "")
    return f"no {STUDY_FILE} (entries: {shown})"


def read(from_dir: str, study: str, target: str) -> dict:
    """The study record in ``from_dir``; a [`ConfigError`][pgdiag.config.setting.ConfigError] unless it holds
    ``study``."""
    where = f"{target} --from {from_dir!r}"
    if not os.path.isdir(from_dir):
        raise ConfigError(f"{where}: no such directory; {target} needs {_needs(study, target)}")
    path = os.path.join(from_dir, STUDY_FILE)
    if not os.path.isfile(path):
        raise ConfigError(f"{where}: the directory holds no study: {_holds(from_dir)}; {target} needs "
                          f"{_needs(study, target)}, which writes {STUDY_FILE} once its results are complete")
    try:
        with open(path) as f:
            record = json.load(f)
    except (OSError, ValueError) as err:
        raise ConfigError(f"{where}: cannot read {path}: {err}") from None
    found = study_of(record)
    if found != study:
        raise ConfigError(f"{where}: the directory holds the {found!r} study ("
                          f"{record.get('scale')} scale, tasks {', '.join(record.get('tasks', []))}); "
                          f"{target} needs {_needs(study, target)}")
    return record


def select_tasks(record: dict, tasks, from_dir: str, target: str) -> tuple:
    """The study's tasks, or the requested subset of them."""
    have = tuple(record["tasks"])
    if not tasks:
        return have
    missing = [t for t in tasks if t not in have]
    if missing:
        raise ConfigError(f"{target} --from {from_dir!r}: the study has no {', '.join(missing)}; "
                          f"its tasks are {', '.join(have)}")
    return tuple(tasks)


def run_dir(from_dir: str, name: str, target: str) -> str:
    """``from_dir/name``, which must be a run directory (the study lists it)."""
    path = os.path.join(from_dir, name)
    if not os.path.isfile(os.path.join(path, "manifest.json")):
        raise ConfigError(f"{target} --from {from_dir!r}: the study lists the run directory {name!r}, "
                          f"which is missing or has no manifest.json")
    return path


def with_configs(run):
    """``run.metrics`` with what each agent was trained with: ``program`` (its static
    algorithm), ``clip_eps`` and ``kl_bound`` from the manifest's base configuration and the
    agent's grid point, its run's ``num_iterations`` and ``lr_annealing`` (where a claim reads the point of
    training), and the algorithm's constraint as registered
    ([`pgdiag.algorithms.Constraint`][pgdiag.algorithms.base.Constraint]): ``constraint`` ('ratio', 'kl' or '') and
    ``constraint_value`` (its knob's value; NaN for none) — what reference lines must show."""
    from pgdiag import algorithms

    base = Config.from_dict(run.manifest["base_config"])
    points = [base.replace(**p) for p in run.manifest["grid_points"] or [{}]]
    point_of = np.array([a["point"] for a in run.manifest["agents"]])
    agent = run.metrics["agent"].to_numpy()
    kinds = [algorithms.get(c.static.algorithm).constraint for c in points]
    return run.metrics.assign(program=np.array([c.static.algorithm for c in points])[point_of[agent]],
                              clip_eps=np.array([c.get("clip_eps", np.nan) for c in points], float)[point_of[agent]],
                              kl_bound=np.array([c.get("kl_bound", np.nan) for c in points], float)[point_of[agent]],
                              constraint=np.array([k.kind if k else "" for k in kinds])[point_of[agent]],
                              constraint_value=np.array([c.get(k.knob) if k else np.nan
                                                         for c, k in zip(points, kinds)], float)[point_of[agent]],
                              num_iterations=np.array([c.num_iterations for c in points], int)[point_of[agent]],
                              lr_annealing=np.array([bool(c.get("lr_annealing", False)) for c in points],
                                                    bool)[point_of[agent]])


def tidy(metrics, task: str):
    """A labelled sweep's metrics with ``task`` and ``algorithm`` (= the grid point's label) in front."""
    f = metrics.assign(algorithm=metrics["label"], task=task)
    cols = ["task", "algorithm", "agent", "seed", "iteration", "env_steps", "mean_return"]
    return f[cols + [c for c in f.columns if c not in cols]]


def runs_entry(runs: dict) -> dict:
    """A study record's ``runs`` (task -> run directories relative to the study) and ``run_seeds``
    (directory -> the seeds the study takes from it) from ``{task: [(name, seeds)]}`` under ``runs/``
    (what [`pgdiag.experiments.training.train_study`][pgdiag.experiments.training.train_study] returns)."""
    return {"runs": {t: [f"runs/{d}" for d, _ in r] for t, r in runs.items()},
            "run_seeds": {f"runs/{d}": [int(s) for s in seeds] for r in runs.values() for d, seeds in r}}


def _agents_of(record: dict, from_dir: str, name: str, target: str):
    """One listed run's metrics with its configurations
    ([`with_configs`][pgdiag.experiments.study_dir.with_configs]), only the seeds the study takes from it
    (``run_seeds``; a study written before it took every seed)."""
    from pgdiag.run import load_run

    metrics = with_configs(load_run(run_dir(from_dir, name, target)))
    seeds = record.get("run_seeds", {}).get(name)
    return metrics if seeds is None else metrics[metrics.seed.isin(seeds)]


def load_runs(from_dir: str, study: str, target: str, tasks=None):
    """``(record, metrics)`` of a study of labelled sweeps (fig-trust-region, the algorithms study): its algorithms'
    metrics on its tasks, read from the run directories it lists, with each agent's configured ``program``,
    ``clip_eps`` and ``kl_bound`` ([`with_configs`][pgdiag.experiments.study_dir.with_configs])."""
    import pandas as pd

    record = read(from_dir, study, target)
    tasks = select_tasks(record, tasks, from_dir, target)
    frames = []
    for task in tasks:
        # a study may add seeds to a program in a second run: those runs' agents are numbered after the first's
        # (runs of different programs, with other labels, keep their own numbering)
        first: dict = {}
        for name in record["runs"][task]:
            metrics = _agents_of(record, from_dir, name, target)
            program = frozenset(metrics.label)
            frames.append(tidy(metrics.assign(agent=metrics.agent + first.get(program, 0)), task))
            first[program] = first.get(program, 0) + (int(metrics.agent.max()) + 1 if len(metrics) else 0)
    metrics = pd.concat(frames, ignore_index=True)
    return record, metrics[metrics.algorithm.isin(record["algorithms"])].reset_index(drop=True)


__all__ = ["NO_CLIP", "STUDY_FILE", "load_runs", "read", "run_dir", "runs_entry", "select_tasks", "tidy",
           "with_configs", "write"]
