"""``pg-diag report``: the claims of CL §5 checked on a user's saved diagnostic studies, on one page.

    pg-diag report --from results --out results/closer-look-report      # or: make closer-look-report

finds the diagnostic studies under ``--from`` (the output directories of fig-grad-variance / -true /
step-variance, fig-value, fig-baselines and the landscape targets; ``--scale`` picks one scale where several
are there), redraws their figures from disk, extracts each claim's evidence (:mod:`.claims`) from the saved
tables, and writes ``report.md`` (every figure, then per claim, task and algorithm the statistic with its
95% CI, the verdict and what the paper says) with ``claims.csv`` and ``evidence.csv`` beside it. Nothing is
trained, measured or compiled.
"""

from __future__ import annotations

import os

import numpy as np

from pg_diag.config import ConfigError
from pg_diag.experiments import claims as claim_specs
from pg_diag.experiments import figures, study_dir

#: study name -> the targets drawn from it in the report
STUDIES = {"gradients": ("fig-grad-variance", "fig-grad-true", "fig-step-variance"), "fig-value": ("fig-value",),
           "fig-baselines": ("fig-baselines",),
           "landscape": ("fig-landscape-concentration", "fig-landscape-surrogate")}


def find_studies(root: str, scale: str | None = None) -> dict:
    """{study name: directory} of the diagnostic studies in ``root`` or its immediate subdirectories."""
    import json

    if not os.path.isdir(root):
        raise ConfigError(f"report --from {root!r}: no such directory")
    found = {}
    for d in [root] + sorted(os.path.join(root, e) for e in os.listdir(root)):
        path = os.path.join(d, study_dir.STUDY_FILE)
        if not os.path.isfile(path):
            continue
        try:
            with open(path) as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue
        name = record.get("study")
        if name in STUDIES and (scale is None or record.get("scale") == scale):
            found.setdefault(name, []).append((d, record.get("scale")))
    if not found:
        raise ConfigError(f"report --from {root!r}: no diagnostic study there{f' at scale {scale!r}' if scale else ''} "
                          f"(looked for the output directories of {', '.join(t for v in STUDIES.values() for t in v)}"
                          f", in it and its subdirectories); run those targets first, e.g. make closer-look-report")
    out = {}
    for name, dirs in found.items():
        if len(dirs) > 1:
            raise ConfigError(f"report --from {root!r}: {len(dirs)} {name!r} studies ("
                              f"{', '.join(f'{d} ({s})' for d, s in dirs)}); choose one with --scale")
        out[name] = dirs[0][0]
    return out


# --- evidence: one statistic per measured unit ------------------------------------------------------------

def _rows(evidence: str, frame, value: str):
    return [{"evidence": evidence, "task": r.task, "label": r.label, "unit": r.unit, "value": float(getattr(r, value))}
            for r in frame.itertuples(index=False)]


def gradient_evidence(studies: dict) -> list:
    """From the gradient study ({task: GradientStudy}): pairwise and true-gradient cosines at the batch size."""
    rows = []
    for task, st in studies.items():
        b = st.batch_size
        per = st.pairs.groupby(["label", "agent", "iteration", "n"])["cosine"].mean().reset_index()
        at_b = per[per.n == b].assign(task=task, unit=lambda f: f.agent.astype(str) + "@" + f.iteration.astype(str))
        first, last = at_b.iteration.min(), at_b.iteration.max()
        rows += _rows("grad_pairwise_at_batch", at_b[at_b.iteration > first], "cosine")
        change = at_b.pivot_table(index=["label", "agent"], columns="iteration", values="cosine")
        if first != last:
            change = (change[last] - change[first]).rename("value").reset_index().assign(
                task=task, unit=lambda f: f.agent.astype(str))
            rows += _rows("grad_pairwise_change", change, "value")
        true = st.estimates.groupby(["label", "agent", "iteration", "n"])["to_true"].mean().reset_index()
        true = true.assign(task=task, unit=lambda f: f.agent.astype(str) + "@" + f.iteration.astype(str))
        if np.isfinite(true.to_true).any():
            rows += _rows("grad_true_at_batch", true[(true.n == b) & (true.iteration > first)], "to_true")
            wide = true.pivot_table(index=["label", "agent", "iteration", "unit"], columns="n", values="to_true")
            gain = (wide[wide.columns.max()] - wide[b]).rename("value").reset_index().assign(task=task)
            rows += _rows("grad_true_gain", gain, "value")
    return rows


