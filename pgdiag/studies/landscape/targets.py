"""fig-landscape-concentration and fig-landscape-surrogate — CL §5.3, Figs 6–8 and 17–27 (ref §4.2 items 6–7).

Both targets share one study: PPO, PPO-M and TRPO trained with checkpoints (``OUT/runs/``), each measured by
[`pgdiag.diagnostics.landscape_study`][pgdiag.studies.landscape.diagnostic.landscape_study] on the plane of its own
step (x, 1 = the full step) and a random direction (y, 1 = a Gaussian vector of L2 norm 2, CL Fig 6), both 0 … 3:

* fig-landscape-concentration (PPO and TRPO): the true mean return at every
  grid point from 2K / 20K / 100K pairs (paper scale), the number of
  complete episodes behind each estimate and the pairs they took in the
  panel titles;
* fig-landscape-surrogate (PPO, PPO-M, TRPO): the true return (1e6 pairs per
  point at paper scale) beside the surrogate the algorithm maximizes on its
  batch (TRPO: with the KL = δ boundary), for a step from the algorithm's own
  batch and one from 1e6 pairs; each panel's title gives the sign agreement of
  the surrogate's and the true return's change along the step, with its CI;
  on the LQR task, the exact J beside them.

Measurements saved with the same settings are reused; [`draw`][pgdiag.studies.landscape.draw] redraws
from the saved tables alone.
"""

from __future__ import annotations

import os

import numpy as np

import functools

from pgdiag import algorithms
from pgdiag.config import CPU_SCALE
from pgdiag.studies.landscape.diagnostic import LANDSCAPE
from pgdiag.diagnostics.sizes import PAPER_SIZES
from pgdiag.experiments import diagnostic_targets, dry_run, figures
from pgdiag.studies.landscape import evidence as ev
from pgdiag.experiments.scales import (MID_CHECKPOINTS, MID_TRAINING, PAPER_CHECKPOINTS, Scale, replication_training,
                                       tasks_training)
from pgdiag.experiments.target_types import Measurement, Target

STUDY = "landscape"
ALGORITHMS = ("ppo", "ppo-m", "trpo")


#: the mid and tasks scales' plane: a 4 × 4 grid on 0 … 3 puts the step itself, (1, 0), on the grid; L̂ from 32
#: complete episodes
_MID_PLANE = dict(points=4, envs=8, length_episodes=32)
_MID_SURROGATE = dict(_MID_PLANE, sizes=(4_000,), step_pairs=(0, 32_768))

def _humanoid(training: dict, checkpoints: tuple, description: str) -> Scale:
    """Humanoid's planes on a training shared with fig-trust-region: concentration at CL's iteration 300 (the third
    of the four checkpoints) at CL Fig 6's 2K/20K/100K pairs a point, the surrogate at the first and third."""
    return Scale(**{**training, "tasks": {"fig-landscape-concentration": ("humanoid",),
                                          "fig-landscape-surrogate": ("humanoid",)}},
                 measured_at={"landscape-concentration": checkpoints[2:3], "landscape-surrogate": checkpoints[::2]},
                 settings={"landscape-concentration": dict(_MID_PLANE, sizes=(2_000, 20_000, 100_000)),
                           "landscape-surrogate": _MID_SURROGATE},
                 description=description)


