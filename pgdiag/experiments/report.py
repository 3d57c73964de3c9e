"""``pgdiag report``: the claims of one paper checked on a user's saved studies, on one page.

    pgdiag report --from results --scale mid        # CL: writes results/closer-look-report-mid (as make does)
    pgdiag report --paper im --from results         # IM: results/implementation-matters-report-<scale>

finds the studies under ``--from`` (the output directories of the paper's targets; ``--scale`` picks one scale where
several are there), redraws their figures from disk, extracts each claim's evidence
([`evidence_rows`][pgdiag.experiments.evidence_rows]) from the saved tables, tests it where the paper made it
([`claims`][pgdiag.experiments.claims]: agents as units, intervals with stated coverage), counts the findings per
paper section with Holm's adjustment ([`findings`][pgdiag.experiments.findings]), and writes ``report.md`` — a
summary first, then per claim the paper's sentence, where the paper made it, the rule and its reason, per task and
algorithm the estimate, interval, agents, how many agree and the verdict, and what is missing where there is none;
then every figure — with ``findings.csv``, ``claims.csv`` and ``evidence.csv`` beside it. Nothing is trained,
measured or compiled.
"""

from __future__ import annotations

import json
import os

import numpy as np

from pgdiag.config import ConfigError
from pgdiag.experiments import claims as claim_specs
from pgdiag.experiments import evidence_rows as ev
from pgdiag.experiments import figures, study_dir, targets
from pgdiag.experiments import findings as findings_mod
from pgdiag.experiments.paper_claims import MODELS
from pgdiag.run.distributed import lead_writes

PAPERS = {"cl": ("CL", "Closer look: the claims of Ilyas et al. (CL) on these runs", "closer-look-report"),
          "im": ("IM", "Implementation matters: the claims of Engstrom et al. (IM) on these runs",
                 "implementation-matters-report")}


def check_paper(paper: str) -> str:
    if paper not in PAPERS:
        raise ConfigError(f"report --paper {paper!r}: unknown paper; choose from {', '.join(PAPERS)} "
                          f"(cl: A Closer Look at Deep Policy Gradients; im: Implementation Matters)")
    return paper


def _scales(scale: str | None):
    return None if scale is None else [s for s in scale.split(",") if s]


def find_studies(root: str, scale: str | None = None, paper: str = "cl", studies=None) -> dict:
    """{study name: [directory, …]} of ``paper``'s studies in ``root`` or its immediate subdirectories: one per
    study, or one per scale where ``scale`` names several ("mid,tasks": the mid scale's Hopper studies with the
    papers' own tasks beside them); only those named in ``studies`` where given."""
    names = {t.study for t in targets.of_paper(check_paper(paper))}
    names = names & set(studies) if studies is not None else names
    wanted = _scales(scale)
    if not os.path.isdir(root):
        raise ConfigError(f"report --from {root!r}: no such directory")
    found: dict = {}
    for d in [root] + sorted(os.path.join(root, e) for e in os.listdir(root)):
        path = os.path.join(d, study_dir.STUDY_FILE)
        if not os.path.isfile(path):
            continue
        try:
            with open(path) as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue
        if study_dir.study_of(record) in names and (wanted is None or record.get("scale") in wanted):
            found.setdefault(study_dir.study_of(record), []).append((d, record.get("scale")))
    if not found:
        names = [t.name for t in targets.of_paper(paper)]
        raise ConfigError(f"report --from {root!r}: no study of {PAPERS[paper][0]} there"
                          f"{f' at scale {scale!r}' if scale else ''} (looked for the output directories of "
                          f"{', '.join(names)}, in it and its subdirectories); run those targets first, e.g. "
                          f"make {PAPERS[paper][2]}")
    for name, dirs in found.items():
        scales = [s for _, s in dirs]
        if len(set(scales)) < len(dirs) or (wanted is None and len(dirs) > 1):
            how = ("choose one with --scale, or several: --scale " + ",".join(sorted(set(map(str, scales))))
                   if len(set(scales)) == len(dirs) else "give --from a directory that holds one of them")
            raise ConfigError(f"report --from {root!r}: {len(dirs)} {name!r} studies ("
                              f"{', '.join(f'{d} ({s})' for d, s in dirs)}); {how}")
    return {name: [d for d, _ in dirs] for name, dirs in found.items()}


