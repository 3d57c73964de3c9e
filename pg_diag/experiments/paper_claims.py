"""The claims of both papers as data: each quotes the paper's sentence (section and figure), names the evidence
series it is tested on, and states its rule, its threshold and why that threshold. How a claim is tested, and
what its verdicts mean, is :mod:`.claims`."""

from __future__ import annotations

import dataclasses

from pg_diag import stats

#: how a claim is tested (:mod:`.claims`): the median agent, two groups of agents, the smallest of several
#: differences, or a deterministic check of a theorem
KINDS = ("agents", "groups", "min-difference", "exact")


@dataclasses.dataclass(frozen=True)
class Claim:
    key: str
    paper: str          # the reports it belongs to: "CL", "IM" or both ("CL IM")
    where: str          # section and figure
    quote: str          # the paper's own sentence
    evidence: str       # the evidence series tested
    statistic: str      # what one unit's value is
    test: str           # "<", ">" or "within"
    threshold: object   # a number, or (low, high) for "within"
    reason: str         # why this threshold
    kind: str = "agents"
    labels: tuple = ()  # the algorithms the claim is about (empty: every measured one)
    versus: str = ""    # groups: the second group's label ("tasks": hardest vs easiest measured task)
    tasks: tuple = ()   # the tasks the paper states it for (empty: every measured one)
    differences: tuple = ()  # min-difference: the (a, b) pairs of labels

    def rule(self) -> str:
        if self.test == "within":
            return f"within [{self.threshold[0]:g}, {self.threshold[1]:g}]"
        return f"{self.test} {self.threshold:g}"


_STRONG = "pairwise cosine c of two independent estimates ≈ |g|²/(|g|² + tr Σ/N): below 0.5 the noise's energy " \
          "exceeds the signal's"
_VIRTUAL = "c ≤ 0.2 means the noise carries ≥ 4× the signal's energy (c ≈ |g|²/(|g|² + tr Σ/N))"

