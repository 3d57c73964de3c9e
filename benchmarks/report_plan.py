"""The accelerator report's plan section: each paper's report at the scale, planned on this host.

``pgdiag report --dry-run`` for each paper (``plan_report``): every program the report's targets compile, each once,
with the physics ``auto`` takes at its width here, where it runs (on an accelerator host: split, accelerator, host
or callback) and its estimated time, from this host's recorded step costs — timed now and recorded where missing,
so by the section's end the host's profile (``-host.json`` beside the report) costs every program of both reports.
Written beside the measured sections, the plan and the first chunks timed on the same host can be read together.
"""

from __future__ import annotations

#: the columns of a planned program the report keeps
KEPT = ("targets", "stage", "task", "presets", "units", "pairs", "width", "backend", "path", "estimated_s")


def plan_section(sc: dict, budget, rows: list, save=lambda: None) -> list:
    """Plan each of ``sc["plan_papers"]``' reports at ``sc["plan_scale"]`` while the budget lasts; one row per
    paper appended to ``rows`` (its programs, slowest first, and its totals), ``save`` called after each."""
    from pgdiag.experiments.planner import plan_report

    for paper in sc["plan_papers"]:
        if budget.left() <= 0:
            rows.append({"paper": paper, "measured": False})
            save()
            continue
        frame = plan_report(paper, sc["plan_scale"], show=False)
        frame = frame.assign(path=frame["path"] if "path" in frame else "")
        programs = [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items() if k in KEPT}
                    for r in frame.sort_values("estimated_s", ascending=False).to_dict("records")]
        estimated = frame.estimated_s
        rows.append({"paper": paper, "measured": True, "scale": sc["plan_scale"], "programs": programs,
                     "pairs": int(frame.pairs.sum()),
                     "estimated_s": None if estimated.isna().any() else float(estimated.sum()),
                     "without_estimate": int(estimated.isna().sum())})
        save()
    return rows


NAMES = {"cl": "the closer look (`make closer-look-report`)",
         "im": "implementation matters (`make implementation-matters-report`)"}


def markdown(rows: list) -> list:
    """The section's lines."""
    lines = ["", "## Each paper's report planned on this host (`pgdiag report --dry-run`)"]
    for r in rows:
        if not r.get("measured"):
            lines += ["", f"{NAMES[r['paper']]}: not planned (budget)."]
            continue
        total = ("estimated " + _time(r["estimated_s"]) + " without compiling" if r["estimated_s"] is not None
                 else f"{r['without_estimate']} programs without an estimate")
        lines += ["", f"**{NAMES[r['paper']]}** at scale `{r['scale']}`: {len(r['programs'])} programs, "
                      f"{r['pairs']:,} pairs, {total}.", "",
                  "| targets | stage | task | algorithms | units | pairs | width | physics | runs | estimated |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {p['targets']} | {p['stage']} | {p['task']} | {p['presets']} | {p['units']} | {p['pairs']:,} | "
                  f"{p['width']:,} | {p['backend']} | {p['path'] or '—'} | {_time(p['estimated_s'])} |"
                  for p in r["programs"]]
    return lines


def _time(s) -> str:
    if s is None or s != s:   # None or NaN: no step cost for the program
        return "—"
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"
