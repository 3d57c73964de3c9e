"""Every figure and table target in one table.

Each measurement of [`pgdiag.studies`][pgdiag.studies] declares its `TARGETS`:
[`Target`][pgdiag.experiments.target_types.Target] records carrying their run, draw, plan and evidence functions
and their scales, registered here in the order `pgdiag.studies.BUILT_IN` lists them, as a user's own target is
([`register`][pgdiag.experiments.targets.register]). The ``pgdiag`` sub-commands, the Makefile's targets
(``targets.mk``, written from this table by ``python -m pgdiag.experiments.targets``; a test checks it is current),
``--dry-run``, the notebooks and the reports iterate [`TARGETS`][pgdiag.experiments.targets.TARGETS] and nothing
else. ``import pgdiag`` registers the built-in ones.

Targets of one *study* share its training (and its directory, ``results/<study>-<scale>``), so running them in
turn trains once.
"""

from __future__ import annotations

import sys

from pgdiag.config import ConfigError
from pgdiag.experiments.target_types import KINDS, Measurement, Target

#: every registered target by name, in the order registered
TARGETS: dict = {}
#: the names of pgdiag's own targets (registered by pgdiag.studies), which stay registered
BUILT_IN: set = set()


def register(target: Target, built_in: bool = False) -> Target:
    """Add a target of one's own (a [`Target`][pgdiag.experiments.target_types.Target] with its functions) to the
    table: the CLI, dry runs and reports built after this call include it. Refused where the name is taken.
    ``built_in``: one of pgdiag's own (``pgdiag.studies`` registers them): it stays, and make runs it."""
    if not isinstance(target, Target):
        raise ConfigError(f"register: expected a pgdiag.experiments.target_types.Target, got {type(target).__name__}")
    if target.name in TARGETS:
        raise ConfigError(f"register: a target named {target.name!r} exists; choose another name")
    TARGETS[target.name] = target
    if built_in:
        BUILT_IN.add(target.name)
    return target


def unregister(name: str) -> None:
    """Remove a target added with [`register`][pgdiag.experiments.targets.register] (the package's own targets
    stay)."""
    if name in BUILT_IN:
        raise ConfigError(f"unregister: {name!r} is one of pgdiag's own targets")
    TARGETS.pop(name, None)


def get(name: str) -> Target:
    """The target ``name``, or a ConfigError listing the targets."""
    if name not in TARGETS:
        raise ConfigError(f"unknown target {name!r}; targets: {', '.join(TARGETS)}")
    return TARGETS[name]


def of_kind(*kinds: str) -> tuple:
    """The names of the targets of these kinds, in the table's order."""
    return tuple(n for n, t in TARGETS.items() if t.kind in kinds)


def by_study() -> dict:
    """study -> the targets that draw from it."""
    out: dict = {}
    for t in TARGETS.values():
        out.setdefault(t.study, []).append(t.name)
    return {s: tuple(names) for s, names in out.items()}


def of_paper(paper: str) -> tuple:
    """The targets whose evidence and figures ``paper``'s report reads, in the table's order."""
    return tuple(t for t in TARGETS.values() if paper in t.papers)


def of_notebook(notebook: str) -> tuple:
    return tuple(n for n, t in TARGETS.items() if t.notebook == notebook)


def makefile() -> str:
    """``targets.mk``: the Makefile's study targets, each with its output directory's study and options."""
    own = {n: t for n, t in TARGETS.items() if n in BUILT_IN}   # a user's registered targets are not make's
    lines = ["# Written by `python -m pgdiag.experiments.targets > targets.mk` from the targets the study modules",
             "# declare (pgdiag/studies/); do not edit (tests/test_targets.py checks that it is current).",
             f"STUDY_TARGETS := {' '.join(own)}",
             f"CLOSER_LOOK_TARGETS := {' '.join(n for n, t in own.items() if t.notebook == 'closer-look')}"]
    for t in own.values():
        lines.append(f"{t.name}_STUDY := {t.study}")
        lines.append(f"{t.name}_ARGS := {'' if t.kind == 'optimize' else '--progress'}".rstrip())
    return "\n".join(lines) + "\n"


__all__ = ["BUILT_IN", "KINDS", "Measurement", "TARGETS", "Target", "by_study", "get", "makefile", "of_kind",
           "of_notebook", "of_paper", "register", "unregister"]


if __name__ == "__main__":
    # run as a script this file is a module of its own: the table ``import pgdiag`` filled is the package's
    from pgdiag.experiments import targets as table

    sys.stdout.write(table.makefile())