SCALES = {
    "paper": Scale(
        tasks={"fig-landscape-concentration": ("humanoid", "lqr"),
               "fig-landscape-surrogate": ("humanoid", "walker2d", "hopper", "lqr")},
        seeds=1, overrides={"checkpoint_at": (0, 150, 300, 450)},
        task_overrides={"lqr": {"checkpoint_at": (0, 20, 40)}},
        settings={"landscape-concentration": dict(points=7, sizes=PAPER_SIZES["landscape-concentration"]),
                  "landscape-surrogate": dict(points=7, sizes=PAPER_SIZES["landscape-surrogate"],
                                                  step_pairs=(0, 1_000_000))},
        task_settings={"lqr": dict(random_norm=0.1)},
        description="One agent per preset, checkpoints after iterations 0/150/300/450 (LQR: 0/20/40); a 7 × 7 grid "
                    "on 0 … 3 × 0 … 3, random direction of L2 norm 2 as in CL Fig 6 (LQR: 0.1: its policy has 4 "
                    "parameters, which norm 2 would move by about 1 each, the size of the gains themselves); "
                    "2K/20K/100K pairs per point (concentration, Humanoid); 1e6 pairs per point and steps from "
                    "the algorithm's batch and from 1e6 pairs (surrogate, all tasks)."),
    "smoke": Scale(
        tasks={"fig-landscape-concentration": ("hopper", "lqr"), "fig-landscape-surrogate": ("hopper", "lqr")},
        seeds=1, overrides={**CPU_SCALE, "num_iterations": 30, "checkpoint_at": (0, 15, 29)},
        # a 4 × 4 grid on 0 … 3 puts the step itself, (1, 0), on the grid (the claims read the step's effect there)
        settings={"landscape-concentration": dict(points=4, sizes=(1_000, 5_000, 20_000), envs=8),
                  "landscape-surrogate": dict(points=4, sizes=(20_000,), step_pairs=(0, 16_384), envs=8)},
        task_settings={"lqr": dict(random_norm=0.1)},
        description="Hopper (native MuJoCo on a CPU) and the LQR task at CPU scale: 30 iterations of 4 × 256 steps, "
                    "one agent per preset, checkpoints after 0/15/29; a 4 × 4 grid on 0 … 3 (the step at 1), random "
                    "direction of L2 norm 2 "
                    "(LQR: 0.1); 1K/5K/20K pairs per point "
                    "(concentration); 2e4 pairs per point and steps from 1,024 and 16,384 pairs (surrogate)."),
    "mid": Scale(
        **MID_TRAINING,
        measured_at={"landscape-concentration": MID_CHECKPOINTS[::2], "landscape-surrogate": MID_CHECKPOINTS[::2]},
        settings={"landscape-concentration": dict(_MID_PLANE, sizes=(2_000, 4_000, 8_000)),
                  "landscape-surrogate": _MID_SURROGATE},
        description="Hopper at the papers' shape (1 × 2,048 steps, reset every iteration), the mid scale's shared "
                    "runs: 7 agents per preset (the claims compare planes across agents), 100 iterations, measured "
                    "after 0 and 61 (early, and later as CL's iteration 300 of 488, the learning rate still 0.39 of "
                    "its start); a 4 × 4 grid on 0 … 3 (the step at 1), random direction of L2 "
                    "norm 2, L̂ from 32 episodes; 2K/4K/8K pairs per point (concentration); 4K pairs per point "
                    "and steps from 2,048 and 32,768 pairs (surrogate)."),
    "tasks": _humanoid(tasks_training(("humanoid",)), MID_CHECKPOINTS,
                       "Humanoid (CL Figs 6, 26, 27) at the mid scale's shape: the runs of fig-trust-region's tasks "
                       "scale (7 agents per preset, 100 iterations), measured after 61 (CL's iteration 300 of 488); "
                       "a 4 × 4 grid on 0 … 3 (the step at 1), random direction of L2 norm 2; 2K/20K/100K pairs per "
                       "point as CL Fig 6 (concentration); the surrogate's plane as the mid scale's."),
    "replication": _humanoid(replication_training(("humanoid",)), PAPER_CHECKPOINTS,
                             "CL Figs 6, 26, 27 as the paper ran them: the runs of fig-trust-region's replication "
                             "scale (Gym's Humanoid, 488 iterations, 8 agents per preset) measured after iteration "
                             "300; 2K/20K/100K pairs per point as CL Fig 6 on a 4 × 4 grid (the step at 1); the "
                             "surrogate at 0 and 300 with the mid scale's sample sizes (not the paper's 1e6 pairs a "
                             "point)."),
}


