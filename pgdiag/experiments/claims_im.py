"""The claims of Engstrom et al., "Implementation Matters in Deep Policy Gradients" (IM), each where the paper
made it: its tasks, and runs of 500 iterations of 2,000 steps on Gym's models. A score is an agent's own (the mean of
its last five iterations' mean reward); the tables' claims keep the tables' estimand, the MEAN agent: two algorithms
compared by the difference of their mean agents μ_A − μ_B
([`pgdiag.stats.mean_difference_interval`][pgdiag.stats.mean_difference_interval], the studentized permutation
test of Welch's t inverted), not θ, the median of A − B, which equals it only where the algorithms' agents differ
by a shift. A mean has no place for a failed seed (−inf): such agents are left out and each row says how many. Exact
where the algorithms' agents differ by a shift; where their shapes differ (skew, collapsed seeds in one) the
interval's coverage at 5–16 agents a group falls to 0.85–0.93 (its docstring's table), as Welch's does."""

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
#: the paper's reading: the best configuration with the toggle against the best without
BEST = ("score at the best configuration (toggles and LR) with {t} minus at the best without, both chosen on the "
        "other seeds, one unit per seed")


def toggle_claims(paper: str, family: str, where: str, key: str, toggle: str, words: str, quote: str,
                  scope: Scope) -> tuple:
    """A toggle's Fig 1 claim as the paper reads it (the best configuration with it against the best without,
    [`best_evidence`][pgdiag.studies.ablation.evidence.best_evidence]) and, as an extension, its
    average effect over the other toggles' combinations."""
    return (Claim(key, paper, family, where, quote, f"ablation_best_{toggle}", BEST.format(t=words), ">", 0.0,
                  "a sign: the highest score reached with it is higher than without", scope,
                  note="the papers chose each configuration's rate by its seeds' average (IM: 5 seeds; CL: 3) and "
                       "read the same seeds; here it is chosen on the other seeds, so no seed is scored by a choice "
                       "made on it, and the grid gains a rate above the paper's top where one peaks there"),
            Claim(f"{key}-on-average", paper, family, where, "(the same, as an average effect over the other "
                  "toggles)", f"ablation_{toggle}", _PAIRED.format(t=words), ">", 0.0,
                  "a sign: with it the best-LR score is higher, averaged over the other toggles' combinations",
                  scope, role="extension"))


def _toggle(key: str, toggle: str, words: str) -> tuple:
    return toggle_claims("IM", _S3, "§3, Fig 1", key, toggle, words,
                         f"reward normalization, Adam annealing, and network initialization each [...] were "
                         f"necessary for attaining the highest PPO reward within the tested hyperparameter grid "
                         f"[{words}]", _ABLATION)


#: IM Fig 2 is Humanoid-v2's: the KL's trends are stated of it (its caption; §4's "shown in Figure 2"), while the
#: ratio and KL-region findings cite Fig 3's other tasks too
_FIG2 = ("humanoid",)