# --- each target's evidence and figures, read from disk ------------------------------------------------------

def _scale_of(d: str) -> str:
    try:
        with open(os.path.join(d, study_dir.STUDY_FILE)) as f:
            return str(json.load(f).get("scale"))
    except (OSError, ValueError):
        return "?"


def collect(found: dict, paper: str, notes: list | None = None):
    """The evidence of ``paper``'s targets whose studies are in ``found``, as one frame (what was not tested
    goes to ``notes``); a target its study did not measure gives none. Studies of several scales are read
    together, each agent named by its scale too (units of two scales are never merged)."""
    import pandas as pd

    rows, notes = [], notes if notes is not None else []
    for t in targets.of_paper(paper):
        dirs = found.get(t.study, [])
        for d in dirs:
            try:
                mine = t.read_evidence(d, notes)
            except ConfigError:
                continue   # the study holds no measurement of this target
            if len(dirs) > 1:
                mine = [{**r, "agent": f"{_scale_of(d)}:{r['agent']}"} for r in mine]
            runs = ev.experiment_of(d)   # whether each task's rows come from the paper's run length and models
            rows += [{**r, **dict(zip(("run_iterations", "model"), runs.get(r["task"], (np.nan, ""))))}
                     for r in mine]
    return pd.DataFrame(rows, columns=ev.COLUMNS)


def _draw_figures(found: dict, out: str, paper: str) -> list:
    """Every target's figure redrawn from its studies into ``out/figures/<target>[-<scale>]/``: [(target,
    path)]."""
    figs = []
    for t in targets.of_paper(paper):
        dirs = found.get(t.study, [])
        for d in dirs:
            where = t.name if len(dirs) == 1 else f"{t.name}-{_scale_of(d)}"
            try:
                result = t.redraw(d, out=os.path.join(out, "figures", where))
            except (ConfigError, KeyError):
                continue   # a target of the study that was not measured
            paths = [p for p in result.get("figures") or [result.get("figure") or result.get("markdown")] if p]
            figs += [(where, os.path.relpath(path, out)) for path in paths]
    return figs


# --- the page -------------------------------------------------------------------------------------------------

def _fmt(v: float) -> str:
    return "—" if np.isnan(v) else ("∞" if v == np.inf else "−∞" if v == -np.inf else f"{v:.3g}")


def _missing(claim) -> str:
    """What to run for a claim no study read measured: the target that measures it, at a scale covering where
    the paper made it."""
    t = next((t for t in targets.TARGETS.values() if t.provides and claim.evidence.startswith(t.provides)), None)
    where = claim.scope.describe()
    if t is None:
        return f"*Not measured by the studies read (where the paper made it: {where}).*"
    return (f"*Not measured by the studies read: run {t.name} (its study, `{t.study}`) where the paper made it — "
            f"{where} — then the report again.*")


def _advice(claim, rows) -> str:
    """Names what is missing for a claim that reached no verdict: more agents, another task, a checkpoint, a
    sample size."""
    few = rows[rows.verdict == "too few agents"]
    out = [r.why for r in rows.itertuples() if r.scope == "exploratory" and r.why]
    if len(few):
        out.append(f"{int(few.agents.min())} agents where a verdict needs {claim_specs.MIN_AGENTS}: train more "
                   f"seeds (`--seeds {claim_specs.MIN_AGENTS}` or more)")
    if not out:
        return ""
    t = next((t for t in targets.TARGETS.values() if t.provides and claim.evidence.startswith(t.provides)), None)
    run = f" Run {t.name} at a scale that covers it (the paper scale does)." if t else ""
    if t and any("the paper's run" in w or "the paper's models" in w for w in out):   # another experiment
        sc = claim.scope
        what = " on ".join(([f"{sc.iterations} iterations"] if sc.iterations else []) +
                           ([f"{MODELS.get(sc.model, sc.model)} models"] if sc.model else []))
        run = f" Run {t.name} on the paper's experiment ({what}): the paper scale has its run length, on Brax's models."
    return "*Missing for a verdict: " + "; ".join(dict.fromkeys(out)) + f".{run}*"