def step_evidence(studies: dict) -> list:
    rows = []
    for task, st in studies.items():
        per = st.pairs.groupby(["label", "agent", "iteration"])["cosine"].mean().reset_index()
        per = per[per.iteration > per.iteration.min()].assign(
            task=task, unit=lambda f: f.agent.astype(str) + "@" + f.iteration.astype(str))
        rows += _rows("step_pairwise", per, "cosine")
    return rows


def value_evidence(metrics) -> list:
    """From fig-value's metrics: per agent, the second half of training's held-out (else training) MREs."""
    rows = []
    for (task, label, agent), m in metrics.groupby(["task", "algorithm", "agent"], sort=True):
        late = m[m.iteration >= m.iteration.max() / 2]

        def mre(kind):
            for col in (f"heldout_value_mre_{kind}", f"value_mre_{kind}"):
                if col in late and np.isfinite(late[col]).any():
                    return float(np.nanmean(late[col]))
            return float("nan")

        unit = {"task": task, "label": label, "unit": str(agent)}
        rows.append({"evidence": "value_gap", **unit, "value": mre("returns") - mre("gae")})
        rows.append({"evidence": "value_gap_truncated", **unit, "value": mre("returns_truncated") - mre("gae")})
    return rows


def baseline_evidence(studies: dict) -> list:
    rows = []
    for task, st in studies.items():
        per = st.pairs[st.pairs.n == st.batch_size].groupby(["label", "agent", "iteration", "baseline"])[
            "cosine"].mean().unstack("baseline").reset_index()
        per = per.assign(task=task, unit=per.agent.astype(str) + "@" + per.iteration.astype(str))
        for evidence, a, b in (("baseline_value_vs_zero", "value", "zero"),
                               ("baseline_fitted_vs_value", "fitted", "value")):
            if a in per and b in per:
                rows += _rows(evidence, per.assign(value=per[a] - per[b]), "value")
    return rows


def landscape_evidence(concentration: dict, surrogate: dict) -> list:
    rows = []
    for task, st in concentration.items():
        small, large = min(st.sizes), max(st.sizes)
        for (label, agent, iteration, pairs), r in st.returns.groupby(["label", "agent", "iteration", "step_pairs"]):
            spread = np.nanstd(r[r.n == large]["mean"].to_numpy())
            noise = np.nanmedian(r[r.n == small]["se"].to_numpy())
            rows.append({"evidence": "landscape_noise_ratio", "task": task, "label": label,
                         "unit": f"{agent}@{iteration}/{pairs}", "value": noise / spread if spread > 0 else np.nan})
    for task, st in surrogate.items():
        a = st.agreement()
        own = a[a.step_pairs == a.step_pairs.min()]
        first, last = own.iteration.min(), own.iteration.max()
        if first == last:
            continue
        wide = own.pivot_table(index=["label", "agent"], columns="iteration", values="agreement")
        drop = (wide[first] - wide[last]).rename("value").reset_index().assign(
            task=task, unit=lambda f: f.agent.astype(str))
        rows += _rows("surrogate_agreement_drop", drop, "value")
    return rows


def _evidence(found: dict):
    import pandas as pd

    from pg_diag.experiments import baseline_figs, gradient_figs, landscape_figs

    rows = []
    if "gradients" in found:
        rows += gradient_evidence(gradient_figs.load_studies("fig-grad-variance", found["gradients"])[1])
        try:
            rows += step_evidence(gradient_figs.load_studies("fig-step-variance", found["gradients"])[1])
        except ConfigError:
            pass   # the step study was not measured
    if "fig-value" in found:
        rows += value_evidence(study_dir.load_runs(found["fig-value"], "fig-value", "fig-value")[1])
    if "fig-baselines" in found:
        rows += baseline_evidence(baseline_figs.load_studies(found["fig-baselines"])[1])
    if "landscape" in found:
        measured = {}
        for target in landscape_figs.TARGETS:
            try:
                measured[target] = landscape_figs.load_studies(target, found["landscape"])[1]
            except ConfigError:
                measured[target] = {}
        rows += landscape_evidence(*measured.values())
    return pd.DataFrame(rows, columns=["evidence", "task", "label", "unit", "value"])


