"""Native MuJoCo or MJX: which backend steps a batch faster on this host, per task and solver setting.

For each task, solver setting and batch size: the time of one batched step (raw physics, random actions,
compiling excluded) on native MuJoCo (the host's cores through the physics callback) and on MJX (the
default JAX device), and the crossover: the smallest measured batch from which MJX is at least as fast.
On a CPU-only host MJX runs on the CPU too. ``--json PATH`` also writes the measurements; ``--record``
adds them to this host's physics measurements, from which ``physics=auto`` then decides
(:mod:`pg_diag.envs.crossover`; without them it measures each new batch when a run first needs it).

    python benchmarks/bench_crossover.py [--tasks hopper walker2d humanoid] [--solvers converged fast]
                                         [--batches 16 64 256 1024 4096] [--steps 64] [--record]
"""

from __future__ import annotations

import argparse
import json
import os

import jax

from pg_diag.envs import MODELS, crossover, mjx_missing


def measure(tasks, solvers, batches, steps, threads, models=("brax",)) -> list[dict]:
    rows = []
    for task in tasks:
        for model in models:
            if mjx_missing(task, model):  # physics=auto runs it natively, whatever the batch
                print(f"| {task} | {model} | — | — | — | — | native (MJX lacks {mjx_missing(task, model)}) |")
                continue
            for solver in solvers:
                for batch in batches:
                    rows.append(crossover.measure(task, solver, batch, threads, steps=steps, repeats=3, model=model))
                    r = rows[-1]
                    r["faster"] = crossover.faster(r)
                    print(f"| {task} | {model} | {solver} | {batch:,} | {r['native_ms']:.2f} | {r['mjx_ms']:.2f} | "
                          f"{r['faster']} |", flush=True)
    return rows


def crossovers(rows) -> dict:
    """{(task, model, solver): the smallest batch from which MJX is at least as fast at every larger
    measured batch (None: never within the measured batches)}."""
    out = {}

    def key_of(r):
        return r["task"], r.get("model", "brax"), r["solver"]

    for key in dict.fromkeys(key_of(r) for r in rows):
        mine = sorted((r for r in rows if key_of(r) == key), key=lambda r: r["batch"])
        out[key] = next((r["batch"] for i, r in enumerate(mine) if all(s["mjx_ms"] <= s["native_ms"]
                                                                        for s in mine[i:])), None)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["hopper", "walker2d", "humanoid"])
    parser.add_argument("--solvers", nargs="+", default=["converged", "fast"])
    parser.add_argument("--models", nargs="+", default=["brax"], choices=MODELS)
    parser.add_argument("--batches", nargs="+", type=int, default=[16, 64, 256, 1024, 4096])
    parser.add_argument("--steps", type=int, default=64, help="batched steps per timing")
    parser.add_argument("--json", default=None, help="also write the measurements here")
    parser.add_argument("--threads", type=int, default=0, help="native backend threads (0: every core)")
    parser.add_argument("--record", action="store_true",
                        help="add the measurements to this host's, which physics=auto decides from")
    args = parser.parse_args()
    device = jax.devices()[0]
    print(f"device: {device.platform} ({device.device_kind}), {os.cpu_count()} host cores, jax {jax.__version__}\n")
    print("| task | model | solver | batch | native ms/step | MJX ms/step | faster |\n|---|---|---|---|---|---|---|")
    threads = args.threads or os.cpu_count() or 1
    rows = measure(args.tasks, args.solvers, args.batches, args.steps, threads, args.models)
    print("\n| task | model | solver | MJX from batch |\n|---|---|---|---|")
    for (task, model, solver), batch in crossovers(rows).items():
        print(f"| {task} | {model} | {solver} | {f'{batch:,}' if batch else '— (native at every measured batch)'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": f"{device.platform} ({device.device_kind})", "host_cores": os.cpu_count(),
                       "jax": jax.__version__, "rows": rows}, f, indent=2)
    if args.record:
        print(f"\nrecorded for {crossover.host_key(threads)!r} in {crossover.record(crossover.host_key(threads), rows)}")


if __name__ == "__main__":
    main()
