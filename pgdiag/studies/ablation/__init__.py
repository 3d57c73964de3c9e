"""fig-ablation (CL Fig 1 / IM Fig 1): the code-level optimizations toggled, 2^k configurations × learning
rates × seeds in one compiled sweep per task.

`targets` declares its targets, scales, runs, draws and plans, `scores` scores its agents, `evidence` reads
the claims' evidence from what it saves.
"""

from pgdiag.studies.ablation.scores import (TOGGLES, agent_scores, agents_at_best_lr, agents_at_held_out_best_lr,
                                            best_learning_rates, censored, saved_scores, toggle_effects)
from pgdiag.studies.ablation.targets import (LEARNING_RATES, MID_LEARNING_RATES, SCALES, STUDY, TARGET, TARGETS,
                                             base_config, draw, grid, plan, plot, run)

__all__ = ['LEARNING_RATES', 'MID_LEARNING_RATES', 'SCALES', 'STUDY', 'TARGET', 'TARGETS', 'TOGGLES',
           'agent_scores', 'agents_at_best_lr', 'agents_at_held_out_best_lr', 'base_config',
           'best_learning_rates', 'censored', 'draw', 'grid', 'plan', 'plot', 'run', 'saved_scores', 'toggle_effects']
