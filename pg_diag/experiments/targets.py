"""Every figure and table target in one table: adding a target is one entry here and its run and draw functions.

The ``pg-diag`` sub-commands, the Makefile's targets (``targets.mk``, written from this table by
``python -m pg_diag.experiments.targets``; a test checks it is current), ``--from``'s check of which study a
directory holds, the plans of ``--dry-run``, the notebooks' lists and their tiny settings all read
:data:`TARGETS`.

A target belongs to a *study*: the targets of one study share its training (and its directory,
``results/<study>-<scale>``), so running them in turn trains once. Its ``run`` trains (or reuses) and measures
at a scale, then draws; its ``draw`` redraws from a saved study without training. Both are named as
``"module:function"`` in :mod:`pg_diag.experiments`, imported when called; a function listed with ``named``
takes the target's name first (one function serving several targets).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys

from pg_diag.config import ConfigError

#: what a target does: trains and draws the training metrics; measures trained checkpoints; optimizes one batch
KINDS = ("training", "diagnostic", "optimize")


@dataclasses.dataclass(frozen=True)
class Target:
    name: str                 # the sub-command and make target
    study: str                # the study it draws from (shared by targets that share training)
    kind: str                 # one of KINDS
    paper: str                # the figure or table it reproduces
    help: str
    run: str                  # "module:function": train (or reuse) and measure at a scale, then draw
    draw: str                 # "module:function": draw from a saved study
    named: tuple = ()         # which of "run" and "draw" take the target's name first
    measurement: str = ""     # diagnostic: its settings' name in a Scale, and the settings class
    settings_class: str = ""  # diagnostic: the class in pg_diag.diagnostics checking --diag
    options: tuple = ()       # extra command-line options: "algorithm", "statistic", "reporting"
    notebook: str = ""        # the notebook that runs it (notebooks/<notebook>.ipynb)
    tiny: dict = dataclasses.field(default_factory=dict)   # diagnostic: measurement settings at the tiny scale

    def function(self, which: str):
        """The function named by ``run`` or ``draw`` (imported now), as written."""
        module, name = getattr(self, which).split(":")
        return getattr(importlib.import_module(f"pg_diag.experiments.{module}"), name)

    def _function(self, which: str):
        fn = self.function(which)
        return (lambda *a, **k: fn(self.name, *a, **k)) if which in self.named else fn

    @property
    def redraws_by_task(self) -> bool:
        """Whether its ``draw`` can redraw a subset of the study's tasks."""
        return "tasks" in inspect.signature(self.function("draw")).parameters

    def train(self, scale: str = "smoke", **kwargs) -> dict:
        """Train (or reuse), measure and draw at ``scale``: the outputs' paths and tables."""
        return self._function("run")(scale, **kwargs)

    def redraw(self, from_dir: str, **kwargs) -> dict:
        """Draw from the study saved in ``from_dir`` without training or measuring."""
        return self._function("draw")(from_dir, **kwargs)

    @property
    def scales(self) -> dict:
        """The target's scales (name -> :class:`pg_diag.experiments.scales.Scale`)."""
        return importlib.import_module(f"pg_diag.experiments.{self.run.split(':')[0]}").SCALES

    @property
    def default_out(self) -> str:
        return f"results/{self.study}"


_GRADIENT_TINY = dict(sizes=(100, 1000), estimates=3, true_pairs=10_240)   # the truth 10× the largest N

