"""The claims' evidence: one row per measurement — evidence, task, label, agent, value, and where it was made
(iteration, progress, lr_share, pairs) — from saved study tables.

Each function here is a pure function of the tables a study saves (tested on constructed tables with answers
worked out by hand, tests/test_evidence.py). ``agent`` names the independent unit: the trained agent
(:mod:`.claims` makes one value of an agent's rows), or for the ablation the seed. Every checkpoint is kept,
the initial policy's too: which ones a claim reads is its scope (:class:`.paper_claims.Scope`), decided in
:mod:`.claims` from ``iteration``, ``progress`` (iteration over the run's iterations) and ``lr_share`` (the
annealed learning rate's share of its start there; 1 without annealing); ``pairs`` is the sample size a
row rests on where a claim's scope names one.
"""

from __future__ import annotations

import functools

import numpy as np

from pg_diag.diagnostics import tables as diag_tables
from pg_diag.experiments import levels

COLUMNS = ["evidence", "task", "label", "agent", "value", "iteration", "progress", "lr_share", "pairs"]
#: the level of the cosine to the gradient (the truth's over its ceiling) whose crossing N measures
#: "several-fold more samples" (CL §5.1): the noise's energy equal to the signal's, 1/√2
TRUE_LEVEL = levels.to_gradient_level(levels.NOISE_EQUALS_SIGNAL)


def _rows(evidence: str, task: str, frame, value: str, agent: str = "agent", pairs=None) -> list:
    """Rows of ``frame``; its iteration, progress and lr_share go along where it has them."""
    out = []
    for r in frame.to_dict("records"):
        row = {"evidence": evidence, "task": task, "label": r["label"], "agent": str(r[agent]),
               "value": float(r[value])}
        for key in ("iteration", "progress", "lr_share"):
            if key in r:
                row[key] = float(r[key])
        if pairs is not None or "pairs" in r:
            row["pairs"] = float(r["pairs"] if pairs is None else pairs)
        out.append(row)
    return out


def _agent(frame):
    """A unit id unique across run directories: ``run:agent``."""
    return frame.assign(unit=frame["run"].astype(str) + ":" + frame["agent"].astype(str))


@functools.lru_cache(maxsize=512)
def _schedule(run: str) -> dict:
    """{agent: (iterations of its run, whether its learning rate anneals)} from a run directory's manifest."""
    from pg_diag.config import Config
    from pg_diag.run.store import read_manifest

    manifest = read_manifest(run)
    base = Config.from_dict(manifest["base_config"])
    points = [base.replace(**p) for p in manifest.get("grid_points") or [{}]]
    return {i: (int(c.num_iterations), bool(c.get("lr_annealing", False)))
            for i, c in ((i, points[a["point"]]) for i, a in enumerate(manifest["agents"]))}


def training_point(iteration, iterations, anneals):
    """(progress, lr_share) at ``iteration`` of a run of ``iterations``: the fraction of the run behind it, and the
    learning rate's share of its start (IM opt. 4: lr₀·(1 − k/K) when annealed; 1 otherwise)."""
    it, total = np.asarray(iteration, np.float64), np.asarray(iterations, np.float64)
    progress = it / total
    return progress, np.where(np.asarray(anneals, bool), np.clip(1.0 - progress, 0.0, 1.0), 1.0)


def with_point(frame):
    """``frame`` (with run, agent, iteration columns) with each row's progress and lr_share; a run whose manifest
    cannot be read gives NaN (its rows are then outside every window but "whole")."""
    total, anneals = [], []
    for run, agent in zip(frame["run"].astype(str), frame["agent"].astype(int)):
        try:
            k, a = _schedule(run)[agent]
        except (OSError, KeyError, ValueError, IndexError):
            k, a = np.nan, False
        total.append(k)
        anneals.append(a)
    progress, share = training_point(frame["iteration"].to_numpy(), np.asarray(total, np.float64), anneals)
    return frame.assign(progress=progress, lr_share=share)


