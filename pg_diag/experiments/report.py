"""``pg-diag report``: the claims of one paper checked on a user's saved studies, on one page.

    pg-diag report --from results --out results/closer-look-report            # CL (make closer-look-report)
    pg-diag report --paper im --from results                                  # IM (make implementation-matters-report)

finds the studies under ``--from`` (the output directories of the paper's targets; ``--scale`` picks one scale
where several are there), redraws their figures from disk, extracts each claim's evidence
(:mod:`.evidence`) from the saved tables, tests it (:mod:`.claims`: agents as units, intervals with stated
coverage), and writes ``report.md`` — per claim the paper's sentence, the rule and its reason, per task and
algorithm the estimate, interval, agents, how many agree and the verdict; then every figure — with
``claims.csv`` and ``evidence.csv`` beside it. Nothing is trained, measured or compiled.
"""

from __future__ import annotations

import json
import os

import numpy as np

from pg_diag.config import ConfigError
from pg_diag.experiments import claims as claim_specs
from pg_diag.experiments import evidence as ev
from pg_diag.experiments import figures, study_dir, targets

PAPERS = {"cl": ("CL", "Closer look: the claims of Ilyas et al. (CL) on these runs", "closer-look-report"),
          "im": ("IM", "Implementation matters: the claims of Engstrom et al. (IM) on these runs",
                 "implementation-matters-report")}


def check_paper(paper: str) -> str:
    if paper not in PAPERS:
        raise ConfigError(f"report --paper {paper!r}: unknown paper; choose from {', '.join(PAPERS)} "
                          f"(cl: A Closer Look at Deep Policy Gradients; im: Implementation Matters)")
    return paper


def find_studies(root: str, scale: str | None = None, paper: str = "cl") -> dict:
    """{study name: directory} of ``paper``'s studies in ``root`` or its immediate subdirectories."""
    names = {t.study for t in targets.of_paper(check_paper(paper))}
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
        if record.get("study") in names and (scale is None or record.get("scale") == scale):
            found.setdefault(record["study"], []).append((d, record.get("scale")))
    if not found:
        names = [t.name for t in targets.of_paper(paper)]
        raise ConfigError(f"report --from {root!r}: no study of {PAPERS[paper][0]} there"
                          f"{f' at scale {scale!r}' if scale else ''} (looked for the output directories of "
                          f"{', '.join(names)}, in it and its subdirectories); run those targets first, e.g. "
                          f"make {PAPERS[paper][2]}")
    out = {}
    for name, dirs in found.items():
        if len(dirs) > 1:
            scales = {s for _, s in dirs}
            how = ("choose one with --scale" if len(scales) == len(dirs) else
                   "give --from a directory that holds one of them")
            raise ConfigError(f"report --from {root!r}: {len(dirs)} {name!r} studies ("
                              f"{', '.join(f'{d} ({s})' for d, s in dirs)}); {how}")
        out[name] = dirs[0][0]
    return out


# --- each target's evidence and figures, read from disk ------------------------------------------------------

def collect(found: dict, paper: str, notes: list | None = None):
    """The evidence of ``paper``'s targets whose studies are in ``found``, as one frame (what was not tested
    goes to ``notes``); a target its study did not measure gives none."""
    import pandas as pd

    rows, notes = [], notes if notes is not None else []
    for t in targets.of_paper(paper):
        if t.study in found:
            try:
                rows += t.read_evidence(found[t.study], notes)
            except ConfigError:
                continue   # the study holds no measurement of this target
    return pd.DataFrame(rows, columns=ev.COLUMNS)


def _draw_figures(found: dict, out: str, paper: str) -> list:
    """Every target's figure redrawn from its study into ``out/figures/<target>/``: [(target, path)]."""
    figs = []
    for t in targets.of_paper(paper):
        if t.study not in found:
            continue
        try:
            result = t.redraw(found[t.study], out=os.path.join(out, "figures", t.name))
        except (ConfigError, KeyError):
            continue   # a target of the study that was not measured
        paths = [p for p in result.get("figures") or [result.get("figure") or result.get("markdown")] if p]
        figs += [(t.name, os.path.relpath(path, out)) for path in paths]
    return figs


