"""The algorithm study (fig-rewards, table-2, table-3), fig-trust-region and fig-theorem; the runs a scale's
targets share."""

import hashlib
import json
import os
import re
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd
import pytest

from compare import assert_frames_close
from pgdiag import ConfigError, networks, preset, sweep
from pgdiag.cli import main
from pgdiag.experiments import diagnostic_targets, study_dir, targets, training
from pgdiag.studies.gradients import targets as gradients
from pgdiag.studies.presets import targets as presets
from pgdiag.studies.theorem import targets as theorem
from pgdiag.studies.trust_region import targets as trust_region
from pgdiag.studies.value import targets as value
from pgdiag.experiments.scales import Scale
from pgdiag.objectives import normalize_advantages, probability_ratio
from pgdiag.run import CompileCounter

TINY = dict(num_envs=2, steps_per_env=32, num_iterations=6, num_minibatches=4, ppo_epochs=2, value_epochs=2)


@pytest.mark.parametrize("task", ["hopper", "walker2d", "humanoid"])
def test_presets_group_into_two_programs(task):
    groups = training.preset_groups(task)
    assert [[a for a, _ in pts] for _, pts in groups] == [["ppo", "ppo-m", "ppo-noclip"], ["trpo", "trpo+"]]
    for base, points in groups:
        for algo, diff in points:
            # the grid point recreates the preset exactly
            assert base.replace(**diff).knobs == preset(algo, task).knobs
    (_, ppo_points), (_, trpo_points) = groups
    assert dict(ppo_points)["ppo-noclip"]["clip_eps"] == 1e32
    assert dict(trpo_points)["trpo+"]["reward_scaling"] is True


def test_final_and_max_scores_by_hand():
    rows = [{"task": "t", "algorithm": "ppo", "agent": a, "iteration": i, "mean_return": float(10 * a + i)}
            for a in range(2) for i in range(8)]
    m = pd.DataFrame(rows)
    final = presets.agent_scores(m, "final").set_index("agent").score
    assert final[0] == np.mean([3, 4, 5, 6, 7]) and final[1] == 10 + np.mean([3, 4, 5, 6, 7])
    best = presets.agent_scores(m, "max").set_index("agent").score
    assert best[0] == 7 and best[1] == 17
    # an agent diverged from iteration 2 on (its returns NaN): no final score; left out of the mean and counted
    diverged = m.assign(agent=m.agent + 2, mean_return=np.where(m.iteration >= 2, np.nan, m.mean_return))
    summary = presets.summarize(presets.agent_scores(pd.concat([m, diverged]), "final")).iloc[0]
    assert (summary.agents, summary.left_out, summary["mean"]) == (2, 2, 5 + np.mean([3, 4, 5, 6, 7]))


def test_table_2_lays_out_means_cis_aai_acli():
    summary = pd.DataFrame([{"task": "hopper", "algorithm": a, "agents": 5, "mean": m, "ci_low": m - 10,
                             "ci_high": m + 10}
                            for a, m in [("ppo", 2500), ("ppo-m", 2100), ("trpo", 2000), ("trpo+", 2450)]])
    df = presets.table(summary, ("ppo", "ppo-m", "trpo", "trpo+"), with_aai=True).set_index("algorithm")
    assert df.loc["PPO", "hopper"] == "2500 [2490, 2510]"
    assert df.loc["PPO", "hopper (published)"] == "2513 [2391, 2632]"
    assert df.loc["AAI", "hopper"] == "100"      # max(|2500−2450|, |2100−2000|)
    assert df.loc["ACLI", "hopper"] == "450"     # max(|2500−2100|, |2450−2000|)
    assert df.loc["ACLI", "hopper (published)"] == "421"


def _named(runs, *expected):
    """``runs`` ([(name, seeds)]) are ``expected`` ([(task-program, suffix, seeds)]): each name the program's,
    a 10-hex-digit configuration key, then the suffix."""
    assert len(runs) == len(expected), runs
    for (name, seeds), (program, suffix, want) in zip(runs, expected):
        assert re.fullmatch(rf"{program}-[0-9a-f]{{10}}{suffix}", name) and list(seeds) == want, (name, seeds)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("study"))
    metrics, runs = training.train_study("point_mass", 2, out, **TINY)
    _named(runs, ("point_mass-ppo", "", [0, 1]), ("point_mass-trpo", "", [0, 1]))
    return out, metrics


