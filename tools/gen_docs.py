"""The documentation's generated parts, written from the declarations: `docs/reference/settings.md`'s tables
of every setting (the shared knobs and static settings, each registered algorithm's own, each diagnostic's)
each target page's table of scales (`docs/targets/NAME.md`, from the target's `Scale` records), and each target's
figure at the smoke scale and its times at the smoke and mid scales as `make target-smoke` and `make target-mid`
measured them (`docs/targets/smoke.json`, `mid.json`), on its page and in the table of targets; and
docs/plans.md's table of the CL report at mid scale, from its recorded tables
([`pgdiag.experiments.recorded`][pgdiag.experiments.recorded]).

Each part lies between two marker comments in its page; the prose around them stays hand-written.

    python tools/gen_docs.py           # rewrite the generated parts
    python tools/gen_docs.py --check   # exit 1, naming the pages that are not current

`make docs` runs it before building the site; `tests/test_docs.py` checks the committed pages are current.
"""

from __future__ import annotations

import argparse
import os
import sys

from pgdiag.config import KNOB_SETTINGS, STATIC_SETTINGS, declared
from pgdiag.config.words import CONFIG, DIAGNOSTIC
from pgdiag.experiments import recorded

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETTINGS_PAGE = os.path.join("docs", "reference", "settings.md")
COMMAND = "python tools/gen_docs.py"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: tuple, rows) -> list:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def _rows(settings: dict, style) -> list:
    return [(f"`{name}`", f"`{s.default!r}`", s.says(style), s.doc) for name, s in settings.items()]


def _algorithm_rows() -> list:
    """One row per setting an algorithm declares as its own, with every algorithm that declares it."""
    from pgdiag import algorithms  # noqa: F401  (registers the built-in algorithms)
    from pgdiag.config import registry
    rows: dict = {}
    for algo in registry.registered():
        for kind, own in (("knob", algo.knobs), ("static", algo.static)):
            for name, s in own.items():
                row = rows.setdefault(name, [f"`{name}`", [], kind, f"`{s.default!r}`", s.says(CONFIG), s.doc])
                row[1].append(algo.name)
    return [(r[0], ", ".join(r[1]), *r[2:]) for r in rows.values()]


def _diagnostics() -> tuple:
    from pgdiag.diagnostics import BaselineSettings, GradientSettings, LandscapeSettings, StepSettings
    return (("Gradient studies (`GradientSettings`: fig-grad-variance, fig-grad-true)", GradientSettings),
            ("Step studies (`StepSettings`: fig-step-variance)", StepSettings),
            ("Baseline studies (`BaselineSettings`: fig-baselines; its `fit_*` settings fit V*)", BaselineSettings),
            ("Landscape studies (`LandscapeSettings`: fig-landscape-*)", LandscapeSettings))


def settings_block() -> list:
    """The generated part of the settings reference."""
    head = ("setting", "default", "allowed", "what it does")
    lines = ["## Knobs", "", "Traced per agent: a sweep over any of them is one compiled program.", "",
             *_table(head, _rows(KNOB_SETTINGS, CONFIG)), "", "## Static settings", "",
             "They shape the compiled program: one compile per value.", "",
             *_table(head, _rows(STATIC_SETTINGS, CONFIG)), "", "## Each algorithm's own", "",
             "Set only where `algorithm` is one of those named; its knobs are sweepable, its static settings not.",
             "", *_table(("setting", "algorithms", "kind", "default", "allowed", "what it does"), _algorithm_rows()),
             "", "## Diagnostics' settings", "",
             "Given to a study as keyword arguments (`gradient_study(runs, estimates=20)`) or on the command "
             "line (`--diag estimates=20`).", ""]
    for title, record in _diagnostics():
        lines += [f"### {title}", "", *_table(head, _rows(declared(record), DIAGNOSTIC)), ""]
    return lines[:-1]


#: what a scale's ``seeds`` counts, where not the agents of each preset
AGENTS = {"fig-ablation": "agents per grid point", "solver-compare": "agents"}


def scale_block(target) -> list:
    """A target's table of scales: the tasks, agents per preset and description of each."""
    return _table(("scale", "tasks", AGENTS.get(target.name, "agents per preset"), "what it trains and measures"),
                  [(f"`{name}`", ", ".join(sc.tasks_of(target.name)), sc.seeds, sc.description.strip())
                   for name, sc in target.scales.items()])


