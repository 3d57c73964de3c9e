"""docs/replication.md: what the replication found, written from the published parts alone
([`pgdiag.experiments.replication`][pgdiag.experiments.replication]).

Per paper section, each finding's sentence, where the paper made it, where we measured it (task, algorithm, run
length and models, agents), the estimate with its interval, and the outcome after the section's multiplicity
control; a finding not yet measured at the paper's settings names the part (and command) that measures it, or the
target that would at the papers' settings. Nothing here trains, times or compiles: the same folders give the same
page, which a test checks against the committed one.
"""

from __future__ import annotations

import json
import os

from pgdiag.experiments import claims as claim_specs
from pgdiag.experiments import disagreements
from pgdiag.experiments import findings as findings_mod
from pgdiag.experiments import replication as rep
from pgdiag.experiments import replication_plans
from pgdiag.experiments.recorded import fmt

TITLES = {"cl": "A Closer Look at Deep Policy Gradients (Ilyas et al.)",
          "im": "Implementation Matters in Deep Policy Gradients (Engstrom et al.)"}
FIGURES = "replication"   # beside the page: docs/replication/<claim>.png
HEADER = ("<!-- written by `pgdiag replication page` from replication/*/ (the published parts); do not edit: "
          "publish a part and write the page again -->")


#: a test's verdict as the finding's outcome it would give alone
_AS_OUTCOME = {"holds": "reproduced", "does not hold": "not reproduced"}


def _measured(rows, outcome: str = "") -> tuple:
    """(where, estimate, reasons, tasks) of a finding's tests: those at the paper's settings, else the exploratory
    ones; each estimate with its test's verdict where the tests disagree or agree on another verdict than the
    finding's ``outcome`` (each test alone leans one way, Holm over the section leaves the finding inconclusive),
    the reasons a test gives, and the tasks measured at the paper's settings."""
    rows = rows[rows.level == ""]
    if rows.empty:
        return "", "", "", set()
    paper = rows.scope == "paper"
    # beside the tests at the paper's settings, the exploratory ones (another task of the same run: shown, not
    # counted), so that a row the finding's scope leaves out is still read on the page
    aside = rows[~paper] if paper.any() else rows.iloc[:0]
    rows = rows[paper] if paper.any() else rows
    mixed = rows.verdict.nunique() > 1 or (outcome in ("reproduced", "not reproduced", "inconclusive")
                                           and _AS_OUTCOME.get(rows.verdict.iloc[0], "inconclusive") != outcome)

    def listed(frame, tag: str = "") -> tuple:
        where = [f"{r.task} {r.label}, {r.agents} agent{'' if r.agents == 1 else 's'}"
                 + (f", {r.run}" if isinstance(r.run, str) and r.run else "") + tag
                 for r in frame.itertuples(index=False)]
        est = [(f"{fmt(r.value)} [{fmt(r.low)}, {fmt(r.high)}]" if r.agents else "nothing its test can read")
               + (f" ({r.verdict})" if mixed and not tag else "") + tag for r in frame.itertuples(index=False)]
        return where, est

    (where, est), (w2, e2) = listed(rows), listed(aside, " *exploratory*")
    where, est = "; ".join(where + w2), "; ".join(est + e2)
    why = findings_mod.reasons(rows)    # a reason once, with the tests that give it
    # a task-against-task row names both ("humanoid − walker2d"): each was measured
    tasks = {t for x in rows.task[rows.scope == "paper"] for t in str(x).split(" − ")}
    return _cell(where), _cell(est), _cell(why), tasks


def _cell(text: str) -> str:
    """``text`` as one cell of a Markdown table: a bar inside it (|x|, an absolute value) would end the cell."""
    return text.replace("|", "\\|")


def _statistic(claim) -> str:
    """What one agent's value is and the rule a finding holds by, as the page writes numbers (a true minus)."""
    return _cell(f"{claim.statistic}; holds if {claim.rule().replace('-', '−')}")


