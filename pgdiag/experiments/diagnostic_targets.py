"""The runs the closer-look targets train, and the loop every diagnostic target runs
([`run`][pgdiag.experiments.diagnostic_targets.run]).

[`train_runs`][pgdiag.experiments.diagnostic_targets.train_runs] trains presets (or takes them from disk) into
``runs/`` beside the study's output directory — in the directory that holds it, so every study written there shares
it — each run named by its configuration
([`pgdiag.experiments.training.train_study`][pgdiag.experiments.training.train_study]). Targets of one scale whose
training agrees (the mid scale's
[`pgdiag.experiments.scales.MID_TRAINING`][pgdiag.experiments.scales.MID_TRAINING]) therefore train each (preset,
seed) once and read the same runs; a run of another configuration gets a directory of its own, never one already
there. A study records its runs relative to its own directory (``../runs/...``), so a results tree moves as one.

[`measure_target`][pgdiag.experiments.diagnostic_targets.measure_target]: train (or take given runs), measure each
task's runs unless they hold the measurement made with the same settings on the same subjects, and record the study.
A measurement is saved in the run's directory: one that another study beside this one reads is never replaced by a
different one (refused, naming that study).
"""

from __future__ import annotations

import json
import os

from pgdiag.config import Config, ConfigError, study_preset
from pgdiag.diagnostics import tables as diag_tables
from pgdiag.experiments import study_dir
from pgdiag.experiments.training import presets_of, train_study
from pgdiag.experiments.scales import pick
from pgdiag.run import store
from pgdiag.run.distributed import lead_writes
from pgdiag.diagnostics.subjects import DiagnosticError, plan_subjects

#: the shared runs' directory, beside the studies' output directories
RUNS = "runs"


def runs_root(out: str) -> str:
    """Where the study written to ``out`` keeps its runs: ``runs/`` in the directory holding ``out``."""
    return os.path.join(os.path.dirname(os.path.abspath(out)), RUNS)


def check_settings(cls, settings: dict) -> None:
    """The measurement's settings, checked before anything trains."""
    try:
        cls(**settings).check()
    except TypeError as e:
        raise ConfigError(f"{e}; see pgdiag.diagnostics.{cls.__name__}") from None


def given_runs(runs, out: str) -> dict:
    """Run directories given by the user, grouped by the task they trained on (figures and tables name it) and
    recorded relative to ``out`` (the study's directory)."""

    by_task = {}
    for r in runs:
        try:
            task = Config.from_dict(store.load_run(r).manifest["base_config"]).static.task
        except FileNotFoundError as err:
            raise ConfigError(f"--run {r!r}: {err}") from None
        by_task.setdefault(task, []).append(os.path.relpath(os.path.abspath(r), os.path.abspath(out)))
    return by_task


def trained_presets(sc, own, chosen=None) -> tuple:
    """The presets a target trains at scale ``sc``: the user's ``chosen``, else the scale's (more than the
    target's own where its targets share one training), else the target's ``own``."""
    return tuple(chosen or sc.presets or own)


def train_runs(out: str, sc, tasks, presets, seeds, progress=None, user: dict | None = None) -> dict:
    """Train every one of ``presets`` on every task with ``seeds`` into
    [`runs_root`][pgdiag.experiments.diagnostic_targets.runs_root] (every configuration validated first; matching
    runs on disk reused seed by seed): the scale ``sc``'s settings, then its task's, then the ``user``'s. Returns
    the study record's ``runs`` (task -> run directories relative to ``out``; one per program: PPO and PPO-M share
    one, told apart by their labels) and ``run_seeds`` (directory -> the seeds the study takes from it)."""
    plans = {}
    for task in tasks:
        over = sc.training(task, user)
        for name in presets:
            study_preset(name, task, **over)
        plans[task] = over
    root = runs_root(out)
    runs = {task: train_study(task, seeds, root, presets, progress, **over)[1] for task, over in plans.items()}

    def rel(d):
        return os.path.relpath(os.path.join(root, d), os.path.abspath(out))
    return {"runs": {task: [rel(d) for d, _ in r] for task, r in runs.items()},
            "run_seeds": {rel(d): [int(s) for s in taken] for r in runs.values() for d, taken in r}}


def wanted_subjects(run_dirs, labels=None, iterations=None) -> dict | None:
    """run directory -> the (agent, iteration) a measurement of the agents with ``labels`` at ``iterations``
    takes from it (None for either: every one); None where the runs cannot give them (the measurement
    itself then says why)."""

    try:
        planned = plan_subjects(list(run_dirs), iterations, None, labels)
    except DiagnosticError:
        return None
    out = {d: set() for d in run_dirs}
    for run, agent, it in planned:
        out[run.path].add((int(agent), int(it)))
    return out


def saved(run_dirs, name: str, settings: dict, labels=None, iterations=None) -> bool:
    """Every run holds the ``name`` diagnostic measured with ``settings`` (its other fields at defaults) on
    the subjects asked for: its agents with ``labels`` at ``iterations`` (None: every agent, every checkpoint)."""
    subjects = wanted_subjects(run_dirs, labels, iterations)
    if subjects is None:
        return False
    return all(not diag_tables.differences(diag_tables.saved_manifest(run, name), settings, subjects[run])
               for run in run_dirs if subjects[run])


def recorded(out: str, study: str, scale: str) -> dict:
    """The record an earlier target wrote in ``out`` for the same study and scale ({} if none), so a
    target sharing the study keeps what the others recorded (their runs) beside its own."""
    path = os.path.join(out, "study.json")
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if study_dir.study_of(old) == study and old.get("scale") == scale:
            return old
    return {}