def _subjects(study):
    """One panel row per (label, iteration): the first agent's plane (the paper draws one agent)."""
    p = study.planes.sort_values(["label", "iteration", "agent"])
    return p.groupby(["label", "iteration", "step_pairs"], sort=True).head(1)


def _heat(ax, grid, coords, title, cmap="viridis", random_norm=None):
    """One plane as a heatmap on a colour scale clipped to the data's robust range (the colour bar says how many
    cells lie beyond it); cells without a finite value in grey, counted in the title."""
    plt = figures.pyplot()
    grid = np.asarray(grid, dtype=float)
    vmin, vmax, clipped = figures.robust_range(grid)
    colours = plt.get_cmap(cmap).with_extremes(bad="0.75")
    im = ax.imshow(np.ma.masked_invalid(grid.T), origin="lower", extent=(coords[0], coords[-1], coords[0], coords[-1]),
                   aspect="auto", cmap=colours, vmin=vmin, vmax=vmax)
    ax.set_xlabel("step direction (1 = the step)")
    ax.set_ylabel("random direction" + (f" (1 = L2 norm {random_norm:g})" if random_norm else ""))
    blank = int(np.sum(~np.isfinite(grid)))
    ax.set_title(title + (f"\ngrey: {blank} cell{'s' * (blank != 1)} not finite (a diverged return)" if blank else ""),
                 fontsize=7)
    bar = ax.figure.colorbar(im, ax=ax, fraction=0.046, extend="both" if clipped else "neither")
    if clipped:
        bar.set_label(f"clipped to the 1–99% range: {clipped} cell{'s' * (clipped != 1)} beyond", fontsize=7)
    return im


#: panel rows in one figure; more are written one file per task (and per algorithm where a task has more)
MAX_ROWS = 4


def plot(concentration: bool, studies: dict, path: str, title: str) -> list:
    """The figure at ``path``, or where it would hold more than
    [`MAX_ROWS`][pgdiag.studies.landscape.targets.MAX_ROWS] rows of panels one file per task
    (``…-TASK.png``), and per algorithm within a task that alone has more (``…-TASK-LABEL.png``)."""
    rows = [(task, p) for task, st in studies.items() for _, p in _subjects(st).iterrows()]
    if concentration:
        rows = [(t, p) for t, p in rows if p.step_pairs == min(studies[t].planes.step_pairs)]
    if len(rows) <= MAX_ROWS:
        return [_plot(concentration, studies, rows, path, title)]
    stem, paths = path[:-len(".png")], []
    for task in studies:
        mine = [(t, p) for t, p in rows if t == task]
        labels = list(dict.fromkeys(p.label for _, p in mine))
        groups = [(f"-{task}", None)] if len(mine) <= MAX_ROWS else [(f"-{task}-{lab}", lab) for lab in labels]
        for suffix, lab in groups:
            part = [(t, p) for t, p in mine if lab is None or p.label == lab]
            paths.append(_plot(concentration, studies, part, stem + suffix + ".png",
                               f"{title}: {task}" + (f", {lab}" if lab else "")))
    return paths


