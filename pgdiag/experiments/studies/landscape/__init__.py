"""fig-landscape-concentration and fig-landscape-surrogate (CL Figs 6–8, 14–15, 26–27): measured by the
landscape study (`pgdiag.diagnostics.landscape`).

`targets` declares its targets, scales, runs, draws and plans, `evidence` reads the claims' evidence from what
it saves.
"""

from pgdiag.experiments.studies.landscape.targets import (ALGORITHMS, SCALES, STUDY, TARGETS, draw, plot,
                                                           summary)

__all__ = ['ALGORITHMS', 'SCALES', 'STUDY', 'TARGETS', 'draw', 'plot', 'summary']