def crossing_ratio(n, cosine, level: float, batch: int) -> float:
    """The N at which the cosine reaches ``level`` — log-linearly interpolated between the grid points around
    the crossing, as the studies' summaries (:func:`pg_diag.diagnostics.tables.crossing`) — over the batch
    size; +inf when none does (the unit keeps its rank in the median: it needed more than the grid holds).
    The grid point at or above the crossing instead would move a "> 3×" rule to wherever the grid has its
    next point (with the paper's sizes, any crossing above 2.27× the batch read as 4.9×)."""
    n, c = np.asarray(n, np.float64), np.asarray(cosine, np.float64)
    order = np.argsort(n)
    at = diag_tables.crossing(n[order], c[order], level)
    return float(at / batch) if np.isfinite(at) else float("inf")


def gradient_pairwise_evidence(studies: dict) -> list:
    """From gradient studies ({task: GradientStudy}): per agent and checkpoint, the mean pairwise cosine at the
    batch size; per agent, its last checkpoint's minus the initial policy's (its first)."""
    rows = []
    for task, st in studies.items():
        b = st.batch_size
        pairs = st.pairs.groupby(["label", "run", "agent", "iteration", "n"])["cosine"].mean().reset_index()
        at_b = with_point(_agent(pairs[pairs.n == b]))
        rows += _rows("grad_pairwise_at_batch", task, at_b, "cosine", "unit", pairs=b)
        first, last = at_b.iteration.min(), at_b.iteration.max()
        if first != last:
            wide = at_b.pivot_table(index=["label", "unit"], columns="iteration", values="cosine").reset_index()
            rows += _rows("grad_pairwise_change", task, wide.assign(value=wide[last] - wide[first]), "value", "unit")
    return rows


def _ceilings(st):
    """Per subject (run, agent, iteration) the true gradient's own cosine to the gradient it estimates."""
    subjects = getattr(st, "subjects", None)
    if subjects is None or "truth_ceiling" not in subjects:
        return None
    return subjects[["run", "agent", "iteration", "truth_ceiling"]]


def gradient_true_evidence(studies: dict, notes: list | None = None) -> list:
    """From gradient studies: per agent and checkpoint, the mean cosine to the true gradient over the truth's own
    ceiling (≈ the cosine to the gradient itself, :mod:`.levels`) at the batch size and at the largest N, and
    the N where it reaches :data:`TRUE_LEVEL` over the batch size. A truth from fewer than TRUE_RATIO × the
    largest N pairs, or without a ceiling (no split-half), gives no evidence (said in ``notes``)."""
    from pg_diag.diagnostics.sizes import TRUE_RATIO

    rows, notes = [], notes if notes is not None else []
    for task, st in studies.items():
        b = st.batch_size
        true = st.estimates.groupby(["label", "run", "agent", "iteration", "n"])["to_true"].mean().reset_index()
        true = true[np.isfinite(true.to_true)]
        ratio = float(st.subjects.true_ratio.min()) if "true_ratio" in getattr(st, "subjects", ()) else np.nan
        ceilings = _ceilings(st)
        if true.empty:
            continue
        if not ratio >= TRUE_RATIO or ceilings is None:
            notes.append(f"{task}: the true gradient is {ratio:.3g}× the largest N (fewer than {TRUE_RATIO}×), or "
                         f"has no split-half ceiling: the claims against it are not tested; measure with "
                         f"true_pairs ≥ {TRUE_RATIO} × the largest N and at least two truth streams")
            continue
        true = with_point(_agent(true.merge(ceilings, on=["run", "agent", "iteration"])))
        true = true.assign(to_gradient=true.to_true / true.truth_ceiling)
        true = true[np.isfinite(true.to_gradient)]
        rows += _rows("grad_true_at_batch", task, true[true.n == b], "to_gradient", "unit", pairs=b)
        rows += _rows("grad_true_at_largest", task, true[true.n == true.n.max()], "to_gradient", "unit",
                      pairs=float(true.n.max()))
        for (label, unit, it), d in true.groupby(["label", "unit", "iteration"], sort=True):
            rows.append({"evidence": "grad_true_samples_ratio", "task": task, "label": label, "agent": unit,
                         "value": crossing_ratio(d.n, d.to_gradient, TRUE_LEVEL, b), "iteration": float(it),
                         "progress": float(d.progress.iloc[0]), "lr_share": float(d.lr_share.iloc[0])})
    return rows


def gradient_evidence(studies: dict, notes: list | None = None) -> list:
    """Both of the gradient study's evidence: :func:`gradient_pairwise_evidence` and
    :func:`gradient_true_evidence`."""
    return gradient_pairwise_evidence(studies) + gradient_true_evidence(studies, notes)