def _estimate(task: str, study: str):
    """A ``study`` program's planned seconds for its progress bar, as `--dry-run` plans it: this host's recorded
    time for programs like it, else its physics' recorded cost, else timed now (a few batched steps)."""
    def estimate(shape):
        from pgdiag.experiments.costs import measured_step_ms
        from pgdiag.experiments.dry_run import shape_seconds

        return shape_seconds(shape, task, measured_step_ms(shape.static.solver, shape.static.model), study)
    return estimate


def measure_target(target, scale: str, out: str | None, *, tasks=None, seeds=None, progress=None, runs=None,
                   diag=None, overrides: dict | None = None) -> str:
    """Train at ``scale`` ([`train_runs`][pgdiag.experiments.diagnostic_targets.train_runs]: the scale's presets,
    else the target's) or take ``runs``, run the target's measurement (saved under its name in each run) on each
    task's runs — when it trained them, of the presets it measures at the checkpoints the scale measures — unless
    they hold it with the same settings and subjects, and record the study in ``out``, keeping what the study's
    other targets recorded there. Every setting is checked before anything trains. Returns ``out``."""
    m = target.measurement
    sc = pick(target.scales, scale)
    out = out or f"results/{target.study}-{scale}"
    check_settings(m.settings, sc.measuring(m.name, user=diag))
    if runs:
        entry, chosen = {"runs": given_runs(runs, out)}, {}
    else:
        entry = train_runs(out, sc, tuple(tasks or sc.tasks_of(target.name)), trained_presets(sc, target.presets),
                           seeds or sc.seeds, progress, overrides)
        chosen = {"labels": target.measured_presets, "iterations": sc.checkpoints(m.name)}
    names = entry["runs"]
    for task, dirs in names.items():
        settings = sc.measuring(m.name, task, diag)
        paths = [os.path.normpath(os.path.join(out, d)) for d in dirs]
        if not saved(paths, m.name, settings, chosen.get("labels"), chosen.get("iterations")):
            # never over a measurement another study reads (the engine's rule; out is this study's reader)
            m.measure(paths, verbose=progress is not False, reader=out, progress=progress,
                      estimate=_estimate(task, m.study.kind), **{k: v for k, v in chosen.items() if v is not None},
                      **settings)
        with lead_writes("the readers of a measurement") as lead:   # on several processes, process 0 writes
            for path in paths if lead else ():
                diag_tables.record_reader(path, m.name, out)
    old = recorded(out, target.study, scale)
    measured = {**old.get("measured", {}), target.name: sorted(names)}
    study_dir.write(out, target.study, scale, sorted({task for v in measured.values() for task in v}),
                    runs={**old.get("runs", {}), **names},
                    **({"run_seeds": {**old.get("run_seeds", {}), **entry["run_seeds"]}} if "run_seeds" in entry
                       else {}),
                    measured=measured, diagnostics={**old.get("diagnostics", {}), target.name: m.name})
    return out


def run(target, scale: str = "smoke", out=None, tasks=None, seeds=None, progress=None, runs=None, diag=None,
        **overrides) -> dict:
    """A diagnostic target's ``run``: train (or take ``runs``), measure what it needs unless saved with the same
    settings ([`measure_target`][pgdiag.experiments.diagnostic_targets.measure_target]), then draw it."""
    out = measure_target(target, scale, out, tasks=tasks, seeds=seeds, progress=progress, runs=runs, diag=diag,
                         overrides=overrides)
    return target.redraw(out)


def run_training(target, scale: str = "smoke", out=None, tasks=None, seeds=None, progress=None, presets=None,
                 **overrides) -> dict:
    """The ``run`` of a target that draws training metrics of presets (fig-value, fig-trust-region): train its
    presets (or ``presets``; the scale's where it trains more, runs shared with its other targets) on each
    task, reusing matching runs, record the study in ``out`` and draw it."""
    sc = pick(target.scales, scale)
    algos = presets_of(presets, target.presets)
    tasks = tuple(tasks or sc.tasks_of())
    out = out or f"results/{target.study}-{scale}"
    entry = train_runs(out, sc, tasks, trained_presets(sc, algos, presets), seeds or sc.seeds, progress,
                       overrides)
    study_dir.write(out, target.study, scale, tasks, algorithms=list(algos), **entry)
    return target.redraw(out)


def load_measured(target, from_dir: str):
    """The study record saved under ``from_dir`` and, per task, the target's measurement of the task's runs (the
    tasks any target of the study measured under the same name): what its ``draw`` and evidence read."""
    m = target.measurement
    record = study_dir.read(from_dir, target.study, target.name)
    if "measured" in record:
        names = record.get("diagnostics", {})
        tasks = sorted({task for t, done in record["measured"].items() if names.get(t) == m.name for task in done})
    else:   # a study recorded before the record named its measurements
        tasks = sorted(record["runs"])
    if not tasks:
        raise ConfigError(f"{target.name} --from {from_dir!r}: the study there has no {m.name!r} measurement; run "
                          f"{target.name} --out {from_dir} first")
    studies = {}
    for task in tasks:
        paths = [study_dir.run_dir(from_dir, d, target.name) for d in record["runs"][task]]
        try:
            studies[task] = m.load(paths)
        except FileNotFoundError as e:
            raise ConfigError(f"{target.name} --from {from_dir!r}: {e}; run {target.name} without --from to measure "
                              f"it") from None
    return record, studies