def test_the_paper_scale_comparison_trains_on_gyms_models_and_the_smoke_scale_on_braxs():
    """table-2/table-3/fig-rewards at the paper scale: Gym-v2's models (docs/benchmarks.md, Table 2 under both MuJoCo
    models);
    smoke: Brax's, the default of every other target. Read from the configs alone, nothing compiled."""
    comparison = presets
    for scale, model in (("paper", "gym"), ("smoke", "brax")):
        for task in comparison.SCALES[scale].tasks:
            groups = training.preset_groups(task, **comparison.SCALES[scale].overrides)
            assert {base.static.model for base, _ in groups} == {model}, (scale, task)


def test_study_trains_every_preset_and_reuses_itself(study):
    out, metrics = study
    assert set(metrics.algorithm) == set(presets.ALGORITHM_PRESETS)
    assert metrics.groupby("algorithm").agent.nunique().eq(2).all()
    assert len(os.listdir(out)) == 2
    with CompileCounter() as counter:
        again, _ = training.train_study("point_mass", 2, out, **TINY)
    assert counter.count == 0  # read back from disk
    pd.testing.assert_frame_equal(again.reset_index(drop=True), metrics.reset_index(drop=True))
    # the TRPO line search keeps the mean KL of every accepted step within δ
    trpo = metrics[metrics.algorithm == "trpo"]
    assert (trpo.mean_kl <= preset("trpo", "point_mass").kl_bound * (1 + 1e-4)).all()
    assert np.isnan(trpo.clip_fraction).all() and np.isnan(metrics[metrics.algorithm == "ppo"].step_scale).all()


def test_a_study_adds_seeds_to_its_saved_runs_and_takes_fewer_from_them(study, tmp_path):
    out, metrics = study
    runs = str(tmp_path / "runs")
    os.mkdir(runs)
    for d in os.listdir(out):
        os.symlink(os.path.join(out, d), os.path.join(runs, d))
    # three seeds where seeds 0 and 1 are saved: seed 2 alone is trained, into a run of its own per family
    with CompileCounter() as counter:
        more, added = training.train_study("point_mass", 3, runs, **TINY)
    _named(added, ("point_mass-ppo", "", [0, 1]), ("point_mass-ppo", "-seeds-2", [2]),
           ("point_mass-trpo", "", [0, 1]), ("point_mass-trpo", "-seeds-2", [2]))
    assert [added[1][0], added[3][0]] == [added[0][0] + "-seeds-2", added[2][0] + "-seeds-2"]
    assert counter.count > 0 and all(sorted(set(g.seed)) == [0, 1, 2] for _, g in more.groupby("algorithm"))
    for d in (added[1][0], added[3][0]):
        assert json.load(open(os.path.join(runs, d, "manifest.json")))["seeds"] == [2]
    # the added run is seed 2 as a study of that seed alone trains it: the same compiled programs, so bitwise
    # (that a seed trains alike alone and among others is test_sweep's); seed 1's numbers differ from it
    alone, _ = training.train_study("point_mass", [2], str(tmp_path / "alone"), **TINY)
    key = ["algorithm", "seed", "iteration"]

    def rows(m, seed):
        return m[m.seed == seed].drop(columns=["agent", "seed"]).sort_values(key[::2]).reset_index(drop=True)
    pd.testing.assert_frame_equal(rows(more, 2), rows(alone, 2))
    assert not np.allclose(rows(more, 2).mean_return, rows(more, 1).mean_return)
    # one seed: taken from the saved runs of two, nothing trained
    with CompileCounter() as counter:
        fewer, taken = training.train_study("point_mass", 1, runs, **TINY)
    assert counter.count == 0 and taken == [(added[0][0], [0]), (added[2][0], [0])]
    assert set(fewer.seed) == {0}
    # a study over the pooled runs numbers each task's agents through its runs: 3 per algorithm, none shared
    study_dir.write(str(tmp_path), "algorithms", "smoke", ["point_mass"], algorithms=list(presets.ALGORITHM_PRESETS),
                    **study_dir.runs_entry({"point_mass": added}))
    _, pooled = study_dir.load_runs(str(tmp_path), "algorithms", "table-2")
    per = pooled.groupby(["algorithm", "agent"]).seed.nunique()
    assert per.eq(1).all() and pooled.groupby("algorithm").agent.nunique().eq(3).all()
    assert len(pooled) == len(more)