# --- the page -------------------------------------------------------------------------------------------------

def _fmt(v: float) -> str:
    return "—" if np.isnan(v) else ("∞" if v == np.inf else "−∞" if v == -np.inf else f"{v:.3g}")


def _missing(claim) -> str:
    t = next((t for t in targets.TARGETS.values() if t.provides and claim.evidence.startswith(t.provides)), None)
    return (f"*Not measured by the studies read: run {t.name} (its study, `{t.study}`), then the report again.*"
            if t else "*Not measured by the studies read.*")


def page(results, figs: list, found: dict, paper: str = "cl", notes=()) -> str:
    """The report of ``paper`` as Markdown."""
    name, title, _ = PAPERS[check_paper(paper)]
    lines = [f"# {title}", "",
             "Studies read: " + (", ".join(f"`{n}` ({d})" for n, d in sorted(found.items())) or "none") + ".", "",
             f"Each claim is tested on the saved measurements with the **agent** as the unit (an agent's checkpoints "
             f"and planes are averaged into one value, or their median taken where one is censored, +∞). *agents*: "
             f"the median agent with its exact order-statistic interval (distribution-free; at 5 agents [min, max], "
             f"coverage 0.9375); *groups*: a difference of means with Welch's interval; *holds* when the interval "
             f"lies on the paper's side of the rule, *does not hold* when it lies on the other side, *inconclusive* "
             f"otherwise. Below {claim_specs.MIN_AGENTS} agents no verdict is given (*too few agents*: train more seeds, e.g. "
             f"`--seeds {claim_specs.MIN_AGENTS}`); *agree* counts the agents on the paper's side.", ""]
    lines += [f"**Not tested:** {n}." for n in notes] + ([""] if notes else [])
    for claim in claim_specs.CLAIMS:
        if name not in claim.paper.split():
            continue
        part = results[results.claim == claim.key]
        lines += [f"## {claim.key} ({claim.paper.split()[0]} {claim.where})", "", f"> {claim.quote}", "",
                  f"**Measured:** {claim.statistic}. **Rule:** {claim.rule()} — {claim.reason}.", ""]
        if part.empty:
            lines += [_missing(claim), ""]
            continue
        lines += ["| task | algorithm | estimate | 95% interval (coverage) | agents | agree | verdict |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {r.task} | {r.label} | {r.estimate} {_fmt(r.value)} | [{_fmt(r.low)}, {_fmt(r.high)}]"
                  f"{'' if np.isnan(r.coverage) else f' ({r.coverage:.3g})'} | {r.agents} | {r.agree} | "
                  f"**{r.verdict}** |" for r in part.itertuples(index=False)]
        lines.append("")
    lines += ["## Figures and tables", ""]
    for target in dict.fromkeys(t for t, _ in figs):   # a target's files (one per task or algorithm) together
        lines += [f"### {target}", ""] + [f"![{target}]({p})\n" if p.endswith(".png") else f"[{target}]({p})\n"
                                         for t, p in figs if t == target]
    return "\n".join(lines)


def report(from_dir: str, out: str | None = None, scale: str | None = None, paper: str = "cl") -> dict:
    """Read ``paper``'s studies under ``from_dir``, test every claim, write the page to ``out``."""
    found = find_studies(from_dir, scale, paper)
    out = out or os.path.join(from_dir, PAPERS[paper][2])
    notes: list = []
    evidence = collect(found, paper, notes)
    results = claim_specs.evaluate(evidence, paper=PAPERS[paper][0])
    figs = _draw_figures(found, out, paper)
    figures.write_csv(evidence, os.path.join(out, "evidence.csv"), index=False)
    figures.write_csv(results, os.path.join(out, "claims.csv"), index=False)
    path = os.path.join(out, "report.md")
    text = page(results, figs, found, paper, notes)
    from pg_diag.run.distributed import lead_writes
    with lead_writes("report") as lead:
        if lead:
            with open(path, "w") as f:
                f.write(text)
    return {"report": path, "claims": results, "evidence": evidence, "figures": figs, "studies": found,
            "notes": notes}


__all__ = ["PAPERS", "check_paper", "collect", "find_studies", "page", "report"]