def _table(part) -> list:
    lines = ["| task | algorithm | level | estimate | interval (its coverage) | agents | agree | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in part.itertuples(index=False):
        cover = "" if np.isnan(r.coverage) else f" ({r.coverage:.3g})"
        verdict = f"**{r.verdict}**" + (f" — {r.why}" if r.why and r.scope == "paper" else "")
        lines.append(f"| {r.task} | {r.label} | {r.level or r.test} | {r.estimate} {_fmt(r.value)} | "
                     f"[{_fmt(r.low)}, {_fmt(r.high)}]{cover} | {r.agents} | {r.agree} | {verdict} |")
    return lines


def _claim_section(claim, part) -> list:
    lines = [f"### {claim.key} ({claim.paper.split()[0]} {claim.where})", "", f"> {claim.quote}", "",
             f"**Where the paper made it:** {claim.scope.describe()}. **Measured:** {claim.statistic}. "
             f"**Rule:** {claim.rule()} — {claim.reason}."]
    lines += [f"**Stronger level:** {lv.name}, {lv.rule()} — {lv.reason}." for lv in claim.stronger]
    lines += [f"**Note:** {claim.note}."] if claim.note else []
    lines.append("")
    if part.empty:
        return lines + [_missing(claim), ""]
    lines += _table(part) + [""]
    advice = _advice(claim, part)
    return lines + ([advice, ""] if advice else [])


def _measured(results, key: str) -> str:
    """Where a finding was measured and what it read, per test: "hopper ppo: 0.21 [0.12, 0.3], 7 agents (100
    iterations, Brax's)" — the paper's scope's tests, else the exploratory ones."""
    rows = results[(results.claim == key) & (results.level == "")]
    rows = rows[rows.scope == "paper"] if (rows.scope == "paper").any() else rows
    return "; ".join((f"{r.task} {r.label}: {_fmt(r.value)} [{_fmt(r.low)}, {_fmt(r.high)}], {r.agents} agents"
                      if r.agents else f"{r.task} {r.label}: measured, but nothing its test can read")
                     + (f" ({r.run})" if isinstance(r.run, str) and r.run else "")
                     for r in rows.itertuples(index=False))


def _summary(found, paper: str, results=None) -> list:
    counts = findings_mod.summary(found)
    if counts.empty:
        return ["No finding of this paper was measured."]
    cols = [c for c in counts.columns if c not in ("paper", "family")]
    lines = ["| section | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    lines += [f"| {r['family']} | " + " | ".join(str(r[c]) for c in cols) + " |" for _, r in counts.iterrows()]
    lines += ["", "| finding | outcome | measured (task algorithm: estimate [interval], agents, run) | why / level "
                  "reached |", "|---|---|---|---|"]
    lines += [f"| {r.claim} | **{r.outcome}** | {_measured(results, r.claim) if results is not None else ''} | "
              f"{r.level or r.why} |" for r in found.itertuples(index=False)]
    return lines


def page(results, figs: list, found: dict, paper: str = "cl", notes=(), found_findings=None) -> str:
    """The report of ``paper`` as Markdown: a summary of its findings, then every claim with its tests."""
    name, title, _ = PAPERS[check_paper(paper)]
    found_findings = findings_mod.findings(results, name) if found_findings is None else found_findings
    m = max([len(g) for _, g in found_findings.groupby("family")] or [1])
    lines = [f"# {title}", "",
             "Studies read: " + (", ".join(f"`{n}` ({', '.join(ds) if isinstance(ds, list) else ds})"
                                           for n, ds in sorted(found.items())) or "none") + ".", "",
             "## Summary", ""] + _summary(found_findings, name, results) + ["",
             f"A finding is **reproduced** when it holds on every task and algorithm it was measured for where the "
             f"paper made it — its tasks, point of training, sample sizes, run length and models — after Holm's "
             f"adjustment over its section's findings (family-wise error ≤ {findings_mod.ALPHA:g} per section in "
             f"each direction, ≤ {2 * findings_mod.ALPHA:g} over both; a stronger level is gatekept behind its "
             f"finding); **not measured where the paper made it** when every measurement lies outside that "
             f"(exploratory rows, read as e.g. \"holds at 100 of 488 iterations on Brax's hopper\", never counted). "
             f"Each test takes the **agent** as its unit: one group's median agent with its order-statistic interval "
             f"and the sign test (its smallest p-value at n agents 2^−n: a section of {m} findings needs "
             f"{findings_mod.agents_for(m)} agents per algorithm before any can pass Holm), or two groups compared by "
             f"a studentized permutation (Brunner–Munzel) test of θ, the median of A − B over independent agents, with "
             f"the Hodges–Lehmann estimate and the interval the test inverts (its smallest p-value 1/C(2n, n): "
             f"{findings_mod.agents_for(m, kind='groups')} agents per group for {m} findings). An inconclusive "
             f"finding states the effect its agents could have detected with probability 0.8. Extensions (sounder "
             f"estimands beside the paper's) and checks (identities, demonstrations) are shown, never counted.", ""]
    lines += [f"**Note:** {n}." for n in notes] + ([""] if notes else [])
    for role, head in (("finding", "Findings"), ("extension", "Extensions (not counted)"),
                       ("check", "Checks (not counted)")):
        mine = [c for c in claim_specs.CLAIMS if name in c.paper.split() and c.role == role]
        if not mine:
            continue
        lines += [f"## {head}", ""]
        for claim in mine:
            lines += _claim_section(claim, results[results.claim == claim.key])
    lines += ["## Figures and tables", ""]
    for target in dict.fromkeys(t for t, _ in figs):   # a target's files (one per task or algorithm) together
        lines += [f"### {target}", ""] + [f"![{target}]({p})\n" if p.endswith(".png") else f"[{target}]({p})\n"
                                         for t, p in figs if t == target]
    return "\n".join(lines)


def default_out(from_dir: str, found: dict, paper: str, scale: str | None) -> str:
    """``FROM/<paper's report>-<scale>``: the directory ``make closer-look-report SCALE=…`` writes too; the scale
    the studies were made at where ``--scale`` is not given; several scales joined by "+" ("mid+tasks")."""
    if scale is None:
        scales = {_scale_of(d) for dirs in found.values() for d in dirs}
        scale = scales.pop() if len(scales) == 1 else "mixed"
    return os.path.join(from_dir, f"{PAPERS[paper][2]}-{'+'.join(_scales(scale))}")


def report(from_dir: str, out: str | None = None, scale: str | None = None, paper: str = "cl", studies=None) -> dict:
    """Read ``paper``'s studies under ``from_dir``, test every claim, write the page to ``out``.

    Args:
        from_dir: the directory holding the studies' output directories (``make``'s ``OUT``, ``results/``).
        out: the directory to write ``report.md``, its figures and CSVs (evidence, claims, findings) into;
            None: ``<from_dir>/<paper's report>-<scale>``.
        scale: the scale(s) whose studies to read, e.g. ``"mid"`` or ``"mid,tasks"``; None: every scale found.
        paper: ``"cl"`` (Ilyas et al., A Closer Look) or ``"im"`` (Engstrom et al., Implementation Matters).
        studies: read only these studies (by name) where given.

    Returns:
        ``report`` (the page's path), ``claims``, ``findings`` and ``evidence`` (DataFrames), ``figures``,
        ``studies`` (the directories read) and ``notes``.
    """
    found = find_studies(from_dir, scale, paper, studies)
    out = out or default_out(from_dir, found, paper, scale)
    notes: list = []
    evidence = collect(found, paper, notes)
    results = claim_specs.evaluate(evidence, paper=PAPERS[paper][0])
    found_findings = findings_mod.findings(results, PAPERS[paper][0])
    figs = _draw_figures(found, out, paper)
    figures.write_csv(evidence, os.path.join(out, "evidence.csv"), index=False)
    figures.write_csv(results, os.path.join(out, "claims.csv"), index=False)
    figures.write_csv(found_findings, os.path.join(out, "findings.csv"), index=False)
    path = os.path.join(out, "report.md")
    text = page(results, figs, found, paper, notes, found_findings)
    with lead_writes("report") as lead:
        if lead:
            with open(path, "w") as f:
                f.write(text)
    return {"report": path, "claims": results, "findings": found_findings, "evidence": evidence, "figures": figs,
            "studies": found, "notes": notes}


__all__ = ["PAPERS", "check_paper", "collect", "default_out", "find_studies", "page", "report"]