#: what each scale's times were measured by, on the documentation's host (docs/targets/SCALE.json)
TIMED = {"smoke": "`make target-smoke`, every target alone and in order",
         "mid": "`make target-mid`, the closer look's targets and the IM report's in the reports' order"}


def _records() -> dict:
    """scale -> its record of measured times (seconds per target, host, date), for each scale in ``TIMED``."""
    import json

    out = {}
    for scale in TIMED:
        path = os.path.join(ROOT, "docs", "targets", f"{scale}.json")
        out[scale] = json.load(open(path, encoding="utf-8")) if os.path.exists(path) else {"targets": {}}
    return out


def _minutes(seconds: float) -> str:
    if seconds < 2:   # a target drawn from the study an earlier one trained
        return "under 2 s (its study's runs reused)"
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def times_block(name: str, records: dict) -> list:
    """A target page's figure at the smoke scale and its time at each scale, as measured (said where not)."""
    lines = []
    figure = records["smoke"]["targets"].get(name, {}).get("figure")
    if figure:
        lines += [f"![{name} at the smoke scale]({figure})", ""]
    for scale, how in TIMED.items():
        record, entry = records[scale], records[scale]["targets"].get(name)
        if entry is None or "seconds" not in entry:   # a figure drawn with its time not measured alone
            lines.append(f"- {scale}: not yet measured on the documentation's host ({how.split(',')[0]}).")
        else:
            lines.append(f"- {scale}: {_minutes(entry['seconds'])} on a {record['host']}, training, compiling and "
                         f"drawing included ({how}, {record['date']}; targets that share a study train it in the "
                         f"first of them).")
    return lines


def times_table(records: dict) -> list:
    from pgdiag.experiments import targets

    def cell(scale, n):
        entry = records[scale]["targets"].get(n)
        return _minutes(entry["seconds"]) if entry and "seconds" in entry else "—"

    heads = [f"{scale} ({records[scale].get('date', 'not measured')})" for scale in TIMED]
    return _table(("target", *heads), [(f"[`{n}`]({n}.md)", *(cell(s, n) for s in TIMED)) for n in targets.TARGETS])


def splice(text: str, part: str, block: list, page: str) -> str:
    """``text`` with the lines between ``part``'s markers replaced by ``block``."""
    begin = f"<!-- generated: {part} ({COMMAND}); edit the declarations, not this table -->"
    end = f"<!-- end generated: {part} -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{page}: the markers of its generated {part!r} part are missing:\n{begin}\n{end}")
    head, rest = text.split(begin, 1)
    return head + "\n".join([begin, *block, end]) + rest.split(end, 1)[1]


def pages() -> dict:
    """Each generated page's path (relative to the repository) and its current text."""
    from pgdiag.experiments import targets
    out = {SETTINGS_PAGE: splice(_read(SETTINGS_PAGE), "settings", settings_block(), SETTINGS_PAGE)}
    records = _records()
    for target in (t for name, t in targets.TARGETS.items() if name in targets.BUILT_IN):   # pgdiag's own
        name = target.name
        path = os.path.join("docs", "targets", f"{name}.md")
        text = splice(_read(path), "scales", scale_block(target), path)
        out[path] = splice(text, "figure and times", times_block(name, records), path)
    index = os.path.join("docs", "targets", "index.md")
    out[index] = splice(_read(index), "times", times_table(records), index)
    plans = os.path.join("docs", "plans.md")    # the mid report's table, from its recorded tables alone
    out[plans] = splice(_read(plans), "mid report", recorded.table(os.path.join(ROOT, recorded.MID_CL)), plans)
    if os.path.isdir(os.path.join(ROOT, recorded.MID_IM)):   # IM's, once recorded
        out[plans] = splice(out[plans], "im mid report", recorded.table(os.path.join(ROOT, recorded.MID_IM)), plans)
    return out


def _read(path: str) -> str:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/gen_docs.py", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that the pages are current")
    args = parser.parse_args(argv)
    stale = {path: text for path, text in pages().items() if _read(path) != text}
    if args.check:
        for path in stale:
            print(f"{path} is not current: run {COMMAND}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in stale.items():
        with open(os.path.join(ROOT, path), "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
