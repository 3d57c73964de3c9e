"""fig-baselines (CL Figs 5/16): gradient concentration under each baseline, measured by the baseline study
(`pgdiag.diagnostics.baselines`).

`targets` declares its targets, scales, runs, draws and plans, `evidence` reads the claims' evidence from what
it saves.
"""

from pgdiag.experiments.studies.baselines.targets import (ALGORITHMS, SCALES, STUDY, TARGETS, draw, summary,
                                                           true_value_verdict)

__all__ = ['ALGORITHMS', 'SCALES', 'STUDY', 'TARGETS', 'draw', 'summary', 'true_value_verdict']