def _supplier(claim, published=(), read=False, plans=None) -> str:
    """The part that measures ``claim`` at the papers' settings, as a command (again, where the part was published
    before its evidence held what the claim reads; where it was published and its tests ``read`` the claim only
    elsewhere, that it did, beside the parts still to run), with its planned time where it would run (``plans``:
    replication/plans.json); else the target that provides it."""
    from pgdiag.experiments import targets

    t = next((t for t in targets.TARGETS.values() if t.provides and claim.evidence.startswith(t.provides)), None)
    parts = [p for p in rep.PARTS if t is not None and t.name in p.targets   # and trains a task the claim reads
             and set(t.scales[p.scale].tasks_of(t.name)) & set(claim.scope.tasks)]
    done = [p for p in parts if read and p.name in published]   # run, and its tests read the claim elsewhere
    if parts and len(done) == len(parts):
        return "published: " + ", ".join(f"`{p.name}`" for p in parts) + " read it only there" + (
            "" if any(p.scale == rep.SCALE and not p.short_of for p in parts) else   # none at the papers' settings
            f"; at the papers' settings: `pgdiag {t.name} --scale paper` on a 16-core GPU host (no replication part "
            "yet)")
    if parts:   # the papers' settings first, then a part at another scale (a CPU's sample sizes, a model pair)
        covered = {p.name: set(t.scales[p.scale].tasks_of(t.name)) & set(claim.scope.tasks) for p in parts}
        missing = set(claim.scope.tasks) - set().union(*covered.values())
        parts = sorted((p for p in parts if p not in done), key=lambda p: p.scale != rep.SCALE)
        return "run " + " or ".join(f"`pgdiag replication run {p.name}` ({p.device.upper()}"
                                    + ("" if p.scale == rep.SCALE else f", the {p.scale} scale")
                                    + _planned_for(p, plans or {})
                                    + (f"; on {'/'.join(sorted(covered[p.name]))} only"
                                       if covered[p.name] < set(claim.scope.tasks) else "")
                                    + (f"; {p.short_of}" if p.short_of else "")
                                    + ("; published before its evidence held this: run it again"
                                       if p.name in published and not read else "")
                                    + ")" for p in parts) \
            + (f"; {'/'.join(sorted(missing))}: no replication part yet" if missing else "") \
            + "".join(f" (published: `{p.name}`" + (f", {p.short_of}" if p.short_of else "") + ")" for p in done)
    return (f"{t.name} at the papers' settings: no replication part yet (its paper scale on a 16-core GPU host)"
            if t else "no target measures it yet")


def _planned_for(part, plans: dict) -> str:
    """``part``'s planned time on the hosts of its kind in ``plans``: a GPU part's on the declared hosts, a CPU
    part's on this host (its runs' plan; nothing where no plan costs it)."""
    gpu = part.device == "gpu"
    here = {name: v.get("profile") == replication_plans.HERE for name, v in plans.items()}
    where = {name: "this project's CPU" if here[name] else f"the {name}" for name in plans}
    times = [f"{_hours(v['seconds'].get(part.name))} on {where[name]}"
             for name, v in plans.items() if here[name] != gpu
             and part.name in v.get("seconds", {})]
    return f", planned {' / '.join(times)}" if times else ""


def _section(family: str, found, results, published=(), plans=None) -> list:
    lines = [f"### {family}", "", "| finding | the paper's setting | statistic and rule | measured (task algorithm, "
             "agents, run) | estimate [interval] | outcome |", "|---|---|---|---|---|---|"]
    for r in found[found.family == family].itertuples(index=False):
        claim = claim_specs.by_key(r.claim)
        where, est, why, tasks = _measured(results[results.claim == r.claim], r.outcome)
        outcome = f"**{r.outcome}**" + (f" ({r.level})" if r.level else "")
        if r.outcome in (findings_mod.NOT_HERE, "not measured"):
            # a part published before its evidence held the claim is run again; one whose rows lie elsewhere
            # (another task, other sample sizes) says where, and which part measures it
            outcome += (f": {why}" if why else "") + f" — {_supplier(claim, published, read=bool(where), plans=plans)}"
        else:
            missing = [t for t in claim.scope.tasks if tasks and t not in tasks]
            outcome += (f" on {'/'.join(sorted(tasks))} ({'/'.join(missing)} not measured yet)" if missing else "")
            full = _cell(r.why) if isinstance(r.why, str) and r.why else ""
            if why and full and (why in full or full in why):   # the finding's reason may quote its tests': once
                outcome += f": {max(why, full, key=len)}"
            else:
                outcome += (f": {why}" if why else "") + (f" ({full})" if full else "")
        note = f" (*{_cell(claim.note)}*)" if claim.note else ""
        lines.append(f"| `{r.claim}`: “{_cell(claim.quote)}”{note} | {claim.scope.describe()} | {_statistic(claim)} | "
                     f"{where or '—'} | {est or '—'} | {outcome} |")
    return lines + [""]


def _extensions(results, paper: str) -> list:
    """The paper's extensions measured at its settings (another estimand beside a finding: the original code's
    formula, complete returns, an average effect): each test's estimate and verdict, outside Holm's families and
    never counted."""
    lines = []
    for claim in claim_specs.CLAIMS:
        rows = results[(results.claim == claim.key) & (results.level == "") & (results.scope == "paper")]
        if claim.role != "extension" or paper not in claim.paper.split() or rows.empty:
            continue
        where, est, why, _ = _measured(rows)
        outcome = rows.verdict.iloc[0] if rows.verdict.nunique() == 1 else "per test, beside its estimate"
        lines.append(f"| `{claim.key}`: “{_cell(claim.quote)}” | {_statistic(claim)} | {where} | {est} | {outcome}"
                     + (f": {why}" if why else "") + " |")
    head = ["### Extensions", "", "Beside the findings, measured at the papers' settings and not counted: another "
            "estimand of a finding's sentence (the original code's formula where it differs from the paper's words, "
            "complete returns, an average effect).", "", "| extension | statistic and rule | measured | estimate "
            "[interval] | outcome |", "|---|---|---|---|---|"]
    return head + lines + [""] if lines else []


