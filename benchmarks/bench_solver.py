"""What the "fast" MuJoCo solver setting costs in fidelity, and what it saves (native MuJoCo here).

* speed: raw physics steps per second of each task under ``converged`` and ``fast``;
* trajectories: from the same reset states under the same random actions (uniform in [-1, 1]), the
  mean absolute difference of the observations between the two settings after 1, 10 and 100 steps
  (no resets: a fallen robot keeps being stepped), beside the observations' own spread;
* a trained policy: PPO trained on Hopper under ``converged`` (CPU scale, ``--iterations``), its
  frozen policy's mean return over complete episodes evaluated under both settings with the same
  seeds, with Student-t intervals and the paired difference.

    python benchmarks/bench_solver.py [--iterations 100] [--skip-policy]
"""

from __future__ import annotations

import argparse
import json

import jax
import jax.numpy as jnp
import numpy as np
from bench_throughput import physics_rate

from pgdiag import envs
from pgdiag.stats import t_interval

TASKS = ("hopper", "walker2d", "humanoid")


def trajectories(task: str, batch: int = 32, steps: int = 100) -> dict:
    """Observations of both settings along the same action sequence from the same states."""
    out = {}
    for solver in ("converged", "fast"):
        env = envs.make(task, "native", 0, solver)

        @jax.jit
        def run(key):
            s = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), batch))

            def body(s, k):
                a = jax.random.uniform(k, (batch, env.action_size), minval=-1.0, maxval=1.0)
                s = jax.vmap(env.step)(s, a)
                return s, s.obs
            return jax.lax.scan(body, s, jax.random.split(key, steps))[1]

        out[solver] = np.asarray(run(jax.random.PRNGKey(2)))
    diff = np.abs(out["converged"] - out["fast"]).mean(axis=(1, 2))
    spread = out["converged"].std(axis=1).mean(axis=1)
    return {"task": task, **{f"diff_{t}": float(diff[t - 1]) for t in (1, 10, 100)},
            **{f"spread_{t}": float(spread[t - 1]) for t in (1, 10, 100)}}


def policy_returns(iterations: int, episodes_envs: int = 64, steps: int = 2000) -> dict:
    from pgdiag import preset, train
    from pgdiag.config import CPU_SCALE
    from pgdiag.rollout import collect, reset_envs

    cfg = preset("ppo", "hopper", **CPU_SCALE, num_iterations=iterations, physics="native")
    result = train(cfg, seed=0)
    agent = jax.tree.map(lambda x: x[0], result.final_state)
    knobs = cfg.knobs.as_arrays()
    out = {"iterations": iterations, "train_final_return": float(np.nanmean(
        result.metrics.mean_return.to_numpy()[-5:]))}
    per_solver = {}
    for solver in ("converged", "fast"):
        env = envs.make("hopper", "native", 0, solver)

        @jax.jit
        def evaluate(key):
            carry, _ = reset_envs(env, jax.random.fold_in(key, 0), episodes_envs, agent.filters, knobs, frozen=True)
            _, _, tr = collect(env, agent.policy, carry, agent.filters, jax.random.fold_in(key, 1), knobs, steps,
                               frozen=True)
            first = jnp.argmax(tr.done, axis=0)        # each environment's first complete episode
            ended = jnp.any(tr.done, axis=0)
            return jnp.where(ended, tr.finished_return[first, jnp.arange(episodes_envs)], jnp.nan)

        per_solver[solver] = np.asarray(evaluate(jax.random.PRNGKey(7)))
        iv = t_interval(per_solver[solver])   # episodes (one per environment) are the units
        out[solver] = {"mean": iv.estimate, "low": iv.low, "high": iv.high,
                       "episodes": int(np.isfinite(per_solver[solver]).sum())}
    paired = per_solver["fast"] - per_solver["converged"]
    iv = t_interval(paired)
    out["fast_minus_converged"] = {"mean": iv.estimate, "low": iv.low, "high": iv.high}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100, help="PPO iterations of the Hopper policy")
    parser.add_argument("--skip-policy", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rates = [{"task": t, **{s: physics_rate(t, 64, 100, "native", s) for s in ("converged", "fast")}} for t in TASKS]
    print("| task | converged steps/s | fast steps/s | fast / converged |\n|---|---|---|---|")
    for r in rates:
        print(f"| {r['task']} | {r['converged']:,.0f} | {r['fast']:,.0f} | {r['fast'] / r['converged']:.2f} |")
    traj = [trajectories(t) for t in TASKS]
    print("\n| task | mean abs. obs. difference after 1 / 10 / 100 steps | obs. spread across envs (same steps) |")
    print("|---|---|---|")
    for r in traj:
        print(f"| {r['task']} | {r['diff_1']:.2e} / {r['diff_10']:.2e} / {r['diff_100']:.2e} | "
              f"{r['spread_1']:.2e} / {r['spread_10']:.2e} / {r['spread_100']:.2e} |")
    pol = None
    if not args.skip_policy:
        pol = policy_returns(args.iterations)
        print(f"\nHopper PPO, {pol['iterations']} iterations (training's last mean return "
              f"{pol['train_final_return']:.0f}); first complete episode of 64 environments:\n")
        print("| evaluated under | mean return [95% CI] | episodes |\n|---|---|---|")
        for s in ("converged", "fast"):
            print(f"| {s} | {pol[s]['mean']:.1f} [{pol[s]['low']:.1f}, {pol[s]['high']:.1f}] | {pol[s]['episodes']} |")
        d = pol["fast_minus_converged"]
        print(f"| fast − converged (paired) | {d['mean']:.1f} [{d['low']:.1f}, {d['high']:.1f}] | |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rates": rates, "trajectories": traj, "policy": pol}, f, indent=2)


if __name__ == "__main__":
    main()
