"""The landscape measurement (CL §5.3, Figs 6–8, 17–27): true returns and the algorithm's surrogate on the plane of
its step and a random direction; fig-landscape-concentration and fig-landscape-surrogate.

`measure` holds its settings and compiled program, `diagnostic` the [`Diagnostic`][pgdiag.diagnostics.protocol.
Diagnostic] the engine runs and the tables it returns, `memory` its term of the memory model, `targets` its
figures' targets (scales, runs, draws, plans) and `evidence` the claims' evidence it gives.
"""

from pgdiag.studies.landscape.measure import LandscapeSettings
from pgdiag.studies.landscape.diagnostic import LANDSCAPE, LandscapeStudy, landscape_study, load_landscape_study
from pgdiag.studies.landscape.targets import (ALGORITHMS, SCALES, STUDY, TARGETS, draw, plot, summary)

__all__ = ["ALGORITHMS", "LANDSCAPE", "LandscapeSettings", "LandscapeStudy", "SCALES", "STUDY", "TARGETS", "draw",
           "landscape_study", "load_landscape_study", "plot", "summary"]