def _plot(concentration: bool, studies: dict, rows: list, path: str, title: str) -> str:
    cols = max(len(st.sizes) if concentration else 2 + bool(st.manifest["resolved"]["exact"])
               for st in (studies[t] for t in dict.fromkeys(t for t, _ in rows)))   # this file's tasks only
    fig, axes = figures.panels(len(rows), cols, 4.2, 3.2)
    for r, (task, p) in enumerate(rows):
        st = studies[task]
        coords = np.asarray(st.manifest["resolved"]["coords"])
        subject = {"run": p.run, "agent": p.agent, "iteration": p.iteration}
        head = f"{task} {p.label} it {p.iteration}"
        norm = p.random_norm if "random_norm" in p.index else None
        if "random_norm" in p.index:   # CL Fig 6: the step typically an order of magnitude below the random one
            head += f" (|step| / |random| = {p.step_norm / p.random_norm:.2g})"
        if concentration:
            for c, n in enumerate(st.sizes):
                eps = st.grid(subject, p.step_pairs, n, "episodes")
                used = st.grid(subject, p.step_pairs, n, "pairs") if "pairs" in st.returns else np.full(1, n)
                _heat(axes[r, c], st.grid(subject, p.step_pairs, n), coords,
                      f"{head}: N = {n:,}\n({np.mean(eps):.0f} episodes, ~{np.mean(used):,.0f} pairs per point)",
                      random_norm=norm)
        else:
            a = st.agreement()
            a = a[(a.run == p.run) & (a.agent == p.agent) & (a.iteration == p.iteration) &
                  (a.step_pairs == p.step_pairs)].iloc[0]
            n = st.sizes[-1]
            used = (f"; {np.mean(st.grid(subject, p.step_pairs, n, 'episodes')):.0f} episodes, "
                    f"~{np.mean(st.grid(subject, p.step_pairs, n, 'pairs')):,.0f} pairs per point"
                    if "pairs" in st.returns else "")
            _heat(axes[r, 0], st.grid(subject, p.step_pairs), coords,
                  f"{head}, step from {p.step_pairs:,} pairs:\ntrue return (N = {n:,}{used})", random_norm=norm)
            sur = st.grid(subject, p.step_pairs, column="surrogate")
            _heat(axes[r, 1], sur, coords, f"surrogate; sign agreement {a.agreement:.2f} "
                                           f"[{a.low:.2f}, {a.high:.2f}]", cmap="magma", random_norm=norm)
            bound = algorithms.get(p.algorithm).constraint
            if bound and bound.kind == "kl":   # the algorithm's KL bound as a contour
                kl = st.grid(subject, p.step_pairs, column="kl")
                level = p["constraint_value"] if "constraint_value" in p.index else p[bound.knob]
                axes[r, 1].contour(coords, coords, kl.T, levels=[level], colors="w", linewidths=1)
            if cols > 2 and st.manifest["resolved"]["exact"]:
                _heat(axes[r, 2], st.grid(subject, p.step_pairs, column="exact"), coords, "exact J (LQR)",
                      random_norm=norm)
        for c in range(cols):
            if not axes[r, c].has_data():
                axes[r, c].axis("off")
    return figures.save(fig, path, title, dpi=90, title_size=10)


def summary(concentration: bool, studies: dict):
    import pandas as pd

    frames = []
    for task, st in studies.items():
        if concentration:
            agg = dict(episodes_per_point=("episodes", "mean"), mean_se=("se", "mean"))
            if "pairs" in st.returns:
                agg["pairs_per_point"] = ("pairs", "mean")
            r = st.returns.groupby(["label", "iteration", "n"]).agg(**agg).reset_index()
            planes = st.planes[st.planes.step_pairs == st.planes.step_pairs.min()]   # the plane drawn
            if "random_norm" in planes:
                planes = planes.assign(step_norm_ratio=planes.step_norm / planes.random_norm)
            cols = [c for c in ("step_norm", "step_norm_ratio", "mean_length", "mean_length_se") if c in planes]
            steps = planes.groupby(["label", "iteration"])[cols].mean().reset_index()
            frames.append(r.merge(steps, on=["label", "iteration"]).assign(task=task))
        else:
            a = st.agreement()
            cols = ["agreement", "low", "high", "true_step_change", "true_step_change_se", "surrogate_step_change",
                    "step_norm", "step_norm_ratio", "pairs_per_point"]
            frames.append(a.groupby(["label", "iteration", "step_pairs"])[cols].mean().reset_index()
                          .assign(task=task))
    out = pd.concat(frames, ignore_index=True)
    return out[["task"] + [c for c in out.columns if c != "task"]]


