"""fig-baselines — CL §5.2, Figs 5/16 (ref §4.2 item 5): how much gradient variance each baseline removes.

PPO and TRPO are trained with checkpoints (``OUT/runs/``), then measured by
[`pgdiag.diagnostics.baseline_study`][pgdiag.studies.baselines.diagnostic.baseline_study]: at every checkpoint, K
gradient estimates per N with the agent's value network, a value network fit to Monte-Carlo returns ("true" V), no
baseline (returns) and, on the LQR task, the exact V^π — on the same trajectories. The figure draws the mean
pairwise cosine against N on a linear axis to 1e4 (the paper's), the mean over agents with a 95% Student-t band over
agents. The fitted network is drawn as the "true" V only where it was shown closer to the returns than the agent's
network (a one-sided paired t-test of their squared errors over ≥ 20 held-out batches; its fit goes on in rounds
until then, up to a cap); the summary gives both networks' held-out MSE, relative error and explained variance.
Training and measurements with the same settings are reused; [`draw`][pgdiag.studies.baselines.draw]
redraws from the saved tables alone.
"""

from __future__ import annotations

import os

import numpy as np

from pgdiag.config import CPU_SCALE
from pgdiag.diagnostics import tables as diag_tables
from pgdiag.studies.baselines.diagnostic import BASELINES
from pgdiag.diagnostics.sizes import PAPER_SIZES
from pgdiag.experiments import diagnostic_targets, dry_run, figures
from pgdiag.studies.baselines import evidence as ev
from pgdiag.experiments.scales import MID_CHECKPOINTS, MID_TRAINING, PAPER_CHECKPOINTS, Scale, replication_training
from pgdiag.experiments.target_types import Measurement, Target

STUDY = "baselines"
ALGORITHMS = ("ppo", "trpo")
COLORS = {"value": "tab:blue", "fitted": "tab:green", "zero": "tab:red", "zero_raw": "tab:orange", "exact": "k"}
NAMES = {"value": "agent's value net V_t", "fitted": "fitted value net (\"true\" V)", "zero": "no baseline (returns)",
         "zero_raw": "returns, unnormalized",
         "exact": "exact V^π (LQR)"}


#: the paper's measurement (CL Fig 5): K = 10 estimates at N up to 1e4, V* fit on 5e5 pairs in rounds of 30 epochs
_PAPER_MEASURES = {"baselines": dict(sizes=PAPER_SIZES["baselines"], estimates=10, fit_pairs=500_000,
                                     fit_epochs=30)}


def _replication(tasks: tuple, description: str) -> Scale:
    """The replication's runs on ``tasks`` measured as the paper measured, at Fig 5's checkpoints (150/300/450)."""
    return Scale(**replication_training(tasks), measured_at={"baselines": PAPER_CHECKPOINTS[1:]},
                 settings=_PAPER_MEASURES, description=description)