def _digests(path) -> dict:
    """Every file under ``path`` with the SHA-256 of its bytes: what a directory holds, to show it unchanged."""
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                out[os.path.relpath(os.path.join(root, f), path)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def test_a_run_of_another_configuration_never_takes_a_saved_runs_place(study, tmp_path):
    """Another configuration (a knob: the same compiled programs) trains beside the saved runs, in directories of
    its own key, and leaves theirs byte for byte; a directory of another configuration where a run would go is
    refused, naming it, and left as it is; an interrupted run of the same configuration and seeds is continued,
    to the numbers it would have had."""
    out, metrics = study
    runs = str(tmp_path / "runs")
    shutil.copytree(out, runs)
    saved, before = sorted(os.listdir(runs)), _digests(runs)
    _, other = training.train_study("point_mass", 2, runs, lr_policy=1e-4, **TINY)
    assert len(other) == 2 and {d for d, _ in other}.isdisjoint(saved) and len(os.listdir(runs)) == 4
    assert {k: v for k, v in _digests(runs).items() if k.split(os.sep)[0] in saved} == before
    # the other configuration's PPO run where this configuration's goes: refused before anything trains
    ppo = next(d for d in saved if d.startswith("point_mass-ppo-"))
    blocked = tmp_path / "blocked"
    shutil.copytree(os.path.join(runs, other[0][0]), blocked / ppo)
    held = _digests(blocked)
    with pytest.raises(ConfigError, match=rf"cannot train into '.*{ppo}': it holds a run of another configuration"):
        training.train_study("point_mass", 2, str(blocked), **TINY)
    assert _digests(blocked) == held and os.listdir(blocked) == [ppo]
    # the study's TRPO run marked interrupted: continued in place, to the same numbers
    trpo = next(d for d in saved if d.startswith("point_mass-trpo-"))
    stopped = tmp_path / "stopped"
    shutil.copytree(os.path.join(runs, trpo), stopped / trpo)
    manifest = json.load(open(stopped / trpo / "manifest.json"))
    json.dump({**manifest, "status": "interrupted"}, open(stopped / trpo / "manifest.json", "w"))
    again, taken = training.train_study("point_mass", 2, str(stopped), presets=("trpo", "trpo+"), **TINY)
    assert taken == [(trpo, [0, 1])] and os.listdir(stopped) == [trpo]
    assert json.load(open(stopped / trpo / "manifest.json"))["status"] == "complete"
    mine = metrics[metrics.algorithm.isin(["trpo", "trpo+"])].reset_index(drop=True)[list(again.columns)]
    pd.testing.assert_frame_equal(again.reset_index(drop=True), mine, check_exact=True)
    # the same interrupted run under another digest (its configuration written before a setting was added):
    # continued where it is, not started again beside itself
    renamed = tmp_path / "renamed"
    shutil.copytree(os.path.join(runs, trpo), renamed / "point_mass-trpo-0123456789")
    json.dump({**manifest, "status": "interrupted"}, open(renamed / "point_mass-trpo-0123456789" / "manifest.json", "w"))
    _, taken = training.train_study("point_mass", 2, str(renamed), presets=("trpo", "trpo+"), **TINY)
    assert taken == [("point_mass-trpo-0123456789", [0, 1])] and os.listdir(renamed) == ["point_mass-trpo-0123456789"]


#: a scale like mid (one training for several targets, each measuring what it needs of it) on a cheap task
SHARED = Scale(tasks=("point_mass",), seeds=2, presets=("ppo", "ppo-m", "trpo"),
               overrides={**TINY, "heldout_every": 3, "checkpoint_at": (0, 5)}, measured_at={"gradients": (5,)},
               settings={"gradients": dict(sizes=(100, 1000), estimates=3, true_pairs=4096)},
               description="PPO, PPO-M and TRPO on point_mass, 2 agents each, shared by its targets")


@pytest.fixture
def shared_scale(monkeypatch):
    for module in (value, trust_region, gradients):
        monkeypatch.setitem(module.SCALES, "shared", SHARED)


@pytest.fixture
def trained(monkeypatch):
    """Every training sweep started, as (its run directory, its seeds)."""
    import pgdiag.run
    from pgdiag.experiments import training

    calls, real = [], pgdiag.run.sweep

    def counting(base, grid, seeds, **kw):
        calls.append((kw.get("out") or kw.get("resume"), list(seeds)))
        return real(base, grid, seeds, **kw)
    monkeypatch.setattr(pgdiag.run, "sweep", counting)
    monkeypatch.setattr(training, "sweep", counting)   # where the studies' training calls it
    return calls


def test_targets_of_a_scale_train_each_seed_once_and_share_the_runs(shared_scale, trained, tmp_path):
    from pgdiag.run import load_checkpoint

    root = tmp_path / "results"
    value = targets.get("fig-value").train("shared", out=str(root / "fig-value"), progress=False)
    # the scale's presets trained once: the PPO family (PPO and PPO-M, one program) and TRPO, seeds 0 and 1
    assert [(os.path.dirname(d), s) for d, s in trained] == [(str(root / "runs"), [0, 1])] * 2
    shared = sorted(os.listdir(root / "runs"))
    with CompileCounter() as counter:   # the second target reads them: nothing trained, nothing compiled
        region = targets.get("fig-trust-region").train("shared", out=str(root / "fig-trust-region"), progress=False)
    assert counter.count == 0
    grad = targets.get("fig-grad-variance").train("shared", out=str(root / "gradients"), progress=False)
    assert len(trained) == 2 and sorted(os.listdir(root / "runs")) == shared
    for study in ("fig-value", "fig-trust-region", "gradients"):   # every record points at the same runs
        record = json.load(open(root / study / "study.json"))
        assert sorted(os.path.normpath(root / study / r) for r in record["runs"]["point_mass"]) == \
            [str(root / "runs" / d) for d in shared]
    # each takes its own presets of them: fig-value PPO and TRPO, the trust region PPO-M too, the gradient
    # study PPO and TRPO at the one checkpoint the scale measures
    assert value["metrics"].groupby("algorithm").agent.nunique().to_dict() == {"ppo": 2, "trpo": 2}
    assert region["metrics"].groupby("algorithm").agent.nunique().to_dict() == {"ppo": 2, "ppo-m": 2, "trpo": 2}
    subjects = grad["studies"]["point_mass"].subjects
    assert sorted(zip(subjects.label, subjects.iteration)) == [("ppo", 5)] * 2 + [("trpo", 5)] * 2
    # bitwise the runs a target alone trains with the same seeds
    alone = targets.get("fig-trust-region").train("shared", out=str(tmp_path / "alone" / "fig-trust-region"), progress=False)
    assert len(trained) == 4
    pd.testing.assert_frame_equal(alone["metrics"], region["metrics"], check_exact=True)
    for d in shared:
        for a, b in zip(jax.tree.leaves(load_checkpoint(str(root / "runs" / d), 5)),
                        jax.tree.leaves(load_checkpoint(str(tmp_path / "alone" / "runs" / d), 5))):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # a study beside them measuring the same runs otherwise would change what `gradients` reads: refused
    before = _digests(root / "runs")
    with pytest.raises(ConfigError, match=r"holds the 'gradients' measurement that .*gradients reads.*"
                                          r"estimates: 3 saved, 4 asked"):
        targets.get("fig-grad-variance").train("shared", out=str(root / "gradients-k4"), diag={"estimates": 4},
                          progress=False)
    assert _digests(root / "runs") == before and not (root / "gradients-k4" / "study.json").exists()
    # another configuration beside them: PPO's ε is PPO's alone, so the PPO family trains anew, in a directory
    # of its own, and TRPO's run is the shared one
    other = targets.get("fig-trust-region").train("shared", out=str(root / "fig-trust-region-eps"), progress=False, clip_eps=0.3)
    assert len(trained) == 5 and trained[-1][0].startswith(str(root / "runs" / "point_mass-ppo-"))
    assert len(os.listdir(root / "runs")) == 3 and _digests(root / "runs" / shared[0]) == {
        k.split(os.sep, 1)[1]: v for k, v in before.items() if k.startswith(shared[0] + os.sep)}
    assert other["references"]["point_mass"]["ratio"] == (pytest.approx(1.3),)


def test_the_mid_scale_is_one_training_for_every_closer_look_target():
    """Every target `make closer-look-report SCALE=mid` runs that trains (fig-value, fig-trust-region and the
    diagnostic studies) trains the same configuration — tasks, seeds, presets, settings — so each (preset,
    seed) trains once: at least the claims' 5 agents per preset, PPO-M among them, the papers' 1 × 2,048 steps
    per iteration; each target measures its own presets at checkpoints the runs keep; the plans show two
    training programs between them all."""
    from pgdiag.experiments import claims

    names = targets.of_notebook("closer-look") + ("fig-trust-region",)
    configs = set()
    for name in names:
        t = targets.get(name)
        sc = t.scales["mid"]
        trained = diagnostic_targets.trained_presets(sc, t.presets)
        assert set(t.measured_presets) <= set(trained), name
        configs.add((sc.tasks_of(name), sc.seeds, trained,
                     json.dumps({task: sc.training(task) for task in sc.tasks_of(name)}, sort_keys=True)))
        for iterations in sc.measured_at.values():
            assert set(iterations) <= set(sc.training("hopper")["checkpoint_at"]), name
    (tasks, seeds, trained, _), = configs
    assert tasks == ("hopper",) and seeds >= claims.MIN_AGENTS and trained == ("ppo", "ppo-m", "trpo")
    over = json.loads(next(iter(configs))[3])["hopper"]
    for algo in trained:
        static = preset(algo, "hopper", **over).static
        assert (static.num_envs, static.steps_per_env, static.reset_every_iteration) == (1, 2048, True)
    assert targets.get("fig-theorem").scales["mid"].tasks_of() == ("hopper",)
    sweeps = {p for name in names for p in targets.get(name).dry_run("mid", memory=1 << 40) if p.stage == "train"}
    # fig-no-baseline's variant trains beside the shared sweeps, in a sweep of its own
    assert sorted((p.presets, p.units) for p in sweeps) == [("ppo+ppo-m", 2 * seeds), ("ppo-nobaseline", seeds),
                                                            ("trpo", seeds)]


@pytest.fixture(scope="module")
def algorithms_study(study, tmp_path_factory):
    """The three targets of the algorithms study trained (reusing ``study``'s runs) into one directory."""
    out, _ = study
    target = str(tmp_path_factory.mktemp("algorithms"))
    os.symlink(out, os.path.join(target, "runs"))
    kw = dict(out=target, tasks=("point_mass",), seeds=2, **TINY)
    return (target, targets.get("table-2").train("smoke", **kw), targets.get("table-3").train("smoke", **kw),
            targets.get("fig-rewards").train("smoke", **kw))


def test_tables_and_reward_figure_from_the_study(algorithms_study):
    target, t2, t3, fig = algorithms_study
    assert list(t2["table"].algorithm) == ["PPO", "PPO-M", "TRPO", "TRPO+", "AAI", "ACLI"]
    assert os.path.exists(t2["markdown"]) and os.path.exists(t2["csv"])
    note = open(t2["markdown"]).read()
    assert "95% Student-t interval over agents" in note and "pgdiag's rule" in note
    assert "simultaneous by Bonferroni" in note
    assert list(t3["table"].algorithm) == ["PPO", "PPO-NoClip"]
    assert os.path.getsize(fig["figure"]) > 10_000
    # rliable's aggregates beside each table: every preset, P(X > Y) for each pair, the performance profiles
    agg = t2["aggregates"]
    assert set(agg["table"].algorithm) == {"PPO", "PPO-M", "TRPO", "TRPO+"} and len(agg["improvements"]) == 6
    assert ((agg["improvements"].low <= agg["improvements"].p_improvement)
            & (agg["improvements"].p_improvement <= agg["improvements"].high)).all()
    assert os.path.exists(agg["csv"]) and os.path.getsize(agg["figure"]) > 10_000
    study = json.load(open(os.path.join(target, "study.json")))
    assert study["study"] == "algorithms" and study["tasks"] == ["point_mass"]


def test_tables_and_reward_figure_redraw_from_disk_without_compiling(algorithms_study, tmp_path):
    target, t2, t3, _ = algorithms_study
    with CompileCounter() as counter:
        again2 = targets.get("table-2").redraw(target)
        again3 = targets.get("table-3").redraw(target, out=str(tmp_path))
        fig = targets.get("fig-rewards").redraw(target, out=str(tmp_path))
    assert counter.count == 0
    pd.testing.assert_frame_equal(again2["table"], t2["table"])
    pd.testing.assert_frame_equal(again3["table"], t3["table"])
    assert again3["markdown"] == str(tmp_path / "table-3.md") and os.path.getsize(fig["figure"]) > 10_000


def test_table_cli_from_a_study_with_the_original_reporting_rule(algorithms_study, tmp_path, capsys):
    target, t2, _, _ = algorithms_study
    with CompileCounter() as counter:
        assert main(["table-2", "--from", target, "--out", str(tmp_path), "--reporting", "original"]) == 0
    assert counter.count == 0
    note = (tmp_path / "table-2.md").read_text()
    assert "original code's rule" in note and "mean_return_reference" in note
    four = ("ppo", "ppo-m", "trpo", "trpo+")
    _, metrics = study_dir.load_runs(target, "algorithms", "table-2")
    scores = presets.agent_scores(metrics[metrics.algorithm.isin(four)], reporting="original")
    expected = presets.table(presets.summarize(scores), four, with_aai=True, scores=scores)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "table-2.csv", dtype=str), expected.astype(str))
    # --task redraws a subset of the study's tasks: one it lacks is refused, naming the ones it has
    capsys.readouterr()
    assert main(["table-2", "--from", target, "--out", str(tmp_path), "--task", "hopper"]) == 2
    assert "the study has no hopper; its tasks are point_mass" in capsys.readouterr().err
    # another study's target is refused, naming the directory, what it holds and what is needed
    capsys.readouterr()
    assert main(["fig-trust-region", "--from", target]) == 2
    err = capsys.readouterr().err
    assert target in err and "'algorithms' study" in err and "fig-trust-region --out DIR" in err


