"""The baseline measurement (CL §5.2, Figs 5/16): gradient concentration with the agent's value network, a value
network fit to Monte-Carlo returns (V*), no baseline and (LQR) the exact V^π, on the same trajectories;
fig-baselines.

`measure` holds its settings and compiled program, `diagnostic` the [`Diagnostic`][pgdiag.diagnostics.protocol.
Diagnostic] the engine runs and the tables it returns, `memory` its term of the memory model, `targets` its
figures' targets (scales, runs, draws, plans) and `evidence` the claims' evidence it gives.
"""

from pgdiag.studies.baselines.measure import BaselineSettings
from pgdiag.studies.baselines.diagnostic import BASELINES, BaselineStudy, baseline_study, load_baseline_study
from pgdiag.studies.baselines.targets import (ALGORITHMS, SCALES, STUDY, TARGETS, draw, summary, true_value_verdict)

__all__ = ["ALGORITHMS", "BASELINES", "BaselineSettings", "BaselineStudy", "SCALES", "STUDY", "TARGETS",
           "baseline_study", "draw", "load_baseline_study", "summary", "true_value_verdict"]
