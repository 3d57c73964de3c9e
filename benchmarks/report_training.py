"""The accelerator report's training sections: the targets' training programs over their first iterations, and
training throughput against the physics of the same batch (see ``accelerator_report.py``)."""

from __future__ import annotations

import os
import sys


def first_chunks(sc: dict, budget, earlier=(), rows=None, save=lambda: None) -> list:
    """Every training program of the targets at the scale, timed over its first two iterations (those
    ``earlier``, a previous report's rows, measured already are kept), appended to ``rows`` with ``save``
    called after each; its plan's estimate after, while the budget lasts."""
    from pgdiag import sweep
    from pgdiag.experiments import costs, targets as table

    targets = sc["targets"] or tuple(table.TARGETS)
    step_ms = costs.measured_step_ms()
    programs, owners = {}, {}
    for target in targets:
        over = dict(sc["shape"]) if sc["plan_tasks"] else {}
        for p in table.get(target).dry_run(sc["plan_scale"], tasks=sc["plan_tasks"], memory=1 << 62, **over):
            if p.spec is not None and p.task in sc.get("only_tasks", (p.task,)):
                programs.setdefault(p, p)
                owners.setdefault(p, []).append(target)
    done = {(r["targets"], r["task"], r["algorithms"], r["agents"], r["note"]): r for r in earlier if r.get("measured")}
    rows = [] if rows is None else rows
    for p in programs:
        base, grid, seeds = p.spec
        row = {"targets": ", ".join(owners[p]), "task": p.task, "algorithms": p.presets, "agents": p.units,
               "iterations": base.static.num_iterations, "note": p.note, "planned_s": None}
        kept = done.get((row["targets"], row["task"], row["algorithms"], row["agents"], row["note"]))
        if kept:
            rows.append(kept)
            continue
        if budget.left() <= 0:
            rows.append({**row, "measured": False})
            continue
        sys.stderr.write(f"timing {row['targets']}: {p.task} {p.presets} × {p.units} …\n")
        # two iterations, one chunk each: the first carries the first call's costs (buffers, thread pools,
        # the collecting blocks' MuJoCo data), the second is what every later iteration costs
        cfg = base.replace(num_iterations=min(2, base.static.num_iterations), checkpoint_at=(), checkpoint_every=0)
        t = sweep(cfg, grid, seeds, chunk_iterations=1, progress=False).manifest["timings"]
        first, steady = t["chunk_s"][0], t["chunk_s"][-1]
        setup = t["run_s"] - sum(t["chunk_s"])   # the initial states, made once
        rows.append({**row, "measured": True, "compile_s": t["compile_s"], "first_iteration_s": first,
                     "iteration_s": steady, "extrapolated_s": t["compile_s"] + setup + first
                     + steady * (base.static.num_iterations - 1)})
        save()
        if budget.left() > 0:   # the plan after the timing: on a fresh accelerator host it may time MJX's step
            # from step costs alone, not from the training cost the sweep just recorded
            rows[-1]["planned_s"] = costs.duration([p], step_ms, recorded=False)
            save()
    return rows


def throughput(sc: dict, budget, rows=None, save=lambda: None) -> list:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_throughput import physics_rate, training_rate

    from pgdiag import preset

    rows = [] if rows is None else rows
    for agents in sc["agents"]:
        if budget.left() <= 0:
            rows.append({"agents": agents, "measured": False})
            continue
        cfg = preset("ppo", sc["throughput_task"], **sc["shape"], num_iterations=1)
        train, compile_s, backend = training_rate(cfg, agents)
        batch = agents * cfg.static.num_envs
        # the physics alone on the backend the training ran on (physics=auto chose it for this batch)
        physics = physics_rate(sc["throughput_task"], batch, 64, physics=backend if backend != "jax" else "auto")
        rows.append({"agents": agents, "measured": True, "batch": batch, "backend": backend,
                     "training_steps_per_s": train, "physics_steps_per_s": physics, "ratio": train / physics,
                     "compile_s": compile_s})
        save()
    return rows