TARGETS = {t.name: t for t in (
    Target("fig-ablation", "fig-ablation", "training", "CL Fig 1 / IM Fig 1",
           "CL Fig 1 / IM Fig 1: the 2^4 toggle ablation × LR × seeds", "ablation:run", "ablation:draw",
           notebook="implementation-matters"),
    Target("fig-trust-region", "fig-trust-region", "training", "CL Fig 9 / IM Figs 2-4",
           "CL Fig 9 / IM Fig 2-4: ratios and KL of PPO, PPO-M, TRPO", "trust_region:run", "trust_region:draw",
           options=("algorithm",)),
    Target("fig-value", "fig-value", "training", "CL Figs 4/14/15",
           "CL Fig 4/14/15: value-network MRE against its target, the returns and (LQR) the exact V^π",
           "value_fig:run", "value_fig:draw", options=("algorithm",), notebook="closer-look"),
    Target("fig-rewards", "algorithms", "training", "CL Fig 10", "CL Fig 10: reward curves of all five algorithms",
           "algorithms:fig_rewards", "algorithms:draw_rewards", notebook="implementation-matters"),
    Target("table-2", "algorithms", "training", "IM Table 2",
           "IM Table 2: PPO, PPO-M, TRPO, TRPO+ with bootstrap CIs, AAI, ACLI", "algorithms:table_2",
           "algorithms:draw_table", named=("draw",), options=("statistic", "reporting"),
           notebook="implementation-matters"),
    Target("table-3", "algorithms", "training", "IM Table 3", "IM Table 3: PPO vs PPO-NoClip with bootstrap CIs",
           "algorithms:table_3", "algorithms:draw_table", named=("draw",), options=("statistic", "reporting"),
           notebook="implementation-matters"),
    Target("fig-theorem", "fig-theorem", "optimize", "CL Theorem 5.1",
           "CL Theorem 5.1: optimizing the clipped objective on one batch", "theorem:run", "theorem:draw"),
    Target("fig-grad-variance", "gradients", "diagnostic", "CL Figs 2/11",
           "CL Fig 2/11: pairwise cosine of gradient estimates vs N", "gradient_figs:run", "gradient_figs:draw",
           named=("run", "draw"), measurement="gradients", settings_class="GradientSettings",
           notebook="closer-look", tiny=_GRADIENT_TINY),
    Target("fig-grad-true", "gradients", "diagnostic", "CL Figs 3/12",
           "CL Fig 3/12: cosine of gradient estimates to the true (and exact LQR) gradient vs N",
           "gradient_figs:run", "gradient_figs:draw", named=("run", "draw"), measurement="gradients",
           settings_class="GradientSettings", notebook="closer-look", tiny=_GRADIENT_TINY),
    Target("fig-step-variance", "gradients", "diagnostic", "CL Fig 13",
           "CL Fig 13: pairwise cosine and KL of the algorithm's own steps", "gradient_figs:run",
           "gradient_figs:draw", named=("run", "draw"), measurement="steps", settings_class="StepSettings",
           notebook="closer-look", tiny=dict(batches=2)),
    Target("fig-baselines", "fig-baselines", "diagnostic", "CL Figs 5/16",
           "CL Fig 5/16: gradient concentration with the value net, a fitted value net, no baseline and (LQR) "
           "the exact V^π", "baseline_figs:run", "baseline_figs:draw", measurement="baselines",
           settings_class="BaselineSettings", notebook="closer-look",
           tiny=dict(sizes=(100, 1000), estimates=3, fit_pairs=2048, fit_epochs=2)),
    Target("fig-landscape-concentration", "landscape", "diagnostic", "CL Figs 6/26/27",
           "CL Fig 6/26/27: true reward landscape from 2K/20K/100K pairs per point", "landscape_figs:run",
           "landscape_figs:draw", named=("run", "draw"), measurement="fig-landscape-concentration",
           settings_class="LandscapeSettings", notebook="closer-look", tiny=dict(points=3, sizes=(512, 1024), envs=4)),
    Target("fig-landscape-surrogate", "landscape", "diagnostic", "CL Figs 7/8/17-25",
           "CL Fig 7/8/17-25: true reward vs the surrogate on the plane of the step", "landscape_figs:run",
           "landscape_figs:draw", named=("run", "draw"), measurement="fig-landscape-surrogate",
           settings_class="LandscapeSettings", notebook="closer-look",
           tiny=dict(points=3, sizes=(1024,), envs=4, step_pairs=(0, 2048))),
    Target("solver-compare", "solver-compare", "training", "fig-ablation and IM Table 2 under both solvers",
           "fig-ablation and Table 2 trained under the converged and the fast solver settings, their conclusions "
           "side by side", "solver_compare:run", "solver_compare:draw"),
)}


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


def served_by(module: str) -> tuple:
    """The targets whose run is a function of ``module`` (one of pg_diag.experiments)."""
    return tuple(n for n, t in TARGETS.items() if t.run.split(":")[0] == module)


def of_notebook(notebook: str) -> tuple:
    return tuple(n for n, t in TARGETS.items() if t.notebook == notebook)


def makefile() -> str:
    """``targets.mk``: the Makefile's study targets, each with its output directory's study and options."""
    lines = ["# Written by `python -m pg_diag.experiments.targets > targets.mk` from pg_diag/experiments/targets.py;",
             "# do not edit (tests/test_targets.py checks that it is current).",
             f"STUDY_TARGETS := {' '.join(TARGETS)}",
             f"CLOSER_LOOK_TARGETS := {' '.join(of_notebook('closer-look'))}"]
    for t in TARGETS.values():
        lines.append(f"{t.name}_STUDY := {t.study}")
        lines.append(f"{t.name}_ARGS := {'' if t.kind == 'optimize' else '--progress'}".rstrip())
    return "\n".join(lines) + "\n"


__all__ = ["KINDS", "TARGETS", "Target", "by_study", "get", "makefile", "of_kind", "of_notebook", "served_by"]


if __name__ == "__main__":
    sys.stdout.write(makefile())
