"""Native MuJoCo inside a program placed on the accelerator and on the host's CPU: the same states, and what
each placement costs per batched step.

A program compiled for the CPU steps native MuJoCo through the FFI handler (pgdiag/envs/native_ffi.py); one
compiled for an accelerator cannot call it, and steps through a host callback instead (the physics' state
crosses to the host and back on every step). This script runs the same chained steps both ways and prints
the largest difference of the states (MuJoCo's float64 arithmetic is the same; only the JAX code around it
is compiled for two devices) and the milliseconds per batched step. On a CPU-only host both rows are the CPU.

    python benchmarks/bench_native_placement.py [--tasks hopper humanoid] [--models brax gym] [--batches 1 16 240]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def trajectory_ms(env, batch: int, steps: int, device):
    """(ms per batched step, final qpos) of ``steps`` chained random-action steps compiled for ``device``."""
    import jax

    def body(s, k):
        a = jax.random.uniform(k, (batch, env.action_size), minval=-1.0, maxval=1.0)
        return jax.vmap(env.step)(s, a), None

    with jax.default_device(device):
        states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), batch))
        run = jax.jit(lambda s, key: jax.lax.scan(body, s, jax.random.split(key, steps))[0])
        key = jax.random.PRNGKey(1)
        out = jax.block_until_ready(run(states, key))
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            jax.block_until_ready(run(states, key))
            best = min(best, time.perf_counter() - t)
    return best * 1e3 / steps, np.asarray(out.physics["qpos"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["hopper", "humanoid"])
    parser.add_argument("--models", nargs="+", default=["brax", "gym"])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16, 240])
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--threads", type=int, default=0, help="native threads (default: the host's cores)")
    args = parser.parse_args(argv)
    import jax

    from pgdiag import envs
    from pgdiag.envs import native_ffi

    cpu, default = jax.devices("cpu")[0], jax.devices()[0]
    print(f"devices: {default.platform} ({default.device_kind}) and the host CPU; FFI handler: "
          f"{native_ffi.unavailable() or 'built'}\n")
    print(f"| task | model | batch | {default.platform} program ms/step | CPU program ms/step | max |Δ qpos| |")
    print("|---|---|---|---|---|---|")
    for task in args.tasks:
        for model in args.models:
            env = envs.make(task, "native", args.threads, model=model)
            for batch in args.batches:
                on_default, q_default = trajectory_ms(env, batch, args.steps, default)
                on_cpu, q_cpu = trajectory_ms(env, batch, args.steps, cpu)
                print(f"| {task} | {model} | {batch:,} | {on_default:.3f} | {on_cpu:.3f} | "
                      f"{np.max(np.abs(q_default - q_cpu)):.2e} |", flush=True)


if __name__ == "__main__":
    main()
