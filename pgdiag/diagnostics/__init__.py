"""Diagnostics of the policy-gradient primitives on checkpointed runs (ref §4.2).

* [`gradient_study`][pgdiag.diagnostics.gradients.study.gradient_study] — fig-grad-variance and fig-grad-true: K
  gradient estimates at every N of a nested grid, their pairwise cosines and their cosine to a large-sample (and, on
  the linear-quadratic task, the exact) gradient;
* [`step_study`][pgdiag.diagnostics.steps.study.step_study] — fig-step-variance: M steps of the algorithm itself from
  independent batches at one policy, their pairwise cosines and KLs;
* [`baseline_study`][pgdiag.diagnostics.baselines.study.baseline_study] — fig-baselines: gradient concentration
  with the agent's value network, a value network fit to Monte-Carlo returns, no baseline and (LQR) the exact V^π,
  on the same trajectories;
* [`landscape_study`][pgdiag.diagnostics.landscape.study.landscape_study] — fig-landscape-*: true returns and the
  algorithm's surrogate on the plane of its step and a random direction;

A study is a [`Diagnostic`][pgdiag.diagnostics.protocol.Diagnostic] (the study protocol: its settings, its
tables, how it resolves, groups, shapes, compiles and tabulates) planned, run, saved and loaded by one engine
([`pgdiag.diagnostics.engine`][]), against one memory model ([`pgdiag.diagnostics.memory`][]). Each lives in
a package of its own: `<name>/measure.py` its settings and program, `<name>/study.py` its protocol and tables,
`<name>/memory.py` its memory term. Each is one compiled program over agents × checkpoints × estimates × sizes,
samples the frozen policy (`sampling`), streams its sums so memory does not grow with N (`streaming`), and saves
tidy tables in the measured run's `diagnostics/` directory (`tables`).
"""

from pgdiag.diagnostics.baselines import (BASELINES, BaselineSettings, BaselineStudy, baseline_study,
                                           load_baseline_study)
from pgdiag.diagnostics.engine import load, run
from pgdiag.diagnostics.gradients import (GRADIENTS, GradientSettings, GradientStudy, gradient_study,
                                           load_gradient_study)
from pgdiag.diagnostics.landscape import (LANDSCAPE, LandscapeSettings, LandscapeStudy, landscape_study,
                                           load_landscape_study)
from pgdiag.diagnostics.protocol import Diagnostic, Group, Measured, Record, Shape, Sizes
from pgdiag.diagnostics.sampling import ADVANTAGES, STARTS, Sampling
from pgdiag.diagnostics.sizes import PAPER_SIZES
from pgdiag.diagnostics.steps import STEPS, StepSettings, StepStudy, load_step_study, step_study
from pgdiag.diagnostics.subjects import DiagnosticError

__all__ = ["ADVANTAGES", "BASELINES", "BaselineSettings", "BaselineStudy", "Diagnostic", "DiagnosticError",
           "GRADIENTS", "GradientSettings", "GradientStudy", "Group", "LANDSCAPE", "LandscapeSettings",
           "LandscapeStudy", "Measured", "PAPER_SIZES", "Record", "STARTS", "STEPS", "Sampling", "Shape", "Sizes",
           "StepSettings", "StepStudy", "baseline_study", "gradient_study", "landscape_study",
           "load", "load_baseline_study", "load_gradient_study", "load_landscape_study", "load_step_study", "run",
           "step_study"]
