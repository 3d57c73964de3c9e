"""CL §5.2's agents without a baseline: the target trains PPO beside its variant without breaking the shared
sweep, the evidence is each agent's score over PPO's median worked by hand, and the claim reads "almost an order
of magnitude" as a fifth."""

import os

import numpy as np
import pandas as pd
import pytest

from pgdiag.experiments import claims, targets
from pgdiag.studies.no_baseline.evidence import no_baseline_evidence
from pgdiag.studies.no_baseline.targets import SCALES

TINY = dict(num_envs=2, steps_per_env=32, num_iterations=6, num_minibatches=4, ppo_epochs=2, value_epochs=2)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """fig-no-baseline at the replication scale on point_mass, tiny (the scale's shared sweeps — PPO with PPO-M,
    TRPO — then the variant alone): one training for this module."""
    root = tmp_path_factory.mktemp("replication-runs")
    out = targets.get("fig-no-baseline").train("replication", out=str(root / "no-baseline-replication"),
                                               tasks=("point_mass",), seeds=2, progress=False, checkpoint_at=(0,),
                                               **TINY)
    return root, out


def test_tiny_run_trains_ppo_and_the_variant_in_their_own_sweeps_and_redraws(tiny):
    """PPO trains in the scale's shared sweep, the variant in its own; the figure, the scores table and the
    evidence come from the saved study; the variant's agents differ from PPO's (its advantages are the returns),
    on the same seeds."""
    root, out = tiny
    assert os.path.getsize(out["figure"]) > 10_000
    runs = sorted(os.listdir(root / "runs"))
    assert len(runs) == 3 and sum(r.startswith("point_mass-ppo-") for r in runs) == 2
    m = out["metrics"]
    assert set(m.algorithm) == {"ppo", "ppo-nobaseline"} and m.groupby("algorithm").agent.nunique().tolist() == [2, 2]
    ppo, nb = (m[m.algorithm == a].sort_values(["agent", "iteration"]).mean_return.to_numpy() for a in
               ("ppo", "ppo-nobaseline"))
    assert not np.allclose(ppo, nb, equal_nan=True)
    rows = targets.get("fig-no-baseline").read_evidence(str(root / "no-baseline-replication"), [])
    assert {r["label"] for r in rows} == {"ppo", "ppo-nobaseline"}


def test_a_published_part_is_on_the_page_and_a_stale_one_names_its_rerun(tiny, tmp_path, monkeypatch):
    """A part published from the runs: its folder holds the report's tables (evidence read back equal to the
    target's own), a record of host, date, commit and settings, and no report.md; the page lists it with its
    commit and reads its rows (point_mass: another experiment, so not counted). A record whose settings are not
    the part's today is refused with the command that reruns it; publishing again replaces the folder whole."""
    import json

    from pgdiag.config import ConfigError
    from pgdiag.experiments import replication as rep
    from pgdiag.experiments import replication_page

    root, _ = tiny
    part = rep.Part("tiny", ("fig-no-baseline",), "point_mass, tiny")
    monkeypatch.setattr(rep, "PARTS", (part,))
    dest = rep.publish(part, str(root), root=str(tmp_path / "replication"), wall_s=7200.0)
    assert sorted(os.listdir(dest)) == ["cl", "part.json"] and not os.path.exists(os.path.join(dest, "cl", "report.md"))
    record = json.load(open(os.path.join(dest, "part.json")))
    assert record["settings"] == rep.settings(part) and record["wall_s"] == 7200.0
    ev = rep.evidence(str(tmp_path / "replication"))["cl"]
    mine = pd.DataFrame(targets.get("fig-no-baseline").read_evidence(str(root / "no-baseline-replication"), []))
    assert sorted(ev.value) == pytest.approx(sorted(mine.value))
    text = replication_page.page(str(tmp_path / "replication"))
    assert f"`{record['commit'][:10]}`, 2.0 h" in text and "`tiny`" in text
    assert "| `no-baseline-order-worse`" in text and "point_mass ppo-nobaseline − ppo, 2 agents, 6 iterations" in text
    json.dump({**record, "settings": {}}, open(os.path.join(dest, "part.json"), "w"))
    with pytest.raises(ConfigError, match="rerun it: pgdiag replication run tiny"):
        replication_page.page(str(tmp_path / "replication"))
    rep.publish(part, str(root), root=str(tmp_path / "replication"))
    assert json.load(open(os.path.join(dest, "part.json")))["settings"] == rep.settings(part)