def step_evidence(studies: dict) -> list:
    """From step studies: per agent and checkpoint, the mean pairwise cosine of the M steps."""
    rows = []
    for task, st in studies.items():
        per = st.pairs.groupby(["label", "run", "agent", "iteration"])["cosine"].mean().reset_index()
        rows += _rows("step_pairwise", task, with_point(_agent(per)), "cosine", "unit")
    return rows


def value_evidence(metrics) -> list:
    """From fig-value's training metrics: per agent, means over the second half of training (the iterations at
    or after half the last) of the held-out errors of the updated value network:

    * ``value_heldout_gae_mre`` — the original's "GAE MRE" (``heldout_value_mre_gae_original``: the value loss
      per sample over |V_old + Â|, ref §4.1 item 3), the quantity CL's "small" reads;
    * ``value_heldout_gae_mre_true`` — the true relative error |V − (V_old + Â)|/|V_old + Â| (an extension);
    * ``value_heldout_truncated_mre`` — the MRE against returns cut at the batch end, every non-terminal state
      (the original's target: CL's "off by about 50%");
    * ``value_heldout_returns_mre`` — the MRE against complete returns (an extension);
    * ``value_returns_generalization`` — held-out minus training-batch MRE against the truncated returns, both
      over every non-terminal state (the original's selection: neither side selected on how its episode
      ended), paired on the iterations where both are measured;
    * on the linear-quadratic task the noise floor: ``value_floor_mre`` — the exact V^π's own MRE against the
      complete returns (``heldout_value_mre_floor``) — and ``value_floor_agent_mre`` — the network's on the
      same states, iterations and returns; ``value_floor_truncated_mre`` / ``value_floor_agent_truncated_mre``
      the same against the truncated returns.

    Runs recorded before a metric existed give no row for it."""
    rows = []
    for (task, label, agent), m in metrics.groupby(["task", "algorithm", "agent"], sort=True):
        late = m[m.iteration >= m.iteration.max() / 2]

        def col(name):
            return late[name].to_numpy(np.float64) if name in late else np.full(len(late), np.nan)

        def mean(x):
            return float(np.mean(x[np.isfinite(x)])) if np.isfinite(x).any() else float("nan")

        def paired(a, b):
            """means of a and b over the iterations where both are finite."""
            both = np.isfinite(a) & np.isfinite(b)
            return (float(np.mean(a[both])), float(np.mean(b[both]))) if both.any() else (np.nan, np.nan)

        unit = {"task": task, "label": label, "agent": str(agent)}
        cut_held, cut_train = col("heldout_value_mre_returns_truncated"), col("value_mre_returns_truncated")
        held_cut, train_cut = paired(cut_held, cut_train)
        values = {"value_heldout_gae_mre": mean(col("heldout_value_mre_gae_original")),
                  "value_heldout_gae_mre_true": mean(col("heldout_value_mre_gae")),
                  "value_heldout_truncated_mre": mean(cut_held),
                  "value_heldout_returns_mre": mean(col("heldout_value_mre_returns")),
                  "value_returns_generalization": held_cut - train_cut}
        floor, agent_mre = paired(col("heldout_value_mre_floor"), col("heldout_value_mre_returns"))
        floor_cut, agent_cut = paired(col("heldout_value_mre_floor_truncated"), cut_held)
        values.update({"value_floor_mre": floor, "value_floor_agent_mre": agent_mre,
                       "value_floor_truncated_mre": floor_cut, "value_floor_agent_truncated_mre": agent_cut})
        rows += [{"evidence": name, **unit, "value": v} for name, v in values.items()]
    return [r for r in rows if np.isfinite(r["value"])]


