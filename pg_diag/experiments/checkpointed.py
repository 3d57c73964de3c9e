"""The training and reuse plumbing the diagnostic figures share: train presets with checkpoints into
``OUT/runs/``, and tell whether a run directory already holds a measurement made with given settings."""

from __future__ import annotations

import json
import os

from pg_diag.config import ConfigError, study_preset
from pg_diag.diagnostics import tables as diag_tables
from pg_diag.experiments.algorithms import train_study


def check_settings(cls, settings: dict) -> None:
    """The measurement's settings, checked before anything trains."""
    try:
        cls(**settings).check()
    except TypeError as e:
        raise ConfigError(f"{e}; see pg_diag.diagnostics.{cls.__name__}") from None


def given_runs(runs, out: str) -> dict:
    """Run directories given by the user, recorded relative to ``out`` (the study's directory)."""
    return {"runs": [os.path.relpath(os.path.abspath(r), os.path.abspath(out)) for r in runs]}


def saved(run_dirs, name: str, settings: dict) -> bool:
    """Every run holds the ``name`` diagnostic measured with ``settings`` (its other fields at defaults)."""
    for run in run_dirs:
        path = os.path.join(diag_tables.study_path(run, name), "manifest.json")
        if not os.path.exists(path):
            return False
        with open(path) as f:
            have = json.load(f).get("settings", {})
        if any(json.loads(json.dumps(v)) != have.get(k) for k, v in settings.items()):
            return False
    return True


def train(out: str, tasks, algorithms, seeds: int, progress, overrides: dict, task_overrides: dict,
          user: dict | None = None) -> dict:
    """Train every preset of ``algorithms`` on every task (every configuration validated first; matching
    runs on disk reused): the scale's ``overrides``, then its ``task_overrides``, then the ``user``'s.
    Returns {task: [run directories relative to ``out``]} (one per program: PPO and PPO-M share one, told
    apart by their labels)."""
    plans = {}
    for task in tasks:
        over = {**overrides, **task_overrides.get(task, {}), **(user or {})}
        for algo in algorithms:
            study_preset(algo, task, **over)
        plans[task] = over
    runs = {task: train_study(task, seeds, os.path.join(out, "runs"), algorithms, progress, **over)[1]
            for task, over in plans.items()}
    return {task: [f"runs/{d}" for d, _ in r] for task, r in runs.items()}


def recorded(out: str, study: str, scale: str) -> dict:
    """The record an earlier target wrote in ``out`` for the same study and scale ({} if none), so a
    target sharing the study keeps what the others recorded (their runs) beside its own."""
    path = os.path.join(out, "study.json")
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if old.get("study") == study and old.get("scale") == scale:
            return old
    return {}
