"""fig-ablation: the analysis (best LR by seed average) on synthetic scores, and a tiny end-to-end run."""

import itertools
import os

import numpy as np
import pandas as pd
import pytest

from pgdiag import ConfigError
from pgdiag.cli import main
from pgdiag.experiments import targets
from pgdiag.studies import ablation
from pgdiag.run import CompileCounter
from pgdiag.studies.ablation import TOGGLES, agent_scores, agents_at_held_out_best_lr


def synthetic_metrics():
    """Two LRs × two seeds × 2^4 combos × 3 iterations, with known per-agent maxima."""
    rows, agent = [], 0
    for combo in itertools.product([False, True], repeat=4):
        code = sum(int(b) << i for i, b in enumerate(combo))
        for lr in (1e-4, 3e-4):
            for seed in (0, 1):
                # max over iterations = 10·code + (lr-dependent part) + seed
                peak = 10 * code + (5 if (lr == 3e-4) == (code % 2 == 0) else 0) + seed
                for it, frac in enumerate([0.2, 1.0, 0.5]):
                    rows.append({"agent": agent, "seed": seed, "iteration": it, "lr_policy": lr,
                                 "mean_return": peak * frac, **dict(zip(TOGGLES, combo))})
                agent += 1
    return pd.DataFrame(rows)


def test_scores_are_max_over_iterations_and_best_lr_by_seed_average():
    scores = ablation.agent_scores(synthetic_metrics())
    assert len(scores) == 64
    best = ablation.best_learning_rates(scores)
    assert len(best) == 16
    for _, row in best.iterrows():
        code = sum(int(row[t]) << i for i, t in enumerate(TOGGLES))
        expected_lr = 3e-4 if code % 2 == 0 else 1e-4  # the +5 goes to this LR
        assert row.lr_policy == expected_lr
        assert row.mean_score == 10 * code + 5 + 0.5  # seeds add 0 and 1
    selected = ablation.agents_at_best_lr(scores)
    assert len(selected) == 32  # 2 seeds × 16 combinations
    effects = ablation.toggle_effects(selected).set_index("toggle")
    # value_clipping is bit 0 of the code: on adds 10 to every score
    assert effects.loc["value_clipping", "difference"] == 10.0
    assert effects.loc["lr_annealing", "difference"] == 80.0


def test_held_out_selection_removes_the_in_sample_bias_of_the_best_learning_rate():
    """No toggle and no learning rate moves any mean score (all 0); value clipping raises the noise from
    sd 0.5 to sd 2 (independent normal scores, 5 seeds × 16 combinations × 4 LRs). In-sample, each
    combination's score is the maximum over 4 LRs of a 5-seed mean, N(0, σ²/5) each: its expectation is
    E[max of 4 N(0, 1)] · σ/√5 = 1.029375·σ/√5, so the apparent effect is 1.029375 · 1.5/√5 = 0.6905 where
    the true one is 0. Each seed's score at the LR the other seeds chose is independent of the choice, so
    the held-out effect's expectation is exactly 0. Over 200 simulated ablations (each one unit: the mean
    of its 5 per-seed effects from evidence.ablation_evidence), both means lie within 4 standard errors of
    these values: a false failure has probability < 1.3e-4 (two normal tails at 4σ, twice)."""
    from pgdiag.studies.ablation import evidence

    rng = np.random.default_rng(7)
    combos = list(itertools.product([False, True], repeat=4))
    frame = pd.DataFrame([{"seed": s, **dict(zip(TOGGLES, c)), "lr_policy": lr}
                          for s in range(5) for c in combos for lr in (1e-5, 8e-5, 1.5e-4, 2.2e-4)])
    sd = np.where(frame["value_clipping"], 2.0, 0.5)
    effects = {"in-sample": [], "held-out": []}
    for _ in range(200):
        scores = frame.assign(score=rng.normal(0.0, sd))
        for kind, select in (("in-sample", ablation.agents_at_best_lr),
                             ("held-out", ablation.agents_at_held_out_best_lr)):
            selected = select(scores)
            assert len(selected) == 5 * 16 and selected.groupby("seed").size().eq(16).all()
            rows = evidence.ablation_evidence({"t": selected}, TOGGLES)
            effects[kind].append(np.mean([r["value"] for r in rows if r["evidence"] == "ablation_value_clipping"]))
    for kind, expected in (("in-sample", 1.029375 * 1.5 / np.sqrt(5)), ("held-out", 0.0)):
        e = np.asarray(effects[kind])
        assert abs(e.mean() - expected) < 4 * e.std(ddof=1) / np.sqrt(len(e)), (kind, e.mean(), expected)