def baseline_evidence(studies: dict, notes: list | None = None) -> list:
    """From baseline studies' V* fits, per agent and checkpoint — read on the floor's held-out batches, which
    the rule that stopped V*'s fit never looked at —: the agent's excess MSE over V*'s (``value_excess_error``),
    V*'s MRE against the complete returns (``value_floor_mre``: the floor, what a value function at E[R | s]
    reads from the returns' noise), the agent's on the same states (``value_floor_agent_mre``), and both
    against the returns cut at the batch end (``value_floor_truncated_mre``, ``value_floor_agent_truncated_mre``).
    The floor's rows carry their checkpoint (``iteration``). A study saved before the floor was read apart gives
    none of them (said in ``notes``): its errors were read on the batches that chose when the fit stopped."""
    # evidence name -> the fits' column (value_fit.FitReport's floor_* fields)
    floor_columns = {"value_floor_mre": "floor_fitted_mre", "value_floor_agent_mre": "floor_agent_mre",
                     "value_floor_truncated_mre": "floor_fitted_mre_truncated",
                     "value_floor_agent_truncated_mre": "floor_agent_mre_truncated"}
    rows = []
    for task, st in studies.items():
        fits = _agent(st.fits)
        if "fitted" not in set(st.pairs.baseline):
            continue
        if not {"floor_agent_mse", "floor_fitted_mse"} <= set(fits.columns):
            if notes is not None:
                notes.append(f"{task}: the baseline study was saved before V*'s floor was read on held-out batches "
                             f"apart from those that stopped its fit: no value_excess_error or value_floor_* "
                             f"evidence; measure it again")
            continue
        agent_mse, fitted_mse = (fits[c].to_numpy(np.float64) for c in ("floor_agent_mse", "floor_fitted_mse"))
        with np.errstate(divide="ignore", invalid="ignore"):
            values = {"value_excess_error": np.where(fitted_mse > 0, agent_mse / fitted_mse - 1.0, np.nan),
                      **{name: fits[c].to_numpy(np.float64) for name, c in floor_columns.items() if c in fits}}
        placed = with_point(fits)     # each checkpoint's iteration, progress and lr_share go along
        for name, v in values.items():
            ok = np.isfinite(v)
            rows += _rows(name, task, placed.assign(value=v)[ok], "value", "unit")
    return rows


def landscape_evidence(concentration: dict, surrogate: dict) -> list:
    """Both landscape studies' evidence: :func:`concentration_evidence` and :func:`surrogate_evidence`."""
    return concentration_evidence(concentration) + surrogate_evidence(surrogate)


def _plane_point(r, x: float, n) -> tuple:
    """(mean, se) of a plane's point (x, 0) at ``n`` pairs (NaN where the grid has none)."""
    at = r[(r.n == n) & np.isclose(r.x, x) & np.isclose(r.y, 0.0)]
    return (float(at["mean"].iloc[0]), float(at["se"].iloc[0])) if len(at) else (np.nan, np.nan)


def concentration_evidence(concentration: dict) -> list:
    """From concentration landscape studies, per plane of the algorithm's own step (CL Fig 6's construction: 1 on
    the step axis is the step taken, the points estimated at each N): how well the smallest N tells the step's
    point from the origin — |m(1, 0) − m(0, 0)| at the largest N over that difference's standard error at the
    smallest N — and how smooth the plane is at the largest N — the median standard error of a point over the
    spread of the point means there, their SD with the points' own noise taken out (√(SD² − median se²))."""
    rows = []
    for task, st in concentration.items():
        small, large = min(st.sizes), max(st.sizes)
        ret = st.returns[st.returns.step_pairs == st.returns.step_pairs.min()]
        for (label, run, agent, it), r in ret.groupby(["label", "run", "agent", "iteration"]):
            unit = {"label": label, "run": run, "agent": agent, "iteration": it}
            (m1, _), (m0, _) = _plane_point(r, 1.0, large), _plane_point(r, 0.0, large)
            (_, s1), (_, s0) = _plane_point(r, 1.0, small), _plane_point(r, 0.0, small)
            big = r[r.n == large]
            noise = float(np.nanmedian(big["se"]))
            signal = float(np.nanvar(big["mean"])) - noise ** 2
            rows.append({**unit, "evidence": "landscape_step_z_small", "pairs": small,
                         "value": abs(m1 - m0) / np.hypot(s1, s0) if np.hypot(s1, s0) > 0 else np.nan})
            rows.append({**unit, "evidence": "landscape_noise_ratio_large", "pairs": large,
                         "value": noise / np.sqrt(signal) if signal > 0 else np.inf})
        rows = rows if not rows else _framed(rows, task)
    return [r for r in rows if not np.isnan(r["value"])]


