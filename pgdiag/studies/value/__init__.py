"""fig-value (CL Figs 4/17–18): the value network's errors on its training and held-out batches.

`targets` declares its targets, scales, runs, draws and plans, `evidence` reads the claims' evidence from what
it saves.
"""

from pgdiag.studies.value.targets import (ALGORITHMS, SCALES, STUDY, TARGETS, curves, draw, summary)

__all__ = ['ALGORITHMS', 'SCALES', 'STUDY', 'TARGETS', 'curves', 'draw', 'summary']
