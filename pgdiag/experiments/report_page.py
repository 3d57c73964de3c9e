"""The claims report's page: a summary of the paper's findings (outcome, where each was measured, what it read),
then per claim its sentence, where the paper made it, its rule, its tests and what is missing for a verdict, then
the figures ([`pgdiag.experiments.report`][pgdiag.experiments.report] reads the studies and writes it)."""

from __future__ import annotations

import numpy as np

from pgdiag.config import ConfigError
from pgdiag.experiments import claims as claim_specs
from pgdiag.experiments import findings as findings_mod
from pgdiag.experiments import targets
from pgdiag.experiments.paper_claims import MODELS
from pgdiag.experiments.target_types import PAPER

#: per paper: its short name, the page's title, the report's directory name
PAPERS = {"cl": ("CL", "Closer look: the claims of Ilyas et al. (CL) on these runs", "closer-look-report"),
          "im": ("IM", "Implementation matters: the claims of Engstrom et al. (IM) on these runs",
                 "implementation-matters-report")}


def check_paper(paper: str) -> str:
    if paper not in PAPER.allowed.all():
        raise ConfigError(f"report --paper {paper!r}: unknown paper; choose from {', '.join(PAPER.allowed.all())} "
                          f"(cl: A Closer Look at Deep Policy Gradients; im: Implementation Matters)")
    return paper


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


def page(results, figs: list, found: dict, paper: str = PAPER.default, notes=(), found_findings=None) -> str:
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


__all__ = ["PAPERS", "check_paper", "page"]
