"""One engine for every diagnostic study: a study is a specification, the engine plans, runs, saves and loads it.

A :class:`Spec` says what a study is — its kind (the manifest's ``kind`` and its default name), its settings
class, the tables it saves, the class that holds them (with the study's curves and summaries) — and how it
measures, in pieces the engine calls in one order for every study:

* ``resolve``: the settings against the statics of the runs (bad settings fail here, before any checkpoint
  is read);
* ``group_by``: which subjects share a compiled program;
* ``shape``: one group's program before it compiles (:class:`Shape`: batching, units, pairs, sequential
  steps, width, the estimated peak bytes of :mod:`.memory` and whether it fits);
* ``program``: the jitted function over the group's subjects;
* ``frames``: its outputs as one DataFrame per table; ``record``: the manifest's ``resolved`` entry.

:func:`run` resolves, groups, shapes every group and refuses one that does not fit before the first compile,
then compiles and runs each program once; :func:`plan_shapes` gives the same shapes for a dry run from the
configurations a target would train (nothing loaded, nothing compiled). The engine also writes the manifest
(settings, what they resolved to, subjects, versions, device, timings), saves the tables in each run's
``diagnostics/<name>/`` (:mod:`.tables`) and loads them back with their kind checked.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Callable

from pg_diag.diagnostics import memory, tables
from pg_diag.diagnostics.subjects import (DiagnosticError, compile_and_run, load_subjects, plan_subjects,
                                          subject_keys)
from pg_diag.run import distributed, provenance

FORMAT = "pg_diag.diagnostic/1"

@dataclasses.dataclass(frozen=True)
class Shape:
    """One compiled program of a study, before it compiles."""

    labels: tuple           # the labels (algorithms) whose subjects it measures
    batching: str           # "vmap": subjects together; "map": in turn
    units: int              # subjects
    pairs: int              # state–action pairs sampled
    sequential_steps: int   # batched steps one after another
    width: int              # environments one batched step moves
    bytes: int              # estimated peak (:mod:`.memory`)
    fits: bool              # bytes within the memory it was shaped for
    note: str = ""          # what was changed to fit ("" when nothing)
    #: what ``program`` compiles: the group's own resolved shape (widened, fitted)
    plan: object = dataclasses.field(default=None, compare=False, repr=False)
    #: (what, shape, advice) of the refusal when it does not fit (:func:`memory.require_memory`)
    refusal: tuple = dataclasses.field(default=(), compare=False, repr=False)


def _all(settings, static):
    return None


def _reads_optimizer(settings) -> bool:
    return True


@dataclasses.dataclass(frozen=True)
class Spec:
    kind: str                  # the manifest's kind, and the study's default name
    title: str                 # how messages name it ("gradient study")
    settings: type             # its settings dataclass (with .check())
    tables: tuple              # the tables it saves
    study: type                # holds manifest + one DataFrame per table; curves and summaries
    resolve: Callable          # (settings, statics of the runs) -> resolved settings
    shape: Callable            # (settings, resolved, statics of a group, subjects, (obs, act, params), bytes) -> Shape
    program: Callable          # (settings, Shape, static) -> jitted program (states, knobs, keys) -> outputs
    frames: Callable           # (subjects, settings, resolved, Shape, outputs) -> {table: DataFrame}
    record: Callable           # (settings, resolved, [(static, Shape)]) -> (manifest's resolved, more entries)
    group_by: Callable = _all  # (settings, static) -> the key of the program its subjects join
    optimizer: Callable = _reads_optimizer   # (settings) -> whether the programs read optimizer states
    describe: Callable | None = None         # (settings, resolved, Shape, static) -> the verbose line


def settings_of(spec: Spec, settings, changes: dict):
    """``settings`` (default: the class's defaults) with ``changes``, checked; unknown fields named."""
    try:
        settings = dataclasses.replace(settings or spec.settings(), **changes)
    except TypeError as e:
        fields = ", ".join(f.name for f in dataclasses.fields(spec.settings))
        raise DiagnosticError(f"{e}; {spec.title} settings are: {fields}") from None
    check_types(settings)     # every field of its kind first (a string where a list goes would be read by letter)
    settings.check()          # then the study's own checks, which name the values it allows
    return settings


def check_types(settings) -> None:
    """Every field of a settings dataclass holds a value of its default's kind (an int where the default is an
    int, a sequence where it is a tuple, ...), and a seed one a PRNG key can take: each error names the
    field, the value and what is allowed, before anything is loaded or compiled."""
    import numbers

    from pg_diag.run.plan import SEED_LIMIT

    kinds = ((bool, lambda v: isinstance(v, bool), "True or False"),
             (int, lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool), "an integer"),
             (float, lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool), "a number"),
             (str, lambda v: isinstance(v, str), "a string"),
             (tuple, lambda v: isinstance(v, (tuple, list)), "a list"))

    def kind_of(default):
        return next(((ok, what) for kind, ok, what in kinds if isinstance(default, kind)), None)

    for f in dataclasses.fields(settings):
        default, value = f.default, getattr(settings, f.name)
        kind = kind_of(default)
        if kind and not kind[0](value):
            raise DiagnosticError(f"{f.name} must be {kind[1]}, got {value!r}")
        if isinstance(default, tuple) and default:
            # a list's elements of its default's kind (a float default admits integers)
            of = kind_of(next((d for d in default if isinstance(d, float)), default[0]))
            bad = [v for v in value if of and not of[0](v)]
            if bad:
                raise DiagnosticError(f"{f.name} must be a list whose elements are each {of[1]}, got {bad[0]!r} "
                                      f"in {value!r}")
        if f.name == "seed" and not 0 <= value < SEED_LIMIT:
            raise DiagnosticError(f"seed must be in 0 … 2^32 − 1 (a PRNG key takes 32 bits), got {value!r}")


