"""Evidence from the ablation of the code-level optimizations (IM §3)."""

from __future__ import annotations


def ablation_evidence(selected: dict, toggles) -> list:
    """From the ablation's selected agents ({task: frame of seed, toggles, score}; one per seed and toggle
    combination, at the LR the other seeds chose:
    [`studies.ablation.agents_at_held_out_best_lr`][pgdiag.studies.ablation.agents_at_held_out_best_lr]):
    per toggle and seed, the score with it on minus off, averaged over the pairs matched by the other toggles. The
    seed is the unit: agents with one seed share their initial weights and environment noise across toggle
    combinations (common random numbers), so the 8 pairs of one seed are not independent of each other (taken as
    units, a median interval stated at 0.96 covered 0.85 at a within-seed correlation of 0.2)."""
    rows = []
    for task, sel in selected.items():
        for t in toggles:
            others = ["seed"] + [o for o in toggles if o != t]
            wide = sel.pivot_table(index=others, columns=t, values="score").dropna()
            if True not in wide.columns or False not in wide.columns:
                continue
            per_seed = (wide[True] - wide[False]).groupby(level="seed").mean()
            rows += [{"evidence": f"ablation_{t}", "task": task, "label": "ppo", "agent": str(seed),
                      "value": float(v)} for seed, v in per_seed.items()]
    return rows


def best_evidence(scores: dict, toggles) -> list:
    """IM Fig 1 as the paper reads it — "necessary for attaining the highest PPO reward within the tested
    hyperparameter grid" —: per toggle and seed, the seed's score at the best configuration (toggle combination
    and learning rate) with the toggle on, minus at the best with it off, both chosen by their mean over the
    *other* seeds (leave-one-seed-out: a seed never chooses its own configuration, so its difference is an unbiased
    estimate of the two chosen configurations' difference, not the selection's winner's curse). ``scores``:
    {task: one row per agent, its seed, toggles, ``lr_policy`` and ``score``}. The seed is the unit."""
    rows = []
    config = [*toggles, "lr_policy"]
    for task, sc in scores.items():
        seeds = sorted(sc["seed"].unique())
        if len(seeds) < 2:
            continue
        for seed in seeds:
            means = sc[sc["seed"] != seed].groupby(config)["score"].mean()
            mine = sc[sc["seed"] == seed].set_index(config)["score"]
            for t in toggles:
                on = means[means.index.get_level_values(t).astype(bool)]
                off = means[~means.index.get_level_values(t).astype(bool)]
                if on.empty or off.empty or on.idxmax() not in mine.index or off.idxmax() not in mine.index:
                    continue
                rows.append({"evidence": f"ablation_best_{t}", "task": task, "label": "ppo", "agent": str(seed),
                             "value": float(mine[on.idxmax()] - mine[off.idxmax()])})
    return rows
