"""The claims report: the page, finding a paper's studies, and bad input. The verdicts themselves are tested on
constructed evidence in tests/test_claims.py and tests/test_evidence.py."""

import json

import pandas as pd
import pytest

from pgdiag.config import ConfigError
from pgdiag.experiments import claims, report


def _evidence(name, values, task="hopper", label="ppo"):
    return pd.DataFrame({"evidence": name, "task": task, "label": label, "agent": [str(i) for i in range(len(values))],
                         "value": values, "run_iterations": 488, "model": "gym"})


def _later(frame):
    """Measured at CL's "later in training" checkpoint (61 of 100, the learning rate at 0.39 of its start)."""
    return frame.assign(iteration=61, progress=0.61, lr_share=0.39, pairs=2048)


def test_the_page_summarizes_the_findings_then_lists_every_claim_and_what_measures_it():
    results = claims.evaluate(_later(_evidence("grad_pairwise_at_batch", [0.1, 0.2, 0.15, 0.12, 0.3])), paper="CL")
    text = report.page(results, [("fig-grad-variance", "figures/fig-grad-variance/fig-grad-variance.png"),
                                 ("table-2", "figures/table-2/table-2.md")], {"gradients": "results/gradients-mid"})
    assert text.index("## Summary") < text.index("## Findings") < text.index("## Extensions (not counted)") \
        < text.index("## Checks (not counted)")
    assert "| CL §5.1 gradients and steps | 1 |" in text          # one finding reproduced in its section
    assert "| gradients-poorly-concentrated | **reproduced** |" in text
    cl = [c for c in claims.CLAIMS if "CL" in c.paper.split()]
    for c in cl:
        assert f"### {c.key} (CL {c.where})" in text and f"> {c.quote}" in text
        assert f"**Where the paper made it:** {c.scope.describe()}" in text
    assert not any(f"### {c.key} " in text for c in claims.CLAIMS if c.paper == "IM")
    # 5 agents: the median 0.15 and [min, max] with its exact coverage 1 − 2/32, labelled as its own coverage
    assert "| interval (its coverage) |" in text
    assert "| hopper | ppo | < 0.5 | median agent 0.15 | [0.1, 0.3] (0.938) | 5 | 5 of 5 | **holds** |" in text
    assert "| hopper | ppo | virtually uncorrelated with each other (§6) | median agent 0.15 | [0.1, 0.3] (0.938) | " \
           "5 | 3 of 5 | **inconclusive** |" in text
    assert "*Not measured by the studies read: run fig-value (its study, `value`) where the paper made it — " \
           "Figs 4, 15: humanoid/walker2d/hopper" in text
    assert "*Not measured by the studies read: run fig-trust-region" in text
    assert "![fig-grad-variance](figures/fig-grad-variance/fig-grad-variance.png)" in text
    assert "[table-2](figures/table-2/table-2.md)" in text
    im = report.page(claims.evaluate(_evidence("im_score", [1.0] * 5), paper="IM"), [], {}, paper="im")
    assert "### optimizations-matter-more-than-step (IM §5, Table 2)" in im and "### ratios-leave-region" in im
    assert "### gradients-poorly-concentrated" not in im


def test_a_claim_measured_elsewhere_says_where_the_paper_made_it_and_counts_nothing():
    """fig-trust-region on Hopper: CL's Fig 9 is Humanoid's. The row is exploratory and the summary says so."""
    ev = _evidence("tr_ratio_outside", [1.0] * 5, label="ppo").assign(iteration=61, progress=0.61, lr_share=0.39)
    results = claims.evaluate(ev, paper="CL")
    text = report.page(results, [], {"fig-trust-region": "t"})
    assert "| ppo-max-ratio-leaves-region | **not measured where the paper made it** | hopper ppo: 1 [1, 1], 5 " \
           "agents (488 iterations, Gym's) | the paper's tasks: humanoid |" in text
    assert "**not measured where the paper made it**" in text and "*Missing for a verdict: the paper's tasks: " \
           "humanoid. Run fig-trust-region at a scale that covers it" in text


def test_few_agents_give_a_count_and_how_to_get_more():
    results = claims.evaluate(_later(_evidence("grad_pairwise_at_batch", [0.1, 0.2])), paper="CL")
    text = report.page(results, [], {"gradients": "g"})
    assert "| 2 | 2 of 2 | **too few agents** |" in text and "--seeds 5" in text
    assert "| gradients-poorly-concentrated | **too few agents** |" in text


def test_the_report_directory_is_named_as_make_names_it(tmp_path):
    d = tmp_path / "fig-grad-variance-mid"
    d.mkdir()
    (d / "study.json").write_text(json.dumps({"study": "gradients", "scale": "mid"}))
    found = report.find_studies(str(tmp_path))
    assert report.default_out(str(tmp_path), found, "cl", None) == str(tmp_path / "closer-look-report-mid")
    assert report.default_out(str(tmp_path), found, "im", "paper") == str(tmp_path / "implementation-matters-report-paper")


def test_an_unknown_paper_is_named(tmp_path, capsys):
    from pgdiag.cli import main

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
    # a study saved under its former name (its first target's) reads as the study it is now; the ablation is CL
    # Fig 1's and IM Fig 1's, so both reports read it
    assert report.find_studies(str(tmp_path), paper="im") == {"ablation": [str(tmp_path / "fig-ablation-smoke")]}
    assert report.find_studies(str(tmp_path), paper="cl") == {"ablation": [str(tmp_path / "fig-ablation-smoke")]}
    with pytest.raises(ConfigError, match="no study of CL there"):   # only the studies asked for are read
        report.find_studies(str(tmp_path), paper="cl", studies=("gradients",))
    (tmp_path / "fig-ablation-smoke" / "study.json").write_text(json.dumps({"study": "algorithms", "scale": "smoke"}))
    with pytest.raises(ConfigError, match="no study of CL there.*fig-grad-variance.*make closer-look-report"):
        report.find_studies(str(tmp_path))
    for scale in ("smoke", "paper"):
        (tmp_path / f"gradients-{scale}").mkdir()
        (tmp_path / f"gradients-{scale}" / "study.json").write_text(json.dumps({"study": "gradients", "scale": scale}))
    with pytest.raises(ConfigError, match="2 'gradients' studies.*--scale.*or several: --scale paper,smoke"):
        report.find_studies(str(tmp_path))
    assert report.find_studies(str(tmp_path), "paper") == {"gradients": [str(tmp_path / "gradients-paper")]}
    both = report.find_studies(str(tmp_path), "smoke,paper")    # one study per scale, read together
    assert both == {"gradients": [str(tmp_path / "gradients-paper"), str(tmp_path / "gradients-smoke")]}
    assert report.default_out(str(tmp_path), both, "cl", "smoke,paper") == str(tmp_path / "closer-look-report-smoke+paper")
    with pytest.raises(ConfigError, match="at scale 'mid'"):
        report.find_studies(str(tmp_path), "mid")
