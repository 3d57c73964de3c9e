"""The accelerator report's diagnostics section: each diagnostic target's measurement programs, first chunks timed.

For the diagnostic targets chosen (by default one per kind of study: ``bench_study_floor.TARGETS``), a few agents
are trained (the papers' shape: one environment × 2,048 steps; PPO and TRPO) and each target's measurement is run
on them at the scale's settings with every sample size cut to ``max_n`` pairs — the program's first chunks, on the
physics and devices it takes on this host (its timing record names them) — and set against its floor: the physics
of the same pairs (MuJoCo's C ``rollout`` over the host's cores for native MuJoCo; the backend's own batched step at
the program's width for MJX and Warp) plus the network arithmetic at the rate this host attains, and extrapolated
to the pairs of the target's own Hopper measurement at the scale (its seeds and checkpoints). Rows are written as
they are measured (``save``).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def diagnostic_targets(targets=None) -> tuple:
    """The targets the section measures: ``targets`` (each must have a measurement), else one per kind of study.
    A target without one is named, with those that have one, before anything is measured."""
    from bench_study_floor import TARGETS

    from pgdiag.experiments import targets as table

    if not targets:
        return TARGETS
    with_measurement = [n for n, t in table.TARGETS.items() if getattr(t, "measurement", None) is not None]
    chosen = tuple(t for t in targets if t in with_measurement)
    if not chosen:
        raise SystemExit(f"accelerator-report: the diagnostics section measures diagnostic programs, and "
                         f"{', '.join(targets)} {'has' if len(targets) == 1 else 'have'} none; targets with "
                         f"them: {', '.join(with_measurement)}")
    return chosen


def floor_of(timing: dict, width: int, caches: dict) -> float:
    """Seconds the program's pairs cost at least on its physics (see the module docstring)."""
    from bench_study_floor import physics_floor_us

    from pgdiag.experiments import costs

    pairs, physics = timing.get("pairs", 0), timing.get("physics", "native")
    if physics in ("mjx", "warp"):
        step_ms = caches.setdefault("step_ms", costs.measured_step_ms())
        return pairs / max(width, 1) * step_ms("hopper", width, "brax", "converged", physics) / 1e3
    return pairs * physics_floor_us(width, caches.setdefault("native", {})) / 1e6 / (os.cpu_count() or 1)


def diagnostics_section(sc: dict, budget, rows: list, save=lambda: None) -> list:
    """Time the diagnostic targets' programs (``sc["diagnostics"]``: scale, max_n, agents, iterations, shape,
    algorithms, work directory) while the budget lasts; appended to ``rows``."""
    from bench_study_floor import capped, network_floor_us, update_floor_us

    from pgdiag.experiments import costs, dry_run, targets as table
    from pgdiag.experiments.scales import pick

    d = sc["diagnostics"]
    names = diagnostic_targets(sc.get("diagnostic_targets"))
    if "hopper" not in sc.get("only_tasks", ("hopper",)):   # the section measures agents trained on Hopper
        return rows
    runs = train_runs(d) if budget.left() > 0 else []
    caches, net = {}, {}
    for name in names:
        if budget.left() <= 0:
            rows.append({"target": name, "measured": False})
            save()
            continue
        t = table.get(name)
        m = t.measurement
        settings = capped(pick(t.scales, d["scale"]).measuring(m.name, "hopper"), d["max_n"])
        widths = [p.width for p in dry_run.runs_plan(t, runs, diag=settings, scale=d["scale"]) if p.stage != "train"]
        # the target's own measurement on Hopper at the scale (its seeds and checkpoints): its pairs and its plan
        at_scale = [p for p in t.dry_run(d["scale"], tasks=("hopper",)) if p.stage != "train"]
        scale_pairs = sum(p.pairs for p in at_scale)
        step_ms = caches.setdefault("step_ms", costs.measured_step_ms())
        planned_s = sum(costs.run_seconds(p, step_ms) or 0.0 for p in at_scale)
        timings = m.measure(runs, save=False, progress=False, **settings).manifest["timings"]
        timings = timings if isinstance(timings, list) else [timings]
        measured_pairs = sum(x.get("pairs", 0) for x in timings)
        for i, (timing, width) in enumerate(zip(timings, widths), 1):
            pairs = timing.get("pairs", 0)
            network_s = pairs * network_floor_us(width, net) / 1e6
            if m.study.kind == "steps":
                network_s += pairs * update_floor_us(timing.get("algorithm", ""), net) / 1e6
            floor_s = floor_of(timing, width, caches) + network_s
            rows.append({"target": name, "program": i, "measured": True, "pairs": pairs, "width": width,
                         "physics": timing.get("physics", "?"), "placement": timing.get("placement", "default"),
                         "compile_s": timing["compile_s"], "run_s": timing["run_s"], "floor_s": floor_s,
                         "ratio": floor_s / max(timing["run_s"], 1e-9), "scale_pairs": scale_pairs,
                         "planned_s": planned_s,   # the target's whole measurement, as --dry-run plans it here
                         # this program's share of the scale's pairs at its own cost per pair
                         "extrapolated_s": scale_pairs * timing["run_s"] / max(measured_pairs, 1)})
        save()
    return rows