def test_reporting_rule_chooses_the_column():
    # the two rules differ: the reference rule dropped an episode in iteration 1 of agent 0
    rows = [{"task": "t", "algorithm": "ppo", "agent": a, "iteration": i, "mean_return": 10.0 * a + i,
             "mean_return_reference": 10.0 * a + i + (100.0 if (a, i) == (0, 1) else 0.0)}
            for a in range(2) for i in range(3)]
    m = pd.DataFrame(rows)
    pg = presets.agent_scores(m, "max").set_index("agent").score
    ref = presets.agent_scores(m, "max", reporting="original").set_index("agent").score
    assert (pg[0], pg[1]) == (2.0, 12.0) and (ref[0], ref[1]) == (101.0, 12.0)
    final = presets.agent_scores(m, "final", reporting="original").set_index("agent").score
    assert final[0] == np.mean([0, 101, 2])
    with pytest.raises(ConfigError, match="reporting"):
        presets.agent_scores(m, reporting="published")
    with pytest.raises(ConfigError, match="mean_return_reference"):
        presets.agent_scores(m.drop(columns="mean_return_reference"), reporting="original")


def test_heldout_batches_on_schedule_and_training_unaffected(tmp_path):
    cfg = preset("ppo", "point_mass", **TINY)
    plain = sweep(cfg, seeds=[0]).metrics
    held = sweep(cfg.replace(heldout_every=4), seeds=[0]).metrics
    measured = np.isfinite(held.heldout_mean_kl.to_numpy())
    np.testing.assert_array_equal(measured, [True, False, False, False, True, False])
    assert np.isnan(plain.heldout_mean_kl).all()
    # the held-out branch makes it another program: equal to float32 rounding (tests/compare.py)
    columns = ["mean_return", "mean_kl", "max_ratio", "value_loss", "episodes"]
    assert_frames_close(held[columns], plain[columns])
    assert (held.heldout_max_ratio[measured] >= 1.0).all()