def _framed(rows: list, task: str) -> list:
    """Rows carrying run, agent and iteration as evidence rows with their point of training and ``run:agent``."""
    import pandas as pd

    done = [r for r in rows if "task" in r]
    todo = pd.DataFrame([r for r in rows if "task" not in r])
    if todo.empty:
        return done
    todo = with_point(_agent(todo))
    return done + [{"evidence": r["evidence"], "task": task, "label": r["label"], "agent": r["unit"],
                    "value": float(r["value"]), "iteration": float(r["iteration"]), "progress": float(r["progress"]),
                    "lr_share": float(r["lr_share"]), "pairs": float(r["pairs"])} for r in todo.to_dict("records")]


def surrogate_evidence(surrogate: dict) -> list:
    """From surrogate landscape studies, per plane: the true return's change along the step in standard errors,
    for the step from the algorithm's own batch (``landscape_true_step_own``) and from the largest step sample
    (``landscape_true_step_many``, its ``pairs`` the step's)."""
    rows = []
    for task, st in surrogate.items():
        a = with_point(_agent(st.agreement()))
        a = a.assign(z=a.true_step_change / a.true_step_change_se)
        own = a[a.step_pairs == a.step_pairs.min()]
        rows += _rows("landscape_true_step_own", task, own, "z", "unit")
        if a.step_pairs.max() != a.step_pairs.min():
            many = a[a.step_pairs == a.step_pairs.max()]
            rows += _rows("landscape_true_step_many", task, many.assign(pairs=many.step_pairs), "z", "unit")
    return [r for r in rows if not np.isnan(r["value"])]


def _trpo_bounds(metrics) -> dict:
    """Per task, the mean-KL bound δ TRPO enforces there: its agents' own, else its preset's (NaN: none)."""
    from pg_diag.config import study_preset

    out = {}
    for task, m in metrics.groupby("task", sort=False):
        own = m[(m.algorithm == "trpo") & (m.constraint == "kl")].constraint_value
        try:
            out[task] = float(own.iloc[0]) if len(own) else float(study_preset("trpo", task).get("kl_bound"))
        except Exception:   # a task without a TRPO preset: no bound to read a mean KL against
            out[task] = np.nan
    return out


def trust_region_evidence(metrics) -> list:
    """From fig-trust-region's metrics (with study_dir.with_configs' columns): per agent and iteration, whether
    its max ratio left 1 + ε (PPO's ε; a TRPO agent read against PPO's 0.2), log10(max KL / δ) (TRPO), the mean
    KL over TRPO's δ on the task, log10(mean KL), and where a held-out batch was measured whether TRPO's
    held-out mean KL stayed within δ."""
    import pandas as pd

    bounds = _trpo_bounds(metrics)
    m = metrics.assign(unit=metrics.agent.astype(str), label=metrics.algorithm)
    progress, share = training_point(m.iteration.to_numpy(), m.num_iterations.to_numpy(), m.lr_annealing.to_numpy())
    m = m.assign(progress=progress, lr_share=share, delta=m.task.map(bounds).astype(float))
    eps = np.where(m.constraint == "ratio", m.constraint_value, 0.2)
    series = {"tr_log_mean_kl": np.log10(m.mean_kl), "tr_mean_kl_over_bound": m.mean_kl / m.delta,
              "tr_ratio_outside": np.where(eps < 1e6, (m.max_ratio > 1.0 + eps).astype(float), np.nan)}
    kl = (m.constraint == "kl").to_numpy()
    series["tr_max_kl_orders"] = np.where(kl, np.log10(m.max_kl / m.constraint_value), np.nan)
    if "heldout_mean_kl" in m:
        held = m.heldout_mean_kl.to_numpy(np.float64)
        series["tr_heldout_within_bound"] = np.where(kl & np.isfinite(held),
                                                     (held <= m.constraint_value).astype(float), np.nan)
    frames = [m[["task", "label", "unit", "iteration", "progress", "lr_share"]].assign(evidence=name, value=v)
              for name, v in series.items()]
    out = pd.concat(frames, ignore_index=True).rename(columns={"unit": "agent"})
    out = out[np.isfinite(out.value.to_numpy(np.float64))]
    return out[["evidence", "task", "label", "agent", "value", "iteration", "progress", "lr_share"]].to_dict("records")


