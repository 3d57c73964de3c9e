"""The loop every diagnostic figure runs (:func:`measure_target`): train presets with checkpoints into
``OUT/runs/`` (or take given runs), measure each task's runs unless they hold the measurement made with the
same settings, and record the study."""

from __future__ import annotations

import json
import os

from pg_diag.config import ConfigError, study_preset
from pg_diag.diagnostics import tables as diag_tables
from pg_diag.experiments import study_dir, targets
from pg_diag.experiments.algorithms import train_study
from pg_diag.experiments.scales import pick


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


def measure_target(target: str, scales: dict, scale: str, out: str | None, measure, *, algorithms, name: str,
                   labels=None, tasks=None, seeds=None, progress=None, runs=None, diag=None,
                   overrides: dict | None = None) -> str:
    """Train ``algorithms`` at ``scale`` (or take ``runs``), run ``measure`` (a diagnostic study, saved under
    ``name`` in each run, of the agents with ``labels`` when it trained them) on each task's runs unless they
    hold it with the same settings, and record the study in ``out``, keeping what the study's other targets
    recorded there. Every setting is checked before anything trains. Returns ``out``."""
    from pg_diag import diagnostics

    t = targets.get(target)
    sc = pick(scales, scale)
    out = out or f"results/{t.study}-{scale}"
    check_settings(getattr(diagnostics, t.settings_class), sc.measuring(t.measurement, user=diag))
    if runs:
        names = given_runs(runs, out)
    else:
        names = train(out, tuple(tasks or sc.tasks_of(target)), algorithms, seeds or sc.seeds, progress,
                      sc.overrides, sc.task_overrides, overrides)
    for task, dirs in names.items():
        settings = sc.measuring(t.measurement, task, diag)
        paths = [os.path.normpath(os.path.join(out, d)) for d in dirs]
        if not saved(paths, name, settings):
            chosen = {"labels": labels} if labels and not runs else {}
            measure(paths, name=name, verbose=progress is not False, **chosen, **settings)
    old = recorded(out, t.study, scale)
    measured = {**old.get("measured", {}), target: sorted(names)}
    study_dir.write(out, t.study, scale, sorted({task for v in measured.values() for task in v}),
                    runs={**old.get("runs", {}), **names}, measured=measured)
    return out