def test_trust_region_target_end_to_end_with_the_runs_own_reference_lines(tmp_path):
    out = targets.get("fig-trust-region").train("smoke", out=str(tmp_path), tasks=("point_mass",), seeds=2,
                           **{**TINY, "heldout_every": 3, "clip_eps": 0.3})
    assert os.path.getsize(out["figure"]) > 10_000
    s = out["summary"].set_index("algorithm")
    assert set(s.index) == {"PPO", "PPO-M", "TRPO"}
    assert os.path.exists(tmp_path / "summary.csv")
    # the lines are the trained ε and δ, not the preset's ε = 0.2
    delta = preset("trpo", "point_mass").kl_bound
    assert out["references"] == {"point_mass": {"ratio": (pytest.approx(1.3),), "kl_bound": (delta,)}}
    assert list(s["1 + ε"]) == ["1.3"] * 3
    # redrawn from disk alone: no compile, the same summary
    with CompileCounter() as counter:
        again = targets.get("fig-trust-region").redraw(str(tmp_path), out=str(tmp_path / "redraw"))
    assert counter.count == 0
    pd.testing.assert_frame_equal(again["summary"], out["summary"])
    assert again["references"] == out["references"] and os.path.exists(tmp_path / "redraw" / "fig-trust-region.png")


