"""A recorded report's table, worked by hand: where it came from, one row per finding, each algorithm's cell."""

import json

import numpy as np
import pandas as pd

from pgdiag.experiments import recorded


def test_the_recorded_table_by_hand(tmp_path):
    """Three findings: one measured for PPO at the paper's settings (holds) and for TRPO elsewhere (exploratory), one
    comparing two groups (its label neither algorithm's), one with nothing its test could read: the header names
    the commit, date, host and minutes."""
    pd.DataFrame([
        {"claim": "a", "level": "", "label": "ppo", "value": 0.25, "low": 0.125, "high": 0.5, "verdict": "holds",
         "scope": "paper", "agents": 7},
        {"claim": "a", "level": "stronger", "label": "ppo", "value": 0.25, "low": 0.125, "high": 0.5,
         "verdict": "holds", "scope": "paper", "agents": 7},
        {"claim": "a", "level": "", "label": "trpo", "value": 1.0, "low": 0.5, "high": np.inf,
         "verdict": "holds", "scope": "exploratory", "agents": 7},
        {"claim": "b", "level": "", "label": "ppo-m − ppo", "value": -2.0, "low": -3.0, "high": -1.0,
         "verdict": "does not hold", "scope": "paper", "agents": 7},
        {"claim": "c", "level": "", "label": "ppo/trpo", "value": np.nan, "low": np.nan, "high": np.nan,
         "verdict": "not measured where the paper made it", "scope": "exploratory", "agents": 0},
    ]).to_csv(tmp_path / "claims.csv", index=False)
    pd.DataFrame({"claim": ["a", "b", "c"], "outcome": ["reproduced", "not reproduced", "not measured"]}).to_csv(
        tmp_path / "findings.csv", index=False)
    (tmp_path / "record.json").write_text(json.dumps({"commit": "0123456789abcdef", "date": "2026-11-28",
                                                      "host": "x86_64, 2 cores", "wall_s": 600.0}))
    lines = recorded.table(str(tmp_path))
    assert lines[0].startswith("Recorded at commit `0123456789` on 2026-11-28 (x86_64, 2 cores, 10.0 min)")
    assert lines[2] == "| finding | outcome | PPO | PPO-M | TRPO | other |"
    assert lines[4] == "| a | reproduced | 0.25 [0.125, 0.5] holds |  | 1 [0.5, ∞] *exploratory* |  |"
    assert lines[5] == "| b | not reproduced |  |  |  | −2 [−3, −1] does not hold |"
    # measured, but nothing the test could read (e.g. no Humanoid to rank the easier tasks against)
    assert lines[6] == "| c | not measured |  |  |  | nothing its test can read *exploratory* |"
