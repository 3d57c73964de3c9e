"""One engine for every measurement on checkpointed agents: it plans, runs, saves and loads a
[`Diagnostic`][pgdiag.diagnostics.protocol.Diagnostic] (the study protocol).

[`run`][pgdiag.diagnostics.engine.run] checks the settings, resolves them against the runs, groups the
subjects, shapes every group and refuses one that does not fit before the first compile, refuses to save over
a measurement made otherwise ([`check_replaceable`][pgdiag.diagnostics.engine.check_replaceable], the one
place that rule lives), then compiles and runs each program once.
[`plan_shapes`][pgdiag.diagnostics.engine.plan_shapes] gives the same shapes for a dry run from the
configurations a target would train (nothing loaded, nothing compiled). The engine writes the manifest
(settings, what they resolved to, subjects, versions, device, timings), saves the tables in each run's
`diagnostics/<name>/` ([`pgdiag.diagnostics.tables`][]) and loads them back with their kind checked.
"""

from __future__ import annotations

import dataclasses
import functools
import os

from pgdiag.diagnostics import memory, pieces, placement, tables
from pgdiag.diagnostics.protocol import Diagnostic, Group, Measured, Shape, Sizes
from pgdiag.diagnostics.subjects import (DiagnosticError, compile_and_run, load_subjects, plan_subjects, subject_keys)
from pgdiag.envs import hosts
from pgdiag.run import distributed, provenance
from pgdiag.run import timings as host_costs
from pgdiag.run.progress import Ticker, attached
from pgdiag.run.shard import placed_on

FORMAT = "pgdiag.diagnostic/1"

def settings_of(study: Diagnostic, settings, changes: dict):
    """``settings`` (default: the class's defaults) with ``changes``, checked; unknown fields named."""
    try:
        settings = dataclasses.replace(settings or study.settings(), **changes)
    except TypeError as e:
        fields = ", ".join(f.name for f in dataclasses.fields(study.settings))
        raise DiagnosticError(f"{e}; {study.title} settings are: {fields}") from None
    check_types(settings)     # every field of its kind first (a string where a list goes would be read by letter)
    settings.check()          # then the study's own checks, which name the values it allows
    return settings


def check_types(settings) -> None:
    """Every field of a settings dataclass holds a value of its default's kind (an int where the default is an
    int, a sequence where it is a tuple, ...), and a seed one a PRNG key can take: each error names the
    field, the value and what is allowed, before anything is loaded or compiled."""
    import numbers

    from pgdiag.run.rosters import SEED_LIMIT

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


def _groups(study: Diagnostic, settings, items, statics) -> list:
    """``items`` grouped by the program their statics need, in order: [[(item, static), ...], ...]."""
    groups: dict = {}
    for item, s in zip(items, statics):
        groups.setdefault(study.group_by(settings, s), []).append((item, s))
    return list(groups.values())


def _shaped(study: Diagnostic, group: Group, labels: tuple) -> Shape:
    """``study.shape(group)`` with what every shape carries filled in: its labels, settings and configuration."""
    shape = study.shape(group)
    return dataclasses.replace(shape, labels=labels, settings=group.settings, static=group.static)


def plan_shapes(study: Diagnostic, task: str, statics: dict, subjects_per_label, settings: dict,
                memory_bytes: int | None = None) -> list:
    """The programs ``study`` would compile (one [`Shape`][pgdiag.diagnostics.protocol.Shape] per group) for
    ``subjects_per_label`` subjects of each label's runs (a count for every label, or label -> count;
    ``statics``: label -> the `Static` its runs train with) on ``task``, shaped against ``memory_bytes`` (None: the
    memory of where each program runs, as [`measure`][pgdiag.diagnostics.engine.measure] shapes it,
    [`pgdiag.diagnostics.placement.memory_bytes`][pgdiag.diagnostics.placement.memory_bytes]); nothing is loaded
    or compiled."""
    from pgdiag.envs import sizes as task_sizes

    count = subjects_per_label if isinstance(subjects_per_label, dict) else dict.fromkeys(statics, subjects_per_label)
    settings = settings_of(study, None, settings)
    resolved = study.resolve(settings, list(statics.values()))
    first = next(iter(statics.values()))
    obs, act = task_sizes(task, first.model)
    sizes = Sizes(obs, act, memory.num_params(first, obs, act))
    shapes = []
    for group in _groups(study, settings, list(statics), list(statics.values())):
        units = sum(count[label] for label, _ in group)
        have = placement.memory_bytes(group[0][1]) if memory_bytes is None else memory_bytes
        g = Group(settings, resolved, tuple(s for _, s in group), units, sizes, have)
        shapes.append(_shaped(study, g, tuple(label for label, _ in group)))
    return shapes


