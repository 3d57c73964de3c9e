"""The 16-configuration toggle sweep as ONE compiled program vs one run after another.

Three ways to train the 2^4 grid (value clipping × reward scaling × orthogonal
init × LR annealing), one seed each, same static settings:

* one program: ``pgdiag.sweep`` over the grid (16 agents vmapped);
* one after another: 16 calls of ``pgdiag.train``; the toggles are traced, so
  all 16 reuse the first call's compiled program;
* one after another, recompiling: the same with the program cache cleared
  before each call — what an engine with Python-level (static) toggles pays;
* the one program again, writing its run directory: metrics, every agent's
  state (orbax) and the manifest after each of its chunks, which is what
  makes a run resumable (the program is already compiled here).

Prints wall time (including compilation), compile counts, and the speed-up of the one program over
the runs one after another. The default workload is the original's shape: Hopper on native physics,
one environment × 2,048 steps per agent and iteration, minibatches of 64.

    python benchmarks/bench_sweep.py [--task hopper] [--envs 1] [--steps 2048] [--iterations 5]
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time

import jax

from pgdiag import preset, sweep, train
from pgdiag.studies.ablation import TOGGLES
from pgdiag.run import CompileCounter, clear_compiled


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="hopper")
    parser.add_argument("--envs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=2048)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--skip-recompile", action="store_true", help="leave out the recompiling variant")
    args = parser.parse_args()
    physics = {} if args.task in ("point_mass", "pendulum", "lqr") else {"physics": "native"}
    cfg = preset("ppo", args.task, num_envs=args.envs, steps_per_env=args.steps, num_iterations=args.iterations,
                 num_minibatches=max(1, args.envs * args.steps // 64), **physics)
    grid = {t: [False, True] for t in TOGGLES}
    combos = [dict(zip(TOGGLES, c)) for c in itertools.product([False, True], repeat=len(TOGGLES))]
    rows = []

    clear_compiled()
    with CompileCounter() as c:
        t = time.perf_counter()
        run = sweep(cfg, grid, seeds=[0])
        rows.append(("one compiled sweep (16 agents)", time.perf_counter() - t, c.count,
                     run.manifest["timings"]["compile_s"]))

    clear_compiled()
    with CompileCounter() as c:
        t = time.perf_counter()
        compile_s = 0.0
        for combo in combos:
            compile_s += train(cfg.replace(**combo), seed=0).manifest["timings"]["compile_s"]
        rows.append(("16 runs one after another (traced toggles)", time.perf_counter() - t, c.count, compile_s))

    if not args.skip_recompile:
        with CompileCounter() as c:
            t = time.perf_counter()
            compile_s = 0.0
            for combo in combos:
                clear_compiled()
                compile_s += train(cfg.replace(**combo), seed=0).manifest["timings"]["compile_s"]
            rows.append(("16 runs, recompiling each (static toggles)", time.perf_counter() - t, c.count,
                         compile_s))

    with tempfile.TemporaryDirectory() as out, CompileCounter() as c:
        t = time.perf_counter()
        run = sweep(cfg, grid, seeds=[0], out=out)
        chunks = len(range(0, args.iterations, run.manifest["chunk_iterations"]))
        rows.append((f"one compiled sweep writing its run directory ({chunks} chunks, states saved after each)",
                     time.perf_counter() - t, c.count, run.manifest["timings"]["compile_s"]))

    steps = cfg.static.batch_size * cfg.static.num_iterations
    print(f"\nbackend: {jax.default_backend()}; task {args.task}; {args.envs} envs × {args.steps} steps × "
          f"{args.iterations} iterations = {steps:,} env steps per configuration\n")
    print("| how | wall time (s) | of which compiling (s) | XLA compiles |")
    print("|---|---|---|---|")
    for name, wall, count, comp in rows:
        print(f"| {name} | {wall:.1f} | {comp:.1f} | {count} |")
    (_, w1, _, c1), (_, w16, _, c16) = rows[0], rows[1]
    print(f"\none program vs 16 runs one after another: {w16 / w1:.1f}× in wall time, "
          f"{(w16 - c16) / (w1 - c1):.1f}× compiling excluded")


if __name__ == "__main__":
    main()
