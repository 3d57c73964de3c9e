"""Random bits without loops (pgdiag.run.cpu_random): a training iteration and its rollout compiled with JAX's
rolled threefry lowering and with the unrolled one, on the replication's shape (1 × 2,048 steps per agent).

Both programs are compiled in one process and timed in alternation (``--repeats`` calls each, A B A B …), so a
noisy host's slow spells fall on both; each row gives the compile, the fastest and the median call. The physics
alone (the same batch stepped by MuJoCo with random actions, no policy) is printed beside them.

    python benchmarks/bench_cpu_random.py [--agents 14] [--tasks hopper humanoid] [--presets ppo trpo]
                                          [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp

from pgdiag import make_train, preset, seed_key, stages
from pgdiag.config import stack_knobs
from pgdiag.envs import crossover
from pgdiag.run import cpu_random

STEPS = 2048
LABELS = ("rolled (JAX)", "unrolled")


def programs(task: str, name: str, agents: int):
    """The whole iteration and the rollout alone, as (function, arguments) pairs, for one configuration."""
    cfg = preset(name, task, num_envs=1, steps_per_env=STEPS, physics="native", **model_of(task))
    trainer = make_train(cfg.static)
    env = trainer.env
    knobs = stack_knobs([cfg.knobs] * agents)
    state = jax.jit(jax.vmap(trainer.init))(jnp.stack([seed_key(i) for i in range(agents)]), knobs)
    whole = jax.jit(lambda s, k: trainer.run_agents(s, k, 1))
    collect = jax.jit(jax.vmap(lambda s, k: stages.collect_batch(env, s.policy, s.value, s.envs, s.filters, k,
                                                                 s.key, STEPS)))
    return {"iteration": (whole, (state, knobs)), "rollout": (collect, (state, knobs))}


def model_of(task: str) -> dict:
    return {"model": "gym"} if task == "humanoid" else {}


def compiled_both(fn, args) -> tuple[list, list]:
    """``fn`` compiled once per lowering, and each compile's seconds."""
    out, seconds = [], []
    for unrolled in (False, True):
        cpu_random.use(unrolled)
        jax.clear_caches()   # lower anew under the rule just registered
        start = time.perf_counter()
        out.append(fn.lower(*args).compile())
        seconds.append(time.perf_counter() - start)
    cpu_random.use(cpu_random.wanted())
    return out, seconds


def alternate(executables, args, repeats: int) -> list[list[float]]:
    """Seconds per call of each executable, called in alternation after one warm-up call each."""
    for ex in executables:
        jax.block_until_ready(ex(*args))
    times = [[] for _ in executables]
    for _ in range(repeats):
        for ex, t in zip(executables, times):
            start = time.perf_counter()
            jax.block_until_ready(ex(*args))
            t.append(time.perf_counter() - start)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=14)
    parser.add_argument("--tasks", nargs="+", default=["hopper", "humanoid"])
    parser.add_argument("--presets", nargs="+", default=["ppo", "trpo"])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"{args.agents} agents × 1 env × {STEPS:,} steps, native MuJoCo (Humanoid: Gym's model); "
          f"{args.repeats} alternating calls each\n")
    print("| task | algorithm | program | threefry | compile s | fastest s | median s | fastest µs/batch step |\n"
          "|---|---|---|---|---|---|---|---|")
    for task in args.tasks:
        for name in args.presets:
            for part, (fn, fargs) in programs(task, name, args.agents).items():
                executables, compile_s = compiled_both(fn, fargs)
                times = alternate(executables, fargs, args.repeats)
                for label, c, t in zip(LABELS, compile_s, times):
                    print(f"| {task} | {name} | {part} | {label} | {c:.1f} | {min(t):.3f} | "
                          f"{statistics.median(t):.3f} | {min(t) / STEPS * 1e6:.0f} |", flush=True)
        physics = crossover.step_ms(task, "native", 0, "converged", args.agents, 256, 3,
                                    model_of(task).get("model", "brax"))
        print(f"| {task} | — | physics alone (random actions) | — | — | — | — | {physics * 1e3:.0f} |", flush=True)


if __name__ == "__main__":
    main()