SCALES = {
    "paper": Scale(
        tasks=("walker2d", "lqr"), seeds=8, overrides={"checkpoint_at": (150, 300, 450)},
        task_overrides={"lqr": {"checkpoint_at": (20, 40)}},
        settings=_PAPER_MEASURES,
        description="PPO and TRPO presets on Walker2d (CL Figs 5, 16: both captioned Walker2d-v2) and the LQR "
                    "task, 8 agents each (the fewest "
                    "whose sign tests can pass Holm over a section's findings), checkpoints after "
                    "iterations 150/300/450 (LQR: 20/40); K = 10 estimates at N up to 1e4; the fitted value net "
                    "learns from 5e5 pairs (the ICLR text's number; fit_pairs=5_000_000 for the v4 text's) in "
                    "rounds of "
                    "30 epochs, at most 4, until shown closer to the returns than the agent's network."),
    # the value part's runs (pgdiag.experiments.replication), measured at Fig 5's checkpoints with the paper's
    # sample sizes: every setting the paper states fits a CPU
    "replication": _replication(
        ("walker2d", "hopper"),
        "CL Figs 5, 16 as the paper ran them: Gym's Walker2d (and Hopper, for the value findings' "
                    "noise floor there; its baseline rows exploratory), PPO and TRPO of the runs the "
                    "value part trains (8 agents each), 488 iterations, checkpoints after 150/300/450; K = 10 "
                    "estimates at N up to 1e4; V* fit on 5e5 pairs in rounds of 30 epochs, at most 4, until shown "
                    "closer to the returns than the agent's network."),
    # the value findings' noise floor on Humanoid (CL Figs 14, 15): the trust-regions part's runs, at Fig 5's
    # checkpoints and sample sizes (its baseline rows exploratory: Figs 5, 16 show Walker2d)
    "replication-humanoid": _replication(
        ("humanoid",),
        "The value findings' noise floor on Gym's Humanoid: PPO and TRPO of the runs the trust-regions "
                    "part trains (8 agents each), 488 iterations, checkpoints after 150/300/450, measured as the "
                    "replication scale measures Walker2d."),
    "smoke": Scale(
        tasks=("hopper", "lqr"), seeds=2, overrides={**CPU_SCALE, "num_iterations": 30, "checkpoint_at": (15, 29)},
        settings={"baselines": dict(sizes=(100, 300, 1000, 2000, 4000, 6000, 8000, 10000), estimates=10,
                                    fit_pairs=50_000, fit_epochs=20)},
        description="Hopper (native MuJoCo on a CPU) and the LQR task at CPU scale: 30 iterations of 4 × 256 steps, "
                    "2 agents per algorithm, checkpoints after 15/29; K = 10 estimates at N up to 1e4; value fit on "
                    "5e4 pairs in rounds of 20 epochs (at most 4)."),
    "mid": Scale(
        **MID_TRAINING, measured_at={"baselines": MID_CHECKPOINTS[1:]},
        settings={"baselines": dict(sizes=(100, 300, 1000, 2048, 4000, 8192), estimates=10, fit_pairs=200_000,
                                    fit_epochs=10)},
        description="Hopper at the papers' shape (1 environment × 2,048 steps per iteration, reset every "
                    "iteration), PPO and TRPO, 7 agents each (the mid scale's shared runs), 100 iterations, "
                    "checkpoints after 31/61/92 (CL Fig 5: 150/300/450 of 488); K = 10 estimates at N up to 8,192; "
                    "V* fit on 2e5 pairs from the agent's network in rounds of 10 epochs, at most 4, "
                    "until a t-test over 20 held-out batches shows it closer to the returns."),
}


def pooled_curves(study):
    """Per label, iteration, baseline and N: the mean over agents of each agent's mean pairwise cosine, with
    the 95% Student-t interval over the agents (the independent units; their pairs share estimates)."""
    keys = ["label", "iteration", "baseline", "n"]
    per_agent = study.pairs.groupby(keys + ["run", "agent"], sort=True)["cosine"].mean().reset_index()
    return diag_tables.curve(per_agent, "cosine", keys)


#: the fits table's per-agent errors averaged per label and iteration in the summary (the *_exact ones on LQR)
FIT_MEANS = ("fitted_mse", "agent_mse", "mse_improvement", "fitted_mre", "agent_mre", "improvement", "fitted_ev",
             "agent_ev", "fit_epochs_used", "fitted_mse_exact", "agent_mse_exact", "exact_mse")
#: the floor's columns (value_fit.FitReport: on held-out batches the stopping rule never read), averaged alike;
#: absent from studies saved before the floor was read apart
FLOOR_MEANS = ("floor_fitted_mre", "floor_agent_mre", "floor_fitted_mre_truncated", "floor_agent_mre_truncated",
               "floor_fitted_mse", "floor_agent_mse", "floor_exact_mre", "floor_exact_mre_truncated")