def _groups(spec: Spec, settings, items, statics) -> list:
    """``items`` grouped by the program their statics need, in order: [[(item, static), ...], ...]."""
    groups: dict = {}
    for item, s in zip(items, statics):
        groups.setdefault(spec.group_by(settings, s), []).append((item, s))
    return list(groups.values())


def plan_shapes(spec: Spec, task: str, statics: dict, subjects_per_label, settings: dict,
                memory_bytes: int) -> list:
    """The programs the study ``spec`` would compile (:class:`Shape`, one per group) for ``subjects_per_label``
    subjects of each label's runs (a count for every label, or label -> count; ``statics``: label -> the Static
    its runs train with) on ``task``, shaped against ``memory_bytes``; nothing is loaded or compiled."""
    from pg_diag.envs import sizes as task_sizes

    count = subjects_per_label if isinstance(subjects_per_label, dict) else dict.fromkeys(statics, subjects_per_label)
    settings = settings_of(spec, None, settings)
    resolved = spec.resolve(settings, list(statics.values()))
    first = next(iter(statics.values()))
    obs, act = task_sizes(task, first.model)
    sizes = (obs, act, memory.num_params(first, obs, act))
    shapes = []
    for group in _groups(spec, settings, list(statics), list(statics.values())):
        units = sum(count[label] for label, _ in group)
        shape = spec.shape(settings, resolved, [s for _, s in group], units, sizes, memory_bytes)
        shapes.append(dataclasses.replace(shape, labels=tuple(label for label, _ in group)))
    return shapes


