"""The landscape study (CL Figs 6–8, 14–15): true returns and the algorithm's surrogate on the plane of its
step and a random direction.

`measure` holds its settings and compiled program, `study` the [`Diagnostic`][pgdiag.diagnostics.protocol.
Diagnostic] the engine runs and the tables it returns, `memory` its term of the memory model.
"""

from pgdiag.diagnostics.landscape.measure import LandscapeSettings
from pgdiag.diagnostics.landscape.study import LANDSCAPE, LandscapeStudy, landscape_study, load_landscape_study

__all__ = ["LANDSCAPE", "LandscapeSettings", "LandscapeStudy", "landscape_study", "load_landscape_study"]