def measure(study: Diagnostic, planned: list, settings, verbose: bool = False, before_compiling=None,
            progress: bool = False, estimate=None, keep: str | None = None):
    """Resolve, group, shape (every group's memory checked before the first compile), call
    ``before_compiling()`` if given, compile and run each program once; returns (frames, the manifest's
    [`Record`][pgdiag.diagnostics.protocol.Record], timings). With ``progress``, a bar per program
    ([`Ticker`][pgdiag.run.progress.Ticker]) against ``estimate(shape)``'s seconds where given. With ``keep`` (a
    directory), a program planned over [`pieces.PIECE_S`][pgdiag.diagnostics.pieces.PIECE_S] runs as blocks of
    its subjects kept there one by one, and blocks kept by an earlier run are read back
    ([`pgdiag.diagnostics.pieces`][])."""
    import pandas as pd

    statics = [run.config(agent).static for run, agent, _ in planned]
    resolved = study.resolve(settings, statics)   # bad settings fail before any checkpoint is read
    groups, haves = [], []
    for group in _groups(study, settings, planned, statics):
        subjects = load_subjects([item for item, _ in group], optimizer=study.reads_optimizer(settings))
        have = placement.memory_bytes(group[0][1])   # where it will run
        haves.append(have)
        g = Group(settings, resolved, tuple(s for _, s in group), len(subjects), Sizes(*subjects.shapes), have)
        groups.append((subjects, g, _shaped(study, g, _labels(subjects))))
    for (_, _, shape), have in zip(groups, haves):
        memory.require_memory(shape.bytes, *shape.refusal, have=have)
    if before_compiling is not None:
        before_compiling()
    frames, timings = {t: [] for t in study.tables}, []
    for i, (subjects, g, shape) in enumerate(groups, 1):
        if verbose:
            print(study.describe(shape), flush=True)
        planned_s = estimate(shape) if (progress or keep) and estimate is not None else None
        count = pieces.settled(keep, pieces.record(study.kind, dataclasses.asdict(settings), subjects.rows),
                               pieces.count(shape.units, planned_s)) if keep else 1
        for j, (a, b) in enumerate(pieces.blocks(len(subjects), count), 1):
            part = subjects if count == 1 else pieces.take(subjects, a, b)
            part_shape = shape if count == 1 else _shaped(
                study, dataclasses.replace(g, statics=g.statics[a:b], units=b - a), _labels(part))
            which = f"{i}/{len(groups)}" + (f" piece {j}/{count}" if count > 1 else "")
            measured, timing = _measure_block(study, part_shape, part, settings, keep, progress, which,
                                              estimate if progress else None)
            timings.append(timing)
            for t, f in measured.items():
                frames[t].append(f)
    record = study.record([shape for _, _, shape in groups])
    return {t: pd.concat(f, ignore_index=True) for t, f in frames.items()}, record, timings


def _labels(subjects) -> tuple:
    return tuple(dict.fromkeys(row["label"] for row in subjects.rows))


def _measure_block(study: Diagnostic, shape: Shape, subjects, settings, keep, progress, which: str, estimate):
    """One program's tables and timing: read back where ``keep`` holds them, else measured (and kept there)."""
    what = pieces.record(study.kind, dataclasses.asdict(settings), subjects.rows) if keep else None
    kept = pieces.load(keep, what, study.tables) if keep else None
    if kept is not None:
        return kept
    planned_s = estimate(shape) if estimate is not None else None
    out, timing = _compile_and_run(study, shape, subjects, settings.seed, planned_s, progress, which)
    _record_cost(study, shape, timing)
    measured = study.frames(Measured(subjects, shape, out))
    if keep:
        pieces.save(keep, what, measured, timing)
    return measured, timing


def _compile_and_run(study: Diagnostic, shape: Shape, subjects, seed: int, planned_s, progress, which: str):
    """One program's run (`compile_and_run`) on the physics and devices it takes here
    ([`pgdiag.diagnostics.placement`][pgdiag.diagnostics.placement]: ``auto`` physics resolved at its width,
    native physics beside an accelerator on the host's CPU); its timing record says which."""
    run_shape, why = placement.with_physics(shape)
    devices = placement.devices_for(run_shape)
    others = host_costs.load_meter()   # what other processes take of the host meanwhile
    with Ticker(f"{study.title} {which}", planned_s, bool(progress)) as tick, placed_on(devices):
        out, timing = compile_and_run(study.program(placement.program_shape(run_shape, devices)), subjects,
                                      subject_keys(seed, subjects.rows), shape.pairs, tick.phase)
    return out, {**timing, "physics": run_shape.static.physics, "physics_why": why,
                 "placement": placement.describe(devices), "others_load": others()}


def _record_cost(study: Diagnostic, shape: Shape, timing: dict) -> None:
    """This host's time per costed step of the program, for later plans of programs like it
    ([`pgdiag.run.timings.record_study`][pgdiag.run.timings.record_study]); a run under half a second says more
    of its fixed costs than of its steps and is not kept, nor one other processes loaded the host during."""
    steps = host_costs.costed_steps(shape.sequential_steps, shape.pairs, shape.width)
    if timing["run_s"] >= 0.5 and steps > 0:
        s = shape.static
        host_costs.record_study(study.kind, s.task, s.model, s.solver, shape.width, timing["run_s"] * 1e3 / steps,
                                physics=timing["physics"], others=timing.get("others_load"))