def test_scores_over_ppos_median_by_hand():
    """PPO's agents score 100, 200, 400 (median 200); the variant's 20 and −inf (diverged): 0.5, 1, 2 and 0.1,
    −inf."""
    scores = pd.DataFrame({"task": "hopper", "algorithm": ["ppo"] * 3 + ["ppo-nobaseline"] * 2,
                           "agent": [0, 1, 2, 0, 1], "score": [100.0, 200.0, 400.0, 20.0, np.nan]})
    rows = no_baseline_evidence(scores)
    got = {(r["label"], r["agent"]): r["value"] for r in rows}
    assert got == {("ppo", "0"): 0.5, ("ppo", "1"): 1.0, ("ppo", "2"): 2.0, ("ppo-nobaseline", "0"): 0.1,
                   ("ppo-nobaseline", "1"): -np.inf}


@pytest.mark.parametrize("variant, verdict", [(0.1, "holds"), (0.5, "does not hold")])
def test_an_order_of_magnitude_is_read_as_below_a_fifth(variant, verdict):
    """Eight agents each: PPO at 1 ± 0.1 of its median, the variant at a tenth (holds) or a half (does not hold)
    of it; the mean difference −0.9 or −0.5 against the rule < −0.8."""
    claim = claims.by_key("no-baseline-order-worse")
    common = dict(evidence=claim.evidence, task="walker2d", iteration=np.nan, progress=np.nan, lr_share=np.nan,
                  pairs=np.nan, run_iterations=488, model="gym")
    ev = pd.concat([pd.DataFrame(dict(common, label=label, agent=[str(i) for i in range(8)],
                                      value=list(centre + np.linspace(-0.1, 0.1, 8))))
                    for label, centre in (("ppo", 1.0), ("ppo-nobaseline", variant))])
    row = claims.evaluate(ev, claims=[claim]).iloc[0]
    assert row.verdict == verdict and row.value == pytest.approx(variant - 1.0)


def test_the_replication_scale_shares_fig_values_runs():
    """At SCALE=replication PPO trains in the sweep fig-value's replication trains (the same presets, tasks and
    settings), so the variant is the only new training."""
    value = targets.get("fig-value").scales["replication"]
    mine = SCALES["replication"]
    assert mine.presets == value.presets and mine.tasks_of() == value.tasks_of("fig-value")
    assert all(mine.training(t) == value.training(t) for t in mine.tasks_of()) and mine.seeds == value.seeds


def test_the_committed_replication_page_is_what_the_published_parts_give():
    """docs/replication.md is written from replication/*/ alone: the committed page equals what they give now."""
    from pgdiag.experiments import replication as rep
    from pgdiag.experiments import replication_page

    root = os.path.join(os.path.dirname(__file__), "..")
    with open(os.path.join(root, rep.PAGE), encoding="utf-8") as f:
        assert f.read() == replication_page.page(os.path.join(root, rep.ROOT)), \
            "docs/replication.md is not current: run `pgdiag replication page`"


def test_publishing_a_part_that_has_not_run_names_the_command(tmp_path):
    """A part whose studies are not in the run directory: one line naming the command that runs it, nothing
    written."""
    from pgdiag.config import ConfigError
    from pgdiag.experiments import replication as rep

    with pytest.raises(ConfigError, match=r"no 'trust-region' study in .*; run `pgdiag replication run "
                                          r"trust-regions --runs"):
        rep.publish(rep.part("trust-regions"), str(tmp_path / "runs"), root=str(tmp_path / "replication"))
    assert not os.path.exists(tmp_path / "replication" / "trust-regions")
    with pytest.raises(ConfigError, match="unknown replication part 'nope'; parts are: trust-regions"):
        rep.part("nope")
