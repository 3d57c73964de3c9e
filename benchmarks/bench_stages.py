"""Where a training iteration's time goes: each stage of pgdiag.stages compiled and timed on its own.

For Hopper on native physics with the PPO preset's update (10 value + 10 policy epochs × 32 minibatches),
``agents`` agents vmapped, measures after compilation: the rollout (collect_batch: physics, policy,
filters, GAE), the value epochs, the policy epochs, both in the one loop training runs them in, the
metrics (trust-region statistics and value errors on the batch), and the whole iteration as training
compiles it, beside the raw physics of the same batch and two references for the update: the rate this
host attains on the update's own work outside the engine (both networks' forward and backward passes at the
minibatch shape, vmapped over the agents, as many steps as the epochs take, a bare descent step between),
and a lower bound: the update's matmul FLOPs at the rate this CPU reaches on its matmul shape alone. The
update's FLOPs per sample are counted from the layer shapes (``pgdiag.experiments.train_cost.update_flops``).
Then the rollout, the update and the whole iteration against their floor on the host's cores
(``bench_host_devices.py``'s: MuJoCo's one-thread cost on the iteration's own states, the networks alone).

    python benchmarks/bench_stages.py [--agents 16] [--envs 4] [--steps 256]
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
from bench_throughput import physics_rate, timed

from pgdiag import make_train, networks, preset, seed_key, stages
from pgdiag.config import stack_knobs
from pgdiag.experiments import train_cost


def profile(agents: int, num_envs: int, steps: int) -> tuple[list[tuple[str, float]], float]:
    cfg = preset("ppo", "hopper", num_envs=num_envs, steps_per_env=steps, num_minibatches=32, physics="native")
    static = cfg.static
    trainer = make_train(static)
    env = trainer.env
    knobs = stack_knobs([cfg.knobs] * agents)
    state = jax.jit(jax.vmap(trainer.init))(jnp.stack([seed_key(i) for i in range(agents)]), knobs)
    lr = jnp.full((agents,), 3e-4)

    collect = jax.jit(jax.vmap(lambda s, k: stages.collect_batch(env, s.policy, s.value, s.envs, s.filters, k,
                                                                 s.key, steps)))
    data = collect(state, knobs)
    value = jax.jit(jax.vmap(lambda s, d, lr, k: stages.value_step(static, s.value, s.value_opt, d.batch, lr, k,
                                                                   s.key)))
    policy = jax.jit(jax.vmap(lambda s, d, lr, k: stages.policy_step(static, s.policy, s.policy_opt, d.batch, lr,
                                                                     k, s.key)))
    update = jax.jit(jax.vmap(lambda s, d, lr, k: stages.update(static, s.policy, s.policy_opt, s.value, s.value_opt,
                                                                d.batch, lr, lr, k, s.key, s.key)))
    new_policy = policy(state, data, lr, knobs)
    new_value = value(state, data, lr, knobs)

    def metrics_fn(s, d, p, v, k):
        b = d.batch
        tr = stages.trust_region(s.policy, p, b.obs, b.action, b.old_log_prob, k)
        return tr, stages.value_errors(v, stages.value_targets(d, k), k), stages.episode_stats(d.transitions)

    metrics = jax.jit(jax.vmap(metrics_fn))
    whole = jax.jit(lambda s, k: trainer.run_agents(s, k, 1))
    rows = [
        ("rollout (collect_batch)", timed(collect, state, knobs)),
        ("value epochs (value_step)", timed(value, state, data, lr, knobs)),
        ("policy epochs (policy_step)", timed(policy, state, data, lr, knobs)),
        ("both in one loop (update, as training runs them)", timed(update, state, data, lr, knobs)),
        ("metrics (trust region, value errors, episodes)",
         timed(metrics, state, data, new_policy.params, new_value.params, knobs)),
        ("whole iteration (as training runs it)", timed(whole, state, knobs)),
    ]
    batch = agents * num_envs
    rows.append(("rollout without MuJoCo (its physics the identity; the rest of the rollout)",
                 timed(jax.jit(jax.vmap(lambda s, k: stages.collect_batch(_without_physics(), s.policy, s.value,
                                                                          s.envs, s.filters, k, s.key, steps))),
                       state, knobs)))
    rows.append(("raw physics of the same batch", batch * steps / physics_rate("hopper", batch, steps)))
    flops = agents * num_envs * steps * train_cost.update_flops(static, "hopper")
    mb = num_envs * steps // static.num_minibatches
    rate = matmul_rate(agents, mb, max(static.policy_hidden + static.value_hidden, default=64))
    rows.append((f"networks' forward + backward alone at the update's shapes ({flops / 1e9:.1f} GFLOP; "
                 "attainable)", timed(jax.jit(jax.vmap(networks_alone(static, mb))), state, data, knobs)))
    rows.append((f"update at this CPU's matmul rate on its shapes ({flops / 1e9:.1f} GFLOP at {rate / 1e9:.0f} "
                 "GFLOP/s; a lower bound)", flops / rate))
    return rows, flops


def _without_physics():
    """Native Hopper with MuJoCo's step replaced by the identity (the state kept): what the rollout costs
    besides its physics — the policy, filters, rewards, resets and the update batch."""
    from pgdiag.envs import mujoco_tasks
    from pgdiag.envs.mujoco_models import mujoco_task

    real = mujoco_tasks.native_advance
    mujoco_tasks.native_advance = lambda *a, **k: lambda qpos, qvel, ctrl: {"qpos": qpos, "qvel": qvel}
    try:
        return mujoco_tasks.make_mujoco_env(mujoco_task("hopper", "brax"), "native", 0)
    finally:
        mujoco_tasks.native_advance = real


def networks_alone(static, rows: int):
    """The update's work without the engine: ``ppo_epochs × num_minibatches`` steps, each both networks'
    forward and backward passes on a [rows, obs] slice of the batch (the gradient of the outputs' sum) and a
    bare descent step so that each step depends on the last — no losses, shuffles, clipping or Adam."""
    steps = max(static.ppo_epochs, static.value_epochs) * static.num_minibatches

    def run(state, data, knobs):
        obs = data.batch.obs

        def step(nets, i):
            x = jax.lax.dynamic_slice_in_dim(obs, (i % static.num_minibatches) * rows, rows)
            grads = jax.grad(lambda n: jnp.sum(networks.policy_apply(n[0], x, knobs)[0])
                             + jnp.sum(networks.value_apply(n[1], x, knobs)))(nets)
            return jax.tree.map(lambda p, g: p - 1e-9 * g, nets, grads), None

        return jax.lax.scan(step, (state.policy, state.value), jnp.arange(steps))[0]

    return run


def matmul_rate(agents: int, rows: int, width: int) -> float:
    """FLOP/s of this CPU on the update's own matmul: ``agents`` × [rows, width] @ [width, width]."""
    x = jnp.ones((agents, rows, width))
    w = jnp.broadcast_to(jnp.eye(width), (agents, width, width))  # x stays ones: no overflow, no subnormals
    n = 256
    loop = jax.jit(lambda x, w: jax.lax.fori_loop(0, n, lambda i, x: x @ w, x))  # each product needs the last
    return 2.0 * agents * rows * width * width * n / timed(loop, x, w)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=256)
    args = parser.parse_args()
    rows, flops = profile(args.agents, args.envs, args.steps)
    whole = dict(rows)["whole iteration (as training runs it)"]
    pairs = args.agents * args.envs * args.steps
    print(f"Hopper, native physics, {args.agents} agents × {args.envs} envs × {args.steps} steps = {pairs:,} "
          f"pairs per iteration\n")
    print("| stage | seconds | share of the iteration | pairs/s |\n|---|---|---|---|")
    for name, s in rows:
        print(f"| {name} | {s:.3f} | {s / whole:.0%} | {pairs / s:,.0f} |")
    alone = next(t for n, t in rows if n.startswith("networks' forward"))
    both = dict(rows)["both in one loop (update, as training runs them)"]
    print(f"\nthe update: {flops / pairs / 1e3:.0f} kFLOP of matmuls per sample; {flops / both / 1e9:.1f} GFLOP/s "
          f"against {flops / alone / 1e9:.1f} attainable on its shapes: {alone / both:.2f} of the attainable rate")
    against_floor(dict(rows), alone, args)


def against_floor(rows: dict, alone: float, args) -> None:
    """Each part against its floor on this host's cores (bench_host_devices' definition): the rollout against
    MuJoCo's own one-thread cost on the iteration's own states, the update against its networks alone, the
    whole iteration against both, each divided by the cores."""
    import os

    from bench_floor import floor_ms
    from bench_host_devices import own_states

    cores = os.cpu_count() or 1
    states = own_states(args.agents, num_envs=args.envs, steps_per_env=args.steps)
    physics = floor_ms("hopper", "brax", states, 1, 3.0)[0] * args.steps / 1e3
    floors = {"rollout (collect_batch)": physics / cores,
              "both in one loop (update, as training runs them)": alone / cores,
              "whole iteration (as training runs it)": (physics + alone) / cores}
    print(f"\nagainst the floor on {cores} cores (MuJoCo's one-thread cost on the iteration's own states, "
          f"{physics:.3f} s; the update's networks alone, {alone:.3f} s; each over the cores)\n")
    print("| part | seconds | floor (s) | floor / part |\n|---|---|---|---|")
    for name, floor in floors.items():
        print(f"| {name} | {rows[name]:.3f} | {floor:.3f} | {floor / rows[name]:.2f} |")


if __name__ == "__main__":
    main()
