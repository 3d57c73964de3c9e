"""The claims report: verdicts on constructed evidence whose answer is known by hand, the page, and bad input.

A percentile-bootstrap CI of a mean lies between the smallest and the largest value, so evidence whose values
all lie on one side of a claim's threshold has a known verdict whatever the resampling; two values a and b
have the bootstrap means a, (a+b)/2, b with probabilities 1/4, 1/2, 1/4, so their 95% CI is [a, b]."""

import json

import pandas as pd
import pytest

from pg_diag.config import ConfigError
from pg_diag.experiments import claims, report


def _evidence(name, values, task="hopper", label="ppo"):
    return pd.DataFrame({"evidence": name, "task": task, "label": label, "unit": [str(i) for i in range(len(values))],
                         "value": values})


@pytest.mark.parametrize("values,expected", [
    ([0.10, 0.12, 0.08, 0.11], "holds"),           # every value < 0.5: "poorly concentrated"
    ([0.90, 0.95, 0.92], "does not hold"),         # every value > 0.5
    ([0.2, 0.8], "inconclusive"),                  # CI [0.2, 0.8] straddles 0.5
    ([0.1], "inconclusive"),                       # one unit: no interval
])
def test_a_below_threshold_claim_by_hand(values, expected):
    out = claims.evaluate(_evidence("grad_pairwise_at_batch", values))
    row = out[out.claim == "gradients-poorly-concentrated"].iloc[0]
    assert row.verdict == expected and row.units == len(values)
    assert row["mean"] == pytest.approx(sum(values) / len(values))
    if len(values) > 1:
        assert min(values) <= row.low <= row["mean"] <= row.high <= max(values)


def test_a_difference_claim_and_groups_by_task_and_algorithm():
    """'The value network helps' is value − zero > 0: positive differences hold, negative do not, per group."""
    ev = pd.concat([_evidence("baseline_value_vs_zero", [0.1, 0.2, 0.15]),
                    _evidence("baseline_value_vs_zero", [-0.3, -0.1], label="trpo")])
    out = claims.evaluate(ev).set_index("label")
    assert out.loc["ppo", "verdict"] == "holds" and out.loc["trpo", "verdict"] == "does not hold"
    assert set(out.claim) == {"value-baseline-helps"} and (out.test == "> 0").all()


def test_every_claim_names_its_evidence_and_a_side():
    assert len({c.key for c in claims.CLAIMS}) == len(claims.CLAIMS)
    assert all(c.side in ("<", ">") and c.where.startswith("CL §") for c in claims.CLAIMS)
    with pytest.raises(KeyError, match="unknown claim 'nope'"):
        claims.by_key("nope")


def test_the_page_lists_every_claim_and_says_which_were_not_measured():
    results = claims.evaluate(_evidence("grad_pairwise_at_batch", [0.1, 0.2]))
    text = report.page(results, [("fig-grad-variance", "figures/fig-grad-variance/fig-grad-variance.png")],
                       {"gradients": "results/gradients-smoke"})
    for c in claims.CLAIMS:
        assert f"## {c.key} ({c.where})" in text
    assert "| hopper | ppo | 0.15 | [0.1, 0.2] | 2 | **holds** |" in text
    assert text.count("*Not measured by the studies read.*") == len(claims.CLAIMS) - 1
    assert "![fig-grad-variance](figures/fig-grad-variance/fig-grad-variance.png)" in text


def test_a_directory_without_diagnostic_studies_is_named(tmp_path):
    with pytest.raises(ConfigError, match="no such directory"):
        report.find_studies(str(tmp_path / "missing"))
    (tmp_path / "fig-ablation-smoke").mkdir()
    (tmp_path / "fig-ablation-smoke" / "study.json").write_text(json.dumps({"study": "fig-ablation", "scale": "smoke"}))
    with pytest.raises(ConfigError, match="no diagnostic study there.*fig-grad-variance"):
        report.find_studies(str(tmp_path))
    for scale in ("smoke", "paper"):
        (tmp_path / f"gradients-{scale}").mkdir()
        (tmp_path / f"gradients-{scale}" / "study.json").write_text(json.dumps({"study": "gradients", "scale": scale}))
    with pytest.raises(ConfigError, match="2 'gradients' studies.*--scale"):
        report.find_studies(str(tmp_path))
    assert report.find_studies(str(tmp_path), "paper") == {"gradients": str(tmp_path / "gradients-paper")}
    with pytest.raises(ConfigError, match="at scale 'mid'"):
        report.find_studies(str(tmp_path), "mid")
