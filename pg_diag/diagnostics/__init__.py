"""Diagnostics of the policy-gradient primitives on checkpointed runs (ref §4.2).

* :func:`gradient_study` — fig-grad-variance and fig-grad-true: K gradient
  estimates at every N of a nested grid, their pairwise cosines and their
  cosine to a large-sample (and, on the linear-quadratic task, the exact)
  gradient;
* :func:`step_study` — fig-step-variance: M steps of the algorithm itself from
  independent batches at one policy, their pairwise cosines and KLs;
* :func:`baseline_study` — fig-baselines: gradient concentration with the agent's
  value network, a value network fit to Monte-Carlo returns, no baseline and
  (LQR) the exact V^π, on the same trajectories;
* :func:`landscape_study` — fig-landscape-*: true returns and the algorithm's
  surrogate on the plane of its step and a random direction;

A study is a specification (:class:`.engine.Spec`: its settings, its tables, how it resolves, groups, shapes,
compiles and tabulates) planned, run, saved and loaded by one engine (:mod:`.engine`), against one memory
model (:mod:`.memory`); ``<name>.py`` holds a study's program and ``<name>_study.py`` its spec and study.
Each is one compiled program over agents × checkpoints × estimates × sizes,
samples the frozen policy (:mod:`.sampling`), streams its sums so memory does
not grow with N (:mod:`.streaming`), and saves tidy tables in the measured
run's ``diagnostics/`` directory (:mod:`.tables`).
"""

from pg_diag.diagnostics.baseline_study import BaselineStudy, baseline_study, load_baseline_study
from pg_diag.diagnostics.baselines import BaselineSettings
from pg_diag.diagnostics.gradient_study import GradientStudy, gradient_study, load_gradient_study
from pg_diag.diagnostics.gradients import GradientSettings
from pg_diag.diagnostics.sizes import PAPER_SIZES
from pg_diag.diagnostics.landscape import LandscapeSettings
from pg_diag.diagnostics.landscape_study import LandscapeStudy, landscape_study, load_landscape_study
from pg_diag.diagnostics.sampling import ADVANTAGES, STARTS, Sampling
from pg_diag.diagnostics.step_study import StepStudy, load_step_study, step_study
from pg_diag.diagnostics.steps import StepSettings
from pg_diag.diagnostics.subjects import DiagnosticError

__all__ = ["ADVANTAGES", "BaselineSettings", "BaselineStudy", "DiagnosticError", "LandscapeSettings",
           "LandscapeStudy", "baseline_study", "landscape_study", "load_baseline_study", "load_landscape_study", "GradientSettings", "GradientStudy", "PAPER_SIZES", "STARTS",
           "Sampling", "StepSettings", "StepStudy", "gradient_study", "load_gradient_study",
           "load_step_study", "step_study"]