def _readers(path: str, name: str, reader: str | None) -> list:
    """The studies other than ``reader`` recorded as reading the run's ``name`` measurement, still there."""
    me = os.path.abspath(reader) if reader else None
    return [d for d in tables.recorded_readers(path, name) if os.path.isdir(d) and d != me]


def check_replaceable(study: Diagnostic, planned: list, settings, name: str, replace: bool = False,
                      reader: str | None = None) -> None:
    """The one rule on saving over a run's ``name`` measurement made otherwise (other settings or subjects):
    it is someone's result, and the studies recorded as reading it ([`tables.READERS`][pgdiag.diagnostics.
    tables.READERS]) would change with it. Refused unless ``replace``; a study directory ``reader`` (a
    target measuring for its own study) replaces what no other study reads, and never what another reads."""
    asked = dataclasses.asdict(settings)
    for path in dict.fromkeys(r.path for r, _, _ in planned):
        mine = {(int(a), int(i)) for r, a, i in planned if r.path == path}
        diff = tables.differences(tables.saved_manifest(path, name), asked, mine)
        if not diff or diff == ["none saved"]:
            continue
        readers = _readers(path, name, reader)
        if reader is not None and readers:
            raise DiagnosticError(
                f"{study.title}: the run {path!r} holds the {name!r} measurement that {', '.join(readers)} "
                f"read{'s' if len(readers) == 1 else ''}, made otherwise ({'; '.join(diff)}); measuring it again "
                f"for {reader!r} would change that study's results. Measure with the settings it has (--diag), or "
                f"write this study under another output directory, where it trains runs of its own")
        if reader is not None or replace:
            continue
        read = f", which {', '.join(readers)} read{'s' if len(readers) == 1 else ''}" if readers else ""
        raise DiagnosticError(
            f"{study.title}: {path!r} holds a {name!r} measurement made otherwise ({'; '.join(diff)}){read}; "
            f"saving this one would replace it. Pass name='...' to save it beside, save=False to keep it in memory "
            f"only, or replace=True to replace it{' (and change what those studies read)' if readers else ''}")


def run(study: Diagnostic, runs, iterations=None, agents=None, settings=None, *, labels=None, save: bool = True,
        replace: bool = False, name: str | None = None, verbose: bool = False, reader: str | None = None,
        progress: bool | None = None, estimate=None, **changes):
    """Measure ``study`` on every agent of ``runs`` (run directories; those with ``labels`` if given) at the
    checkpointed ``iterations`` (default: all saved); ``changes`` override fields of its settings. Saved
    (``save``) in each run under ``name``, never over a measurement made otherwise unless ``replace``
    ([`check_replaceable`][pgdiag.diagnostics.engine.check_replaceable]; ``reader``: the study directory that
    will read it). ``progress`` (default: where a person watches, a terminal or a notebook) draws a bar per
    compiled program, against ``estimate(shape)`` seconds where given (the targets give their plan's). A saved
    study's programs planned over [`pieces.PIECE_S`][pgdiag.diagnostics.pieces.PIECE_S] are kept block by block
    until it is saved whole, so one interrupted resumes ([`pgdiag.diagnostics.pieces`][])."""
    settings = settings_of(study, settings, changes)
    name = name or study.kind
    tables.check_name(name)    # before anything is loaded or compiled
    planned = plan_subjects(runs, iterations, agents, labels)
    distributed.agree(study.title, {"settings": dataclasses.asdict(settings), "name": name,
                                    "subjects": [(r.path, a, i) for r, a, i in planned], "save": save,
                                    "replace": replace, "reader": reader})
    guard = functools.partial(check_replaceable, study, planned, settings, name, replace, reader)
    # blocks are kept on one process only (several processes need not share a file system)
    keep = pieces.directory(planned[0][0].path, name) if save and hosts.process_count() == 1 else None
    frames, record, timings = measure(study, planned, settings, verbose, guard if save else None,
                                      attached() if progress is None else progress, estimate, keep)
    manifest = {"format": FORMAT, "study": name, "kind": study.kind, "settings": dataclasses.asdict(settings),
                "resolved": record.resolved,
                "subjects": [dict(run=run.path, agent=a, iteration=i) for run, a, i in planned], **record.extra,
                "versions": provenance.versions(), "device": provenance.device_info(), "timings": timings}
    result = study.result(manifest=manifest, **{t: frames[t] for t in study.tables})
    if save:
        tables.write_study({t: getattr(result, t) for t in study.tables}, manifest, name)
        if keep:
            pieces.clear(keep)
    return result


def load(study: Diagnostic, run_paths, name: str | None = None):
    """A saved study of ``study`` from one or more run directories (no recomputation)."""
    manifest, frames = tables.read_study(run_paths, name or study.kind, study.tables, study.kind, study.title)
    return study.result(manifest=manifest, **frames)


__all__ = ["FORMAT", "Diagnostic", "Shape", "check_replaceable", "load", "measure", "plan_shapes", "run",
           "settings_of"]
