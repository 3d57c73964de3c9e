"""pgdiag's native step against MuJoCo's own cost on the same states: the physics floor.

For each task, model and batch, one batched environment step (the task's ``n_frames`` physics steps per
environment), in milliseconds, all three on the same (state, control) pairs — those of pgdiag's own
trajectory of ``--steps`` batched steps from reset states with random actions:

* ``mj_step``: MuJoCo alone on one core — every (state, control) of the trajectory advanced by one call of
  MuJoCo's C ``rollout`` on one thread (no pool, its cost per call spread over the whole trajectory), per
  batched step: the floor of one thread;
* ``rollout``: MuJoCo's C ``rollout`` over ``--threads`` threads, one call per batched step (no JAX): the
  floor over the host's cores of a program whose steps come one after another;
* ``pgdiag``: the task's native step inside a compiled program, ``jit(scan(vmap(env.step)))`` (observation,
  reward and termination included) on ``--threads`` threads: the FFI handler where it is built, or the host
  callback with ``--callback`` (the path before the handler, and where it cannot be built);

and the ratios ``mj_step / pgdiag`` (one thread: ≥ 0.5 at batch 1 and ≥ 0.9 from 64 is the goal) and
``rollout / pgdiag`` (≥ 0.8 over all cores from 240). Each is the fastest of repeated timings.

    python benchmarks/bench_floor.py [--tasks hopper walker2d humanoid] [--models brax gym]
                                     [--batches 1 16 64 256 1024] [--threads 1] [--callback]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _best(fn, seconds: float) -> float:
    """The fastest of repeated timings of ``fn`` (seconds per call), repeated for about ``seconds``."""
    fn()
    best, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end or best == float("inf"):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def pgdiag_trajectory(task: str, model_name: str, batch: int, threads: int, steps: int, seconds: float):
    """pgdiag's compiled scan of ``steps`` batched steps: (ms per batched step, qpos, qvel, warm start and
    control before each step, shaped [steps, batch, ...])."""
    import jax
    import jax.numpy as jnp

    from pgdiag import envs

    env = envs.make(task, "native", threads, model=model_name)
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), batch))

    def body(s, k):
        a = jax.random.uniform(k, (batch, env.action_size), minval=-1.0, maxval=1.0)
        warm = s.physics.get("qacc_warmstart", jnp.zeros_like(s.physics["qvel"]))
        return jax.vmap(env.step)(s, a), (s.physics["qpos"], s.physics["qvel"], warm, a)

    run = jax.jit(lambda s, key: jax.lax.scan(body, s, jax.random.split(key, steps)))
    key = jax.random.PRNGKey(1)
    _, seen = jax.block_until_ready(run(states, key))
    ms = _best(lambda: jax.block_until_ready(run(states, key)), seconds) * 1e3 / steps
    return ms, [np.asarray(x, np.float64) for x in seen]


def floor_ms(task: str, model_name: str, seen, threads: int, seconds: float) -> tuple[float, float]:
    """(one thread, ``threads`` threads) MuJoCo ms per batched step over the trajectory's states."""
    import mujoco
    from mujoco import rollout

    from pgdiag.envs.mujoco_models import mujoco_task
    from pgdiag.envs.mujoco_tasks import load_model

    t = mujoco_task(task, model_name)
    model = load_model(t)
    qpos, qvel, warm, action = seen
    steps, batch = qpos.shape[:2]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.zeros((steps, batch, mujoco.mj_stateSize(model, spec)))
    state[..., 1:1 + model.nq], state[..., 1 + model.nq:1 + model.nq + model.nv] = qpos, qvel
    lo, hi = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    control = np.repeat(np.clip(action, lo, hi)[:, :, None, :], t.n_frames, axis=2)
    flat = lambda x: x.reshape((steps * batch,) + x.shape[2:])  # noqa: E731

    one, data = rollout.Rollout(nthread=0), [mujoco.MjData(model)]
    single = _best(lambda: one.rollout(model, data, flat(state), flat(control), initial_warmstart=flat(warm)),
                   seconds) / steps
    pool, datas = rollout.Rollout(nthread=threads), [mujoco.MjData(model) for _ in range(threads)]

    def per_step():
        for i in range(steps):
            pool.rollout(model, datas, state[i], control[i], initial_warmstart=warm[i])

    many = _best(per_step, seconds) / steps
    return single * 1e3, many * 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["hopper", "walker2d", "humanoid"])
    parser.add_argument("--models", nargs="+", default=["brax", "gym"])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16, 64, 256, 1024])
    parser.add_argument("--threads", type=int, default=1, help="threads for rollout and pgdiag's native step")
    parser.add_argument("--steps", type=int, default=64, help="batched steps in the trajectory")
    parser.add_argument("--seconds", type=float, default=1.0, help="timing per measurement (the fastest run counts)")
    parser.add_argument("--callback", action="store_true", help="pgdiag through the host callback, not the handler")
    args = parser.parse_args(argv)
    if args.callback:
        os.environ["PGDIAG_NATIVE_FFI"] = "0"
    from pgdiag.envs import native_ffi

    path = f"host callback ({native_ffi.unavailable()})" if native_ffi.unavailable() else "FFI handler"
    print(f"{args.threads} thread(s); pgdiag's native step through the {path}\n")
    print("| task | model | batch | mj_step ms | rollout ms | pgdiag ms | mj_step / pgdiag | rollout / pgdiag |")
    print("|---|---|---|---|---|---|---|---|")
    for task in args.tasks:
        for model in args.models:
            for batch in args.batches:
                ours, seen = pgdiag_trajectory(task, model, batch, args.threads, args.steps, args.seconds)
                single, many = floor_ms(task, model, seen, args.threads, args.seconds)
                print(f"| {task} | {model} | {batch:,} | {single:.3f} | {many:.3f} | {ours:.3f} | "
                      f"{single / ours:.2f} | {many / ours:.2f} |", flush=True)


if __name__ == "__main__":
    main()
