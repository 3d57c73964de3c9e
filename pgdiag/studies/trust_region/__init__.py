"""fig-trust-region (CL Figs 9/29, IM §4): the ratios and KLs of PPO, PPO-M and TRPO during training.

`targets` declares its targets, scales, runs, draws and plans, `evidence` reads the claims' evidence from what
it saves.
"""

from pgdiag.studies.trust_region.targets import (ALGORITHMS, SCALES, TARGETS, draw, plot, reference_values, summary)

__all__ = ['ALGORITHMS', 'SCALES', 'TARGETS', 'draw', 'plot', 'reference_values', 'summary']
