"""fig-rewards, table-2 and table-3 (IM Fig 2, Tables 2/3): every preset trained once (the `algorithms`
study).

`targets` declares its targets, scales, runs, draws and plans, `evidence` reads the claims' evidence from what
it saves.
"""

from pgdiag.studies.presets.targets import (REPORTING, REWARDS_TARGET, SCALES, SHARED_PRESETS, STUDY, TABLE_2_PRESETS,
                                            TABLE_2_TARGET, TABLE_3_PRESETS, TABLE_3_TARGET, TARGETS, agent_scores,
                                            draw_rewards, draw_table, plan, plot_rewards, summarize, table,
                                            training_groups)

__all__ = ['REPORTING', 'REWARDS_TARGET', 'SCALES', 'SHARED_PRESETS', 'STUDY', 'TABLE_2_PRESETS',
           'TABLE_2_TARGET', 'TABLE_3_PRESETS', 'TABLE_3_TARGET', 'TARGETS', 'agent_scores', 'draw_rewards',
           'draw_table', 'plan', 'plot_rewards', 'summarize', 'table', 'training_groups']
