"""The claims report: the page, finding a paper's studies, and bad input. The verdicts themselves are tested on
constructed evidence in tests/test_claims.py and tests/test_evidence.py."""

import json

import pandas as pd
import pytest

from pg_diag.config import ConfigError
from pg_diag.experiments import claims, report


def _evidence(name, values, task="hopper", label="ppo"):
    return pd.DataFrame({"evidence": name, "task": task, "label": label, "agent": [str(i) for i in range(len(values))],
                         "value": values})


def test_the_page_lists_every_claim_of_its_paper_and_names_the_target_that_measures_it():
    results = claims.evaluate(_evidence("grad_pairwise_at_batch", [0.1, 0.2, 0.15, 0.12, 0.3]), paper="CL")
    text = report.page(results, [("fig-grad-variance", "figures/fig-grad-variance/fig-grad-variance.png"),
                                 ("table-2", "figures/table-2/table-2.md")], {"gradients": "results/gradients-mid"})
    cl = [c for c in claims.CLAIMS if "CL" in c.paper.split()]
    for c in cl:
        assert f"## {c.key} (CL {c.where})" in text and f"> {c.quote}" in text
    assert not any(f"## {c.key} " in text for c in claims.CLAIMS if c.paper == "IM")
    # 5 agents: the median 0.15 and [min, max] with its exact coverage 1 − 2/32
    assert "| hopper | ppo | median agent 0.15 | [0.1, 0.3] (0.938) | 5 | 5 of 5 | **holds** |" in text
    assert "| hopper | ppo | median agent 0.15 | [0.1, 0.3] (0.938) | 5 | 3 of 5 | **inconclusive** |" in text
    assert "*Not measured by the studies read: run fig-value (its study, `fig-value`)" in text
    assert "*Not measured by the studies read: run fig-trust-region" in text
    assert "![fig-grad-variance](figures/fig-grad-variance/fig-grad-variance.png)" in text
    assert "[table-2](figures/table-2/table-2.md)" in text
    im = report.page(claims.evaluate(_evidence("im_score", [1.0] * 5), paper="IM"), [], {}, paper="im")
    assert "## optimizations-matter-more-than-step (IM §5, Table 2)" in im and "## ppo-max-ratio-leaves-region" in im
    assert "## gradients-poorly-concentrated" not in im


def test_few_agents_give_a_count_and_how_to_get_more():
    results = claims.evaluate(_evidence("grad_pairwise_at_batch", [0.1, 0.2]), paper="CL")
    text = report.page(results, [], {"gradients": "g"})
    assert "| 2 | 2 of 2 | **too few agents** |" in text and "--seeds 5" in text


def test_an_unknown_paper_is_named(tmp_path, capsys):
    from pg_diag.cli import main

    with pytest.raises(ConfigError, match="report --paper 'xx': unknown paper; choose from cl, im"):
        report.check_paper("xx")
    with pytest.raises(ConfigError, match="unknown paper"):
        report.find_studies(".", paper="xx")
    assert main(["report", "--paper", "xx", "--from", str(tmp_path)]) == 2
    assert "unknown paper; choose from cl, im" in capsys.readouterr().err


def test_a_directory_without_diagnostic_studies_is_named(tmp_path):
    with pytest.raises(ConfigError, match="no such directory"):
        report.find_studies(str(tmp_path / "missing"))
    (tmp_path / "fig-ablation-smoke").mkdir()
    (tmp_path / "fig-ablation-smoke" / "study.json").write_text(json.dumps({"study": "fig-ablation", "scale": "smoke"}))
    with pytest.raises(ConfigError, match="no study of CL there.*fig-grad-variance.*make closer-look-report"):
        report.find_studies(str(tmp_path))
    assert report.find_studies(str(tmp_path), paper="im") == {"fig-ablation": str(tmp_path / "fig-ablation-smoke")}
    for scale in ("smoke", "paper"):
        (tmp_path / f"gradients-{scale}").mkdir()
        (tmp_path / f"gradients-{scale}" / "study.json").write_text(json.dumps({"study": "gradients", "scale": scale}))
    with pytest.raises(ConfigError, match="2 'gradients' studies.*--scale"):
        report.find_studies(str(tmp_path))
    assert report.find_studies(str(tmp_path), "paper") == {"gradients": str(tmp_path / "gradients-paper")}
    with pytest.raises(ConfigError, match="at scale 'mid'"):
        report.find_studies(str(tmp_path), "mid")
