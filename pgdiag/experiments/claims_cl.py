"""The claims of Ilyas et al., "A Closer Look at Deep Policy Gradients" (CL; the 2018 text's figure numbers),
each where the paper made it: its figures' tasks, CL's checkpoints 0/150/300/450 of a 488-iteration run, and
its sample sizes (docs/claims.md has the table). Levels on cosines come from [`levels`][pgdiag.experiments.levels]."""

from __future__ import annotations

import dataclasses

from pgdiag.experiments.levels import (NOISE_EQUALS_SIGNAL, NOISE_FOUR_TIMES, largest_gap, pairwise_level, reason,
                                       to_gradient_level)
from pgdiag.experiments.claims_im import toggle_claims
from pgdiag.experiments.paper_claims import Claim, Level, Scope

_TASKS = ("humanoid", "walker2d", "hopper")
_PAIRWISE = pairwise_level(NOISE_EQUALS_SIGNAL)                 # 0.5
_PAIRWISE_FOUR = pairwise_level(NOISE_FOUR_TIMES)               # 0.2
_TO_GRADIENT = to_gradient_level(NOISE_EQUALS_SIGNAL)           # 0.707
_TO_GRADIENT_FOUR = to_gradient_level(NOISE_FOUR_TIMES)         # 0.447
#: where a ratio of two baselines' noise energies has no value (pgdiag.studies.baselines.evidence.RATIO_MIN_COSINE)
_RATIO_UNDEFINED = (f"a ratio is read only where both baselines' mean pairwise cosines are at least "
                    f"{_PAIRWISE_FOUR:.2g}: below it ρ = 1/c − 1 is lost in the noise of the K estimates' cosines")
#: a variance ratio (a baseline's noise energy over another's at one N; both estimate one gradient, so the
#: ratio of their noise-to-signal ratios ρ = 1/c − 1): "marginal" below 1.25 (the noise falls by less than a
#: fifth), "noticeable" from 1.25, "significant" from 2 (halved)
NOTICEABLE, SIGNIFICANT = 1.25, 2.0
#: "marginal" on the figure's axis, the pairwise cosine at one N: a ratio of noise energies is not (it is the same
#: at every N under the levels' model), the cosines' gap is; below this gap the ratio may be under NOTICEABLE
_MARGINAL_GAP = largest_gap(NOTICEABLE)
#: the baseline figures' N axis (CL Fig 5: 0 … 10,000) and the small-sample regime (the vertical line at 2K)
_UP_TO_10K, _AT_2K = (5_000, 20_000), (1_000, 4_100)
#: "several orders of magnitude more samples" than a 2,048-pair batch (CL §5.3; its steps from 1e6 pairs)
_MANY = (200_000, float("inf"))

_S4, _S51, _S52, _S53, _S54 = "CL §4 code-level optimizations", "CL §5.1 gradients and steps", "CL §5.2 value", \
    "CL §5.3 landscapes", "CL §5.4 trust regions"
_GRAD = Scope("Figs 2, 11", _TASKS, "after-first")
_TRUE = Scope("Figs 3, 12", _TASKS, "after-first")
#: the value figures' curves after the untrained network: iteration 0's value network has not been fit yet (its
#: truncated MRE ≈ 2.3 against 0.1–0.3 afterwards), so a level read over the whole curve would be its level
#: the value network on held-out batches (CL Fig 4: Walker2d; Fig 15: the three tasks) and on both (Figs 14, 15)
_VALUE = Scope("Figs 4, 15", _TASKS, "after-first")
_VALUE_BOTH = Scope("Figs 14, 15", _TASKS, "after-first")
#: CL Fig 5 and its "additional plots" (Fig 16) are both captioned Walker2d-v2: the baseline study's one task
_FIG5 = ("walker2d",)
_LAND = Scope("Figs 7, 8, 17–25", _TASKS, "later")

_FIG1 = Scope("Fig 1 (Humanoid)", ("humanoid",), "whole")
_CRUCIAL = "reward normalization, Adam annealing, and network initialization are crucial to obtaining the best " \
           "average reward with PPO [{}]"