def _draw_figures(found: dict, out: str) -> list:
    """Every target's figure redrawn from its study into ``out/figures/<target>/``: [(target, path)]."""
    from pg_diag.experiments import baseline_figs, gradient_figs, landscape_figs, value_fig

    drawers = {"fig-value": value_fig.draw, "fig-baselines": baseline_figs.draw}
    figs = []
    for name, targets in STUDIES.items():
        if name not in found:
            continue
        for target in targets:
            where = os.path.join(out, "figures", target)
            try:
                if name == "gradients":
                    result = gradient_figs.draw(target, found[name], out=where)
                elif name == "landscape":
                    result = landscape_figs.draw(target, found[name], out=where)
                else:
                    result = drawers[name](found[name], out=where)
            except ConfigError:
                continue   # a target of the study that was not measured
            figs.append((target, os.path.relpath(result["figure"], out)))
    return figs


def _fmt(v: float) -> str:
    return "—" if not np.isfinite(v) else f"{v:.3g}"


def page(results, figs: list, found: dict) -> str:
    """The report as Markdown."""
    lines = ["# Closer look: the paper's claims on these runs", "",
             "Studies read: " + ", ".join(f"`{n}` ({d})" for n, d in sorted(found.items())) + ".", "",
             "Each claim of CL §5 is tested on the saved measurements: the mean over measured units (an agent at a "
             "checkpoint, an agent across checkpoints, a landscape plane) with a 95% bootstrap CI; *holds* when the "
             "whole CI lies on the paper's side of the test, *does not hold* when it lies on the other side, "
             "*inconclusive* otherwise (or with fewer than two units).", ""]
    for claim in claim_specs.CLAIMS:
        part = results[results.claim == claim.key]
        lines += [f"## {claim.key} ({claim.where})", "", f"**The paper:** {claim.paper}.", "",
                  f"**Measured:** {claim.statistic}; test: {claim.side} {claim.threshold:g}.", ""]
        if part.empty:
            lines += ["*Not measured by the studies read.*", ""]
            continue
        lines += ["| task | algorithm | mean | 95% CI | units | verdict |", "|---|---|---|---|---|---|"]
        lines += [f"| {r.task} | {r.label} | {_fmt(r.mean)} | [{_fmt(r.low)}, {_fmt(r.high)}] | {r.units} | "
                  f"**{r.verdict}** |" for r in part.itertuples(index=False)]
        lines.append("")
    lines += ["## Figures", ""] + [f"### {t}\n\n![{t}]({p})\n" for t, p in figs]
    return "\n".join(lines)


def report(from_dir: str, out: str | None = None, scale: str | None = None, resamples: int = 1000) -> dict:
    """Read the diagnostic studies under ``from_dir``, test every claim, write the page to ``out``."""
    found = find_studies(from_dir, scale)
    out = out or os.path.join(from_dir, "closer-look-report")
    evidence = _evidence(found)
    results = claim_specs.evaluate(evidence, resamples=resamples)
    figs = _draw_figures(found, out)
    figures.write_csv(evidence, os.path.join(out, "evidence.csv"), index=False)
    figures.write_csv(results, os.path.join(out, "claims.csv"), index=False)
    path = os.path.join(out, "report.md")
    text = page(results, figs, found)
    from pg_diag.run.distributed import lead_writes
    with lead_writes("report") as lead:
        if lead:
            with open(path, "w") as f:
                f.write(text)
    return {"report": path, "claims": results, "evidence": evidence, "figures": figs, "studies": found}


__all__ = ["STUDIES", "find_studies", "page", "report"]
