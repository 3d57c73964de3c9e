"""The claims of Engstrom et al., "Implementation Matters in Deep Policy Gradients" (IM), each where the paper
made it: its tasks, and runs of 500 iterations of 2,000 steps on Gym's models. A score is an agent's own (the mean of
its last five iterations' mean reward); the tables' claims compare two algorithms' agents by θ, the median of A − B
([`pgdiag.stats.shift_interval`][pgdiag.stats.shift_interval]: coverage simulated on skewed and failed-seed
agents). IM's tables report means; θ equals the difference of means only where the algorithms' agents differ by a
shift."""

from __future__ import annotations

import dataclasses

from pgdiag import stats
from pgdiag.experiments.paper_claims import Claim, Scope

_TASKS = ("humanoid", "walker2d", "hopper")
_S3, _S4, _S5 = "IM §3 code-level optimizations", "IM §4 trust regions", "IM §5 algorithms"
#: IM Fig 1 shows Humanoid and Walker2d (CL Fig 1: Humanoid): the toggles' necessity is read on the figure's tasks
_ABLATION = Scope("Fig 1 (Humanoid, Walker2d; CL Fig 1: Humanoid)", ("humanoid", "walker2d"), "whole")
_TABLES = Scope("Tables 2, 3", _TASKS, "whole")
_PAIRED = ("score with {t} minus without, each seed's agents at the LR their combination scores best on the other "
           "seeds, paired by seed and the other toggles, one unit per seed (the mean of its pairs)")


def _toggle(key: str, toggle: str, words: str) -> Claim:
    return Claim(key, "IM", _S3, "§3, Fig 1",
                 f"reward normalization, Adam annealing, and network initialization each [...] were necessary for "
                 f"attaining the highest PPO reward ({words})", f"ablation_{toggle}",
                 _PAIRED.format(t=words), ">", 0.0, "a sign: with it the best-LR score is higher", _ABLATION)


IM_CLAIMS = (
    _toggle("reward-scaling-needed", "reward_scaling", "reward scaling"),
    _toggle("lr-annealing-needed", "lr_annealing", "LR annealing"),
    _toggle("orthogonal-init-needed", "orthogonal_init", "orthogonal initialization"),
    Claim("ratios-leave-region", "IM", _S4, "§4, Figs 2, 3",
          "all three algorithms fail to maintain a ratio-based trust region", "tr_ratio_outside",
          "fraction of iterations whose max ratio on the training batch exceeds 1 + ε (PPO's ε; TRPO read against "
          "PPO's 0.2)", ">", 0.5, "\"fail to maintain\": outside in most iterations",
          Scope("Figs 2, 3", _TASKS, "stepping"), labels=("ppo", "ppo-m", "trpo")),
    Claim("kl-region-kept", "IM", _S4, "§4, Fig 2",
          "both PPO and PPO-M constrain the KL well (compared to the TRPO bound of 0.07)", "tr_mean_kl_over_bound",
          "median over iterations of the mean KL over TRPO's δ on the task", "<", 1.0,
          "kept: below the bound TRPO enforces on the same task", Scope("Figs 2, 3", _TASKS, "after-first"),
          labels=("ppo", "ppo-m"), within="median",
          note="CL (Fig 9) reads PPO-M the other way: \"while PPO constrains the mean KL well, PPO-M does not\""),
    Claim("optimizations-matter-more-than-step", "IM", _S5, "§5, Table 2",
          "varying the use of code-level optimizations impacts performance significantly more than varying "
          "whether the PPO or TRPO step is used", "im_score",
          "the optimizations' main effect over the step's on median agents, min(TRPO+ − PPO-M, PPO − TRPO) "
          "(see pgdiag.stats.OPTIMIZATIONS_OVER_STEP)", ">", 0.0,
          "in the 2 × 2 design c_opt > |c_step| ⇔ both differences > 0", _TABLES, kind="min-difference",
          differences=stats.OPTIMIZATIONS_OVER_STEP),
    Claim("noclip-beats-ppo-m", "IM", _S5, "§5, Table 3",
          "PPO-NOCLIP performs uniformly better than PPO-M, despite the latter employing the core PPO clipping "
          "mechanism", "im_score", "score: PPO-NoClip's median agent minus PPO-M's", ">", 0.0, "a sign", _TABLES,
          kind="groups", labels=("ppo-noclip",), versus="ppo-m"),
    Claim("noclip-matches-ppo", "IM", _S5, "§5, Table 3",
          "with sufficient hyperparameter tuning, PPO-NOCLIP often matches the performance of standard PPO",
          "im_score_relative", "score over PPO's median score: PPO-NoClip's median agent minus PPO's", "within",
          (-0.15, 0.15), "\"matches\": within 15% of PPO's (the published tables: −12.9%, −5.7%, +3.1%; "
          "\"often\": on most tasks)", _TABLES, kind="groups", labels=("ppo-noclip",), versus="ppo"),
)

#: IM's runs (original-code.md §3: the base configuration's T = 2,000 steps × 500 iterations, Gym's v2 models)
PAPERS_RUN = dict(iterations=500, model="gym")
IM_CLAIMS = tuple(dataclasses.replace(c, scope=c.scope.at_papers_run(**PAPERS_RUN)) for c in IM_CLAIMS)

__all__ = ["IM_CLAIMS", "PAPERS_RUN"]