def summary(studies: dict):
    import pandas as pd

    rows = []
    for task, study in studies.items():
        s = study.summary().assign(task=task, objective=study.manifest["resolved"].get("objective", "surrogate"))
        fits = _agent_verdicts(study.fits.copy())
        grouped = fits.groupby(["label", "iteration"])
        out = grouped[[c for c in FIT_MEANS + FLOOR_MEANS if c in fits]].mean()
        # the mean over agents of independent per-agent differences: its standard error
        for col in ("improvement", "mse_improvement"):
            out[f"{col}_se"] = np.sqrt(grouped[f"{col}_var"].sum(min_count=1)) / grouped.size()
        out["fitted_shown"] = grouped["shown"].sum().astype(int)
        out["fitted_better"] = [true_value_verdict(g.shown.to_numpy(), g.worse.to_numpy(), g.tested.to_numpy())
                                for _, g in grouped]
        rows.append(s.merge(out.reset_index(), on=["label", "iteration"], how="left"))
    out = pd.concat(rows, ignore_index=True)
    cols = ["task", "label", "iteration", "baseline", "at_batch_size", "at_largest_n", "n_at_0.5", "n_at_0.9",
            "agents", "fitted_mse", "agent_mse", "mse_improvement", "mse_improvement_se", "fitted_shown",
            "fitted_better", "fit_epochs_used", "fitted_mre", "agent_mre", "improvement", "improvement_se",
            "fitted_ev", "agent_ev", "fitted_mse_exact", "agent_mse_exact", "exact_mse", *FLOOR_MEANS, "objective"]
    for col in cols:
        if col not in out:
            out[col] = np.nan
    return out[cols]


def _agent_verdicts(fits):
    """Per agent: whether its V* was shown closer to the returns than its network (``shown``), shown farther
    (``worse``: the same one-sided test the other way round, at the same level), and whether a test was made.
    A study saved before the t-test was recorded reads its MRE comparison at 1.96 standard errors."""
    for col in ("fitted_mse", "agent_mse", "mse_improvement", "mse_improvement_se", "fit_epochs_used",
                "fitted_mse_exact", "agent_mse_exact", "exact_mse"):
        if col not in fits:
            fits[col] = np.nan
    if "improvement" not in fits:        # a study saved before the comparison was recorded
        fits["improvement"] = fits["agent_mre"] - fits["fitted_mre"]
        fits["improvement_se"] = np.nan
    for col in ("improvement", "mse_improvement"):
        fits[f"{col}_var"] = np.square(fits[f"{col}_se"])
    if "fit_p" in fits:
        p, level = fits["fit_p"].to_numpy(float), fits["fit_look_level"].to_numpy(float)
        fits["tested"] = np.isfinite(p)
        fits["shown"] = fits["fitted_better"].astype(bool) & fits["tested"]
        fits["worse"] = fits["tested"] & (1.0 - p < level)
    else:
        imp, se = fits["improvement"].to_numpy(float), fits["improvement_se"].to_numpy(float)
        fits["tested"] = np.isfinite(imp) & np.isfinite(se)
        fits["shown"] = fits["tested"] & (imp - 1.96 * se > 0)
        fits["worse"] = fits["tested"] & (imp + 1.96 * se < 0)
    return fits


def true_value_verdict(shown, worse, tested) -> str:
    """Whether V* is a "true" value function for a label and iteration: "yes" when every agent's V* was shown
    closer to the Monte-Carlo returns than the agent's network (fits.fitted_better: the one-sided paired t-test
    of their held-out squared errors), "no: worse" when some agent's was shown farther, else "not shown"; "—"
    where no fit was made."""
    if not np.any(tested):
        return "—"
    if np.any(worse):
        return "no: worse"
    return "yes" if np.all(shown) else "not shown"


def plot(studies: dict, path: str, title: str) -> str:
    panels = [(task, label, it) for task, st in studies.items()
              for label in sorted(st.pairs.label.unique()) for it in sorted(st.pairs.iteration.unique())]
    rows = sorted({(t, lab) for t, lab, _ in panels})
    cols = max(sum(1 for p in panels if p[:2] == r) for r in rows)
    fig, axes = figures.panels(len(rows), cols, 4.4, 3.3)
    curves = {task: pooled_curves(st) for task, st in studies.items()}
    table = summary(studies)
    verdict = {(t, lab, it): v for t, lab, it, v in zip(table.task, table.label, table.iteration, table.fitted_better)}
    for r, (task, label) in enumerate(rows):
        its = [it for t, lab, it in panels if (t, lab) == (task, label)]
        for c, it in enumerate(its):
            ax = axes[r, c]
            cur = curves[task]
            for baseline in studies[task].baselines:
                d = cur[(cur.label == label) & (cur.iteration == it) & (cur.baseline == baseline)]
                name = NAMES[baseline]
                if baseline == "fitted" and verdict.get((task, label, it)) != "yes":
                    name = "fitted value net (not shown closer to the returns than V_t)"
                ax.plot(d.n, d["mean"], color=COLORS[baseline], lw=1.3, marker="o", ms=2.5, label=name)
                ax.fill_between(d.n, d.low, d.high, color=COLORS[baseline], alpha=0.15)
            ax.axvline(studies[task].batch_size, color="grey", ls=":", lw=1)
            ax.set_xlim(0, max(cur.n.max(), 1))
            ax.set_ylim(figures.band_floor(cur.low, -0.1), 1.02)
            ax.set_title(f"{task}, {label}, iteration {it}", fontsize=9)
            ax.set_xlabel("state–action pairs N")
            ax.set_ylabel("mean pairwise cosine")
        for c in range(len(its), cols):
            axes[r, c].axis("off")
    return figures.save(fig, path, title, dpi=100, legend=True)


