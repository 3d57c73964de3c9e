"""Every figure and table target in one table, collected from the study modules that declare them.

Each module of `pgdiag.experiments.studies` ends with its `TARGETS`:
[`Target`][pgdiag.experiments.target_types.Target] records carrying their run, draw, plan and evidence functions
and their scales; `STUDY_MODULES` lists the modules, in the order their targets are shown. The ``pgdiag``
sub-commands, the Makefile's targets (``targets.mk``, written from this table by ``python -m
pgdiag.experiments.targets``; a test checks it is current), ``--dry-run``, the notebooks and the reports iterate
[`TARGETS`][pgdiag.experiments.targets.TARGETS] and nothing else, so adding a target is one study module declaring
its `TARGETS`, named in `STUDY_MODULES` (or, from outside the package,
[`register`][pgdiag.experiments.targets.register]).

Targets of one *study* share its training (and its directory, ``results/<study>-<scale>``), so running them in
turn trains once.
"""

from __future__ import annotations

import sys

from pgdiag.config import ConfigError
from pgdiag.experiments.studies import (ablation, baselines, gradients, landscape, no_baseline, presets,
                                         solver_compare, theorem, trust_region, value)
from pgdiag.experiments.target_types import KINDS, Measurement, Target


#: the study modules, in the order their targets are listed (make help, the CLI, the README's table)
STUDY_MODULES = (ablation, trust_region, value, presets, theorem, gradients, baselines, no_baseline, landscape,
                 solver_compare)

TARGETS: dict = {t.name: t for module in STUDY_MODULES for t in module.TARGETS}


def register(target: Target) -> Target:
    """Add a target of one's own (a [`Target`][pgdiag.experiments.target_types.Target] with its functions) to the
    table: the CLI, dry runs and reports built after this call include it. Refused where the name is taken."""
    if not isinstance(target, Target):
        raise ConfigError(f"register: expected a pgdiag.experiments.target_types.Target, got {type(target).__name__}")
    if target.name in TARGETS:
        raise ConfigError(f"register: a target named {target.name!r} exists; choose another name")
    TARGETS[target.name] = target
    return target


def unregister(name: str) -> None:
    """Remove a target added with [`register`][pgdiag.experiments.targets.register] (the package's own targets
    stay)."""
    if any(t.name == name for m in STUDY_MODULES for t in m.TARGETS):
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
    own = {t.name: t for m in STUDY_MODULES for t in m.TARGETS}   # a user's registered targets are not make's
    lines = ["# Written by `python -m pgdiag.experiments.targets > targets.mk` from the targets the study modules",
             "# declare (pgdiag/experiments/studies/); do not edit (tests/test_targets.py checks that it is current).",
             f"STUDY_TARGETS := {' '.join(own)}",
             f"CLOSER_LOOK_TARGETS := {' '.join(n for n, t in own.items() if t.notebook == 'closer-look')}"]
    for t in own.values():
        lines.append(f"{t.name}_STUDY := {t.study}")
        lines.append(f"{t.name}_ARGS := {'' if t.kind == 'optimize' else '--progress'}".rstrip())
    return "\n".join(lines) + "\n"


__all__ = ["KINDS", "Measurement", "STUDY_MODULES", "TARGETS", "Target", "by_study", "get", "makefile", "of_kind",
           "of_notebook", "of_paper", "register", "unregister"]


if __name__ == "__main__":
    sys.stdout.write(makefile())