def train_runs(d: dict) -> list:
    """The agents measured: ``d["agents"]`` seeds of each of ``d["algorithms"]`` on Hopper at ``d["shape"]``, one
    checkpoint after ``d["iterations"]`` iterations, trained into ``d["work"]`` unless there already."""
    from pgdiag import preset, sweep

    paths = []
    for algorithm in d["algorithms"]:
        path = os.path.join(d["work"], f"hopper-{algorithm}")
        if not os.path.exists(os.path.join(path, "manifest.json")):
            cfg = preset(algorithm, "hopper", **d["shape"]).replace(
                reset_every_iteration=True, num_iterations=d["iterations"], checkpoint_at=(d["iterations"],))
            sweep(cfg, seeds=d["agents"], out=path, progress=False)
        paths.append(path)
    return paths


def markdown(rows: list) -> list:
    """The section's lines."""
    lines = ["", "## The diagnostics' programs: first chunks against their floor", "",
             "| target | program | physics | runs on | pairs | width | compile | run | floor / run | "
             "the scale's Hopper pairs | extrapolated |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r.get("measured"):
            lines.append(f"| {r['target']} | not measured (budget) | | | | | | | | | |")
            continue
        lines.append(f"| {r['target']} | {r['program']} | {r['physics']} | {r['placement']} | {r['pairs']:,} | "
                     f"{r['width']:,} | {r['compile_s']:.1f} s | {r['run_s']:.1f} s | {r['ratio']:.2f} | "
                     f"{r['scale_pairs']:,} | {_minutes(r['extrapolated_s'])} |")
    measured = [r for r in rows if r.get("measured")]
    if not measured:
        return lines
    lines += ["", "| target | extrapolated | planned (`--dry-run`) | planned / extrapolated |", "|---|---|---|---|"]
    for name in dict.fromkeys(r["target"] for r in measured):
        mine = [r for r in measured if r["target"] == name]
        extrapolated, planned = sum(r["extrapolated_s"] for r in mine), mine[0].get("planned_s")
        lines.append(f"| {name} | {_minutes(extrapolated)} | {_minutes(planned)} | {planned / extrapolated:.2f} |"
                     if planned else f"| {name} | {_minutes(extrapolated)} | — | — |")
    lines += ["", f"Extrapolated: the measured targets' Hopper measurements at the scale in "
                  f"{_minutes(sum(r['extrapolated_s'] for r in measured))} (each program's share of its target's "
                  f"pairs at the cost per pair it ran at; compiling apart)."]
    return lines


def _minutes(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"