def test_trust_region_lines_for_every_distinct_value():
    """Each agent's line comes from its algorithm's registered constraint: a ratio band 1 + ε (none for a
    disabled clip), a KL bound (TRPO's δ, PPO-KL's d_targ), nothing for VPG."""
    m = pd.DataFrame({"task": "t", "program": ["ppo", "ppo", "ppo", "trpo", "trpo", "ppo-kl", "vpg"],
                      "constraint": ["ratio", "ratio", "ratio", "kl", "kl", "kl", ""],
                      "constraint_value": [0.1, 0.3, 1e32, 0.07, 0.02, 0.005, np.nan]})
    assert trust_region.reference_values(m) == {"t": {"ratio": (1.1, 1.3), "kl_bound": (0.005, 0.02, 0.07)}}


def test_theorem_target_saves_what_the_figure_needs_and_redraws_it(tmp_path):
    out = targets.get("fig-theorem").train("smoke", out=str(tmp_path), steps=6, tasks=("point_mass",))
    saved = json.load(open(tmp_path / "study.json"))
    assert saved["study"] == "theorem" and saved["tasks"] == ["point_mass"] and saved["steps"] == 6
    assert saved["ceiling"] == out["ceiling"] and saved["clip_eps"] == preset("ppo", "point_mass").clip_eps
    with CompileCounter() as counter:
        again = targets.get("fig-theorem").redraw(str(tmp_path), out=str(tmp_path / "redraw"))
        assert main(["fig-theorem", "--from", str(tmp_path), "--out", str(tmp_path / "cli")]) == 0
    assert counter.count == 0
    pd.testing.assert_frame_equal(again["summary"], out["summary"])
    assert (tmp_path / "cli" / "summary.csv").read_text() == (tmp_path / "summary.csv").read_text()
    assert again["first_step_relative_difference"] == out["first_step_relative_difference"]
    assert len(out["summary"]) == len(theorem.OPTIMIZERS) and os.path.exists(tmp_path / "redraw" / "fig-theorem.png")