IM_CLAIMS = (
    *_toggle("reward-scaling-needed", "reward_scaling", "reward scaling"),
    *_toggle("lr-annealing-needed", "lr_annealing", "LR annealing"),
    *_toggle("orthogonal-init-needed", "orthogonal_init", "orthogonal initialization"),
    Claim("ratios-leave-region", "IM", _S4, "§4, Figs 2, 3",
          "all three algorithms fail to maintain a ratio-based trust region", "tr_ratio_outside",
          "fraction of iterations whose max ratio on the training batch exceeds 1 + ε (PPO's ε; TRPO read against "
          "PPO's 0.2)", ">", 0.5, "\"fail to maintain\": outside in most iterations",
          Scope("Figs 2, 3", _TASKS, "stepping"), labels=("ppo", "ppo-m", "trpo")),
    Claim("kl-region-kept", "IM", _S4, "§4, Fig 2",
          "both PPO and PPO-M constraint [sic] the KL well (compared to the TRPO bound of 0.07)",
          "tr_mean_kl_over_bound",
          "median over iterations of the mean KL over TRPO's δ on the task", "<", 1.0,
          "kept: below the bound TRPO enforces on the same task", Scope("Figs 2, 3", _TASKS, "after-first"),
          labels=("ppo", "ppo-m"), within="median",
          note="CL (Fig 9) reads PPO-M the other way: \"while PPO constrains the mean KL well, PPO-M does not\""),
    Claim("ppo-m-kl-trends-up", "IM", _S4, "§4, Fig 2", "while PPO-M KL trends up as the number of iterations "
          "increases", "tr_kl_trend", "the least-squares slope of log10(mean KL) over the run's progress (per whole "
          "run), iterations after the first", ">", 0.0, "a sign: the mean KL rises over training",
          Scope("Fig 2", _FIG2, "whole"), labels=("ppo-m",)),
    Claim("ppo-kl-falls-after-peak", "IM", _S4, "§4, Fig 2", "PPO KL peaks halfway through training before "
          "trending down again", "tr_kl_fall", "the fall of log10(mean KL), a five-iteration running mean, from its "
          "peak to the run's end", ">", 0.30103, "\"trending down again\": the mean KL at least halves from its "
          "peak (log10 2) — a flat, noisy curve does not (its running mean's fall is its noise's)",
          Scope("Fig 2", _FIG2, "whole"), labels=("ppo",),
          note="PPO's learning rate anneals to 0 over the run, so its steps, and their KL, shrink to nothing at the "
               "end; that an optimization and not the core algorithm shapes the KL is IM's point"),
    Claim("ppo-kl-peaks-halfway", "IM", _S4, "§4, Fig 2", "(the same: where the peak lies)", "tr_kl_peak",
          "the progress at which the running mean of log10(mean KL) peaks", "within", (0.25, 0.75),
          "\"halfway\": in the middle half of the run. Not a finding: a curve without a peak puts its maximum "
          "anywhere, its median agent near the middle", Scope("Fig 2", _FIG2, "whole"), labels=("ppo",),
          role="extension"),
    Claim("optimizations-matter-more-than-step", "IM", _S5, "§5, Table 2",
          "varying the use of code-level optimizations impacts performance significantly more than varying "
          "whether the PPO or TRPO step is used", "im_score",
          "the optimizations' main effect over the step's on mean agents, min(TRPO+ − PPO-M, PPO − TRPO) of the "
          "differences of mean agents (see pgdiag.stats.OPTIMIZATIONS_OVER_STEP)", ">", 0.0,
          "in the 2 × 2 design of mean scores (Table 2's) c_opt > |c_step| ⇔ both differences > 0, an identity of "
          "the means' contrasts", _TABLES, kind="min-mean-difference", differences=stats.OPTIMIZATIONS_OVER_STEP),
    Claim("step-no-impact-with-optimizations", "IM", _S5, "§5, Table 2",
          "for all tasks after fixing the choice to use or not use optimizations, the core algorithm employed does "
          "not seem to have a significant impact on reward", "im_score_relative", "score over PPO's median score: "
          "PPO's mean agent minus TRPO+'s (both with the optimizations)", "within", (-0.15, 0.15),
          "\"no significant impact\": mean scores within 15% of PPO's, the band \"matches\" reads "
          "(noclip-matches-ppo)", _TABLES, kind="means", labels=("ppo",), versus="trpo+"),
    Claim("step-no-impact-without-optimizations", "IM", _S5, "§5, Table 2", "(the same, without the optimizations)",
          "im_score_relative", "score over PPO's median score: PPO-M's mean agent minus TRPO's (both without)",
          "within", (-0.15, 0.15), "the same band", _TABLES, kind="means", labels=("ppo-m",), versus="trpo"),
    Claim("noclip-beats-ppo-m", "IM", _S5, "§5, Table 3",
          "PPO-NOCLIP performs uniformly better than PPO-M, despite the latter employing the core PPO clipping "
          "mechanism", "im_score", "score: PPO-NoClip's mean agent minus PPO-M's", ">", 0.0,
          "a sign, of the difference of mean scores (Table 3's)", _TABLES, kind="means", labels=("ppo-noclip",),
          versus="ppo-m"),
    Claim("noclip-matches-ppo", "IM", _S5, "§5, Table 3",
          "with sufficient hyperparameter tuning, PPO-NOCLIP often matches the performance of standard PPO",
          "im_score_relative", "score over PPO's median score: PPO-NoClip's mean agent minus PPO's", "within",
          (-0.15, 0.15), "\"matches\": mean scores within 15% of PPO's (the published tables' means: −12.9%, −5.7%, "
          "+3.1%; \"often\": on most tasks); the 15% is of PPO's median agent's score, the evidence's unit, which a "
          "failed PPO seed leaves defined (PPO's mean would be −inf) and which differs from PPO's mean only by the "
          "skew of its agents", _TABLES, kind="means", labels=("ppo-noclip",), versus="ppo", holds_on="most"),
)

#: IM's runs (original-code.md §3: the base configuration's T = 2,000 steps × 500 iterations, Gym's v2 models)
PAPERS_RUN = dict(iterations=500, model="gym")
IM_CLAIMS = tuple(dataclasses.replace(c, scope=c.scope.at_papers_run(**PAPERS_RUN)) for c in IM_CLAIMS)

__all__ = ["BEST", "IM_CLAIMS", "PAPERS_RUN", "toggle_claims"]
