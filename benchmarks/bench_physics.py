"""Physics backends: MJX vs native MuJoCo, raw stepping and full PPO training.

For each task, backend and batch size (environments stepped together: all
agents × environments of a sweep), measures after compilation:

* physics: ``jit(scan(vmap(env.step)))`` with random actions (task code
  included: observation, reward, termination);
* training: PPO iterations through ``pgdiag.sweep`` (collection with policy
  sampling, filters and automatic resets, then the preset's 10 + 10 epochs),
  with the batch split as min(batch, 16) agents × the rest as environments,
  each iteration collecting max(8, samples / batch) steps per environment.

Prints a table of env steps per second and training as a fraction of physics; ``--models brax gym``
compares the MuJoCo models (Brax's and Gym-v2's, :mod:`pgdiag.envs.gym_tasks`).

    python benchmarks/bench_physics.py [--tasks hopper humanoid] [--batches 1 16 256 1024 4096] [--models brax gym]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import jax

from pgdiag import envs, preset, sweep
from pgdiag.envs import resolve_physics


def physics_rate(task, physics, batch, budget_s, model="brax"):
    env = envs.make(task, physics, model=model)
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), batch))

    def make(steps):
        def run(s, key):
            def body(s, k):
                a = jax.random.uniform(k, (batch, env.action_size), minval=-1.0, maxval=1.0)
                return jax.vmap(env.step)(s, a), None
            return jax.lax.scan(body, s, jax.random.split(key, steps))[0]
        return jax.jit(run)

    probe = make(4)
    jax.block_until_ready(probe(states, jax.random.PRNGKey(1)))           # compile
    t = time.perf_counter()
    jax.block_until_ready(probe(states, jax.random.PRNGKey(2)))
    per_step = (time.perf_counter() - t) / 4
    steps = int(max(4, min(2000, budget_s / max(per_step, 1e-9))))
    run = make(steps)
    jax.block_until_ready(run(states, jax.random.PRNGKey(3)))              # compile
    t = time.perf_counter()
    jax.block_until_ready(run(states, jax.random.PRNGKey(4)))
    return batch * steps / (time.perf_counter() - t)


def training_rate(task, physics, batch, samples, model="brax"):
    steps_per_env = max(8, samples // batch)
    agents = min(batch, 16)
    n_envs = batch // agents
    samples = n_envs * steps_per_env
    minibatches = 32 if samples % 32 == 0 and samples >= 64 else 4
    cfg = preset("ppo", task, physics=physics, model=model, num_envs=n_envs, steps_per_env=steps_per_env, num_iterations=2,
                 num_minibatches=minibatches)
    sweep(cfg, None, seeds=list(range(agents)), chunk_iterations=2)        # compile
    run = sweep(cfg, None, seeds=list(range(agents)), chunk_iterations=2)
    return run.manifest["timings"]["env_steps_per_s"]


def measure_one(task, physics, batch, budget, samples, training, model="brax"):
    phys = physics_rate(task, physics, batch, budget, model)
    train = training_rate(task, physics, batch, samples, model) if training else float("nan")
    return phys, train


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["hopper", "humanoid"])
    parser.add_argument("--backends", nargs="+", default=["native", "mjx"])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16, 256, 1024, 4096])
    parser.add_argument("--budget", type=float, default=3.0, help="seconds per physics measurement")
    parser.add_argument("--samples", type=int, default=16384,
                        help="env steps per training iteration (all agents), at least 8 per environment")
    parser.add_argument("--timeout", type=float, default=420.0,
                        help="seconds allowed per (task, backend, batch) measurement, compiles included")
    parser.add_argument("--models", nargs="+", default=["brax"], choices=envs.MODELS)
    parser.add_argument("--no-training", action="store_true")
    parser.add_argument("--one", nargs=4, metavar=("TASK", "BACKEND", "BATCH", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.one:  # a single measurement, run in a child process by the driver below
        task, physics, batch, model = args.one[0], args.one[1], int(args.one[2]), args.one[3]
        print(json.dumps(measure_one(task, physics, batch, args.budget, args.samples, not args.no_training, model)))
        return

    rows = []
    for task, model in ((t, m) for t in args.tasks for m in args.models):
        for physics in args.backends:
            if physics == "mjx" and envs.mjx_missing(task, model):
                rows.append((task, model, physics, None, None, None, f"MJX lacks {envs.mjx_missing(task, model)}"))
                continue
            for batch in args.batches:
                cmd = [sys.executable, __file__, "--one", task, physics, str(batch), model, "--budget", str(args.budget),
                       "--samples", str(args.samples)] + (["--no-training"] if args.no_training else [])
                failure = None
                try:
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                    if out.returncode != 0:
                        failure = "failed: " + (out.stderr.strip().splitlines() or ["no output"])[-1]
                    else:
                        phys, train = json.loads(out.stdout.strip().splitlines()[-1])
                except subprocess.TimeoutExpired:
                    failure = f"> {args.timeout:.0f} s to compile and measure"
                if failure:
                    phys = train = None
                rows.append((task, model, physics, batch, phys, train, failure))
                shown = failure or f"{phys:,.0f} physics, {train:,.0f} training steps/s"
                print(f"  {task} ({model}) {physics} {batch}: {shown}", flush=True)

    threads = resolve_physics("hopper", "native")[1]
    print(f"\nbackend: {jax.default_backend()}; native MuJoCo threads: {threads}; training = PPO preset "
          f"(10 + 10 epochs), min(batch, 16) agents × environments, ~{args.samples} env steps per iteration; "
          f"a measurement allowed {args.timeout:.0f} s\n")
    print("| task | model | physics | batch | physics steps/s | training steps/s | training / physics |")
    print("|---|---|---|---|---|---|---|")
    for task, model, physics, batch, phys, train, failure in rows:
        if failure:
            print(f"| {task} | {model} | {physics} | {batch or '—'} | ({failure}) | | |")
        else:
            print(f"| {task} | {model} | {physics} | {batch} | {phys:,.0f} | {train:,.0f} | {train / phys:.2f} |")


if __name__ == "__main__":
    main()
