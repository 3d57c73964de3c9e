"""Plans against themselves and the clock: every program a set of targets runs at a scale, planned twice from this
host's physics costs and set beside what a finished run of the same targets measured.

For each program of the targets' plans (`--dry-run`'s, identical programs once): the seconds planned from physics
alone (this host's recorded step costs, or the steps timed now and recorded: `pgdiag.experiments.costs`), the
seconds a second plan gives (a new reading of the same record: two dry runs agree when these do), the plan
`--dry-run` gives (which reads the costs this host recorded of its own runs where it has them; on an empty cache,
``PGDIAG_CACHE`` pointed at a new directory, the physics plan), and, with
``--from DIR`` (the output directory of `make closer-look-report SCALE=mid OUT=DIR` or of
`tools/target_smoke.py --scale mid --out DIR`), the run seconds its saved manifests recorded (compiling apart) and
measured / planned for both (the goal: within 1.5× either way).

    python benchmarks/bench_plans.py [--scale mid] [--from DIR] [--targets NAME ...] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import glob
import json
import os

TARGETS = ("fig-value", "fig-grad-variance", "fig-step-variance", "fig-baselines", "fig-landscape-concentration",
           "fig-landscape-surrogate")


def planned(names, scale: str) -> list:
    """[(target, program, first plan s, second plan s, plan with the record s)], each program once: two plans from
    physics alone (the second reading what the first timed and recorded) and the plan `--dry-run` gives, which
    reads the costs this host recorded of its own runs (``$PGDIAG_CACHE/training.json``) where it has them."""
    from pgdiag.experiments import costs, targets

    seen, programs = set(), []
    for name in names:
        for p in targets.get(name).dry_run(scale):
            if p not in seen:
                seen.add(p)
                programs.append((name, p))
    first = costs.measured_step_ms()
    plans = [costs.run_seconds(p, first, recorded=False) for _, p in programs]
    second = costs.measured_step_ms()   # a second plan, as a later dry run reads what the first recorded
    return [(name, p, a, costs.run_seconds(p, second, recorded=False), costs.run_seconds(p, second))
            for (name, p), a in zip(programs, plans)]


def measured(root: str) -> dict:
    """(stage, pairs, presets) -> [run seconds] of the programs a finished run of the targets saved under ``root``
    (a training by the presets it trained: TRPO's 7 agents and PPO's without a baseline sample as many pairs)."""
    found: dict = {}
    for path in glob.glob(os.path.join(root, "runs", "*", "manifest.json")):
        with open(path) as f:
            manifest = json.load(f)
        t = manifest.get("timings") or {}
        if t.get("env_steps"):
            key = ("train", int(t["env_steps"]), "+".join(manifest.get("labels") or ()))
            found.setdefault(key, []).append(float(t["run_s"]))
    for path in glob.glob(os.path.join(root, "runs", "*", "diagnostics", "*", "manifest.json")):
        stage = os.path.basename(os.path.dirname(path)).split("-")[0]
        with open(path) as f:
            timings = json.load(f).get("timings") or []
        for t in timings if isinstance(timings, list) else [timings]:
            runs = found.setdefault((stage, int(t["pairs"]), ""), [])
            if float(t["run_s"]) not in runs:   # every subject's run directory keeps the same program's timing
                runs.append(float(t["run_s"]))
    return found


def table(rows: list, found: dict | None) -> str:
    lines = ["| target | program | units | pairs | width | planned (s) | planned again (s) | "
             "planned with the record (s) | measured (s) | measured / planned | measured / planned with the record |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    taken: dict = {}
    for name, p, a, b, c in rows:
        key = (p.stage, p.pairs, p.presets if p.stage == "train" else "")
        i = taken[key] = taken.get(key, -1) + 1   # programs of the same pairs, in plan order
        runs = (found or {}).get(key, [])
        m = runs[i] if i < len(runs) else None
        ratio = lambda x: f"{m / x:.2f}" if m is not None and x else ""  # noqa: E731
        lines.append(f"| {name} | {p.stage} {p.presets} | {p.units} | {p.pairs:,} | {p.width:,} | {a:.1f} | "
                     f"{b:.1f} | {c:.1f} | {'' if m is None else f'{m:.1f}'} | {ratio(a)} | {ratio(c)} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="mid")
    parser.add_argument("--from", dest="source", default=None, help="a finished run of the targets at the scale")
    parser.add_argument("--targets", nargs="+", default=list(TARGETS))
    parser.add_argument("--markdown", default=None, help="also write the table there")
    args = parser.parse_args(argv)
    out = table(planned(args.targets, args.scale), measured(args.source) if args.source else None)
    print(out)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(out + "\n")


if __name__ == "__main__":
    main()
