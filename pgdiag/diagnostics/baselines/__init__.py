"""The baseline study (CL Fig 5): gradient concentration with the agent's value network, a value network fit
to Monte-Carlo returns (V*), no baseline and (LQR) the exact V^π, on the same trajectories.

`measure` holds its settings and compiled program, `study` the [`Diagnostic`][pgdiag.diagnostics.protocol.
Diagnostic] the engine runs and the tables it returns, `memory` its term of the memory model.
"""

from pgdiag.diagnostics.baselines.measure import BaselineSettings
from pgdiag.diagnostics.baselines.study import BASELINES, BaselineStudy, baseline_study, load_baseline_study

__all__ = ["BASELINES", "BaselineSettings", "BaselineStudy", "baseline_study", "load_baseline_study"]
