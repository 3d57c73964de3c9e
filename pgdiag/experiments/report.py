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
from pgdiag.experiments.report_page import PAPERS, check_paper, page  # noqa: F401 (the report's API)
from pgdiag.experiments.target_types import PAPER
from pgdiag.run.distributed import lead_writes


def _scales(scale: str | None):
    return None if scale is None else [s for s in scale.split(",") if s]


def find_studies(root: str, scale: str | None = None, paper: str = PAPER.default, studies=None) -> dict:
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


def default_out(from_dir: str, found: dict, paper: str, scale: str | None) -> str:
    """``FROM/<paper's report>-<scale>``: the directory ``make closer-look-report SCALE=…`` writes too; the scale
    the studies were made at where ``--scale`` is not given; several scales joined by "+" ("mid+tasks")."""
    if scale is None:
        scales = {_scale_of(d) for dirs in found.values() for d in dirs}
        scale = scales.pop() if len(scales) == 1 else "mixed"
    return os.path.join(from_dir, f"{PAPERS[paper][2]}-{'+'.join(_scales(scale))}")


def report(from_dir: str, out: str | None = None, scale: str | None = None, paper: str = PAPER.default,
           studies=None) -> dict:
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
