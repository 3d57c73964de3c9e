"""The shape of the mean-KL curves IM §4 describes ("PPO-M KL trends up …, PPO KL peaks halfway"), read per agent
from constructed training metrics whose answers are worked out by hand."""

import numpy as np
import pandas as pd
import pytest

from pgdiag.studies.trust_region.evidence import trust_region_evidence


def _curves(algorithm, log_kl, agents=4, iterations=40):
    """``iterations`` + 1 logged iterations of a run of ``iterations``; log10(mean KL) = log_kl(progress) + 0.1·a."""
    rows = []
    for a in range(agents):
        for it in range(iterations + 1):
            p = it / iterations
            rows.append({"task": "humanoid", "algorithm": algorithm, "agent": a, "iteration": it,
                         "constraint": "ratio", "constraint_value": 0.2, "max_ratio": 1.1,
                         "mean_kl": 10 ** (log_kl(p) + 0.1 * a), "max_kl": 1.0, "num_iterations": iterations,
                         "lr_annealing": False})
    return pd.DataFrame(rows)


def test_a_rising_and_a_peaked_kl_curve_by_hand():
    """PPO-M: log10 KL = −2 + progress, a straight line: the least-squares slope is exactly 1 per run. PPO:
    −2 − 4(progress − ½)², symmetric about ½: the five-point running mean is largest where it is centred on ½
    (iteration 20 of 40)."""
    rows = pd.DataFrame(trust_region_evidence(pd.concat([_curves("ppo-m", lambda p: -2 + p),
                                                         _curves("ppo", lambda p: -2 - 4 * (p - 0.5) ** 2)])))
    trend = rows[(rows.evidence == "tr_kl_trend") & (rows.label == "ppo-m")].value
    peak = rows[(rows.evidence == "tr_kl_peak") & (rows.label == "ppo")].value
    assert len(trend) == 4 and trend.to_numpy() == pytest.approx([1.0] * 4)
    assert len(peak) == 4 and peak.to_numpy() == pytest.approx([0.5] * 4)
    # the five-point running mean at the peak: −2 − 4·mean(k²)/40² over k = −2…2 (mean 2) = −2.005; at the end,
    # centred on 38/40 = 0.45 past ½: −2 − 4·(0.45² + 2/40²) = −2.815; a fall of 0.81
    fall = rows[(rows.evidence == "tr_kl_fall") & (rows.label == "ppo")].value.to_numpy()
    assert fall == pytest.approx([0.81] * 4)


def test_too_short_a_curve_gives_no_shape():
    rows = pd.DataFrame(trust_region_evidence(_curves("ppo", lambda p: -2 + p, iterations=4)))
    assert not rows.evidence.isin(["tr_kl_trend", "tr_kl_peak", "tr_kl_fall"]).any()
