"""fig-no-baseline (CL §5.2): PPO trained without a baseline against PPO.

`targets` declares the target, its scales, run, draw and plan; `evidence` reads the claim's evidence from what it
saves.
"""

from pgdiag.studies.no_baseline.targets import ALGORITHMS, SCALES, STUDY, TARGETS, draw

__all__ = ['ALGORITHMS', 'SCALES', 'STUDY', 'TARGETS', 'draw']
