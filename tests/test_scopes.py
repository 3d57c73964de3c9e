"""Scopes that know the experiment: the paper's run length and models decide whether a row is the paper's, and a
row of another experiment reads as what it is ("holds at 100 of 488 iterations on Brax's hopper"), never a
verdict."""

import json
import os

import numpy as np
import pytest
import pandas as pd

from pgdiag import preset
from pgdiag.experiments import claims, evidence_rows, findings


def _rows(values, run, task="hopper"):
    return pd.DataFrame({"evidence": "grad_pairwise_at_batch", "task": task, "label": "ppo",
                         "agent": [str(i) for i in range(len(values))], "value": values, "iteration": 61,
                         "progress": 0.61, "lr_share": 1.0, "pairs": 2048.0, "run_iterations": run[0],
                         "model": run[1]})


def _claim(out, key="gradients-poorly-concentrated"):
    return out[(out.claim == key) & (out.level == "")].iloc[0]


def test_the_papers_run_is_in_scope_and_another_is_exploratory_with_its_reading():
    values = list(np.linspace(0.05, 0.3, 8))         # every agent below 0.5: the claim holds on these rows
    ours = _claim(claims.evaluate(_rows(values, (488, "gym")), paper="CL"))
    assert ours.scope == "paper" and ours.verdict == "holds"
    short = _claim(claims.evaluate(_rows(values, (100, "brax")), paper="CL"))
    assert short.scope == "exploratory" and short.verdict == claims.NOT_HERE
    assert short.why.startswith("holds at 100 of 488 iterations on Brax's hopper (exploratory)")
    assert "the paper's run: 488 iterations" in short.why and "the paper's models: Gym's" in short.why
    found = findings.findings(claims.evaluate(_rows(values, (100, "brax")), paper="CL"), "CL")
    assert _claim(found.assign(level="")).outcome == claims.NOT_HERE


def test_a_run_within_five_percent_of_the_papers_length_is_the_papers():
    """IM ran 500 iterations of 2,000 steps, CL 488 of 2,048: each is within 5% of the other's length."""
    values = list(np.linspace(0.05, 0.3, 8))
    assert _claim(claims.evaluate(_rows(values, (500, "gym")), paper="CL")).scope == "paper"
    assert _claim(claims.evaluate(_rows(values, (460, "gym")), paper="CL")).scope == "exploratory"


def test_the_initial_policy_is_the_same_at_any_run_length_but_not_on_another_model():
    claim = next(c for c in claims.CLAIMS if c.scope.window == "initial")
    assert claim.scope.iterations == 0 and claim.scope.model == "gym"


def test_im_fig_1_is_read_on_its_own_tasks():
    """IM Fig 1 shows Humanoid and Walker2d, CL Fig 1 Humanoid: an ablation on Hopper is another experiment."""
    ablation = [c for c in claims.CLAIMS if c.evidence.startswith("ablation")]
    assert {c.paper for c in ablation} == {"CL", "IM"} and len(ablation) == 12
    assert all(set(c.tasks) == ({"humanoid", "walker2d"} if c.paper == "IM" else {"humanoid"}) for c in ablation)


def test_a_studys_runs_give_each_task_its_run_length_and_models(tmp_path):
    """experiment_of reads the run directories a study lists: the longest run's iterations, its models."""
    for name, cfg in (("a", preset("ppo", "hopper", num_iterations=100)),
                      ("b", preset("ppo", "hopper", num_iterations=40)),
                      ("c", preset("ppo", "walker2d", num_iterations=488, model="gym"))):
        os.makedirs(tmp_path / "runs" / name)
        (tmp_path / "runs" / name / "manifest.json").write_text(json.dumps({"base_config": cfg.to_dict()}))
    (tmp_path / "study.json").write_text(json.dumps({"runs": {"hopper": ["runs/a", "runs/b"],
                                                              "walker2d": ["runs/c"], "humanoid": ["runs/gone"]}}))
    assert evidence_rows.experiment_of(str(tmp_path)) == {"hopper": (100, "brax"), "walker2d": (488, "gym")}
    assert evidence_rows.experiment_of(str(tmp_path / "nowhere")) == {}


def _curve(evidence, first, after, agents=7):
    """Each agent's held-out error at iterations 0, 10, …, 90 of a 488-iteration Gym run: ``first`` at 0 (the
    untrained network), ``after`` (plus a small per-agent spread) from 10 on."""
    rows = []
    for a in range(agents):
        for it in range(0, 100, 10):
            rows.append({"evidence": evidence, "task": "hopper", "label": "ppo", "agent": str(a),
                         "value": first if it == 0 else after + 0.01 * a, "iteration": it, "progress": it / 488,
                         "lr_share": 1.0, "pairs": np.nan, "run_iterations": 488, "model": "gym"})
    return pd.DataFrame(rows)


