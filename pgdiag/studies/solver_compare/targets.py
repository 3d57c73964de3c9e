"""solver-compare — do the fig-ablation and Table 2 conclusions hold under the ``fast`` solver settings?

The same two studies (``make fig-ablation`` and ``make table-2``, same scale, seeds and configurations)
train once with ``solver=converged`` (MuJoCo's own settings, the default) and once with ``solver=fast``
(Brax's: 1 solver iteration, 4 line-search steps), and one table sets their conclusions side by side:

* fig-ablation: each toggle's effect (score of best-LR agents with it on minus off, matched by seed and the
  other toggles, one unit per seed as in the claims) with its 95% Student-t interval over seeds, under both
  settings — the same verdict (> 0, < 0, or ≈ 0: the interval holds 0)? Intervals overlapping?
* Table 2: each algorithm's mean agent reward with its 95% interval — intervals overlapping? The same
  ranking of the algorithms, and the same verdict on IM's conclusion that the code-level optimizations
  matter more than the step choice (in the 2 × 2 design: min(TRPO+ − PPO-M, PPO − TRPO) > 0, with
  simultaneous Welch intervals, [`pgdiag.stats.OPTIMIZATIONS_OVER_STEP`][pgdiag.stats.OPTIMIZATIONS_OVER_STEP])?

``OUT/converged/`` and ``OUT/fast/`` hold the two studies (each redrawable by its own target with
``--from``); ``draw`` works from them alone.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from pgdiag.config import ConfigError
from pgdiag.studies.ablation import evidence as ev
from pgdiag.experiments import figures, study_dir
from pgdiag.studies import ablation
from pgdiag.studies.presets import targets as presets
from pgdiag.experiments.target_types import Target
from pgdiag.stats import OPTIMIZATIONS_OVER_STEP, min_difference_interval, t_interval

SOLVERS = ("converged", "fast")
TABLE_2 = presets.TABLE_2_PRESETS
#: the two targets it runs under each solver setting, each into its study's directory
PARTS = (ablation.TARGET, presets.TABLE_2_TARGET)
#: the scales of the two studies it runs: fig-ablation's (table-2 has each of them too), each part at its own
#: target's setting of that scale, as the description says
SCALES = {name: dataclasses.replace(sc, description=f"Both studies under each solver setting — fig-ablation: "
                                                    f"{sc.description.rstrip('.')}; table-2: "
                                                    f"{presets.SCALES[name].description}")
          for name, sc in ablation.SCALES.items() if name in presets.SCALES}


def _no_solver(overrides: dict) -> None:
    if "solver" in overrides:
        raise ConfigError(f"solver-compare trains under both solver settings ({', '.join(SOLVERS)}): do not set "
                          f"solver (got {overrides['solver']!r})")


def run(target, scale="smoke", out="results/solver-compare", tasks=None, seeds=None, progress=None,
        **overrides) -> dict:
    """Train both studies under both solver settings (reusing what is on disk), then
    [`draw`][pgdiag.studies.solver_compare.draw]."""
    _no_solver(overrides)
    for solver in SOLVERS:
        for part in PARTS:
            part.train(scale, out=os.path.join(out, solver, part.study), tasks=tasks, seeds=seeds, progress=progress,
                       solver=solver, **overrides)
    study_dir.write(out, target.study, scale, [], solvers=list(SOLVERS))
    return target.redraw(out)


def plan(target, scale="smoke", tasks=None, seeds=None, memory: int = 1 << 62, **overrides) -> list:
    """Both parts' programs under each solver setting."""
    _no_solver(overrides)
    return [dataclasses.replace(p, note=f"solver={solver}") for solver in SOLVERS for part in PARTS
            for p in part.dry_run(scale, memory=memory, tasks=tasks, seeds=seeds, solver=solver, **overrides)]


def _overlap(a, b) -> bool:
    return bool(max(a[1], b[1]) <= min(a[2], b[2]))


def _fmt(m, lo, hi) -> str:
    return f"{m:.0f} [{lo:.0f}, {hi:.0f}]" if np.isfinite(m) else "—"


def effect_verdict(m, lo, hi) -> str:
    """What an effect's 95% CI says: "> 0", "< 0", or "≈ 0" (the CI holds 0)."""
    return "> 0" if lo > 0 else "< 0" if hi < 0 else "≈ 0"


def _ablation(from_dir: str) -> dict:
    """{(task, toggle): (effect, low, high)} of one solver's ablation study: the claims' per-seed effects
    (`pgdiag.studies.ablation.evidence.ablation_evidence`) and their Student-t interval over seeds."""
    record = study_dir.read(from_dir, ablation.STUDY, "solver-compare")
    out = {}
    for task, (_, scores) in ablation.saved_scores(from_dir, "solver-compare", record["tasks"]).items():
        rows = ev.ablation_evidence({task: ablation.agents_at_best_lr(scores)}, ablation.TOGGLES)
        for t in ablation.TOGGLES:
            iv = t_interval([r["value"] for r in rows if r["evidence"] == f"ablation_{t}"])
            out[(task, t)] = (iv.estimate, iv.low, iv.high)
    return out