def _crucial(key: str, toggle: str, words: str) -> tuple:
    return toggle_claims("CL", _S4, "§4, Fig 1", key, toggle, words, _CRUCIAL.format(words), _FIG1)


CL_CLAIMS = (
    # --- §4: the code-level optimizations (Fig 1, IM Fig 1's Humanoid half) -----------------------------------
    *_crucial("reward-scaling-crucial", "reward_scaling", "reward normalization"),
    *_crucial("lr-annealing-crucial", "lr_annealing", "Adam annealing"),
    *_crucial("orthogonal-init-crucial", "orthogonal_init", "network initialization"),
    # --- §5.1: gradients and steps ------------------------------------------------------------------------
    Claim("gradients-poorly-concentrated", "CL", _S51, "§5.1, Figs 2/11; §6",
          "obtaining tightly concentrated gradient estimates would require significantly more samples than are "
          "used in practice, particularly after the first few timesteps", "grad_pairwise_at_batch",
          "mean pairwise cosine of K estimates at the algorithm's batch size", "<", _PAIRWISE,
          reason(NOISE_EQUALS_SIGNAL), _GRAD,
          stronger=(Level("virtually uncorrelated with each other (§6)", "<", _PAIRWISE_FOUR,
                          reason(NOISE_FOUR_TIMES)),)),
    # Fig 3's caption: the estimation task is the convergence to the true gradient (Fig 12: the other tasks)
    Claim("gradients-worsen-over-training", "CL", _S51, "§5.1, Figs 3/12",
          "the estimation task becomes more difficult further into training", "grad_true_change",
          "mean cosine of the K estimates to the true gradient over the truth's own ceiling at the batch size, the "
          "last checkpoint minus the initial policy's", "<", 0.0,
          "a sign: the estimates at the batch size lie farther from the true gradient later",
          Scope("Figs 3, 12", _TASKS, "whole"),
          undefined="it needs the true gradient resolved at the initial policy and at the last checkpoint: a truth "
                    "whose two halves' cosine (its ceiling) is not above 0 is no truth to read against"),
    Claim("gradients-far-from-true", "CL", _S51, "§5.1, Figs 3/12; §6",
          "although it is possible to obtain empirically estimate the true gradient, this requires several-fold "
          "more samples than are used commonly", "grad_true_at_batch",
          "mean cosine of the K estimates to the true gradient over the truth's own ceiling, at the batch size",
          "<", _TO_GRADIENT, reason(NOISE_EQUALS_SIGNAL, "to-gradient"), _TRUE,
          stronger=(Level("virtually uncorrelated with the true gradient (§6)", "<", _TO_GRADIENT_FOUR,
                          reason(NOISE_FOUR_TIMES, "to-gradient")),)),
    Claim("gradients-need-several-fold-samples", "CL", _S51, "§5.1, Fig 3",
          "this requires several-fold more samples than are used commonly in practical applications",
          "grad_true_samples_ratio", f"N at which the cosine to the true gradient over its ceiling reaches "
          f"{_TO_GRADIENT:.3g} (noise energy = signal's), over the batch size (+inf: not within the grid)", ">",
          3.0, "\"several-fold\": at least 3×", _TRUE),
    Claim("gradients-converge-with-samples", "CL", _S51, "§5.1, Fig 3; §5.3",
          "it is possible to obtain empirically estimate the true gradient", "grad_true_at_largest",
          "mean cosine to the true gradient over its ceiling at the largest N", ">", _TO_GRADIENT,
          f"{reason(NOISE_EQUALS_SIGNAL, 'to-gradient')}: above it the signal outweighs the noise",
          Scope("Fig 3", _TASKS, "after-first", (100_000, float("inf")), "N up to ~1e6 (Fig 3's axis)")),
    Claim("steps-vary", "CL", _S51, "§5.1, Fig 13", "the policy steps do have high empirical variance",
          "step_pairwise", "mean pairwise cosine of M steps from independent batches", "<", _PAIRWISE,
          reason(NOISE_EQUALS_SIGNAL), Scope("Fig 13", _TASKS, "stepping"),
          stronger=(Level("\"hovers around zero\" (Walker2d, Humanoid)", "within", (-0.2, 0.2),
                          "|c| ≤ 0.2: the steps share at most a fifth of their energy", ("walker2d", "humanoid")),)),
    Claim("gradients-harder-on-harder-tasks", "CL", _S51, "§5.1, Figs 2/11",
          "For other tasks – such as Walker2d-v2 and Hopper-v2 – the plots [...] have similar trends, except that "
          "gradient variance is slightly lower", "grad_pairwise_at_batch",
          "mean pairwise cosine at the batch size: Humanoid's median agent minus the easier task's", "<", 0.0,
          "a sign (\"slightly\"): lower concentration on Humanoid", Scope("Figs 2, 11", _TASKS, "after-first"),
          kind="groups", versus="tasks"),
    # --- §5.2: value prediction ---------------------------------------------------------------------------
    # CL's words decide: a mean *relative* error. The original code's "MRE" is the value loss (V − target)² over
    # |target| (ref §4.1 item 3), a quantity in the value's units that grows with the reward scale: an extension
    Claim("value-fits-its-target", "CL", _S52, "§5.2, Figs 4a/15",
          "the validation MRE on the GAE-based value loss (V_old + A_GAE)² (c.f. (17)) is small",
          "value_heldout_gae_mre_true", "held-out mean relative error |V − (V_old + Â)| / |V_old + Â|", "<", 0.25,
          "\"small\": the figures' 2^-4 … 2^-2", _VALUE),
    Claim("value-fits-its-target-original", "CL", _S52, "§5.2, Figs 4a/15", "(the same, as the original code "
          "computes it)", "value_heldout_gae_mre", "held-out GAE \"MRE\" as the original computes it (the value "
          "loss over |target|: in the value's units)", "<", 0.25, "the same level on the original's quantity",
          _VALUE, role="extension"),
    Claim("value-off-by-about-half", "CL", _S52, "§5.2, Figs 4b/15",
          "the returns MRE is still quite high – the learned value function is off by about 50% with respect to "
          "the underlying true value function", "value_heldout_truncated_mre",
          "held-out MRE against the original's returns (cut at the batch end, no bootstrap)", "within",
          (0.25, 0.75), "\"about 50%\": within half of 50% either side, and above the noise floor: the network's "
          "MRE minus V*'s (V^π's on LQR) on the same states and target, above 0", _VALUE,
          floor="value_floor_excess_truncated_mre"),
    Claim("value-off-by-about-half-complete", "CL", _S52, "§5.2, Figs 4b/15", "(the same, against complete "
          "returns)", "value_heldout_returns_mre", "held-out MRE against complete returns (each episode run to "
          "its end)", "within", (0.25, 0.75), "the same band on the target without the truncation's bias", _VALUE,
          role="extension", floor="value_floor_excess_mre"),
    # Fig 14's right column: the returns MRE on the training batch is small too; the gap below says only that
    # the held-out one is larger, which a network fitting neither would show as well
    Claim("value-train-returns-small", "CL", _S52, "§5.2, Fig 14",
          "We observe that the returns MRE is quite small as well (right column) [training set]",
          "value_train_truncated_mre", "training-batch MRE against the original's returns (cut at the batch end, "
          "no bootstrap), every non-terminal state", "<", 0.25,
          "\"quite small as well\": the level `value-fits-its-target` reads \"small\" by, half the \"about 50%\" "
          "the paper calls \"quite high\"", Scope("Fig 14", _TASKS, "after-first")),
    Claim("value-train-small-heldout-large", "CL", _S52, "§5.2, Figs 14/15",
          "We observe that the returns MRE is quite small as well (right column) [training set] [...] the returns "
          "MRE is still quite high [held-out]", "value_returns_generalization",
          "held-out minus training-batch MRE against the original's returns, every non-terminal state of both",
          ">", 0.0, "a sign: the fit to the returns does not carry to unseen states", _VALUE_BOTH),
    Claim("value-not-the-true-value", "CL", _S52, "§5.2, Fig 4",
          "the supervised learning problem induced by (17) does not lead to V learning the underlying true value "
          "function", "value_excess_error", "the agent's network's held-out MSE against complete returns over "
          "V*'s (fit to the returns: the noise floor), minus 1, on chunks not used to stop V*'s fit", ">", 0.0,
          "a sign: worse than the floor the returns' own noise allows (the paper's evidence is the 50% MRE)",
          Scope("Fig 4 (V*: Fig 5's construction)", _TASKS, "after-first"), role="extension"),
    Claim("value-baseline-helps", "CL", _S52, "§5.2, Figs 5/16",
          "employing the value network yields a noticeably larger variance reduction compared to the zero baseline "
          "function", "baseline_variance_ratio_value", "noise energy with returns (zero baseline) over with the "
          "agent's value network, ρ = 1/c − 1 from the pairwise cosines (both ≥ 0.2), at the figure's largest N", ">",
          NOTICEABLE, "\"noticeably\": the noise energy falls by a fifth or more",
          Scope("Figs 5, 16", _FIG5, "after-first", _UP_TO_10K, "N up to 10,000"), undefined=_RATIO_UNDEFINED),
    Claim("value-baseline-marginal-at-2k", "CL", _S52, "§5.2, Figs 5/16",
          "even though this difference is rather marginal in the most relevant, small-sample regime (2K)",
          "baseline_cosine_gap_value", "mean pairwise cosine with the agent's value network minus with returns "
          "(zero baseline), at ~2K pairs", "<", _MARGINAL_GAP,
          f"\"marginal\": below {_MARGINAL_GAP:.3g}, the largest gap a noise-energy ratio under {NOTICEABLE:g} can "
          f"show at any noise level, (√r − 1)/(√r + 1)",
          Scope("Figs 5, 16", _FIG5, "after-first", _AT_2K, "N ≈ 2K")),
    Claim("true-value-baseline-helps-more", "CL", _S52, "§5.2, Figs 5/16",
          "the usage of the true value function leads to a significantly lower-variance estimate of the gradient "
          "as compared to the value network", "baseline_variance_ratio_fitted",
          "noise energy with the agent's network over with V* at ~2K pairs, where V* was shown the better value "
          "function (paired t-test on held-out chunks)", ">", SIGNIFICANT,
          "\"significantly\": V* halves the noise energy (\"especially true in the sample regime in which we "
          "operate\")", Scope("Figs 5, 16", _FIG5, "after-first", _AT_2K, "N ≈ 2K"), undefined=_RATIO_UNDEFINED),
    Claim("no-baseline-order-worse", "CL", _S52, "§5.2",
          "our experiments show that agents trained without a baseline function attain almost an order of magnitude "
          "worse final reward", "nobaseline_score_relative", "final score over PPO's median score: PPO without a "
          "baseline's mean agent minus PPO's", "<", -0.8,
          "\"almost an order of magnitude worse\": the mean agent without a baseline more than 0.8 of PPO's median "
          "score below PPO's mean agent (below a fifth of PPO's where PPO's mean is its median; a tenth would be "
          "−0.9)",
          Scope("§5.2's text (no figure or task named; the task of the baseline study it closes, Figs 5, 16)",
                _FIG5, "whole"), kind="means",
          labels=("ppo-nobaseline",), versus="ppo"),
    # --- §5.3: landscapes -------------------------------------------------------------------------------
    Claim("landscape-noisy-at-small-n", "CL", _S53, "§5.3, Figs 6/26/27",
          "applying our algorithms in this regime makes it impossible to distinguish between good and bad points "
          "in the landscape", "landscape_step_z_small", "|true return at the step's point − at the origin| "
          "(largest N) over that difference's standard error at the smallest N", "<", 1.0,
          "the two points are ordered right by the small-sample estimates with probability < Φ(1) = 0.84",
          Scope("Figs 6, 26, 27", ("humanoid",), "later", (1_000, 4_100), "2K pairs per point"),
          labels=("ppo", "trpo")),
    Claim("landscape-smooth-at-large-n", "CL", _S53, "§5.3, Fig 6",
          "estimating the true reward landscape with a high number of samples yields a relatively smooth reward "
          "landscape", "landscape_noise_ratio_large", "median standard error of a point at the largest N over the "
          "spread of the plane's point means there (their SD less the points' own noise)", "<", 0.5,
          "points two standard errors apart or more are told apart",
          Scope("Fig 6", ("humanoid",), "later", (50_000, float("inf")), "100K pairs per point"),
          labels=("ppo", "trpo")),
    Claim("surrogate-aligned-early", "CL", _S53, "§5.3, Figs 7/8",
          "the early stages of training the optimization landscapes of the true and surrogate reward are indeed "
          "approximately aligned", "landscape_true_step_own", "the true return's change along the step from the "
          "algorithm's own batch, in standard errors", ">", 0.0,
          "a sign: the step that raises the surrogate raises the true reward", Scope("Figs 7, 8, 17–25", _TASKS,
                                                                                     "initial")),
    Claim("surrogate-misleads-later", "CL", _S53, "§5.3, Figs 7/8",
          "we often observe that directions that increase the surrogate reward lead to a decrease of the true "
          "reward", "landscape_true_step_own", "the same, later in training", "<", 0.0,
          "a sign: the step lowers the true reward (\"often\": on most of its tasks and algorithms)", _LAND,
          holds_on="most"),
    Claim("ppo-step-lowers-true-reward-with-many-samples", "CL", _S53, "§5.3, Figs 8/17/18",
          "in the case of PPO (and PPO-M) we consistently observe landscapes where the step direction leads to "
          "lower true reward, even in the high-sample regime", "landscape_true_step_many",
          "the true return's change along a step from several orders of magnitude more pairs, in standard "
          "errors", "<", 0.0, "a sign", Scope("Figs 8, 17, 18, 20, 21, 23, 24", _TASKS, "stepping", _MANY,
                                              "steps from ~1e6 pairs"),
          labels=("ppo", "ppo-m")),
    Claim("trpo-surrogate-tracks-true-with-many-samples", "CL", _S53, "§5.3, Figs 7/19",
          "PPO and TRPO turn out to behave rather differently. In the case of TRPO, the update direction leads to "
          "a surrogate reward that matches the true reward much more closely", "landscape_true_step_many",
          "the true return's change along a many-sample step (which raises the surrogate: the step maximizes it) "
          "in standard errors: TRPO's median agent minus PPO's", ">", 0.0,
          "a contrast: along the direction both surrogates rise, TRPO's true reward rises with it more than PPO's "
          "(the surrogate is in normalized-advantage units: how closely it matches reads off the true reward's "
          "sign and size along the step)",
          Scope("Figs 7, 19, 22, 25 (TRPO); 8, 17, 20, 23 (PPO)", _TASKS, "stepping", _MANY,
                "steps from ~1e6 pairs"), kind="groups",
          labels=("trpo",), versus="ppo"),
    # --- §5.4: trust regions ----------------------------------------------------------------------------
    Claim("ppo-max-ratio-leaves-region", "CL", _S54, "§5.4, Fig 9",
          "the PPO variants' maximum ratios consistently violates the ratio \"trust region\"", "tr_ratio_outside",
          "fraction of iterations whose max ratio on the training batch exceeds 1 + ε", ">", 0.5,
          "\"consistently\": in most iterations", Scope("Fig 9", ("humanoid",), "stepping"),
          labels=("ppo", "ppo-m")),
    Claim("trpo-max-ratio-unbounded", "CL", _S54, "§5.4, Fig 9",
          "despite bounding the maximum of these ratios appearing to be a simpler goal, neither PPO nor TRPO "
          "effectively accomplish this", "tr_ratio_outside", "fraction of iterations whose max ratio on the "
          "training batch exceeds 1.2 (PPO's 1 + ε: TRPO has no ratio bound of its own)", ">", 0.5,
          "\"not effectively\": outside in most iterations, as the PPO variants' (ppo-max-ratio-leaves-region)",
          Scope("Fig 9", ("humanoid",), "stepping"), labels=("trpo",)),
    Claim("max-kl-orders-above-bound", "CL", _S54, "§5.4, Fig 9",
          "in practice, we find that the maximum KL divergence is several orders of magnitude larger than our "
          "enforced bound on mean KL", "tr_max_kl_orders", "median over iterations of log10(max KL / δ), "
          "training batch", ">", 2.0, "\"several orders of magnitude\": at least two",
          Scope("Fig 9", ("humanoid",), "after-first"), labels=("trpo",), within="median"),
    Claim("ppo-constrains-mean-kl", "CL", _S54, "§5.4, Fig 9", "PPO constrains the mean KL well",
          "tr_mean_kl_over_bound", "median over iterations of the mean KL over TRPO's δ on the task", "<", 1.0,
          "kept: below the bound TRPO enforces on the same task", Scope("Fig 9", ("humanoid",), "after-first"),
          labels=("ppo",), within="median"),
    Claim("ppo-m-loses-the-kl-region", "CL", _S54, "§5.4, Fig 9",
          "while PPO constrains the mean KL well, PPO-M does not", "tr_mean_kl_over_bound",
          "median over iterations of the mean KL over TRPO's δ on the task", ">", 1.0,
          "lost: above the bound TRPO enforces on the same task", Scope("Fig 9", ("humanoid",), "after-first"),
          labels=("ppo-m",), within="median",
          note="IM (Fig 2) reads the same plot the other way: \"both PPO and PPO-M constraint [sic] the KL well "
               "(compared to the TRPO bound of 0.07)\" — see IM's kl-region-kept"),
    Claim("ppo-m-kl-above-ppo", "CL", _S54, "§5.4, Fig 9", "while PPO constrains the mean KL well, PPO-M does not",
          "tr_log_mean_kl", "median over iterations of log10(mean KL): PPO-M's median agent minus PPO's", ">",
          0.30103, "at least twice PPO's (log10 2): a KL 1.2× another's is the same constraint, not its loss",
          Scope("Fig 9", ("humanoid",), "after-first"), kind="groups", labels=("ppo-m",), versus="ppo",
          within="median"),
    Claim("trpo-kl-holds-on-heldout", "CL", _S54, "§5.4, Fig 29",
          "the mean-KL constraint does generalize to unseen set of trajectories", "tr_heldout_within_bound",
          "fraction of held-out checks whose mean KL is at most δ", ">", 0.8,
          "\"nearly always stays within the desired mean KL trust region\" (Fig 29); δ is the original code's "
          "0.07 on Humanoid, which Fig 29's caption gives as 0.06 (IM Fig 2: 0.07)",
          Scope("Fig 29", ("humanoid",), "after-first"), labels=("trpo",)),
    # --- Theorem 5.1: checks, not findings ----------------------------------------------------------------
    Claim("theorem-first-step-unclipped", "CL IM", "Theorem 5.1", "Theorem 5.1, §5.4",
          "the first step we take is identical to a maximization step over the unclipped surrogate reward",
          "theorem_first_step", "|∇L^C − ∇L| / |∇L| at θ_old on the batch", "<", 1e-4,
          "float32 rounding of two gradients equal in exact arithmetic (an identity at θ_old)",
          Scope("Theorem 5.1", (), "whole"), kind="exact", role="check"),
    Claim("theorem-ratios-leave-clip", "CL IM", "Theorem 5.1", "Theorem 5.1, §5.4",
          "we can end up moving arbitrarily far from the trust region", "theorem_max_ratio_excess",
          "max ratio after the optimization minus 1 + ε, per optimizer", ">", 0.0,
          "a sign: past the clip (a demonstration on one batch)", Scope("Theorem 5.1", (), "whole"), kind="exact",
          role="check"),
)

#: CL's runs (original-code.md §1: train_steps 488 of t = 2,048 steps, game "Hopper-v2" …): every figure's
#: checkpoints are points of a 488-iteration run on Gym's v2 models; the theorem's checks hold on any batch
PAPERS_RUN = dict(iterations=488, model="gym")
CL_CLAIMS = tuple(c if c.kind == "exact" else dataclasses.replace(c, scope=c.scope.at_papers_run(**PAPERS_RUN))
                  for c in CL_CLAIMS)

__all__ = ["CL_CLAIMS", "NOTICEABLE", "SIGNIFICANT", "PAPERS_RUN"]
