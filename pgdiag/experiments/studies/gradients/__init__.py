"""fig-grad-variance, fig-grad-true and fig-step-variance (CL Figs 2/3/13 and 11/12): measured by the gradient
and step studies (`pgdiag.diagnostics.gradients`, `pgdiag.diagnostics.steps`).

`targets` declares its targets, scales, runs, draws and plans, `evidence` reads the claims' evidence from what
it saves.
"""

from pgdiag.experiments.studies.gradients.targets import (ALGORITHMS, SCALES, STUDY, TARGETS, draw_gradients,
                                                           draw_steps, plot_gradients, plot_steps)

__all__ = ['ALGORITHMS', 'SCALES', 'STUDY', 'TARGETS', 'draw_gradients', 'draw_steps', 'plot_gradients',
           'plot_steps']
