"""Speed and memory of the gradient study (pgdiag.diagnostics.gradient_study's program).

For Hopper on native physics, measures after compilation:

* rate: state–action pairs per second of the whole study program (sampling the
  frozen policy, GAE, the streamed VJP sums, the reductions) against the raw
  physics rate of ``vmap(env.step)`` on the same batch (subjects × streams ×
  environments per stream);
* compiles: XLA compiles while building and running the study program;
* memory: peak resident memory of a fresh process running the study to
  N = 1e5 and to N = 1e6 with the same chunk (flat in N: the stream keeps sums,
  never per-sample gradients).

    python benchmarks/bench_gradients.py [--skip-memory]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
from bench_throughput import physics_rate

SHAPES = {  # name: (subjects, K estimates, envs per stream, steps per chunk, largest N)
    "smoke": (4, 10, 4, 256, 10_240),
    "paper-like": (2, 10, 1, 2048, 65_536),
}


def subjects(num: int, num_envs: int, steps: int):
    from pgdiag import make_train, preset, seed_key
    from pgdiag.config import stack_knobs

    cfg = preset("ppo", "hopper").replace(num_envs=num_envs, steps_per_env=steps, physics="native")
    trainer = make_train(cfg.static)
    knobs = stack_knobs([cfg.knobs] * num)
    states = jax.jit(jax.vmap(trainer.init))(jnp.stack([seed_key(i) for i in range(num)]), knobs)
    return cfg, trainer.env, states, knobs


def study_program(num, k, envs_, steps, largest):
    from pgdiag.studies.gradients import measure as gradients
    from pgdiag.diagnostics.subjects import subject_keys

    cfg, env, states, knobs = subjects(num, envs_, steps)
    settings = gradients.GradientSettings(sizes=(100, 1000, largest), estimates=k, with_batch_size=False)
    r = gradients.resolve(settings, [cfg.static])
    rows = [{"seed": i, "iteration": 0} for i in range(num)]
    keys = subject_keys(0, rows)
    return env, gradients.program(cfg.static, r, "vmap"), (states, knobs, keys), gradients.pairs_total(r, num)


def rate(name: str) -> dict:
    from pgdiag.run import CompileCounter

    num, k, envs_, steps, largest = SHAPES[name]
    with CompileCounter() as cc:
        env, prog, args, pairs = study_program(num, k, envs_, steps, largest)
        before = cc.count
        compiled = prog.lower(*args).compile()
        jax.block_until_ready(compiled(*args))
        compiles = cc.count - before
    t = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    study_s = time.perf_counter() - t
    batch = num * k * envs_
    physics = physics_rate("hopper", batch, steps)
    return {"shape": name, "batch": batch, "pairs": pairs, "study_pairs_per_s": pairs / study_s,
            "physics_steps_per_s": physics, "ratio": pairs / study_s / physics, "compiles": compiles}


def peak_rss_mib(module: str, call: str) -> float:
    """Peak resident memory (MiB) of a fresh process that builds ``module.call`` (returning a program and
    its arguments last) and runs it once."""
    code = (f"import resource, jax, sys; sys.path.insert(0, 'benchmarks'); import {module} as b; "
            f"*_, prog, args, pairs = b.{call}; jax.block_until_ready(prog(*args)); "
            f"print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def peak_memory(largest: int) -> dict:
    """Peak RSS of a fresh process running a 1-subject, K = 2 study to ``largest`` pairs."""
    return {"largest_n": largest,
            "peak_rss_mib": peak_rss_mib("bench_gradients", f"study_program(1, 2, 1, 2048, {largest})")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()
    rows = [rate(name) for name in SHAPES]
    print("| shape | batch (subjects × K × envs) | pairs | study pairs/s | physics steps/s | study / physics | "
          "compiles |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['shape']} | {r['batch']} | {r['pairs']:,} | {r['study_pairs_per_s']:,.0f} | "
              f"{r['physics_steps_per_s']:,.0f} | {r['ratio']:.2f} | {r['compiles']} |")
    mem = [] if args.skip_memory else [peak_memory(n) for n in (100_352, 1_001_472)]
    if mem:
        print("\n| largest N (1 subject, K = 2, chunks of 1 × 2048) | peak RSS (MiB) |\n|---|---|")
        for m in mem:
            print(f"| {m['largest_n']:,} | {m['peak_rss_mib']:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rates": rows, "memory": mem}, f, indent=2)


if __name__ == "__main__":
    main()
