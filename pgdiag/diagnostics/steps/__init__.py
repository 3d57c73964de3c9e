"""The step study (CL Fig 13): M steps of the algorithm itself from independent batches at one policy, their
pairwise cosines and KLs.

`measure` holds its settings and compiled program, `study` the [`Diagnostic`][pgdiag.diagnostics.protocol.
Diagnostic] the engine runs and the tables it returns, `memory` its term of the memory model.
"""

from pgdiag.diagnostics.steps.measure import StepSettings
from pgdiag.diagnostics.steps.study import STEPS, StepStudy, load_step_study, step_study

__all__ = ["STEPS", "StepSettings", "StepStudy", "load_step_study", "step_study"]