CLAIMS = (
    # --- CL §5.1: gradient estimates ------------------------------------------------------------------------
    Claim("gradients-poorly-concentrated", "CL", "§5.1, Fig 2/11",
          "obtaining tightly concentrated gradient estimates would require significantly more samples than are "
          "used in practice, particularly after the first few timesteps", "grad_pairwise_at_batch",
          "mean pairwise cosine of K estimates at the algorithm's batch size, checkpoints after the first",
          "<", 0.5, _STRONG),
    Claim("gradients-virtually-uncorrelated", "CL", "§6, Fig 2",
          "such gradient estimates are often virtually uncorrelated [...] with each other (c.f. Figure 2)",
          "grad_pairwise_at_batch", "mean pairwise cosine at the batch size, checkpoints after the first",
          "<", 0.2, _VIRTUAL),
    Claim("gradients-worsen-over-training", "CL", "§5.1, Fig 2/3",
          "the estimation task becomes more difficult further into training", "grad_pairwise_change",
          "mean pairwise cosine at the batch size, last checkpoint minus first", "<", 0.0,
          "a sign: concentration falls"),
    Claim("gradients-far-from-true", "CL", "§5.1, Fig 3/12",
          "although it is possible to obtain empirically estimate the true gradient, this requires several-fold "
          "more samples than are used commonly", "grad_true_at_batch",
          "mean cosine of the K estimates to the true gradient at the batch size, checkpoints after the first",
          "<", 0.5, _STRONG),
    Claim("gradients-virtually-uncorrelated-with-true", "CL", "§6, Fig 3",
          "such gradient estimates are often virtually uncorrelated with the true gradient (c.f. Figure 3)",
          "grad_true_at_batch", "mean cosine to the true gradient at the batch size, checkpoints after the first",
          "<", 0.2, _VIRTUAL),
    Claim("gradients-need-several-fold-samples", "CL", "§5.1, Fig 3",
          "this requires several-fold more samples than are used commonly in practical applications",
          "grad_true_samples_ratio", "N at which the mean cosine to the true gradient reaches 0.5, over the batch "
          "size (+inf: not within the grid), checkpoints after the first", ">", 3.0,
          "\"several-fold\": at least 3×"),
    Claim("gradients-converge-with-samples", "CL", "§5.1, Fig 3",
          "it is possible to obtain empirically estimate the true gradient", "grad_true_at_largest",
          "mean cosine to the true gradient at the largest N, checkpoints after the first", ">", 0.5, _STRONG),
    Claim("steps-vary", "CL", "§5.1, Fig 13", "the policy steps do have high empirical variance",
          "step_pairwise", "mean pairwise cosine of M steps from independent batches, checkpoints after the first",
          "<", 0.5, _STRONG),
    Claim("steps-hover-around-zero", "CL", "§5.1, Fig 13",
          "on the Walker2d and Humanoid MuJoCo tasks, for example, the mean pairwise cosine similarity between "
          "steps often hovers around zero", "step_pairwise", "mean pairwise step cosine, checkpoints after the "
          "first", "within", (-0.2, 0.2), "|c| ≤ 0.2: the steps share at most a fifth of their energy",
          tasks=("walker2d", "humanoid")),
    Claim("gradients-harder-on-harder-tasks", "CL", "§5.1, Fig 2/11",
          "For other tasks – such as Walker2d-v2 and Hopper-v2 – the plots have similar trends, except that "
          "gradient variance is slightly lower", "grad_pairwise_at_batch",
          "mean pairwise cosine at the batch size: the hardest measured task's agents minus the easiest's",
          "<", 0.0, "a sign: lower concentration on the more complex task", kind="groups", versus="tasks"),
    # --- CL §5.2: value prediction --------------------------------------------------------------------------
    Claim("value-fits-its-target", "CL", "§5.2, Fig 4a/15",
          "the validation MRE on the GAE-based value loss (V_old + A_GAE)² (c.f. (17)) is small",
          "value_heldout_gae_mre", "held-out MRE against the GAE target, second half of training", "<", 0.25,
          "\"small\": at most half the \"about 50%\" the paper reads against the returns"),
    Claim("value-off-by-about-half", "CL", "§5.2, Fig 4b/15",
          "the returns MRE is still quite high – the learned value function is off by about 50% with respect to "
          "the underlying true value function", "value_heldout_returns_mre",
          "held-out MRE against complete returns, second half of training", "within", (0.25, 0.75),
          "\"about 50%\": within half of 50% either side"),
    Claim("value-off-by-about-half-truncated", "CL", "§5.2, Fig 4b/15",
          "the learned value function is off by about 50% with respect to the underlying true value function",
          "value_heldout_truncated_mre", "held-out MRE against returns cut at the batch end without bootstrapping "
          "(the original code's target), second half of training", "within", (0.25, 0.75),
          "the same band, read with the original's truncated returns: where the paper's 50% may come from"),
    Claim("value-train-small-heldout-large", "CL", "§5.2, Fig 14/15",
          "We observe that the returns MRE is quite small as well (right column) [training set] [...] the returns "
          "MRE is still quite high (held-out)", "value_returns_generalization",
          "held-out minus training-batch MRE against the returns, second half of training", ">", 0.0,
          "a sign: the fit to the returns does not carry to unseen states"),
    Claim("value-not-the-true-value", "CL", "§5.2, Fig 4",
          "the supervised learning problem induced by (17) does not lead to V learning the underlying true value "
          "function", "value_excess_error", "the agent's network's held-out MSE against complete returns over "
          "V*'s (a network fit to the returns: the noise floor), minus 1", ">", 0.0,
          "a sign: worse than the floor the returns' own noise allows"),
    Claim("value-baseline-helps", "CL", "§5.2, Fig 5/16",
          "employing the value network yields a noticeably larger variance reduction compared to the zero baseline "
          "function, even though this difference is rather marginal in the most relevant, small-sample regime",
          "baseline_value_vs_zero", "mean pairwise cosine with the agent's value network minus with returns "
          "(zero baseline), at the largest N", ">", 0.0, "a sign: the value network concentrates the estimates"),
    Claim("true-value-baseline-helps-more", "CL", "§5.2, Fig 5/16",
          "the usage of the true value function leads to a significantly lower-variance estimate of the gradient "
          "as compared to the value network", "baseline_fitted_vs_value",
          "mean pairwise cosine at the batch size with V* minus with the agent's network; only subjects where V* "
          "was shown better than the agent's network (paired t-test on held-out chunks)", ">", 0.0,
          "a sign, read only where V* is shown to be the better value function"),
    # --- CL §5.3: landscapes --------------------------------------------------------------------------------
    Claim("landscape-noisy-at-small-n", "CL", "§5.3, Fig 6/26/27",
          "applying our algorithms in this regime makes it impossible to distinguish between good and bad points "
          "in the landscape", "landscape_noise_ratio", "median standard error of a point at the smallest N over "
          "the spread (SD) of the point means at the largest N", ">", 1.0,
          "points cannot be told apart when a point's noise exceeds the spread between points"),
    Claim("landscape-smooth-at-large-n", "CL", "§5.3, Fig 6",
          "estimating the true reward landscape with a high number of samples yields a relatively smooth reward "
          "landscape", "landscape_noise_ratio_large", "median standard error of a point at the largest N over "
          "the spread of the point means there", "<", 0.5,
          "points two standard errors apart or more are told apart"),
    Claim("surrogate-aligned-early", "CL", "§5.3, Fig 7/8",
          "the early stages of training the optimization landscapes of the true and surrogate reward are indeed "
          "approximately aligned", "landscape_true_step_first", "the true return's change along the step (own "
          "batch) at the first checkpoint, in standard errors", ">", 0.0,
          "a sign: the step that raises the surrogate raises the true reward"),
    Claim("surrogate-misleads-later", "CL", "§5.3, Fig 7/8",
          "we often observe that directions that increase the surrogate reward lead to a decrease of the true "
          "reward", "landscape_true_step_last", "the true return's change along the step (own batch) at the last "
          "checkpoint, in standard errors", "<", 0.0, "a sign: the step lowers the true reward"),
    Claim("ppo-step-lowers-true-reward-with-many-samples", "CL", "§5.3, Fig 8/17/18",
          "in the case of PPO (and PPO-M) we consistently observe landscapes where the step direction leads to "
          "lower true reward, even in the high-sample regime", "landscape_true_step_large",
          "the true return's change along a step from the largest step sample, checkpoints after the first, in "
          "standard errors", "<", 0.0, "a sign", labels=("ppo", "ppo-m")),
    Claim("trpo-surrogate-tracks-true-with-many-samples", "CL", "§5.3, Fig 7/19",
          "In the case of TRPO, the update direction leads to a surrogate reward that matches the true reward much "
          "more closely", "landscape_true_step_large", "the true return's change along a step from the largest "
          "step sample, checkpoints after the first, in standard errors", ">", 0.0,
          "a sign: the surrogate's increase is a true one", labels=("trpo",)),
    # --- CL §5.4: trust regions (also IM §4, Figs 2-4) ------------------------------------------------------
    Claim("ppo-max-ratio-leaves-region", "CL IM", "§5.4, Fig 9/28",
          "the PPO variants' maximum ratios consistently violates the ratio \"trust region\"",
          "tr_ratio_outside", "fraction of iterations whose max ratio on the training batch exceeds 1 + ε", ">",
          0.5, "\"consistently\": in most iterations", labels=("ppo", "ppo-m")),
    Claim("max-kl-orders-above-bound", "CL IM", "§5.4, Fig 9",
          "in practice, we find that the maximum KL divergence is several orders of magnitude larger than our "
          "enforced bound on mean KL", "tr_max_kl_orders", "median over iterations of log10(max KL / δ), "
          "training batch", ">", 2.0, "\"several orders of magnitude\": at least two", labels=("trpo",)),
    Claim("ppo-m-loses-the-kl-region", "CL IM", "§5.4, Fig 9; IM §4",
          "while PPO constrains the mean KL well, PPO-M does not", "tr_log_mean_kl",
          "median over iterations of log10(mean KL), training batch: PPO-M's agents minus PPO's", ">", 0.0,
          "a sign, on a log scale (KLs are positive and skewed)", kind="groups", labels=("ppo-m",),
          versus="ppo"),
    Claim("trpo-kl-holds-on-heldout", "CL IM", "§5.4, Fig 29",
          "the mean-KL constraint does generalize to unseen set of trajectories", "tr_heldout_kl_over_bound",
          "median over held-out checks of the held-out mean KL over δ", "<", 1.5,
          "kept: within half the bound again on a batch the line search never saw", labels=("trpo",)),
    Claim("theorem-first-step-unclipped", "CL IM", "Theorem 5.1, §5.4",
          "the first step we take is identical to a maximization step over the unclipped surrogate reward",
          "theorem_first_step", "|∇L^C − ∇L| / |∇L| at θ_old on the batch", "<", 1e-4,
          "float32 rounding of two gradients that are equal in exact arithmetic", kind="exact"),
    Claim("theorem-ratios-leave-clip", "CL IM", "Theorem 5.1, §5.4",
          "we can end up moving arbitrarily far from the trust region", "theorem_max_ratio_excess",
          "max ratio after the optimization minus 1 + ε, per optimizer", ">", 0.0,
          "a sign: past the clip", kind="exact"),
    # --- IM -------------------------------------------------------------------------------------------------
    Claim("optimizations-matter-more-than-step", "IM", "§5, Table 2",
          "varying the use of code-level optimizations impacts performance significantly more than varying "
          "whether the PPO or TRPO step is used", "im_score",
          "the optimizations' main effect over the step's, min(TRPO+ − PPO-M, PPO − TRPO) (see "
          "pg_diag.stats.OPTIMIZATIONS_OVER_STEP)", ">", 0.0,
          "in the 2 × 2 design c_opt > |c_step| ⇔ both differences > 0", kind="min-difference",
          differences=stats.OPTIMIZATIONS_OVER_STEP),
    Claim("reward-scaling-needed", "IM", "§3, Fig 1",
          "reward normalization, Adam annealing, and network initialization each significantly impact the "
          "rewards landscape with respect to hyperparameters, and were necessary for attaining the highest PPO "
          "reward", "ablation_reward_scaling", "score with reward scaling minus without, each seed's agents at the LR "
          "their combination scores best on the other seeds, paired by seed and the other toggles, one unit per "
          "seed (the mean of its pairs)",
          ">", 0.0, "a sign"),
    Claim("lr-annealing-needed", "IM", "§3, Fig 1",
          "reward normalization, Adam annealing, and network initialization each [...] were necessary for "
          "attaining the highest PPO reward", "ablation_lr_annealing", "score with LR annealing minus without, "
          "paired as above", ">", 0.0, "a sign"),
    Claim("orthogonal-init-needed", "IM", "§3, Fig 1",
          "reward normalization, Adam annealing, and network initialization each [...] were necessary for "
          "attaining the highest PPO reward", "ablation_orthogonal_init", "score with orthogonal initialization "
          "minus without, paired as above", ">", 0.0, "a sign"),
    Claim("noclip-beats-ppo-m", "IM", "§5, Table 3",
          "PPO-NOCLIP performs uniformly better than PPO-M, despite the latter employing the core PPO clipping "
          "mechanism", "im_score", "mean score, PPO-NoClip's agents minus PPO-M's", ">", 0.0, "a sign",
          kind="groups", labels=("ppo-noclip",), versus="ppo-m"),
    Claim("noclip-matches-ppo", "IM", "§5, Table 3",
          "with sufficient hyperparameter tuning, PPO-NOCLIP often matches the performance of standard PPO",
          "im_score_relative", "mean score over PPO's mean score, PPO-NoClip's agents minus PPO's", "within",
          (-0.1, 0.1), "\"matches\": within 10% of PPO's mean", kind="groups", labels=("ppo-noclip",),
          versus="ppo"),
)


def by_key(key: str) -> Claim:
    for claim in CLAIMS:
        if claim.key == key:
            return claim
    raise KeyError(f"unknown claim {key!r}; claims: {', '.join(c.key for c in CLAIMS)}")