def test_the_value_curves_are_read_after_the_untrained_network():
    """Iteration 0 at 2.28 and 0.15 after: over the whole curve each agent's mean is 0.36–0.42, inside "about 50%"
    (0.25–0.75); after the untrained network it is 0.15–0.21, below the band — the claim does not hold there."""
    out = claims.evaluate(_curve("value_heldout_truncated_mre", 2.28, 0.15), paper="CL")
    row = out[(out.claim == "value-off-by-about-half") & (out.level == "")].iloc[0]
    assert row.scope == "paper" and row.verdict == "does not hold"
    assert row.value == pytest.approx(0.15 + 0.03)           # the median agent's mean over iterations 10–90


def test_the_papers_words_decide_a_relative_error_and_the_original_formula_is_an_extension():
    fits = claims.by_key("value-fits-its-target")
    original = claims.by_key("value-fits-its-target-original")
    assert fits.role == "finding" and fits.evidence == "value_heldout_gae_mre_true"
    assert original.role == "extension" and original.evidence == "value_heldout_gae_mre"


def test_the_page_says_what_experiment_a_claim_still_needs():
    from pgdiag.experiments import report

    results = claims.evaluate(_rows(list(np.linspace(0.05, 0.3, 8)), (100, "brax")), paper="CL")
    text = report.page(results, [], {"fig-grad-variance": "x"})
    assert ("holds at 100 of 488 iterations on Brax's hopper (exploratory); the paper's run: 488 iterations; the "
            "paper's models: Gym's. Run fig-grad-variance on the paper's experiment (488 iterations on Gym's models)"
            in text)
    assert "| gradients-poorly-concentrated | **not measured where the paper made it** | hopper ppo:" in text


def test_a_learning_rate_grid_that_peaks_at_its_top_is_flagged():
    """Two toggle combinations, LRs 1e-4 and 3e-4: one scores best at 3e-4 (the grid's top), one at 1e-4."""
    from pgdiag.studies.ablation import TOGGLES, censored

    rows = []
    for combo, best in ((True, 3e-4), (False, 1e-4)):
        for lr in (1e-4, 3e-4):
            for seed in (0, 1):
                rows.append({"seed": seed, **{t: combo for t in TOGGLES}, "lr_policy": lr,
                             "score": 10.0 if lr == best else 5.0})
    note = censored("walker2d", pd.DataFrame(rows))
    assert note.startswith("walker2d: 1 of 2 toggle combinations score best at the grid's largest learning rate "
                           "(0.0003) — censored")
    assert censored("walker2d", pd.DataFrame([r for r in rows if r[TOGGLES[0]] is False])) == ""


def test_another_experiment_is_read_where_the_paper_read_its_own():
    """A Brax run of 100 iterations, each agent at 0.9 at iteration 0 and 0.2 (plus 0.01·agent) after: the
    exploratory reading of a claim about the checkpoints after the initial policy is 0.2 + 0.03 for the median of 7
    agents, not a mean that lets iteration 0 in."""
    rows = []
    for a in range(7):
        for it in (0, 31, 61, 92):
            rows.append({"evidence": "grad_pairwise_at_batch", "task": "hopper", "label": "ppo", "agent": str(a),
                         "value": 0.9 if it == 0 else 0.2 + 0.01 * a, "iteration": it, "progress": it / 100,
                         "lr_share": 1.0, "pairs": 2048.0, "run_iterations": 100, "model": "brax"})
    row = _claim(claims.evaluate(pd.DataFrame(rows), paper="CL"))
    assert row.scope == "exploratory" and row.value == pytest.approx(0.23)


def test_a_scales_true_gradient_follows_the_sizes_a_user_gives():
    """fig-grad-true's smoke scale sizes its true gradient for its own N; a user's sizes up to 1e6 take a truth of
    TRUE_RATIO × 1e6 = 1e7 pairs, unless the user sizes the truth too."""
    from pgdiag.experiments import targets

    sc = targets.get("fig-grad-true").scales["smoke"]
    assert sc.measuring("gradients", "hopper", {"sizes": (100, 1_000_000)})["true_pairs"] == 10_000_000
    assert sc.measuring("gradients", "hopper", {"sizes": (100, 1_000_000), "true_pairs": 2_000_000})["true_pairs"] \
        == 2_000_000
