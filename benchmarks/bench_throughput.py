"""Engine overhead over the physics limit.

For each task and batch (agents × environments per agent), measures after
compilation:

* physics: ``jit(scan(vmap(env.step)))`` with random actions, no learning;
* rollout: the engine's data collection alone (policy sampling, filters,
  automatic resets, episode accounting);
* training: full PPO iterations (collection + value and policy updates with
  the task's preset epochs and minibatches), through ``pgdiag.sweep``.

Prints a table of env steps per second.

    python benchmarks/bench_throughput.py [--tasks point_mass hopper] [--agents 16] [--envs 4]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

from pgdiag import make_train, preset, seed_key, sweep
from pgdiag.config import stack_knobs
from pgdiag.envs import crossover, resolve_physics
from pgdiag.rollout import collect


def timed(fn, *args, repeats=3):
    out = fn(*args)
    jax.block_until_ready(out)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t)
    return best


def physics_rate(task: str, batch: int, steps: int, physics: str = "auto", solver: str = "converged") -> float:
    """Raw physics, environment steps per second: ``jit(scan(vmap(env.step)))`` with random actions."""
    return 1e3 * batch / crossover.step_ms(task, physics, 0, solver, batch, steps, repeats=3)


def rollout_rate(cfg, agents: int) -> float:
    trainer = make_train(cfg.static)
    knobs = stack_knobs([cfg.knobs] * agents)
    keys = jnp.stack([seed_key(i) for i in range(agents)])
    state = jax.jit(jax.vmap(trainer.init))(keys, knobs)
    steps = cfg.static.steps_per_env

    @jax.jit
    def run(state, knobs):
        def one(s, k):
            return collect(trainer.env, s.policy, s.envs, s.filters, s.key, k, steps)[2].reward
        return jax.vmap(one)(state, knobs)

    return agents * cfg.static.batch_size / timed(run, state, knobs)


def training_rate(cfg, agents: int) -> tuple[float, float, str]:
    """Training env steps per second (the second of two identical sweeps), the first sweep's compile time and
    the physics backend the sweep ran on."""
    first = sweep(cfg, None, seeds=list(range(agents)), chunk_iterations=cfg.static.num_iterations)  # compiles
    run = sweep(cfg, None, seeds=list(range(agents)), chunk_iterations=cfg.static.num_iterations)
    return (run.manifest["timings"]["env_steps_per_s"], first.manifest["timings"]["compile_s"],
            run.manifest["physics"]["backend"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["point_mass", "hopper"])
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--envs", type=int, default=4, help="environments per agent")
    parser.add_argument("--steps", type=int, default=256, help="steps per environment per iteration")
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()

    rows = []
    for task in args.tasks:
        cfg = preset("ppo", task, num_envs=args.envs, steps_per_env=args.steps, num_iterations=args.iterations,
                     num_minibatches=32 if args.envs * args.steps % 32 == 0 else 8)
        batch = args.agents * args.envs
        phys = physics_rate(task, batch, args.steps)
        roll = rollout_rate(cfg, args.agents)
        train, _, _ = training_rate(cfg, args.agents)
        rows.append((f"{task} ({resolve_physics(task)[0]})", batch, phys, roll, train))
        print(f"  measured {task}", flush=True)

    print(f"\nbackend: {jax.default_backend()} ({jax.device_count()} device(s)); "
          f"{args.agents} agents × {args.envs} envs; PPO preset epochs/minibatches\n")
    print("| task (physics) | batch (agents × envs) | physics steps/s | rollout steps/s | training steps/s "
          "| rollout / physics | training / physics |")
    print("|---|---|---|---|---|---|---|")
    for task, batch, phys, roll, train in rows:
        print(f"| {task} | {batch} | {phys:,.0f} | {roll:,.0f} | {train:,.0f} | {roll / phys:.2f} | "
              f"{train / phys:.2f} |")


if __name__ == "__main__":
    main()
