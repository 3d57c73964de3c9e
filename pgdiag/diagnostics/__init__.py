"""The diagnostics engine: measurements of the policy-gradient primitives on checkpointed runs (ref §4.2).

A measurement is a [`Diagnostic`][pgdiag.diagnostics.protocol.Diagnostic] (the study protocol: its settings, its
tables, how it resolves, groups, shapes, compiles and tabulates) planned, run, saved and loaded by one engine
([`pgdiag.diagnostics.engine`][]), against one memory model ([`pgdiag.diagnostics.memory`][]). Each is one
compiled program over agents × checkpoints × estimates × sizes, samples the frozen policy (`sampling`), streams
its sums so memory does not grow with N (`streaming`), and saves tidy tables in the measured run's
`diagnostics/` directory (`tables`).

pgdiag's own measurements live one folder each in [`pgdiag.studies`][pgdiag.studies], above this engine, and are
named here too:

* [`gradient_study`][pgdiag.studies.gradients.diagnostic.gradient_study] — fig-grad-variance and fig-grad-true: K
  gradient estimates at every N of a nested grid, their pairwise cosines and their cosine to a large-sample (and, on
  the linear-quadratic task, the exact) gradient;
* [`step_study`][pgdiag.studies.steps.diagnostic.step_study] — fig-step-variance: M steps of the algorithm itself
  from independent batches at one policy, their pairwise cosines and KLs;
* [`baseline_study`][pgdiag.studies.baselines.diagnostic.baseline_study] — fig-baselines: gradient concentration
  with the agent's value network, a value network fit to Monte-Carlo returns, no baseline and (LQR) the exact V^π,
  on the same trajectories;
* [`landscape_study`][pgdiag.studies.landscape.diagnostic.landscape_study] — fig-landscape-*: true returns and the
  algorithm's surrogate on the plane of its step and a random direction.
"""

from pgdiag.diagnostics.engine import load, run
from pgdiag.diagnostics.protocol import Diagnostic, Group, Measured, Record, Shape, Sizes, Tables, Work
from pgdiag.diagnostics.sampling import ADVANTAGES, STARTS, Sampling
from pgdiag.diagnostics.sizes import PAPER_SIZES
from pgdiag.diagnostics.subjects import DiagnosticError, over_subjects

#: the names of pgdiag's own measurements (pgdiag.studies) this package also answers to, by the folder holding them
_MEASUREMENTS = {
    "baselines": ("BASELINES", "BaselineSettings", "BaselineStudy", "baseline_study", "load_baseline_study"),
    "gradients": ("GRADIENTS", "GradientSettings", "GradientStudy", "gradient_study", "load_gradient_study"),
    "landscape": ("LANDSCAPE", "LandscapeSettings", "LandscapeStudy", "landscape_study", "load_landscape_study"),
    "steps": ("STEPS", "StepSettings", "StepStudy", "load_step_study", "step_study"),
}
_FOLDER = {name: folder for folder, names in _MEASUREMENTS.items() for name in names}


def __getattr__(name: str):
    """A measurement's public name, from its folder in pgdiag.studies (read when first asked: the engine sits below
    the measurements that build on it)."""
    if name not in _FOLDER:
        raise AttributeError(f"module 'pgdiag.diagnostics' has no attribute {name!r}")
    from pgdiag import studies

    value = getattr(getattr(studies, _FOLDER[name]), name)
    globals()[name] = value
    return value


__all__ = ["ADVANTAGES", "Diagnostic", "DiagnosticError", "Group", "Measured", "PAPER_SIZES", "Record", "STARTS",
           "Sampling", "Shape", "Sizes", "Tables", "Work", "load", "over_subjects", "run",
           *_FOLDER]
