"""The step measurement (CL §5.1, Fig 13): M steps of the algorithm itself from independent batches at one policy,
their pairwise cosines and KLs; fig-step-variance, a target of the gradient study.

`measure` holds its settings and compiled program, `diagnostic` the [`Diagnostic`][pgdiag.diagnostics.protocol.
Diagnostic] the engine runs and the tables it returns, `memory` its term of the memory model, `targets` its
target (the gradient study's scales and training) and `evidence` the claims' evidence it gives.
"""

from pgdiag.studies.steps.measure import StepSettings
from pgdiag.studies.steps.diagnostic import STEPS, StepStudy, load_step_study, step_study
from pgdiag.studies.steps.targets import TARGETS, draw_steps, plot_steps

__all__ = ["STEPS", "StepSettings", "StepStudy", "TARGETS", "draw_steps", "load_step_study", "plot_steps",
           "step_study"]
