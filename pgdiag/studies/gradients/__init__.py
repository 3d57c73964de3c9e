"""The gradient measurement (CL §5.1, Figs 2/3/11/12): K gradient estimates at every N, their pairwise cosines
and their cosine to a large-sample (and, on the linear-quadratic task, the exact) gradient; fig-grad-variance and
fig-grad-true.

`measure` holds its settings and compiled program, `diagnostic` the [`Diagnostic`][pgdiag.diagnostics.protocol.
Diagnostic] the engine runs and the tables it returns, `memory` its term of the memory model, `targets` its
figures' targets (scales, runs, draws, plans) and `evidence` the claims' evidence it gives.
"""

from pgdiag.studies.gradients.measure import GradientSettings
from pgdiag.studies.gradients.diagnostic import GRADIENTS, GradientStudy, gradient_study, load_gradient_study
from pgdiag.studies.gradients.targets import ALGORITHMS, SCALES, STUDY, TARGETS, draw_gradients, plot_gradients

__all__ = ["ALGORITHMS", "GRADIENTS", "GradientSettings", "GradientStudy", "SCALES", "STUDY", "TARGETS",
           "draw_gradients", "gradient_study", "load_gradient_study", "plot_gradients"]