def _table_2(from_dir: str) -> tuple:
    """One solver's algorithms study: ({(task, algorithm): (mean, low, high)}, {(task, algorithm): the agents'
    scores})."""
    _, metrics = study_dir.load_runs(from_dir, presets.STUDY, "solver-compare")
    scores = presets.agent_scores(metrics[metrics.algorithm.isin(TABLE_2)])
    summary = presets.summarize(scores)
    agents = {key: part.score.to_numpy() for key, part in scores.groupby(["task", "algorithm"])}
    return {(r.task, r.algorithm): (r.mean, r.ci_low, r.ci_high) for r in summary.itertuples()}, agents


def compare(effects: dict, scores: dict, agents: dict):
    """The side-by-side table from ``effects[solver]``
    ([`_ablation`][pgdiag.studies.solver_compare.targets._ablation]), ``scores[solver]`` and
    ``agents[solver]`` ([`_table_2`][pgdiag.studies.solver_compare.targets._table_2])."""
    import pandas as pd

    a, b = SOLVERS
    rows = []
    for key in effects[a]:
        x, y = effects[a][key], effects[b].get(key, (np.nan,) * 3)
        rows.append({"study": "fig-ablation", "task": key[0], "quantity": f"effect of {key[1]}",
                     a: f"{_fmt(*x)} {effect_verdict(*x)}", b: f"{_fmt(*y)} {effect_verdict(*y)}",
                     "agree": effect_verdict(*x) == effect_verdict(*y), "CIs overlap": _overlap(x, y)})
    for task in dict.fromkeys(k[0] for k in scores[a]):
        for algo in TABLE_2:
            x, y = scores[a].get((task, algo), (np.nan,) * 3), scores[b].get((task, algo), (np.nan,) * 3)
            rows.append({"study": "table-2", "task": task, "quantity": figures.LABELS[algo], a: _fmt(*x),
                         b: _fmt(*y), "agree": "", "CIs overlap": _overlap(x, y)})
        means = {s: {algo: scores[s].get((task, algo), (np.nan,))[0] for algo in TABLE_2} for s in SOLVERS}
        rank = {s: " > ".join(figures.LABELS[k] for k in sorted(means[s], key=lambda k: -means[s][k]))
                for s in SOLVERS}
        rows.append({"study": "table-2", "task": task, "quantity": "ranking", a: rank[a], b: rank[b],
                     "agree": rank[a] == rank[b], "CIs overlap": ""})
        # IM's conclusion that the code-level optimizations matter more than the step choice, as the claims
        # test it: min(TRPO+ − PPO-M, PPO − TRPO) with simultaneous Welch intervals
        iv = {s: min_difference_interval({algo: agents[s].get((task, algo), np.array([])) for algo in TABLE_2},
                                         OPTIMIZATIONS_OVER_STEP) for s in SOLVERS}
        ivs = {s: (iv[s].estimate, iv[s].low, iv[s].high) for s in SOLVERS}
        rows.append({"study": "table-2", "task": task, "quantity": "optimizations over step",
                     a: f"{_fmt(*ivs[a])} {effect_verdict(*ivs[a])}", b: f"{_fmt(*ivs[b])} {effect_verdict(*ivs[b])}",
                     "agree": effect_verdict(*ivs[a]) == effect_verdict(*ivs[b]),
                     "CIs overlap": _overlap(ivs[a], ivs[b])})
    return pd.DataFrame(rows)


def draw(target, from_dir: str, out: str | None = None) -> dict:
    """The comparison table from ``from_dir``/converged and ``from_dir``/fast (written to ``out``)."""
    record = study_dir.read(from_dir, target.study, target.name)
    effects = {s: _ablation(os.path.join(from_dir, s, ablation.STUDY)) for s in SOLVERS}
    tables = {s: _table_2(os.path.join(from_dir, s, presets.STUDY)) for s in SOLVERS}
    df = compare(effects, {s: t[0] for s, t in tables.items()}, {s: t[1] for s, t in tables.items()})
    note = ("fig-ablation: a toggle's effect is the score (max over training) of the best-LR agents with it on "
            "minus off, matched by seed and the other toggles, one unit per seed, with its 95% Student-t interval "
            "over seeds. Table 2: mean agent reward (mean of the last 5 iterations) with its 95% Student-t "
            "interval over agents; 'optimizations over step': min(TRPO+ − PPO-M, PPO − TRPO) with simultaneous "
            f"Welch intervals (IM's conclusion where > 0); {record['scale']} scale. 'agree': an effect's verdict "
            "(> 0, < 0, or ≈ 0 when its interval holds 0) or the ranking is the same under both; 'CIs overlap': "
            "the two 95% intervals share a value.")
    md, csv = figures.write_table(df, os.path.join(out or from_dir, target.name),
                                  "fig-ablation and Table 2 under the converged and the fast solver settings", note)
    return {"table": df, "markdown": md, "csv": csv}


TARGETS = (
    Target("solver-compare", "solver-compare", "training", "fig-ablation and IM Table 2 under both solvers",
           "fig-ablation and Table 2 trained under the converged and the fast solver settings, their conclusions "
           "side by side", scales=SCALES, run=run, draw=draw, plan=plan, presets=presets.TABLE_2_PRESETS),
)

__all__ = ["SOLVERS", "TARGETS", "compare", "draw", "effect_verdict", "plan", "run"]