def _sessions(rec: dict) -> str:
    n, cut = rec.get("sessions", 0), rec.get("sessions_cut_short", 0)
    lost = rec.get("sessions_uncounted", cut)     # a record from before sessions kept their last time
    cpus = [c for c in rec.get("session_cpus", ()) if c != "unknown"]
    if n <= 1:
        return ""
    counted = ("their time not counted" if lost == cut else "counted to their last record" if not lost else
               f"{cut - lost} counted to their last record, {lost} not counted")
    return (f" over {n} sessions" + (f" ({cut} cut short by the machine, {counted})" if cut else "")
            + (f", on {len(cpus)} CPU models ({'; '.join(cpus)}: its runs equal one CPU's to float32 rounding)"
               if len(cpus) > 1 else ""))


def _hours(s) -> str:
    return ("not costed" if s is None else f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.0f} min" if s else
            "nothing to run (it reads an earlier part's runs)")


def _plans(root: str) -> dict:
    path = os.path.join(root, replication_plans.PLANS)
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return json.load(f)


def _parts(records: dict, plans: dict) -> list:
    heads = [f"planned on {name} ({v['device']}; planned {v['date']})" for name, v in plans.items()]
    lines = ["| part | what it measures | where | " + " | ".join(heads + ["published (host, date, commit, wall "
                                                                            "time)", "command"]) + " |",
             "|---" * (5 + len(heads)) + "|"]
    for p in rep.PARTS:
        rec = records.get(p.name)
        done = ("not yet" if rec is None else
                f"{rec['host']}, {rec['date']}, `{str(rec['commit'])[:10]}`"
                + (f", {rec['wall_s'] / 3600:.1f} h" if rec.get("wall_s") else "") + _sessions(rec))
        planned = [_hours(v["seconds"].get(p.name)) for v in plans.values()]
        lines.append(f"| `{p.name}` | {p.what} | {p.device.upper()} | " + " | ".join(planned) +
                     (" | " if planned else "") + f"{done} | `pgdiag replication run {p.name}` |")
    note = ("A planned time is the dry run's estimate without compiling (`pgdiag replication plan`), without the "
            "trainings an earlier part on the same kind of host runs (the landscapes measure the trust-regions "
            "part's runs) and, on a CPU-only host, on the CPU devices the part runs on (one each, two for the Walker2d "
            "ablation's 480 agents); \"not costed\": the host's profile records "
            "no step cost for some program (`pgdiag host save FILE --scale replication` on that host records "
            "them)." + _profiles(plans))
    return lines + ["", note if plans else "", ""]


def _profiles(plans: dict) -> str:
    """The profiles the declared hosts' columns read (this host's column reads what it has recorded)."""
    named = [f"{name}: `{v['profile']}`" for name, v in plans.items() if v.get("profile") != replication_plans.HERE]
    return f" The declared hosts' profiles: {'; '.join(named)}." if named else ""


def page(root: str = rep.ROOT, figures: str | None = None) -> str:
    """The replication page from the parts published under ``root`` (with ``figures``, the curves of the findings
    that do not reproduce are written there)."""
    records, plans = rep.published(root), _plans(root)
    ev = rep.evidence(root)
    lines = [HEADER, "", "# What we found: both papers at their own settings", "",
             "Each finding below is tested where the paper made it: its figure's tasks, point of training and "
             "sample sizes, on Gym's MuJoCo models, with the camera-ready code's hyperparameters (CL's appendix "
             "table lists other learning rates for some presets: [docs/semantics.md](semantics.md)) and the run "
             "length the original code trains. Neither paper's text gives that length: the camera-ready code trains "
             "488 iterations of 2,048 steps (CL's scopes name it), the review-period code 500 of 2,000 (IM's name "
             "it); both are the same million steps, so a 488-iteration run counts for both. Each test takes the "
             "agents as its units, and each finding is adjusted by Holm over its section ([how the claims are "
             "read](claims.md)). A row measured on another experiment is shown as exploratory and never counted; a "
             "finding no part has measured at the paper's settings names the command that does. The parts run on "
             "this project's own CPU where they fit, resuming over days; the GPU parts wait for a host.", "",
             "## Parts", ""] + _parts(records, plans)
    for paper in ("cl", "im"):
        name = paper.upper()
        results = claim_specs.evaluate(ev[paper], paper=name) if len(ev[paper]) else \
            claim_specs.evaluate(ev[paper].iloc[:0], paper=name)
        found = findings_mod.findings(results, name)
        counts = found.outcome.value_counts()
        lines += [f"## {TITLES[paper]}", "", "Findings: " + ", ".join(
            f"{n} {o}" for o, n in counts.items()) + ".", ""]
        for family in dict.fromkeys(found.family):
            lines += _section(family, found, results, set(records), plans)
        lines += _extensions(results, name)
        lines += disagreements.section(found, results, ev[paper], FIGURES, figures)
    return "\n".join(lines).rstrip() + "\n"


def write(root: str = rep.ROOT, path: str = rep.PAGE) -> str:
    """Write the page to ``path``; returns it."""
    text = page(root, os.path.join(os.path.dirname(path) or ".", FIGURES))
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


__all__ = ["page", "write"]