def _first_step_rounding_bound(params, batch, knobs):
    """A worst-case float32 bound on |∇L^C − ∇L| / |∇L| at θ_old, where the two are equal in exact
    arithmetic. Each is (1/n)·Σ_i Â_i ∇log π_i, summed in float32 by two different compiled programs
    (different fusions and summation orders), so each is within γ·‖Σ_i |Â_i ∇log π_i|‖ of the exact sum,
    γ = (n + p)·2^-24 (Higham's bound for a sum of n terms, each term itself the result of a backward pass
    through a layer of width p ≤ 64). The bound is then 2γ·κ with κ = ‖Σ|x_i|‖ / ‖Σ x_i‖ the sum's
    cancellation ratio, computed here from the per-sample gradients. A first step that were not the
    unclipped one (a clip binding at θ_old) would differ by O(1)."""
    adv = normalize_advantages(batch.advantages)

    def sample_grad(obs, action, old, a):
        def objective(p):
            mean, log_std = networks.policy_apply(p, obs[None], knobs)
            return (probability_ratio(networks.gaussian_log_prob(mean, log_std, action[None]), old[None]) * a)[0]
        return jnp.concatenate([g.ravel() for g in jax.tree.leaves(jax.grad(objective)(params))])

    per_sample = np.asarray(jax.vmap(sample_grad)(batch.obs, batch.action, batch.old_log_prob, adv), np.float64)
    kappa = np.linalg.norm(np.abs(per_sample).sum(0)) / np.linalg.norm(per_sample.sum(0))
    n = per_sample.shape[0]
    return 2 * (n + 64) * 2.0 ** -24 * kappa