_RATIO = ("step_norm: the step's L2 norm; step_norm_ratio: step_norm over the random direction's norm (1 unit of "
          "y; CL Fig 6: norm 2, the step \"typically an order of magnitude lower\").")
_NOTES = {
    True: "n: the pairs per point asked for; episodes_per_point: the complete episodes from reset behind each point's "
          "estimate (round(n / L̂)), pairs_per_point: the pairs they took (their total length); mean_se: the "
          "estimates' mean standard error; mean_length (± mean_length_se): L̂, the subject's mean episode length "
          "from complete episodes from reset (unbiased). " + _RATIO,
    False: "agreement: share of neighbouring grid pairs along the step where surrogate and true return change with "
           "the same sign, 95% CI from the Monte-Carlo noise (low, high); true/surrogate_step_change: their change "
           "from (0, 0) to (1, 0), the step itself; pairs_per_point: the pairs the true return at each point took. "
           + _RATIO}


def draw(target, from_dir: str, out: str | None = None, *, concentration: bool, title: str) -> dict:
    """fig-landscape-concentration (``concentration``) or fig-landscape-surrogate from the landscape studies
    saved under ``from_dir``: the figures and the summary table."""
    record, studies = diagnostic_targets.load_measured(target, from_dir)
    out = out or from_dir
    table = summary(concentration, studies)
    shown = table.copy()
    for col in shown.columns:
        if shown[col].dtype.kind == "f":
            shown[col] = shown[col].map(lambda v: float(f"{v:.3g}") if np.isfinite(v) else v)
    md, csv = figures.write_table(shown, os.path.join(out, f"{target.name}-summary"), target.name,
                                  _NOTES[concentration])
    paths = plot(concentration, studies, os.path.join(out, f"{target.name}.png"),
                 f"{title} ({record['scale']} scale)")
    return {"figure": paths[0], "figures": paths, "summary": table, "markdown": md, "csv": csv, "studies": studies}


def concentration_evidence(target, from_dir: str, notes: list) -> list:
    return ev.concentration_evidence(diagnostic_targets.load_measured(target, from_dir)[1])


def surrogate_evidence(target, from_dir: str, notes: list) -> list:
    return ev.surrogate_evidence(diagnostic_targets.load_measured(target, from_dir)[1])


_COMMON = dict(study=STUDY, kind="diagnostic", scales=SCALES, run=diagnostic_targets.run, plan=dry_run.measurement_plan,
               papers=("cl",), presets=ALGORITHMS, notebook="closer-look")

TARGETS = (
    Target("fig-landscape-concentration", paper="CL Figs 6/26/27",
           help="CL Fig 6/26/27: true reward landscape from 2K/20K/100K pairs per point",
           draw=functools.partial(draw, concentration=True,
                                  title="True reward landscape around the policy estimated from N pairs"),
           evidence=concentration_evidence, provides=("landscape_noise", "landscape_step_z"),
           measurement=Measurement("landscape-concentration", LANDSCAPE, labels=("ppo", "trpo"),
                                   tiny=dict(points=3, extent=2.0, sizes=(512, 1024), envs=4)),
           **_COMMON),
    Target("fig-landscape-surrogate", paper="CL Figs 7/8/17-25",
           help="CL Fig 7/8/17-25: true reward vs the surrogate on the plane of the step",
           draw=functools.partial(draw, concentration=False,
                                  title="True reward vs the algorithm's surrogate on the plane of its step"),
           evidence=surrogate_evidence, provides=("landscape_true_step",),
           measurement=Measurement("landscape-surrogate", LANDSCAPE,
                                   tiny=dict(points=3, extent=2.0, sizes=(1024,), envs=4, step_pairs=(0, 2048))),
           **_COMMON),
)

__all__ = ["ALGORITHMS", "SCALES", "STUDY", "TARGETS", "draw", "plot", "summary"]
