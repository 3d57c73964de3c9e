"""One engine for every diagnostic study: a study is a specification, the engine runs, saves and loads it.

A :class:`Spec` says what a study is — its kind (the manifest's ``kind`` and its default name), its settings
class, the tables it saves, the class that holds them (with the study's curves and summaries), and how it
measures planned subjects (``measure``: settings checked, runs resolved, one compiled program per group of
subjects, rows out). The engine does the rest the same way for every study: the settings with a clear error
naming the fields, the subjects planned and checked before anything compiles, the manifest (settings, what
the settings resolved to, subjects, versions, device, timings), the tables saved in each run's
``diagnostics/<name>/`` (:mod:`.tables`) and loaded back with their kind checked.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from pg_diag.diagnostics import tables
from pg_diag.diagnostics.subjects import DiagnosticError, plan_subjects
from pg_diag.run import store

FORMAT = "pg_diag.diagnostic/1"


@dataclasses.dataclass
class Measured:
    """What a study's ``measure`` returns: one DataFrame per table, the manifest's ``resolved`` record, one
    timing per compiled program, and any more manifest entries."""
    frames: dict
    resolved: dict
    timings: list
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Spec:
    kind: str                  # the manifest's kind, and the study's default name
    title: str                 # how messages name it ("gradient study")
    settings: type             # its settings dataclass (with .check())
    tables: tuple              # the tables it saves
    study: type                # holds manifest + one DataFrame per table; curves and summaries
    measure: Callable          # (planned subjects, settings, verbose) -> Measured


def settings_of(spec: Spec, settings, changes: dict):
    """``settings`` (default: the class's defaults) with ``changes``, checked; unknown fields named."""
    try:
        settings = dataclasses.replace(settings or spec.settings(), **changes)
    except TypeError as e:
        fields = ", ".join(f.name for f in dataclasses.fields(spec.settings))
        raise DiagnosticError(f"{e}; {spec.title} settings are: {fields}") from None
    settings.check()
    return settings


def run(spec: Spec, runs, iterations=None, agents=None, settings=None, *, labels=None, save: bool = True,
        name: str | None = None, verbose: bool = False, **changes):
    """Measure ``spec`` on every agent of ``runs`` (run directories; those with ``labels`` if given) at the
    checkpointed ``iterations`` (default: all saved); ``changes`` override fields of its settings."""
    settings = settings_of(spec, settings, changes)
    planned = plan_subjects(runs, iterations, agents, labels)
    m = spec.measure(planned, settings, verbose)
    manifest = {"format": FORMAT, "study": name or spec.kind, "kind": spec.kind,
                "settings": dataclasses.asdict(settings), "resolved": m.resolved,
                "subjects": [dict(run=run.path, agent=a, iteration=i) for run, a, i in planned], **m.extra,
                "versions": store.versions(), "device": store.device_info(), "timings": m.timings}
    study = spec.study(manifest=manifest, **{t: m.frames[t] for t in spec.tables})
    if save:
        tables.write_study({t: getattr(study, t) for t in spec.tables}, manifest, name or spec.kind)
    return study


def load(spec: Spec, run_paths, name: str | None = None):
    """A saved study of ``spec`` from one or more run directories (no recomputation)."""
    manifest, frames = tables.read_study(run_paths, name or spec.kind, spec.tables)
    if manifest.get("kind") != spec.kind:
        raise DiagnosticError(f"{name or spec.kind!r} in {run_paths!r} is a {manifest.get('kind')!r} study, not a "
                              f"{spec.title}")
    return spec.study(manifest=manifest, **frames)


__all__ = ["FORMAT", "Measured", "Spec", "load", "run", "settings_of"]