def test_theorem_first_step_is_unclipped_and_ratios_escape_while_objective_saturates():
    cfg, params, batch, knobs = theorem.fixed_batch("point_mass")
    eps = cfg.clip_eps
    bound = _first_step_rounding_bound(params, batch, knobs)
    assert bound < 0.1                                           # the check below can tell O(1) apart
    assert theorem.first_step_check(params, batch, knobs, eps) <= bound
    trace = np.asarray(jax.jit(theorem.optimize, static_argnums=(4, 5))(
        params, batch, knobs, eps, optax.adam(3e-2, eps=1e-5), 600))
    ceiling = theorem.clipped_ceiling(batch, eps)
    objective, max_ratio = trace[:, 0] / ceiling, trace[:, 2]
    assert trace[0, 2] == pytest.approx(1.0, abs=1e-5)          # starts at ratio 1
    assert abs(objective[0]) < 1e-5                              # L^C(θ_old) = mean of normalized Â = 0
    assert np.all(objective <= 1.0 + 1e-5)                       # never above its supremum (exact bound)
    # flattening: the second half of the optimization adds less than a quarter of what the first half
    # added (the objective is concave in progress). The theorem says the ratios may then sit anywhere
    # outside [1 − ε, 1 + ε], not that they keep growing (Adam's path through the flat region is not
    # monotone and differs between CPUs): asserted is that they stay far outside it throughout the flat half.
    assert objective[-1] - objective[300] < 0.25 * (objective[300] - objective[0])
    assert max_ratio[300:].min() > 2 * (1 + eps)


def test_clipped_gradient_is_the_unclipped_gradient_of_the_unclipped_samples():
    """CL §5.3's gradient formula, exactly: ∇L^C sums ∇(r·Â) over the samples whose ratio is
    inside [1−ε, 1+ε] or on the side where the clip does not bind (L^C < L per sample), and
    nothing from the rest — checked at a point far from θ_old where many samples are clipped."""
    cfg, params, batch, knobs = theorem.fixed_batch("point_mass")
    eps = cfg.clip_eps
    moved = jax.tree.map(lambda p, g: p + 0.5 * g, params,
                         jax.grad(lambda p: theorem.surrogates(p, batch, knobs, eps)[1])(params))
    _, _, ratio = theorem.surrogates(moved, batch, knobs, eps)
    adv = normalize_advantages(batch.advantages)
    active = ((ratio >= 1 - eps) & (ratio <= 1 + eps)) | (ratio * adv < np.clip(ratio, 1 - eps, 1 + eps) * adv)
    assert 0 < float(np.mean(~active)) < 1  # some samples are clipped, some are not

    def masked_unclipped(p):
        mean, log_std = networks.policy_apply(p, batch.obs, knobs)
        r = probability_ratio(networks.gaussian_log_prob(mean, log_std, batch.action),
                                      batch.old_log_prob)
        return jnp.mean(jnp.where(active, r * adv, 0.0))

    g_clip = jax.grad(lambda p: theorem.surrogates(p, batch, knobs, eps)[0])(moved)
    g_masked = jax.grad(masked_unclipped)(moved)
    for a, b in zip(jax.tree.leaves(g_clip), jax.tree.leaves(g_masked)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
