"""Where a split iteration's time goes: the collection on the host's CPU, the batch's transfer, the update on
the learner device (``placement='split'``, :mod:`pgdiag.run.split`), for a preset at the papers' shape.

    python benchmarks/bench_split.py [--preset ppo] [--task walker2d] [--model brax] [--agents 320] [--steps 2048]
                                     [--iterations 2]

Prints milliseconds per iteration of each part (the fastest of ``--iterations`` after one to warm up) and
per batched environment step of the collection; beside them, the networks put on the blocks straight from
the learner's arrays rather than through host memory (:func:`pgdiag.run.split.nets_to_blocks`). The
collection is sharded over the host's CPU devices (``PGDIAG_HOST_DEVICES``; one per core by default on a
host with an accelerator, :mod:`pgdiag.run.host_devices`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="ppo")
    parser.add_argument("--task", default="walker2d")
    parser.add_argument("--model", default="brax", choices=("brax", "gym"))
    parser.add_argument("--agents", type=int, default=320)
    parser.add_argument("--steps", type=int, default=2048)
    parser.add_argument("--iterations", type=int, default=2)
    args = parser.parse_args(argv)
    import jax

    from pgdiag import preset
    from pgdiag.config import stack_knobs
    from pgdiag.run import shard, split
    from pgdiag.run.programs import init_program
    from pgdiag.trainer import seed_key

    cfg = preset(args.preset, args.task, physics="native", placement="split", num_envs=1,
                 steps_per_env=args.steps, model=args.model)
    static = cfg.static.program()
    t = time.perf_counter()
    collect, learn = split.programs(static, args.agents)
    compile_s = time.perf_counter() - t
    _, learner = split.devices()
    blocks = split.collectors(static, args.agents)
    by_agent, whole = split._shardings(static, args.agents)
    keys = np.stack([np.asarray(seed_key(s)) for s in range(args.agents)])
    knobs = stack_knobs([cfg.knobs] * args.agents)
    (keys_p, knobs_p), padded = shard.pad_and_shard((keys, knobs), args.agents)  # as a sweep starts its agents
    states = jax.tree.map(lambda x: np.asarray(x)[:args.agents], init_program(static, padded)(keys_p, knobs_p))
    host_part = jax.device_put({f: getattr(states, f) for f in split._HOST_FIELDS}, by_agent)
    learner_part = jax.device_put({f: getattr(states, f) for f in split._LEARNER_FIELDS}, learner)
    knobs_h, knobs_l = jax.device_put(knobs, by_agent), jax.device_put(knobs, learner)
    due_h, due_l = jax.device_put(np.bool_(False), whole), jax.device_put(np.bool_(False), learner)
    times = {"networks to host": [], "collect": [], "batch to learner": [], "learn": [],
             "(networks to host, put straight from the learner)": []}
    for i in range(args.iterations + 1):
        t0 = time.perf_counter()
        nets = jax.block_until_ready(split.nets_to_blocks({f: learner_part[f] for f in split._NETS}, by_agent))
        t1 = time.perf_counter()
        host_part, payload = jax.block_until_ready(collect(host_part, nets, knobs_h, due_h))
        t2 = time.perf_counter()
        payload = jax.block_until_ready(jax.device_put(payload, learner))
        t3 = time.perf_counter()
        learner_part, metrics = jax.block_until_ready(learn(learner_part, payload, knobs_l, due_l))
        t4 = time.perf_counter()
        jax.block_until_ready(jax.device_put({f: learner_part[f] for f in split._NETS}, by_agent))
        t5 = time.perf_counter()
        if i:
            for name, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                times[name].append(dt)
    batch_mb = sum(x.nbytes for x in jax.tree.leaves(payload)) / 2**20
    print(f"{args.preset} on {args.task} ({args.model}'s model), {args.agents} agents × 1 env × {args.steps} "
          f"steps; collected on {len(blocks)} CPU device(s) of {len(split.devices()[0])}, learner {learner.platform} "
          f"({learner.device_kind}); both halves compiled in {compile_s:.1f} s; the batch is {batch_mb:.1f} MiB\n")
    print("| part | ms per iteration | ms per batched step |")
    print("|---|---|---|")
    for name, dts in times.items():
        ms = 1e3 * min(dts)
        print(f"| {name} | {ms:.1f} | {ms / args.steps:.3f} |")


if __name__ == "__main__":
    main()