def theorem_evidence(record: dict, trace) -> list:
    """From fig-theorem's study record and traces: the first step's relative difference from the unclipped
    step, and per optimizer its final max ratio minus 1 + ε."""
    task = record["tasks"][0]
    rows = [{"evidence": "theorem_first_step", "task": task, "label": "ppo", "agent": "batch",
             "value": float(record["first_step_relative_difference"])}]
    final = trace[trace.step == trace.step.max()]
    for r in final.to_dict("records"):
        rows.append({"evidence": "theorem_max_ratio_excess", "task": task, "label": "ppo", "agent": str(r["optimizer"]),
                     "value": float(r["max_ratio"] - (1.0 + record["clip_eps"]))})
    return rows


def ablation_evidence(selected: dict, toggles) -> list:
    """From the ablation's selected agents ({task: frame of seed, toggles, score}; one per seed and toggle
    combination, at the LR the other seeds chose: :func:`.studies.ablation.agents_at_held_out_best_lr`): per
    toggle and seed, the score with it on minus off, averaged over the pairs matched by the other toggles.
    The seed is the unit:
    agents with one seed share their initial weights and environment noise across toggle combinations
    (common random numbers), so the 8 pairs of one seed are not independent of each other (taken as units,
    a median interval stated at 0.96 covered 0.85 at a within-seed correlation of 0.2)."""
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


def score_evidence(scores) -> list:
    """From IM Table 2/3's per-agent scores (task, algorithm, agent, score): the scores, and each over the
    absolute median score of its task's PPO agents (for "matches PPO"). An agent without a finite score
    (diverged) is a failed seed: it keeps the lowest rank (−inf), as the median comparisons read it."""
    scores = scores.assign(score=scores.score.astype(float).fillna(-np.inf))
    rows = [{"evidence": "im_score", "task": r.task, "label": r.algorithm, "agent": str(r.agent),
             "value": float(r.score)} for r in scores.itertuples(index=False)]
    for task, part in scores.groupby("task"):
        ppo = part[part.algorithm == "ppo"].score
        ppo = float(np.median(ppo)) if len(ppo) else np.nan
        if np.isfinite(ppo) and ppo != 0:
            rows += [{"evidence": "im_score_relative", "task": task, "label": r.algorithm, "agent": str(r.agent),
                      "value": float(r.score / abs(ppo))} for r in part.itertuples(index=False)]
    return rows


def baseline_ratio_evidence(studies: dict) -> list:
    """From baseline studies, per agent, checkpoint and N (``pairs``): the variance ratio of two baselines — the
    noise-to-signal energy ρ = 1/c − 1 of one over the other's (every baseline estimates the same gradient, so
    this is their noise energies' ratio, :mod:`.levels`) — with returns over with the agent's network
    (``baseline_variance_ratio_value``), and with the agent's network over with V* where V* was shown the better
    value function (``baseline_variance_ratio_fitted``)."""
    rows = []
    for task, st in studies.items():
        per = st.pairs.groupby(["label", "run", "agent", "iteration", "n", "baseline"])["cosine"].mean()
        per = with_point(_agent(per.unstack("baseline").reset_index())).rename(columns={"n": "pairs"})
        rho = {b: levels.noise_ratio(per[b]) for b in ("zero", "value", "fitted") if b in per}
        with np.errstate(divide="ignore", invalid="ignore"):
            if {"zero", "value"} <= set(rho):
                rows += _rows("baseline_variance_ratio_value", task, per.assign(ratio=rho["zero"] / rho["value"]),
                              "ratio", "unit")
            fits = st.fits
            if "fitted" in rho and "fitted_better" in fits:
                better = fits[fits.fitted_better.astype(bool)][["run", "agent", "iteration"]]
                ok = per.assign(ratio=rho["value"] / rho["fitted"]).merge(better, on=["run", "agent", "iteration"])
                rows += _rows("baseline_variance_ratio_fitted", task, ok, "ratio", "unit")
    return [r for r in rows if not np.isnan(r["value"])]


__all__ = ["COLUMNS", "TRUE_LEVEL", "ablation_evidence", "baseline_evidence", "concentration_evidence",
           "baseline_ratio_evidence", "crossing_ratio", "gradient_evidence", "gradient_pairwise_evidence", "gradient_true_evidence",
           "landscape_evidence", "score_evidence", "training_point", "with_point", "step_evidence", "surrogate_evidence", "theorem_evidence",
           "trust_region_evidence", "value_evidence"]