def measure(spec: Spec, planned: list, settings, verbose: bool = False, before_compiling=None):
    """Resolve, group, shape (every group's memory checked before the first compile), call
    ``before_compiling()`` if given, compile and run each program once; returns (frames, manifest's resolved,
    timings, more manifest entries)."""
    import pandas as pd

    statics = [run.config(agent).static for run, agent, _ in planned]
    resolved = spec.resolve(settings, statics)   # bad settings fail before any checkpoint is read
    have = memory.available_memory()
    groups = []
    for group in _groups(spec, settings, planned, statics):
        subjects = load_subjects([item for item, _ in group], optimizer=spec.optimizer(settings))
        shape = spec.shape(settings, resolved, [s for _, s in group], len(subjects), subjects.shapes, have)
        labels = tuple(dict.fromkeys(row["label"] for row in subjects.rows))
        groups.append((subjects, dataclasses.replace(shape, labels=labels)))
    for _, shape in groups:
        memory.require_memory(shape.bytes, *shape.refusal, have=have)
    if before_compiling is not None:
        before_compiling()
    frames, timings = {t: [] for t in spec.tables}, []
    for subjects, shape in groups:
        if verbose and spec.describe:
            print(spec.describe(settings, resolved, shape, subjects.static), flush=True)
        prog = spec.program(settings, shape, subjects.static)
        out, timing = compile_and_run(prog, subjects, subject_keys(settings.seed, subjects.rows), shape.pairs)
        timings.append(timing)
        for t, f in spec.frames(subjects, settings, resolved, shape, out).items():
            frames[t].append(f)
    record, extra = spec.record(settings, resolved, [(subjects.static, shape) for subjects, shape in groups])
    return {t: pd.concat(f, ignore_index=True) for t, f in frames.items()}, record, timings, extra


def check_replaceable(spec: Spec, planned: list, settings, name: str) -> None:
    """Refuse to save over a run's ``name`` measurement made otherwise (other settings or other subjects): it
    is someone's result, and the studies recorded as reading it would change with it (:data:`tables.READERS`)."""
    asked = dataclasses.asdict(settings)
    for path in dict.fromkeys(r.path for r, _, _ in planned):
        mine = {(int(a), int(i)) for r, a, i in planned if r.path == path}
        diff = tables.differences(tables.saved_manifest(path, name), asked, mine)
        if not diff or diff == ["none saved"]:
            continue
        readers = [d for d in tables.recorded_readers(path, name) if os.path.isdir(d)]
        read = f", which {', '.join(readers)} read{'s' if len(readers) == 1 else ''}" if readers else ""
        raise DiagnosticError(
            f"{spec.title}: {path!r} holds a {name!r} measurement made otherwise ({'; '.join(diff)}){read}; "
            f"saving this one would replace it. Pass name='...' to save it beside, save=False to keep it in memory "
            f"only, or replace=True to replace it{' (and change what those studies read)' if readers else ''}")


def run(spec: Spec, runs, iterations=None, agents=None, settings=None, *, labels=None, save: bool = True,
        replace: bool = False, name: str | None = None, verbose: bool = False, **changes):
    """Measure ``spec`` on every agent of ``runs`` (run directories; those with ``labels`` if given) at the
    checkpointed ``iterations`` (default: all saved); ``changes`` override fields of its settings. Saved
    (``save``) in each run under ``name``, never over a measurement made otherwise unless ``replace``."""
    settings = settings_of(spec, settings, changes)
    tables.check_name(name or spec.kind)    # before anything is loaded or compiled
    planned = plan_subjects(runs, iterations, agents, labels)
    distributed.agree(spec.title, {"settings": dataclasses.asdict(settings), "name": name or spec.kind,
                                   "subjects": [(r.path, a, i) for r, a, i in planned], "save": save,
                                   "replace": replace})
    guard = functools.partial(check_replaceable, spec, planned, settings, name or spec.kind)
    frames, resolved, timings, extra = measure(spec, planned, settings, verbose,
                                               guard if save and not replace else None)
    manifest = {"format": FORMAT, "study": name or spec.kind, "kind": spec.kind,
                "settings": dataclasses.asdict(settings), "resolved": resolved,
                "subjects": [dict(run=run.path, agent=a, iteration=i) for run, a, i in planned], **extra,
                "versions": provenance.versions(), "device": provenance.device_info(), "timings": timings}
    study = spec.study(manifest=manifest, **{t: frames[t] for t in spec.tables})
    if save:
        tables.write_study({t: getattr(study, t) for t in spec.tables}, manifest, name or spec.kind)
    return study


def load(spec: Spec, run_paths, name: str | None = None):
    """A saved study of ``spec`` from one or more run directories (no recomputation)."""
    manifest, frames = tables.read_study(run_paths, name or spec.kind, spec.tables, spec.kind, spec.title)
    return spec.study(manifest=manifest, **frames)


__all__ = ["FORMAT", "Shape", "Spec", "check_replaceable", "load", "measure", "plan_shapes", "run", "settings_of"]