def test_tiny_end_to_end_ablation_writes_the_figure(tmp_path):
    out = targets.get("fig-ablation").train("smoke", out=str(tmp_path), tasks=("point_mass",), seeds=1, num_envs=2, steps_per_env=32,
                       num_iterations=2, num_minibatches=4, ppo_epochs=2, value_epochs=2)
    assert os.path.getsize(out["figure"]) > 10_000
    result = out["runs"]["point_mass"]
    assert result.num_agents == 16 * 4
    assert result.manifest["timings"]["compiles"] == 2
    best, effects = out["tables"]["point_mass"]
    assert len(best) == 16 and set(effects.toggle) == set(TOGGLES)
    assert os.path.exists(tmp_path / "point_mass" / "metrics.parquet")
    assert np.isfinite(best.mean_score).all()
    # rliable's aggregates of each toggle on and off: P(on > off) is the Mann–Whitney fraction of (on, off) pairs
    agg = out["aggregates"]
    assert len(agg["table"]) == 8 * 4 and os.path.getsize(agg["figure"]) > 10_000
    held = agents_at_held_out_best_lr(agent_scores(result.metrics))
    on, off = (held[held.value_clipping == v].score.to_numpy() for v in (True, False))
    by_hand = np.mean((on[:, None] > off[None, :]) + 0.5 * (on[:, None] == off[None, :]))
    got = agg["improvements"].set_index("x").loc["value_clipping on"]
    assert got.p_improvement == pytest.approx(by_hand, abs=1e-12) and got.low <= by_hand <= got.high
    # the figure and tables are a function of the saved study: redrawn without compiling, the same tables
    with CompileCounter() as counter:
        again = targets.get("fig-ablation").redraw(str(tmp_path), out=str(tmp_path / "redraw"))
        assert main(["fig-ablation", "--from", str(tmp_path)]) == 0
    assert counter.count == 0
    pd.testing.assert_frame_equal(again["tables"]["point_mass"][0], best)
    pd.testing.assert_frame_equal(again["tables"]["point_mass"][1], effects)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "redraw" / "effects_point_mass.csv"), effects,
                                  check_dtype=False)  # float32 scores, written in their shortest form
    assert os.path.getsize(tmp_path / "redraw" / "fig-ablation.png") > 10_000
    # the ablation's directory is refused by the other targets, before anything is compiled
    with pytest.raises(ConfigError, match="'ablation' study"):
        targets.get("fig-trust-region").redraw(str(tmp_path))


def test_mid_scale_is_the_papers_shape_with_enough_seeds_and_learning_rates():
    """Hopper, the papers' PPO base (1 × 2,048 steps reset every iteration, 32 minibatches × 10 epochs, value LR
    1e-4, ε 0.2) for the mid training's 100 iterations; ≥ 5 seeds per cell (the claims' units) and ≥ 2 of IM's
    learning rates (each seed's agents are read at the LR the other seeds chose): 16 × LRs × seeds agents."""
    from pgdiag.experiments import claims
    from pgdiag.experiments.scales import MID_TRAINING
    from pgdiag.run import roster

    scale = ablation.SCALES["mid"]
    lrs = scale.settings["grid"]["lr_policy"]
    assert scale.tasks == ("hopper",) and scale.seeds >= claims.MIN_AGENTS
    assert 2 <= len(lrs) and set(lrs) <= set(ablation.LEARNING_RATES)
    p = roster(ablation.base_config("hopper", scale), ablation.grid(scale), seeds=scale.seeds)
    assert p.num_agents == 16 * len(lrs) * scale.seeds
    cfg = p.configs[0]
    assert (cfg.steps_per_env, cfg.num_envs, cfg.num_minibatches, cfg.ppo_epochs) == (2048, 1, 32, 10)
    assert cfg.num_iterations == MID_TRAINING["overrides"]["num_iterations"]
    assert cfg.lr_value == 1e-4 and cfg.clip_eps == 0.2 and cfg.reset_every_iteration
    assert sorted({c.lr_policy for c in p.configs}) == sorted(lrs)
    assert {tuple(c.get(t) for t in TOGGLES) for c in p.configs} == set(itertools.product([False, True], repeat=4))


def test_paper_scale_matches_the_original_grid():
    """ref §3: Humanoid and Walker2d; LR {1e-5, 8e-5, 1.5e-4, 2.2e-4}; 5 seeds; 320 agents per task."""
    from pgdiag.run import roster

    scale = ablation.SCALES["paper"]
    assert scale.tasks == ("humanoid", "walker2d")
    for task in scale.tasks:
        p = roster(ablation.base_config(task, scale), ablation.grid(scale), seeds=scale.seeds)
        assert p.num_agents == 320
        cfg = p.configs[0]
        assert (cfg.steps_per_env, cfg.num_envs, cfg.num_minibatches, cfg.ppo_epochs) == (2048, 1, 32, 10)
        assert cfg.lr_value == 1e-4 and cfg.clip_eps == 0.2 and cfg.reset_every_iteration
        assert sorted({c.lr_policy for c in p.configs}) == [1e-5, 8e-5, 1.5e-4, 2.2e-4]
