"""Training on a CPU-only host as one JAX device against one device per core (``PGDIAG_HOST_DEVICES``).

One JAX CPU device runs a program's small kernels one after another, so the learning update (10 + 10 epochs of
minibatches of a few dozen rows per agent) keeps one core busy while the others wait; the physics alone uses
them all. With ``PGDIAG_HOST_DEVICES=N`` the sweep's agents are sharded over N CPU devices (``pgdiag.run.shard``)
and each device runs its block's update on a core of its own. For each device count, in a child process (JAX
takes its device count only before it starts): a sweep of ``--agents`` PPO agents on native Hopper at the
papers' batch (1 × 2,048 steps), its steady chunks' time per environment step (compiling excluded), beside the
training's floor on the host's cores: MuJoCo's own ``rollout`` on one thread over a training iteration's own
states (recorded as its rollout steps them), plus the update's networks alone at its shapes at the rate one core
attains on them, per environment step, divided by the cores (every core busy, nothing waiting). Sharding changes how many agents one compiled program
batches, so the runs agree to float32 rounding, not bitwise (the table's last column, after the iterations run).

    python benchmarks/bench_host_devices.py [--agents 14] [--iterations 20] [--devices 1 2] [--task hopper]
        [--model brax]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

CHILD = """
import json, sys
from pgdiag import preset, sweep
out, agents, iterations, task, model = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
run = sweep(preset("ppo", task, model=model, num_iterations=iterations, heldout_every=iterations), seeds=agents, out=out,
            chunk_iterations=max(1, iterations // 4))
print(json.dumps({"chunk_s": run.manifest["timings"]["chunk_s"], "compile_s": run.manifest["timings"]["compile_s"],
                  "devices": run.manifest["device"]["count"]}))
"""


def train(devices: int, agents: int, iterations: int, out: str, task: str, model: str) -> dict:
    env = dict(os.environ, PGDIAG_HOST_DEVICES=str(devices), JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", CHILD, out, str(agents), str(iterations), task, model], env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def own_states(agents: int, task: str = "hopper", model: str = "brax", **batch):
    """A PPO iteration's own (qpos, qvel, warm start, control) on native ``task`` from fresh agents (robots falling
    and reset: dearer than random-action trajectories from rest), recorded as the rollout steps them; shaped
    [steps, agents × environments, ...] for ``bench_floor.floor_ms``. ``batch``: the preset's ``num_envs`` and
    ``steps_per_env`` where not the papers' 1 × 2,048."""
    import jax
    import jax.numpy as jnp

    from pgdiag import make_train, preset, seed_key, stages
    from pgdiag.config import stack_knobs

    cfg = preset("ppo", task, model=model, physics="native", physics_threads=1, **batch)
    trainer, seen = make_train(cfg.static), []
    env = trainer.env

    def step(s, a):  # every environment's state and action, as the rollout steps it
        jax.debug.callback(lambda *x: seen.append([np.asarray(v) for v in x]), s.physics["qpos"], s.physics["qvel"], a)
        return env.step(s, a)

    knobs = stack_knobs([cfg.knobs] * agents)
    state = jax.jit(jax.vmap(trainer.init))(jnp.stack([seed_key(i) for i in range(agents)]), knobs)
    steps = cfg.static.steps_per_env
    jax.block_until_ready(jax.jit(jax.vmap(lambda s, k: stages.collect_batch(
        env.replace(step=step), s.policy, s.value, s.envs, s.filters, k, s.key, steps)))(state, knobs))
    qpos, qvel, action = (np.concatenate([x[i].reshape(-1, x[i].shape[-1]) for x in seen]) for i in range(3))
    width = agents * cfg.static.num_envs
    shaped = lambda x: x[:steps * width].reshape(steps, width, -1).astype(np.float64)  # noqa: E731
    return shaped(qpos), shaped(qvel), np.zeros_like(shaped(qvel)), shaped(action)


def floor_us(agents: int, cores: int, task: str = "hopper", model: str = "brax") -> tuple[float, float]:
    """(physics, update) floor of a training step on ``cores`` cores, µs per environment step: MuJoCo's one-thread
    cost on a training iteration's own states, and the update's networks alone at its shapes on one core (the
    rate this CPU attains on that work, ``bench_stages.networks_alone``), each divided by the cores."""
    import jax
    import jax.numpy as jnp

    sys.path.insert(0, os.path.dirname(__file__))
    from bench_floor import floor_ms
    from bench_stages import networks_alone
    from bench_throughput import timed

    from pgdiag import make_train, preset, seed_key, stages
    from pgdiag.config import stack_knobs

    single_ms, _ = floor_ms(task, model, own_states(agents, task, model), 1, 3.0)
    cfg = preset("ppo", task, model=model, physics="native")
    trainer, steps = make_train(cfg.static), cfg.static.steps_per_env
    knobs = stack_knobs([cfg.knobs] * agents)
    state = jax.jit(jax.vmap(trainer.init))(jnp.stack([seed_key(i) for i in range(agents)]), knobs)
    data = jax.jit(jax.vmap(lambda s, k: stages.collect_batch(trainer.env, s.policy, s.value, s.envs, s.filters, k,
                                                              s.key, steps)))(state, knobs)
    rows = steps // cfg.static.num_minibatches
    update_s = timed(jax.jit(jax.vmap(networks_alone(cfg.static, rows))), state, data, knobs)
    return single_ms * 1e3 / agents / cores, update_s * 1e6 / (agents * steps) / cores


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=14)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--devices", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    parser.add_argument("--task", default="hopper")
    parser.add_argument("--model", default="brax", help="brax or gym (the papers' models)")
    args = parser.parse_args(argv)
    import pandas as pd

    cores = os.cpu_count() or 1
    physics, update = floor_us(args.agents, cores, args.task, args.model)
    floor = physics + update
    steps = args.agents * 2048 * max(1, args.iterations // 4)   # environment steps per chunk
    rows, finals = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in dict.fromkeys(args.devices):
            out = os.path.join(tmp, f"d{n}")
            t = train(n, args.agents, args.iterations, out, args.task, args.model)
            steady = float(np.median(t["chunk_s"][1:] or t["chunk_s"]))   # the first chunk's time is not steady
            finals[n] = pd.read_parquet(os.path.join(out, "metrics.parquet")).query(
                f"iteration == {args.iterations - 1}").sort_values("agent").mean_return.to_numpy()
            rows.append((n, t["devices"], t["compile_s"], 1e6 * steady / steps))
    base = rows[0][3]
    print(f"PPO on native {args.task} ({args.model}'s model), {args.agents} agents × 2,048 steps an iteration, {cores} cores; "
          f"floor {floor:.1f} µs a step over {cores} cores: physics {physics:.1f} (MuJoCo's one-thread cost on a "
          f"training iteration's own states / {cores}) + update {update:.1f} (its networks alone at its shapes, "
          f"one core's rate / {cores})\n")
    print("| PGDIAG_HOST_DEVICES | devices | compile (s) | µs per env step | speed-up | floor / training | "
          "final returns, max |Δ| to the first row |")
    print("|---|---|---|---|---|---|---|")
    first = finals[rows[0][0]]
    for n, count, compile_s, us in rows:
        print(f"| {n} | {count} | {compile_s:.1f} | {us:.1f} | {base / us:.2f} | {floor / us:.2f} | "
              f"{np.max(np.abs(finals[n] - first)):.3g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