def draw(target, from_dir: str, out: str | None = None) -> dict:
    """The figure and summary table from the baseline studies saved under ``from_dir``."""
    record, studies = diagnostic_targets.load_measured(target, from_dir)
    out = out or from_dir
    table = summary(studies)
    shown = table.copy()
    for col in shown.columns:
        if shown[col].dtype.kind == "f":
            shown[col] = shown[col].map(lambda v: float(f"{v:.3g}") if np.isfinite(v) else v)
    md, csv = figures.write_table(
        shown, os.path.join(out, f"{target.name}-summary"), "Gradient-estimate concentration under each baseline",
        "at_batch_size / at_largest_n: mean pairwise cosine (mean over agents); n_at_X: N where it first reaches X. "
        "fitted_* / agent_*: the fitted (V*) and the agent's value networks on held-out Monte-Carlo returns: mean "
        "squared error (mse), mean relative error (mre), explained variance (ev), means over agents; "
        "mse_improvement / improvement: agent − fitted MSE / MRE on the same states, with standard errors across "
        "held-out batches; fitted_shown: agents whose V* a one-sided paired t-test of per-batch squared errors "
        "(≥ 20 held-out batches) showed closer to the returns; fitted_better: 'yes' where every agent's was. "
        "Where it is not, the 'fitted' curve is a second learned baseline, not the true value function of CL "
        "Fig 5. fit_epochs_used: epochs V* was fit for (it stops when shown better). *_mse_exact (LQR): MSE "
        "against the exact V^π; exact_mse: V^π's own MSE against the returns, the noise floor. objective: what "
        "each estimate differentiates (surrogate: CL eq. 15; own: the algorithm's own objective). These fitted_* / "
        "agent_* are read on the t-test's batches, which chose when V*'s fit stopped; floor_*: on further held-out "
        "batches no look read (the floor), non-terminal states: floor_fitted_mre is V*'s MRE against the complete "
        "returns — what a value function at E[R|s] reads from the returns' noise — and floor_agent_mre the "
        "agent's on the same states; *_truncated against the returns cut at the batch end (the original's "
        "target); floor_*_mse the squared errors; floor_exact_* (LQR) V^π's own MREs.")
    path = plot(studies, os.path.join(out, f"{target.name}.png"),
                f"Baselines: mean pairwise cosine of gradient estimates vs N ({record['scale']} scale)")
    return {"figure": path, "summary": table, "markdown": md, "csv": csv, "studies": studies}


def evidence(target, from_dir: str, notes: list) -> list:
    studies = diagnostic_targets.load_measured(target, from_dir)[1]
    return ev.baseline_evidence(studies, notes) + ev.baseline_ratio_evidence(studies)


TARGETS = (
    Target("fig-baselines", STUDY, "diagnostic", "CL Figs 5/16",
           "CL Fig 5/16: gradient concentration with the value net, a fitted value net, no baseline and (LQR) the "
           "exact V^π", scales=SCALES, run=diagnostic_targets.run, draw=draw, plan=dry_run.measurement_plan,
           evidence=evidence, papers=("cl",), provides=("baseline_", "value_excess", "value_floor"),
           presets=ALGORITHMS,
           measurement=Measurement("baselines", BASELINES,
                                   tiny=dict(sizes=(100, 1000), estimates=3, fit_pairs=2048, fit_epochs=2,
                                             floor_chunks=2)),
           notebook="closer-look"),
)

__all__ = ["ALGORITHMS", "SCALES", "STUDY", "TARGETS", "draw", "summary", "true_value_verdict"]
