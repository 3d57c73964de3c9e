"""Speed and memory of the landscape study (pgdiag.studies.landscape's program).

For Hopper on native physics (PPO preset networks, the paper's batch of one
environment × 2,048 steps for the step), measures after compilation:

* rate: grid points × pairs per second of the whole study program (the step
  batch and the algorithm's step, the perturbed policies' return streams, the
  surrogate surfaces) against the raw physics rate of ``vmap(env.step)`` on the
  same batch (subjects × grid points × environments per point); evaluation is
  rollouts only, so the goal is ≥ 0.8;
* compiles: XLA compiles while building and running the study program;
* memory: peak resident memory of a fresh process running a 3 × 3 grid to
  2e4 and to 2e5 pairs per point with the same chunk (flat in the pairs: a
  point keeps the running mean and M2 of its episodes, not its samples).

    python benchmarks/bench_landscape.py [--skip-memory]
"""

from __future__ import annotations

import argparse
import json
import time

import jax
from bench_gradients import peak_rss_mib, subjects
from bench_throughput import physics_rate

SHAPES = {  # name: (subjects, points per axis, envs per point, sizes of the true return)
    "smoke": (2, 5, 16, (2_000, 20_000)),
    "paper-like": (1, 7, 16, (2_000, 20_000, 60_000)),
}


def study_program(num, points, envs_, sizes):
    from pgdiag.studies.landscape import measure as landscape
    from pgdiag.diagnostics.subjects import subject_keys

    cfg, env, states, knobs = subjects(num, 1, 2048)
    settings = landscape.LandscapeSettings(points=points, envs=envs_, sizes=sizes)
    r = landscape.resolve(settings, [cfg.static])
    keys = subject_keys(0, [{"seed": i, "iteration": 0} for i in range(num)])
    return r, landscape.program(cfg.static, r, "vmap"), (states, knobs, keys), landscape.pairs_total(r, num)


def rate(name: str) -> dict:
    from pgdiag.run import CompileCounter

    num, points, envs_, sizes = SHAPES[name]
    with CompileCounter() as cc:
        r, prog, args, pairs = study_program(num, points, envs_, sizes)
        before = cc.count
        compiled = prog.lower(*args).compile()
        jax.block_until_ready(compiled(*args))
        compiles = cc.count - before
    t = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    study_s = time.perf_counter() - t
    # the pairs the episodes actually took (n = N / L̂ complete episodes per point), not the plan's N
    import numpy as np
    pairs = int(np.sum(np.asarray(out["returns"].pairs)[..., -1])) + num * sum(r.step_pairs)
    batch = num * r.grid_points * r.envs
    physics = physics_rate("hopper", batch, r.chunk_steps)
    return {"shape": name, "subjects": num, "grid_points": r.grid_points, "batch": batch, "sizes": list(r.sizes),
            "pairs": pairs, "study_pairs_per_s": pairs / study_s, "physics_steps_per_s": physics,
            "ratio": pairs / study_s / physics, "compiles": compiles}


def peak_memory(largest: int) -> dict:
    """Peak RSS of a fresh process running one subject's 3 × 3 landscape to ``largest`` pairs per point."""
    return {"pairs_per_point": largest,
            "peak_rss_mib": peak_rss_mib("bench_landscape", f"study_program(1, 3, 16, (2_000, {largest}))")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()
    rows = [rate(name) for name in SHAPES]
    print("| shape | batch (subjects × points × envs) | pairs per point | pairs in all | grid points × pairs/s | "
          "physics steps/s | study / physics | compiles |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['shape']} | {r['batch']} ({r['subjects']} × {r['grid_points']} × {r['batch'] // r['subjects'] // r['grid_points']}) | "
              f"{', '.join(f'{n:,}' for n in r['sizes'])} | {r['pairs']:,} | {r['study_pairs_per_s']:,.0f} | "
              f"{r['physics_steps_per_s']:,.0f} | {r['ratio']:.2f} | {r['compiles']} |")
    mem = [] if args.skip_memory else [peak_memory(n) for n in (20_000, 200_000)]
    if mem:
        print("\n| pairs per point (1 subject, 3 × 3 grid, chunks of 16 environments × 250 steps) | peak RSS (MiB) "
              "|\n|---|---|")
        for m in mem:
            print(f"| {m['pairs_per_point']:,} | {m['peak_rss_mib']:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rates": rows, "memory": mem}, f, indent=2)


if __name__ == "__main__":
    main()
