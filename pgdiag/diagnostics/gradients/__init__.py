"""The gradient study (CL Figs 2–3): K gradient estimates at every N, their pairwise cosines and their cosine
to a large-sample (and, on the linear-quadratic task, the exact) gradient.

`measure` holds its settings and compiled program, `study` the [`Diagnostic`][pgdiag.diagnostics.protocol.
Diagnostic] the engine runs and the tables it returns, `memory` its term of the memory model.
"""

from pgdiag.diagnostics.gradients.measure import GradientSettings
from pgdiag.diagnostics.gradients.study import GRADIENTS, GradientStudy, gradient_study, load_gradient_study

__all__ = ["GRADIENTS", "GradientSettings", "GradientStudy", "gradient_study", "load_gradient_study"]
