"""fig-theorem (CL Theorem 5.1): the clipped surrogate optimized on one batch with several optimizers.

`targets` declares its targets, scales, runs, draws and plans, `evidence` reads the claims' evidence from what
it saves.
"""

from pgdiag.studies.theorem.targets import TARGETS

__all__ = ['TARGETS']
