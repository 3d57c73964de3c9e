"""A claims report recorded for the documentation: its tables kept in the repository with the commit, host, date
and wall time that made them, and the table the docs show written from them alone.

    python -m pgdiag.experiments.recorded OUT/closer-look-report-mid benchmarks/results/mid-report/cl --wall-s 1100

copies ``findings.csv`` and ``claims.csv`` with ``record.json``; ``python tools/gen_docs.py`` then rewrites
docs/plans.md's table from them ([`table`][pgdiag.experiments.recorded.table]), and a test checks it is current.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess

import numpy as np

RECORD = "record.json"
#: the recorded CL report at mid scale that docs/plans.md shows
MID_CL = os.path.join("benchmarks", "results", "mid-report", "cl")
#: the recorded IM report at mid scale that docs/plans.md shows
MID_IM = os.path.join("benchmarks", "results", "mid-report", "im")
LABELS = {"ppo": "PPO", "ppo-m": "PPO-M", "trpo": "TRPO"}


def keep(report_dir: str, dest: str, wall_s: float | None = None, note: str = "") -> str:
    """Copy a report's findings and claims tables from ``report_dir`` into ``dest`` with its record (``note``: what
    else the machine ran meanwhile, which the wall time includes)."""
    os.makedirs(dest, exist_ok=True)
    for name in ("findings.csv", "claims.csv"):
        shutil.copyfile(os.path.join(report_dir, name), os.path.join(dest, name))
    record = {"commit": _commit(report_dir), "date": datetime.date.today().isoformat(), "wall_s": wall_s,
              "host": f"{platform.machine()}, {os.cpu_count()} cores", "from": os.path.abspath(report_dir),
              "note": note}
    with open(os.path.join(dest, RECORD), "w") as f:
        json.dump(record, f, indent=1)
    return dest


def _commit(report_dir: str) -> str:
    """The commit the report's runs were trained at (their manifests, in ``runs/`` beside the report), else HEAD;
    several, comma-separated."""
    runs = os.path.join(os.path.dirname(os.path.abspath(report_dir)), "runs")
    found = set()
    for d in sorted(os.listdir(runs)) if os.path.isdir(runs) else ():
        try:
            with open(os.path.join(runs, d, "manifest.json")) as f:
                found.add(json.load(f).get("git_revision") or "")
        except (OSError, ValueError):
            continue
    found.discard("")
    if found:
        return ",".join(sorted(found))
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return head or "unknown"


def fmt(v) -> str:
    """A number as the documentation's tables write it: 3 significant digits, a true minus, ∞, — for none."""
    v = float(v)
    return "—" if np.isnan(v) else ("∞" if v == np.inf else "−∞" if v == -np.inf else f"{v:.3g}".replace("-", "−"))


def _cell(rows) -> str:
    if rows.empty:
        return ""
    return "; ".join((f"{fmt(r.value)} [{fmt(r.low)}, {fmt(r.high)}] " if r.agents else "nothing its test can read ")
                     + ("*exploratory*" if r.scope != "paper" else f"{r.verdict}")
                     for r in rows.itertuples(index=False))


def table(folder: str) -> list:
    """The recorded report in ``folder`` as Markdown lines: where it came from, then one row per finding — its
    outcome, and per algorithm the median agent (or difference), its interval and the test's verdict (exploratory
    rows marked so)."""
    import pandas as pd

    with open(os.path.join(folder, RECORD)) as f:
        record = json.load(f)
    claims = pd.read_csv(os.path.join(folder, "claims.csv"), keep_default_na=False, na_values=[""])
    found = pd.read_csv(os.path.join(folder, "findings.csv"), keep_default_na=False, na_values=[""])
    claims["level"] = claims["level"].astype(object).fillna("")
    wall = f", {record['wall_s'] / 60:.1f} min" if record.get("wall_s") else ""
    wall += f" {record['note']}" if record.get("note") else ""
    commits = ", ".join(c[:10] for c in record["commit"].split(","))
    lines = [f"Recorded at commit `{commits}` on {record['date']} ({record['host']}{wall}); each cell "
             f"the estimate [interval] and the test's verdict, *exploratory* where measured on another experiment "
             f"than the paper's.", "", "| finding | outcome | " + " | ".join(LABELS.values()) + " | other |",
             "|---|---|" + "---|" * (len(LABELS) + 1)]
    for r in found.itertuples(index=False):
        mine = claims[(claims.claim == r.claim) & (claims.level == "")]
        cells = [_cell(mine[mine.label == label]) for label in LABELS]
        other = _cell(mine[~mine.label.isin(list(LABELS))])
        lines.append(f"| {r.claim} | {r.outcome} | " + " | ".join(cells) + f" | {other} |")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pgdiag.experiments.recorded", description=__doc__.split("\n")[0])
    p.add_argument("report_dir")
    p.add_argument("dest")
    p.add_argument("--wall-s", type=float, default=None)
    p.add_argument("--note", default="", help="what else the machine ran meanwhile (the wall time includes it)")
    args = p.parse_args(argv)
    print(f"kept {keep(args.report_dir, args.dest, args.wall_s, args.note)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["MID_CL", "MID_IM", "fmt", "keep", "table"]
