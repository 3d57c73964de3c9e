"""solver-compare: fig-ablation and table-2 under both MuJoCo solver settings.

`targets` declares its targets, scales, runs, draws and plans.
"""

from pgdiag.studies.solver_compare.targets import (SOLVERS, TARGETS, compare, draw, effect_verdict, plan, run)

__all__ = ['SOLVERS', 'TARGETS', 'compare', 'draw', 'effect_verdict', 'plan', 'run']
