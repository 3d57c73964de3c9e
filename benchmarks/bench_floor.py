"""pg_diag's native step against MuJoCo's own cost: the physics floor.

For each task, model and batch, one batched environment step (the task's ``n_frames`` physics steps per
environment), in milliseconds:

* ``mj_step``: MuJoCo alone on one core — one environment's ``mj_step`` × ``n_frames`` (from a state inside
  a random-action trajectory) times the batch: the floor of one thread;
* ``rollout``: MuJoCo's C ``rollout`` over ``--threads`` threads for the whole batch, one call per step
  (no JAX): the floor over the host's cores;
* ``pg_diag``: the task's native step inside a compiled program, ``jit(scan(vmap(env.step)))`` with random
  actions (observation, reward and termination included) on ``--threads`` threads, timed as
  ``physics=auto``'s crossover times it (:func:`pg_diag.envs.crossover.step_ms`, best of 5);

and the ratios ``mj_step / pg_diag`` (one thread: ≥ 0.5 at batch 1 and ≥ 0.9 from 64 is the goal) and
``rollout / pg_diag``. ``--direct-max 0`` measures pg_diag with every batch through ``rollout`` (the path
before small batches were stepped directly), for a before/after table.

    python benchmarks/bench_floor.py [--tasks hopper walker2d humanoid] [--models brax gym]
                                     [--batches 1 16 64 256 1024] [--threads 1] [--direct-max 8]
"""

from __future__ import annotations

import argparse
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


def states_along_a_trajectory(model, n_frames: int, count: int, seed: int = 0):
    """``count`` physics states of one environment met along a random-action trajectory (contacts included)."""
    import mujoco

    rng, d = np.random.default_rng(seed), mujoco.MjData(model)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    out = np.zeros((count, mujoco.mj_stateSize(model, spec)))
    for i in range(count):
        d.ctrl[:] = rng.uniform(-1, 1, model.nu)
        mujoco.mj_step(model, d, nstep=n_frames)
        if not np.all(np.isfinite(d.qpos)) or i % 50 == 49:
            mujoco.mj_resetData(model, d)
        mujoco.mj_getState(model, d, out[i], spec)
    return out


def floor_ms(task: str, model_name: str, batch: int, threads: int, seconds: float) -> tuple[float, float]:
    import mujoco
    from mujoco import rollout

    from pg_diag.envs.mujoco_tasks import load_model, mujoco_task

    t = mujoco_task(task, model_name)
    model = load_model(t)
    states = states_along_a_trajectory(model, t.n_frames, max(batch, 64))
    d, spec = mujoco.MjData(model), mujoco.mjtState.mjSTATE_FULLPHYSICS
    ctrl = np.random.default_rng(1).uniform(-1, 1, model.nu)

    def one_env():
        for s in states[:64]:
            mujoco.mj_setState(model, d, s, spec)
            d.ctrl[:] = ctrl
            mujoco.mj_step(model, d, nstep=t.n_frames)

    single = _best(one_env, seconds) / 64
    roll, datas = rollout.Rollout(nthread=threads), [mujoco.MjData(model) for _ in range(threads)]
    control = np.tile(ctrl, (batch, t.n_frames, 1))
    initial = states[:batch]
    many = _best(lambda: roll.rollout(model, datas, initial, control), seconds)
    return single * batch * 1e3, many * 1e3


def pg_diag_ms(task: str, model_name: str, batch: int, threads: int, repeats: int = 5) -> float:
    """pg_diag's native step inside a compiled scan: the same measurement ``physics=auto`` records."""
    from pg_diag.envs import crossover

    return crossover.step_ms(task, "native", threads, "converged", batch, steps=64, repeats=repeats, model=model_name)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["hopper", "walker2d", "humanoid"])
    parser.add_argument("--models", nargs="+", default=["brax", "gym"])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16, 64, 256, 1024])
    parser.add_argument("--threads", type=int, default=1, help="threads for rollout and pg_diag's native step")
    parser.add_argument("--seconds", type=float, default=2.0, help="timing per measurement (the fastest run counts)")
    parser.add_argument("--direct-max", type=int, default=None,
                        help="pg_diag steps batches up to this size with mj_step (default: its own setting)")
    args = parser.parse_args(argv)
    from pg_diag.envs import mujoco_physics

    if args.direct_max is not None:
        mujoco_physics.DIRECT_MAX = args.direct_max
    print(f"{args.threads} thread(s); batches up to {mujoco_physics.DIRECT_MAX} stepped directly with mj_step\n")
    print("| task | model | batch | mj_step ms | rollout ms | pg_diag ms | mj_step / pg_diag | rollout / pg_diag |")
    print("|---|---|---|---|---|---|---|---|")
    for task in args.tasks:
        for model in args.models:
            for batch in args.batches:
                single, many = floor_ms(task, model, batch, args.threads, args.seconds)
                ours = pg_diag_ms(task, model, batch, args.threads)
                print(f"| {task} | {model} | {batch:,} | {single:.3f} | {many:.3f} | {ours:.3f} | "
                      f"{single / ours:.2f} | {many / ours:.2f} |", flush=True)


if __name__ == "__main__":
    main()
