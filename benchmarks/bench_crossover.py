"""Native MuJoCo, MJX or MuJoCo Warp: which backend steps a batch faster on this host, per task and solver.

For each task, solver setting and batch size: the time of one batched step (raw physics, random actions,
compiling excluded) on native MuJoCo (the host's cores, in a program compiled for its CPU), on MJX (the
default JAX device) and, where warp-lang is installed and an accelerator runs it, on MuJoCo Warp; and each
crossover: the smallest measured batch from which that backend is at least as fast as native MuJoCo at every
larger measured batch. On a CPU-only host MJX runs on the CPU too. ``--json PATH`` also writes the
measurements; ``--record`` adds them to this host's physics measurements, from which ``physics=auto`` then decides
(:mod:`pgdiag.envs.crossover`; without them it measures each new batch when a run first needs it).

    python benchmarks/bench_crossover.py [--tasks hopper walker2d humanoid] [--solvers converged fast]
                                         [--batches 16 64 256 1024 4096] [--steps 64]
                                         [--backends native mjx warp] [--record]
"""

from __future__ import annotations

import argparse
import json
import os

import jax

from pgdiag.envs import MODELS, crossover, mjx_missing, mujoco_physics


def _ms(row, backend) -> str:
    return "—" if row.get(f"{backend}_ms") is None else f"{row[f'{backend}_ms']:.2f}"


def measure(tasks, solvers, batches, steps, threads, models=("brax",), backends=None) -> list[dict]:
    rows = []
    for task in tasks:
        for model in models:
            if mjx_missing(task, model):  # physics=auto runs it natively, whatever the batch
                print(f"| {task} | {model} | — | — | — | — | — | native (MJX lacks {mjx_missing(task, model)}) |")
                continue
            for solver in solvers:
                for batch in batches:
                    rows.append(crossover.measure(task, solver, batch, threads, steps=steps, repeats=3, model=model,
                                                   backends=backends))
                    r = rows[-1]
                    r["faster"] = crossover.faster(r)
                    print(f"| {task} | {model} | {solver} | {batch:,} | {_ms(r, 'native')} | {_ms(r, 'mjx')} | "
                          f"{_ms(r, 'warp')} | {r['faster']} |", flush=True)
    return rows


def crossovers(rows, backend: str = "mjx") -> dict:
    """{(task, model, solver): the smallest batch from which ``backend`` is at least as fast as native MuJoCo
    at every larger measured batch (None: never within the measured batches)}; rows without ``backend``
    are left out."""
    out = {}

    def key_of(r):
        return r["task"], r.get("model", "brax"), r["solver"]

    timed = [r for r in rows if r.get(f"{backend}_ms") is not None]
    for key in dict.fromkeys(key_of(r) for r in timed):
        mine = sorted((r for r in timed if key_of(r) == key), key=lambda r: r["batch"])
        out[key] = next((r["batch"] for i, r in enumerate(mine) if all(s[f"{backend}_ms"] <= s["native_ms"]
                                                                        for s in mine[i:])), None)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["hopper", "walker2d", "humanoid"])
    parser.add_argument("--solvers", nargs="+", default=["converged", "fast"])
    parser.add_argument("--models", nargs="+", default=["brax"], choices=MODELS)
    parser.add_argument("--batches", nargs="+", type=int, default=[16, 64, 256, 1024, 4096])
    parser.add_argument("--steps", type=int, default=64, help="batched steps per timing")
    parser.add_argument("--json", default=None, help="also write the measurements here")
    parser.add_argument("--threads", type=int, default=0, help="native backend threads (0: every core)")
    parser.add_argument("--backends", nargs="+", default=None, choices=crossover.BACKENDS,
                        help="only these backends (default: every one this host runs; native is always timed)")
    parser.add_argument("--record", action="store_true",
                        help="add the measurements to this host's, which physics=auto decides from")
    args = parser.parse_args(argv)
    backends = None
    if args.backends:
        backends = ("native",) + tuple(b for b in crossover.BACKENDS[1:] if b in args.backends)
        here = crossover.backends_here()
        if args.record and set(backends) != set(here):
            parser.error(f"--record needs every backend physics=auto compares here ({', '.join(here)}), not "
                         f"--backends {' '.join(args.backends)}: a row without one would decide without it")
        if "warp" in backends and mujoco_physics.warp_unavailable():
            parser.error(mujoco_physics.warp_unavailable())
    device = jax.devices()[0]
    print(f"device: {device.platform} ({device.device_kind}), {os.cpu_count()} host cores, jax {jax.__version__}\n")
    print("| task | model | solver | batch | native ms/step | MJX ms/step | Warp ms/step | faster |\n"
          "|---|---|---|---|---|---|---|---|")
    threads = args.threads or os.cpu_count() or 1
    rows = measure(args.tasks, args.solvers, args.batches, args.steps, threads, args.models, backends)
    print("\n| task | model | solver | backend | faster than native from batch |\n|---|---|---|---|---|")
    for backend in ("mjx", "warp"):
        for (task, model, solver), batch in crossovers(rows, backend).items():
            since = f"{batch:,}" if batch else "— (native at every measured batch)"
            print(f"| {task} | {model} | {solver} | {crossover.NAMES[backend]} | {since} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": f"{device.platform} ({device.device_kind})", "host_cores": os.cpu_count(),
                       "jax": jax.__version__, "rows": rows}, f, indent=2)
    if args.record:
        print(f"\nrecorded for {crossover.host_key(threads)!r} in {crossover.record(crossover.host_key(threads), rows)}")


if __name__ == "__main__":
    main()
