"""The five algorithms side by side: fig-rewards, table-2 and table-3.

* ``fig-rewards`` (CL Fig. 10): mean episodic reward over training for PPO,
  PPO-M, PPO-NoClip, TRPO and TRPO+ on each task.
* ``table-2`` (IM Table 2): PPO, PPO-M, TRPO, TRPO+ per task, mean agent
  reward with a 95% bootstrap CI over agents (1000 resamples), AAI and ACLI,
  next to the published values.
* ``table-3`` (IM Table 3): PPO vs PPO-NoClip, the same statistics.

All three read one training study: every algorithm preset on every task.
Presets that share their static settings (PPO, PPO-M and PPO-NoClip; TRPO and
TRPO+) train together as one compiled sweep whose grid points are the
presets. A study already on disk with the same configuration is reused, so
the three targets train once between them.

The per-agent score is the mean of the last five iterations' mean reward
(what the original stored as ``5_rewards`` at the end of each run); the tables
can use the max over training instead (``statistic="max"``, the original
notebooks' choice). Which one the published tables used is not recorded
(ref §4.2 item 10). The per-iteration mean reward follows this engine's rule
(every episode that ended) or the original code's (``reporting="original"``:
an episode ending on the batch's last step is left out unless it is the only
one), so the tables can be computed exactly as published.

Training writes ``OUT/runs/<task>-<ppo|trpo>-<key>/`` and ``OUT/study.json``; the
drawing functions (:func:`draw_rewards`, :func:`draw_table`) only read them, and
the training entry points end by calling them.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from pg_diag.config import ALGORITHM_PRESETS, CPU_SCALE, ConfigError, study_preset
from pg_diag.experiments import figures, study_dir
from pg_diag.experiments.scales import Scale, pick
from pg_diag.stats import PUBLISHED, aai, acli, bootstrap_mean_ci, index_ci, t_interval

class _Named(dict):
    """A lookup with a default for names it does not list (a user's algorithm or preset)."""

    def __init__(self, known: dict, default):
        super().__init__(known)
        self.default = default

    def __missing__(self, key):
        return self.default(key)


LABELS = _Named({"ppo": "PPO", "ppo-m": "PPO-M", "ppo-noclip": "PPO-NoClip", "trpo": "TRPO", "trpo+": "TRPO+",
                 "ppo-kl": "PPO-KL", "npg": "NPG", "vpg": "VPG"}, lambda name: str(name).upper())
COLORS = _Named({"ppo": "tab:blue", "ppo-m": "tab:orange", "ppo-noclip": "tab:purple", "trpo": "tab:green",
                 "trpo+": "tab:red", "ppo-kl": "tab:cyan", "npg": "tab:olive", "vpg": "tab:brown"},
                lambda name: "tab:gray")
#: the tables' reporting rule -> the per-iteration metric it reads
REPORTING = {"pg_diag": "mean_return", "original": "mean_return_reference"}
REPORTING_NOTES = {
    "pg_diag": "pg_diag's rule: the mean raw return of every episode that ended in an iteration (`mean_return`)",
    "original": "the original code's rule, as published: an episode ending on the batch's last step is left out "
                "unless no other episode ended in the batch (`mean_return_reference`)"}


SCALES = {
    # Gym-v2's MuJoCo models, as the papers trained on: with 16 agents per algorithm on Hopper, Gym's model put
    # every algorithm's interval over its published one and ACLI above AAI as IM reports; Brax's put TRPO+
    # below its published interval and AAI above ACLI (docs/benchmarks.md, "Table 2 under both MuJoCo models")
    "paper": Scale(tasks=("hopper", "walker2d", "humanoid"), seeds=80, overrides={"model": "gym"},
                   description="Hopper, Walker2d, Humanoid on Gym-v2's MuJoCo models with the papers' presets (2048 × "
                               "488 steps per agent); 80 agents per algorithm and task (IM Tables 2–3: at least 80)."),
    "smoke": Scale(tasks=("hopper",), seeds=8, overrides={**CPU_SCALE, "num_iterations": 30},
                   description="Hopper (native MuJoCo on a CPU), the papers' presets at CPU scale: 30 iterations of "
                               "4 × 256 steps, 8 agents per algorithm."),
}


def presets_of(algorithms, default) -> tuple:
    """The presets a study trains: ``algorithms`` (preset names, e.g. ``("ppo", "npg")``) or the study's
    ``default``; an unknown name is refused before anything trains."""
    from pg_diag.config import preset_names

    names = tuple(algorithms or default)
    unknown = [a for a in names if a not in preset_names()]
    if unknown:
        raise ConfigError(f"unknown preset {unknown[0]!r}; presets: {', '.join(preset_names())}")
    return names


def programs(task: str, algorithms=ALGORITHM_PRESETS, **overrides) -> list:
    """Group the presets by static settings: each group is one compiled sweep.

    Returns ``[(base_config, [(algorithm, knob_overrides), ...]), ...]``;
    the overrides hold only the knobs in which a preset differs from the
    group's first.
    """
    groups: dict = {}
    for algo in algorithms:
        cfg = study_preset(algo, task, **overrides)
        groups.setdefault(cfg.static, []).append((algo, cfg))
    out = []
    for members in groups.values():
        base = members[0][1]
        points = []
        for algo, cfg in members:
            mine, theirs = cfg.knobs.values(), base.knobs.values()
            diff = {k: v for k, v in mine.items() if v != theirs[k]}
            points.append((algo, diff))
        out.append((base.replace(name=f"{task}/{base.static.algorithm}-family"), points))
    return out


def _wanted(manifest: dict) -> dict:
    """What makes a saved run the one asked for: its requested configuration, grid and labels (JSON-normal)."""
    return {k: json.loads(json.dumps(manifest.get(k), default=list)) for k in ("base_config", "grid_points", "labels")}


def config_key(wanted: dict) -> str:
    """A digest of a run's configuration, grid and labels: the suffix of its directory's name, so that runs of
    different configurations never share a directory."""
    text = json.dumps(_wanted(wanted), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _saved_manifest(run_dir: str) -> dict | None:
    """The manifest of a training run directory with its requested configuration (None: none readable)."""
    from pg_diag.run.store import requested_config

    try:
        with open(os.path.join(run_dir, "manifest.json")) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(old, dict) or "base_config" not in old:
        return None
    return {**old, "base_config": requested_config(old)}


def _reusable_seeds(run_dir: str, manifest: dict) -> tuple:
    """The seeds of an existing complete run directory with the same configuration, grid and labels
    (empty when it has none or differs)."""
    old = _saved_manifest(run_dir)
    if old is None or old.get("status") != "complete":
        return ()
    return tuple(old.get("seeds") or ()) if _wanted(old) == _wanted(manifest) else ()


def _seeds_name(seeds) -> str:
    """The suffix of a run directory holding the seeds a study added to an earlier run."""
    if len(seeds) == 1:
        return f"seeds-{seeds[0]}"
    if list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds-{seeds[0]}-{seeds[-1]}"
    return "seeds-" + "-".join(map(str, seeds)) if len(seeds) <= 4 else f"seeds-{seeds[0]}-{seeds[-1]}-{len(seeds)}"


def _train_into(path: str, wanted: dict, base, grid, seeds, labels, progress, label: str):
    """Train ``seeds`` into the new run directory ``path``. A directory already there is never replaced: an
    interrupted run of the same configuration and seeds is resumed, anything else refused."""
    from pg_diag.run import sweep

    if os.path.lexists(path):
        old = _saved_manifest(path)
        same = old is not None and _wanted(old) == _wanted(wanted) and list(old.get("seeds") or ()) == list(seeds)
        if not same or old.get("status") == "complete":
            held = ("no training run's manifest" if old is None else
                    f"a run of another configuration or seeds (seeds {old.get('seeds')})" if not same else
                    "this run complete, which reuse=False does not take")
            raise ConfigError(f"cannot train into {path!r}: it holds {held}, which training would overwrite; "
                              f"move it away or write this study to another output directory")
        # the same run, interrupted: continue it from its last saved state
        return sweep(base, grid, list(seeds), progress=progress, labels=labels, resume=path)
    return sweep(base, grid, list(seeds), out=path, progress=progress, labels=labels, label=label)


def train_once(path: str, base, grid, seeds, progress=None, labels=None, label: str | None = None):
    """The run of ``base`` × ``grid`` × ``seeds`` in ``path``: loaded where ``path`` holds it complete,
    continued where it was interrupted, trained where ``path`` is free; any other run there is refused
    (a study asked twice never trains twice, and never replaces a run)."""
    from pg_diag.run import load_run, plan

    p = plan(base, grid, seeds, labels)
    wanted = {"base_config": base.to_dict(), "grid_points": list(p.points), "labels": list(p.labels)}
    if list(_reusable_seeds(path, wanted)) == list(p.seeds):
        return load_run(path)
    return _train_into(path, wanted, base, grid, list(p.seeds), labels, progress, label or base.name)


def train_study(task: str, seeds, out: str, algorithms=ALGORITHM_PRESETS, progress=None, reuse=True,
                **overrides):
    """Train every preset in ``algorithms`` on ``task`` with ``seeds`` (a count or a list);
    returns ``(metrics, runs)``: one metrics DataFrame with an ``algorithm`` column, and the run
    directories under ``out`` it came from as ``(name, seeds taken from it)``.

    A run directory is named ``{task}-{program}-{key}``, ``key`` a digest of its configuration, grid and labels
    (:func:`config_key`), so that studies of different configurations can share ``out`` without one replacing
    another's runs; a directory in the way is never overwritten (:func:`_train_into`). Runs on disk with the same
    configuration are reused seed by seed: asking for 16 seeds where a run of seeds 0-7 is saved trains seeds
    8-15 alone, into ``{task}-{program}-{key}-seeds-8-15``, and a saved run of more seeds than asked gives the
    ones asked for."""
    import pandas as pd

    from pg_diag.run import load_run, plan

    frames, runs = [], []
    for base, points in programs(task, algorithms, **overrides):
        name = f"{task}-{base.static.algorithm}"
        labels = [a for a, _ in points]
        grid = [p for _, p in points]
        p = plan(base, grid, seeds, labels)
        wanted = {"base_config": base.to_dict(), "grid_points": list(p.points), "labels": list(p.labels)}
        key = f"{name}-{config_key(wanted)}"
        # every run of this task and program is a candidate (the key only names it; the manifest decides)
        siblings = sorted(d for d in (os.listdir(out) if os.path.isdir(out) else ())
                          if d == name or d.startswith(f"{name}-"))
        covered = []
        for d in siblings if reuse else ():
            take = [s for s in _reusable_seeds(os.path.join(out, d), wanted) if s in p.seeds and s not in covered]
            if take:
                m = load_run(os.path.join(out, d)).metrics
                frames.append(study_dir.tidy(m[m.seed.isin(take)], task))
                runs.append((d, take))
                covered += take
        missing = [s for s in p.seeds if s not in covered]
        if missing:
            new = key if not covered else f"{key}-{_seeds_name(missing)}"
            metrics = _train_into(os.path.join(out, new), wanted, base, grid, missing, labels, progress,
                                  f"{task}: {', '.join(LABELS[a] for a in labels)}").metrics
            frames.append(study_dir.tidy(metrics, task))
            runs.append((new, missing))
    return pd.concat(frames, ignore_index=True), runs


# --- per-agent scores and the tables ------------------------------------------------

def _check_rules(statistic: str, reporting: str) -> None:
    if statistic not in ("final", "max"):
        raise ConfigError(f"unknown statistic {statistic!r}; choose 'final' or 'max'")
    if reporting not in REPORTING:
        raise ConfigError(f"unknown reporting rule {reporting!r}; choose one of: {', '.join(REPORTING)}")


def agent_scores(metrics, statistic: str = "final", reporting: str = "pg_diag"):
    """One score per (task, algorithm, agent): the mean of the last five iterations'
    mean reward (``final``) or the max over training (``max``), the mean reward under
    ``reporting``'s rule (see :data:`REPORTING`)."""
    _check_rules(statistic, reporting)
    column, keys = REPORTING[reporting], ["task", "algorithm", "agent"]
    if column not in metrics:
        raise ConfigError(f"reporting={reporting!r} needs the metric {column!r}, which these runs did not "
                          f"record (they predate it); retrain them or use reporting='pg_diag'")
    if statistic == "max":
        return metrics.groupby(keys)[column].max().rename("score").reset_index()
    last = metrics.iteration.max()
    tail = metrics[metrics.iteration > last - 5]
    return tail.groupby(keys)[column].mean().rename("score").reset_index()


def summarize(scores, resamples: int = 1000):
    """Mean and 95% bootstrap CI per (task, algorithm)."""
    import pandas as pd

    rows = []
    for (task, algo), group in scores.groupby(["task", "algorithm"]):
        mean, low, high = bootstrap_mean_ci(group.score.to_numpy(), resamples=resamples)
        rows.append({"task": task, "algorithm": algo, "agents": int(group.score.notna().sum()),
                     "mean": mean, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


def _fmt(mean, low, high):
    if not np.isfinite(mean):
        return "—"
    return f"{mean:.0f} [{low:.0f}, {high:.0f}]" if np.isfinite(low) else f"{mean:.0f}"


def table(summary, algorithms, with_aai: bool, scores=None):
    """The table as a DataFrame (one row per algorithm, one column per task) with
    the published values in parallel columns; with the agents' ``scores``
    (:func:`agent_scores`), AAI and ACLI carry their bootstrap CIs."""
    import pandas as pd

    tasks = list(dict.fromkeys(summary.task))
    by = {(r.task, r.algorithm): r for r in summary.itertuples()}
    rows = []
    for algo in algorithms:
        row = {"algorithm": LABELS[algo]}
        for task in tasks:
            r = by.get((task, algo))
            row[task] = _fmt(r.mean, r.ci_low, r.ci_high) if r is not None else "—"
            pub = PUBLISHED.get(task, {}).get(algo)
            row[f"{task} (published)"] = _fmt(*pub) if pub else "—"
        rows.append(row)
    if with_aai:
        for name, fn in (("AAI", aai), ("ACLI", acli)):
            row = {"algorithm": name}
            for task in tasks:
                four = [a for a in ("ppo", "ppo-m", "trpo", "trpo+") if (task, a) in by]
                if len(four) < 4:
                    row[task] = "—"
                elif scores is None:
                    row[task] = f"{fn({a: by[(task, a)].mean for a in four}):.0f}"
                else:
                    mine = scores[scores.task == task]
                    row[task] = _fmt(*index_ci({a: mine[mine.algorithm == a].score.to_numpy() for a in four}, fn))
                pub = PUBLISHED.get(task, {}).get(name.lower())
                row[f"{task} (published)"] = f"{pub}" if pub is not None else "—"
            rows.append(row)
    return pd.DataFrame(rows)


# --- the figure -----------------------------------------------------------------------

def plot_rewards(metrics, path: str, title: str = "", resamples: int = 200) -> str:
    """Mean episodic reward over training per algorithm, with a 95% bootstrap band over agents."""
    plt = figures.pyplot()

    tasks = list(dict.fromkeys(metrics.task))
    fig, axes = plt.subplots(1, len(tasks), figsize=(5.5 * len(tasks), 4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        m = metrics[metrics.task == task]
        for algo in ALGORITHM_PRESETS:
            a = m[m.algorithm == algo]
            if a.empty:
                continue
            curves = a.pivot(index="agent", columns="iteration", values="mean_return")
            steps = a.groupby("iteration").env_steps.first().reindex(curves.columns).to_numpy()
            # the band: Student-t over agents (the units), not a bootstrap of a handful of them
            stats = np.array([t_interval(curves[c].to_numpy())[:3] for c in curves.columns])
            ax.plot(steps, stats[:, 0], color=COLORS[algo], label=f"{LABELS[algo]} (n={len(curves)})")
            ax.fill_between(steps, stats[:, 1], stats[:, 2], color=COLORS[algo], alpha=0.2, linewidth=0)
        ax.set_title(task)
        ax.set_xlabel("environment steps per agent")
        ax.set_ylabel("mean episodic reward")
        ax.legend(fontsize=8)
    return figures.save(fig, path, title, dpi=110)


# --- entry points: train and save, then draw from disk -----------------------------------

def _study(scale: str, out: str, tasks, seeds, progress, overrides) -> None:
    """Train every preset on every task (reusing matching runs on disk) and record the study."""
    sc = pick(SCALES, scale)
    tasks = tuple(tasks or sc.tasks_of())
    over = {**sc.overrides, **overrides}
    for task in tasks:  # validate every configuration before training anything
        for algo in ALGORITHM_PRESETS:
            study_preset(algo, task, **over)
    runs = {t: train_study(t, seeds or sc.seeds, os.path.join(out, "runs"), ALGORITHM_PRESETS, progress, **over)[1]
            for t in tasks}
    study_dir.write(out, "algorithms", scale, tasks, algorithms=list(ALGORITHM_PRESETS), **study_dir.runs_entry(runs))


def fig_rewards(scale="smoke", out="results/algorithms", tasks=None, seeds=None, progress=None, **overrides):
    _study(scale, out, tasks, seeds, progress, overrides)
    return draw_rewards(out)


def draw_rewards(from_dir: str, out: str | None = None, tasks=None) -> dict:
    """fig-rewards from the study saved in ``from_dir`` (written to ``out``, default ``from_dir``)."""
    record, metrics = study_dir.load_runs(from_dir, "algorithms", "fig-rewards", tasks)
    path = plot_rewards(metrics, os.path.join(out or from_dir, "fig-rewards.png"),
                        title=f"Mean episodic reward over training ({record['scale']} scale)")
    return {"figure": path, "metrics": metrics}


def _table_target(kind, scale, out, tasks, seeds, progress, statistic, reporting, overrides):
    _check_rules(statistic, reporting)
    _study(scale, out, tasks, seeds, progress, overrides)
    return draw_table(kind, out, statistic=statistic, reporting=reporting)


AAI_CI_NOTE = "; AAI and ACLI from the same resamples of each algorithm's agents"


def draw_table(kind: str, from_dir: str, out: str | None = None, tasks=None, statistic: str = "final",
               reporting: str = "pg_diag") -> dict:
    """table-2 or table-3 from the study saved in ``from_dir`` (written to ``out``, default ``from_dir``)."""
    if kind not in ("table-2", "table-3"):
        raise ValueError(f"unknown table {kind!r}; tables are table-2 and table-3")
    _check_rules(statistic, reporting)
    algorithms = ("ppo", "ppo-m", "trpo", "trpo+") if kind == "table-2" else ("ppo", "ppo-noclip")
    record, metrics = study_dir.load_runs(from_dir, "algorithms", kind, tasks)
    metrics = metrics[metrics.algorithm.isin(algorithms)]
    scores = agent_scores(metrics, statistic, reporting)
    summary = summarize(scores)
    df = table(summary, algorithms, with_aai=(kind == "table-2"), scores=scores)
    title = ("IM Table 2: step choice × code-level optimizations" if kind == "table-2"
             else "IM Table 3: PPO vs PPO-NoClip")
    note = (f"Mean agent reward ({'mean of the last 5 iterations' if statistic == 'final' else 'max over training'}"
            f" of the per-iteration mean episodic reward) with a 95% percentile-bootstrap CI over agents "
            f"(1000 resamples{AAI_CI_NOTE if kind == 'table-2' else ''}); {record['scale']} scale. Episodic reward reported under "
            f"{REPORTING_NOTES[reporting]}. Published values: Engstrom et al. (ref §5).")
    md, csv = figures.write_table(df, os.path.join(out or from_dir, kind), title, note)
    return {"markdown": md, "csv": csv, "table": df, "summary": summary}


def table_2(scale="smoke", out="results/algorithms", tasks=None, seeds=None, progress=None, statistic="final",
            reporting="pg_diag", **overrides):
    return _table_target("table-2", scale, out, tasks, seeds, progress, statistic, reporting, overrides)


def table_3(scale="smoke", out="results/algorithms", tasks=None, seeds=None, progress=None, statistic="final",
            reporting="pg_diag", **overrides):
    return _table_target("table-3", scale, out, tasks, seeds, progress, statistic, reporting, overrides)
