"""What a sweep's start costs: compiling its two programs, the agents' initialization and a chunk of iterations.

For each task and agent count, a fresh process per row (so nothing is cached) compiles the programs a
``pgdiag.sweep`` of the PPO preset would (one environment × ``--steps`` steps per agent, the papers' shape)
and prints seconds from tracing to a compiled executable, with the time XLA's backend took of it. The
chunk program is the training itself; the initialization runs once per run.

    python benchmarks/bench_compile.py [--tasks point_mass hopper humanoid] [--agents 1 16] [--steps 2048]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import json, sys, time
from jax import monitoring
backend = []
monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **kw: backend.append(seconds) if event.endswith("backend_compile_duration") else None)
from pgdiag import preset
from pgdiag.run import programs
task, agents, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
static = preset("ppo", task, num_envs=1, steps_per_env=steps).static
row = {}
for name, build in (("init", lambda: programs.init_program(static, agents)),
                    ("chunk", lambda: programs.chunk_program(static, agents, 1))):
    backend.clear()
    start = time.perf_counter()
    build()
    row[name] = (time.perf_counter() - start, sum(backend))
print(json.dumps(row))
"""


def measure(task: str, agents: int, steps: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, task, str(agents), str(steps)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["point_mass", "hopper", "humanoid"])
    parser.add_argument("--agents", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--steps", type=int, default=2048)
    args = parser.parse_args()
    print("| task | agents | initialization: s (XLA backend) | chunk of iterations: s (XLA backend) |")
    print("|---|---|---|---|")
    for task in args.tasks:
        for agents in args.agents:
            r = measure(task, agents, args.steps)
            print(f"| {task} | {agents} | {r['init'][0]:.1f} ({r['init'][1]:.1f}) | "
                  f"{r['chunk'][0]:.1f} ({r['chunk'][1]:.1f}) |", flush=True)


if __name__ == "__main__":
    main()
