"""solver-compare: the side-by-side verdicts worked by hand, the bootstrap CI of a difference, and refusals."""

import numpy as np
import pytest

from pg_diag.config import ConfigError
from pg_diag.experiments import targets
from pg_diag.experiments.studies import solver_compare as sc


def test_difference_ci_of_constant_groups_is_exact_and_of_noisy_ones_covers_the_truth():
    assert sc.difference_ci([5, 5, 5], [2, 2]) == (3.0, 3.0, 3.0)
    assert all(np.isnan(sc.difference_ci([1.0], [np.nan])))
    # N(1, 1) vs N(0, 1), 400 each: the difference's standard error is 0.0707, so the 95% CI is about
    # ±0.14 around the sample difference; it covers 1 unless the sample is off by > 2 SE (seeded; P ≈ 5%
    # for a random seed, fixed here)
    rng = np.random.default_rng(3)
    d, lo, hi = sc.difference_ci(rng.normal(1, 1, 400), rng.normal(0, 1, 400))
    assert lo < 1 < hi and 0.2 < hi - lo < 0.36


def test_the_table_sets_the_verdicts_side_by_side():
    effects = {"converged": {("hopper", "value_clipping"): (-50.0, -90.0, -10.0),    # < 0
                             ("hopper", "reward_scaling"): (200.0, 150.0, 250.0),    # > 0
                             ("hopper", "lr_annealing"): (-5.0, -20.0, 10.0)},       # ≈ 0
               "fast": {("hopper", "value_clipping"): (10.0, -30.0, 50.0),     # ≈ 0: disagrees, CIs still overlap
                        ("hopper", "reward_scaling"): (40.0, 20.0, 60.0),      # > 0: agrees, CIs apart
                        ("hopper", "lr_annealing"): (8.0, -4.0, 30.0)}}        # ≈ 0 whatever the sign: agrees
    # converged: PPO 3000 > TRPO+ 2800 > PPO-M 2000 > TRPO 1900: ACLI = max(1000, 900) = 1000,
    # AAI = max(200, 100) = 200 → ACLI > AAI. fast: PPO-M 2500 first, AAI = max(|2400−2450|, |2500−2000|) = 500,
    # ACLI = max(|2400−2500|, |2450−2000|) = 450 → ACLI ≤ AAI
    conv = {"ppo": 3000, "ppo-m": 2000, "trpo": 1900, "trpo+": 2800}
    fast = {"ppo": 2400, "ppo-m": 2500, "trpo": 2000, "trpo+": 2450}
    scores = {"converged": {("hopper", a): (m, m - 100, m + 100) for a, m in conv.items()},
              "fast": {("hopper", a): (m, m - 100, m + 100) for a, m in fast.items()}}
    df = sc.compare(effects, scores).set_index("quantity")
    assert df.loc["effect of value_clipping", "agree"] == False and df.loc["effect of value_clipping", "CIs overlap"]  # noqa: E712
    assert df.loc["effect of reward_scaling", "agree"] == True and not df.loc["effect of reward_scaling", "CIs overlap"]  # noqa: E712
    assert df.loc["effect of reward_scaling", "converged"] == "200 [150, 250] > 0"
    assert df.loc["effect of value_clipping", "converged"] == "-50 [-90, -10] < 0"
    assert df.loc["effect of lr_annealing", "agree"] == True  # noqa: E712
    assert df.loc["ranking", "converged"] == "PPO > TRPO+ > PPO-M > TRPO"
    assert df.loc["ranking", "fast"] == "PPO-M > TRPO+ > PPO > TRPO" and df.loc["ranking", "agree"] == False  # noqa: E712
    assert df.loc["ACLI vs AAI", "converged"] == "ACLI 1000 > AAI 200"
    assert df.loc["ACLI vs AAI", "fast"] == "ACLI 450 ≤ AAI 500" and df.loc["ACLI vs AAI", "agree"] == False  # noqa: E712
    # ±100 CIs: TRPO 1900 vs 2000 share [1900, 2000]; the others are ≥ 350 apart
    assert df.loc["TRPO", "CIs overlap"] == True  # noqa: E712
    assert not any(df.loc[a, "CIs overlap"] for a in ("PPO", "PPO-M", "TRPO+"))


def test_solver_compare_chooses_the_solver_itself():
    with pytest.raises(ConfigError, match="do not set solver"):
        targets.get("solver-compare").train("smoke", out="unused", solver="fast")


def test_the_cli_redraws_only_a_solver_compare_study(tmp_path, capsys):
    from pg_diag.cli import main

    assert main(["solver-compare", "--from", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"solver-compare --from {str(tmp_path)!r}: the directory holds no study" in err
    assert main(["solver-compare", "--from", str(tmp_path), "--seeds", "3"]) == 2
    assert "--seeds choose what to train" in capsys.readouterr().err
