"""solver-compare: the side-by-side verdicts worked by hand, and refusals."""

import numpy as np
import pytest

from pgdiag.config import ConfigError
from pgdiag.experiments import targets
from pgdiag.studies.solver_compare import targets as sc


def test_the_table_sets_the_verdicts_side_by_side():
    effects = {"converged": {("hopper", "value_clipping"): (-50.0, -90.0, -10.0),    # < 0
                             ("hopper", "reward_scaling"): (200.0, 150.0, 250.0),    # > 0
                             ("hopper", "lr_annealing"): (-5.0, -20.0, 10.0)},       # ≈ 0
               "fast": {("hopper", "value_clipping"): (10.0, -30.0, 50.0),     # ≈ 0: disagrees, CIs still overlap
                        ("hopper", "reward_scaling"): (40.0, 20.0, 60.0),      # > 0: agrees, CIs apart
                        ("hopper", "lr_annealing"): (8.0, -4.0, 30.0)}}        # ≈ 0 whatever the sign: agrees
    # optimizations over step, min(TRPO+ − PPO-M, PPO − TRPO): converged min(800, 1100) = 800; fast
    # min(2450 − 2500, 2400 − 2000) = −50. Four agents each at m + (−10, −5, 5, 10): each difference's standard
    # error is √(2 · 83.3 / 4) = 6.45 on 6 d.f., its Bonferroni half-width t(0.9875, 6) · 6.45 = 2.969 · 6.45
    # = 19.2 — so 800 [781, 819] > 0 and −50 [−69, −31] < 0: the verdicts disagree
    conv = {"ppo": 3000, "ppo-m": 2000, "trpo": 1900, "trpo+": 2800}
    fast = {"ppo": 2400, "ppo-m": 2500, "trpo": 2000, "trpo+": 2450}
    scores = {"converged": {("hopper", a): (m, m - 100, m + 100) for a, m in conv.items()},
              "fast": {("hopper", a): (m, m - 100, m + 100) for a, m in fast.items()}}
    spread = np.array([-10.0, -5.0, 5.0, 10.0])
    agents = {s: {("hopper", a): m + spread for a, m in means.items()}
              for s, means in (("converged", conv), ("fast", fast))}
    df = sc.compare(effects, scores, agents).set_index("quantity")
    assert df.loc["effect of value_clipping", "agree"] == False and df.loc["effect of value_clipping", "CIs overlap"]  # noqa: E712
    assert df.loc["effect of reward_scaling", "agree"] == True and not df.loc["effect of reward_scaling", "CIs overlap"]  # noqa: E712
    assert df.loc["effect of reward_scaling", "converged"] == "200 [150, 250] > 0"
    assert df.loc["effect of value_clipping", "converged"] == "-50 [-90, -10] < 0"
    assert df.loc["effect of lr_annealing", "agree"] == True  # noqa: E712
    assert df.loc["ranking", "converged"] == "PPO > TRPO+ > PPO-M > TRPO"
    assert df.loc["ranking", "fast"] == "PPO-M > TRPO+ > PPO > TRPO" and df.loc["ranking", "agree"] == False  # noqa: E712
    assert df.loc["optimizations over step", "converged"] == "800 [781, 819] > 0"
    assert df.loc["optimizations over step", "fast"] == "-50 [-69, -31] < 0"
    assert df.loc["optimizations over step", "agree"] == False  # noqa: E712
    # ±100 CIs: TRPO 1900 vs 2000 share [1900, 2000]; the others are ≥ 350 apart
    assert df.loc["TRPO", "CIs overlap"] == True  # noqa: E712
    assert not any(df.loc[a, "CIs overlap"] for a in ("PPO", "PPO-M", "TRPO+"))


def test_solver_compare_chooses_the_solver_itself():
    with pytest.raises(ConfigError, match="do not set solver"):
        targets.get("solver-compare").train("smoke", out="unused", solver="fast")


def test_the_cli_redraws_only_a_solver_compare_study(tmp_path, capsys):
    from pgdiag.cli import main

    assert main(["solver-compare", "--from", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"solver-compare --from {str(tmp_path)!r}: the directory holds no study" in err
    assert main(["solver-compare", "--from", str(tmp_path), "--seeds", "3"]) == 2
    assert "--seeds chooses what to train" in capsys.readouterr().err
