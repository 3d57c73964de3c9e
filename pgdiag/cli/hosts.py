"""``pgdiag host``: this host's profile, saved for plans made elsewhere, and a profile shown.

    pgdiag host save gpu.json          # on the GPU box: its devices, memory and recorded step costs
    pgdiag host save gpu.json --scale paper   # the same, with every step cost the paper reports need timed first
    pgdiag host show gpu.json          # what a profile declares (no file: this host)
    pgdiag report --dry-run --scale paper --host gpu.json     # on the laptop: the plan for that box
"""

from __future__ import annotations

from pgdiag.config import ConfigError


def add_hosts(sub) -> None:
    p = sub.add_parser("host", help="save this host's profile (devices, memory, recorded step costs) for plans "
                                    "made on another machine with --dry-run --host, or show one")
    how = p.add_subparsers(dest="action", required=True)
    s = how.add_parser("save", help="write this host's profile to a new file")
    s.add_argument("file", help="the profile to write (a file already there is never overwritten)")
    s.add_argument("--scale", default=None, help="first plan both papers' reports at this scale (paper, mid, ...) "
                                                 "here, timing every step cost they need that is not yet recorded, "
                                                 "so that the profile costs each of their programs")
    s.set_defaults(func=cmd_host_save)
    s = how.add_parser("show", help="what a profile declares (no file: this host, with what it has recorded)")
    s.add_argument("file", nargs="?", default=None)
    s.set_defaults(func=cmd_host_show)


def recorded_host(time_pure_jax: bool = False):
    """This host with what it has recorded: its physics measurements and its programs' costs; with
    ``time_pure_jax``, the pure-JAX tasks' steps timed now beside them (seconds)."""
    from pgdiag.envs import crossover, hosts
    from pgdiag.experiments.costs import time_pure_jax as timed
    from pgdiag.run import timings

    physics = crossover.recorded_here()
    if time_pure_jax:
        physics[hosts.cores()] = physics.get(hosts.cores(), []) + timed(hosts.cores())
    return hosts.this_host(physics, timings.here())


def cmd_host_save(args) -> None:
    from pgdiag.envs import hosts

    if hosts.taken(args.file):   # before anything is timed
        raise ConfigError(f"host save: {hosts.taken(args.file)}")
    if args.scale:
        from pgdiag.experiments.planner import plan_report
        from pgdiag.experiments.target_types import PAPER

        print(f"planning both papers' reports at scale {args.scale} here: the step costs they need are timed "
              f"where none is recorded (seconds to minutes)", flush=True)
        for paper in PAPER.allowed.all():
            plan_report(paper, args.scale, show=False)
    print("timing the pure-JAX tasks' steps at a few widths (seconds each)", flush=True)
    host = recorded_host(time_pure_jax=True)
    try:
        path = hosts.save(host, args.file)
    except FileExistsError as e:
        raise ConfigError(f"host save: {e}") from None
    print(f"wrote {path}: {describe(host)}")
    if not host.physics:
        print("it has no physics measurements yet: `python benchmarks/bench_crossover.py --record` (or a run with "
              "physics=auto on an accelerator) records them, and a plan for this host costs its MuJoCo programs "
              "from them; save the profile again afterwards")


def cmd_host_show(args) -> None:
    from pgdiag.envs import hosts

    print(describe(hosts.load(args.file) if args.file else recorded_host()))


def describe(host) -> str:
    """A profile in a few lines: the host, its memory, the widths measured per task and the programs' costs."""
    from pgdiag.diagnostics.memory import fmt_bytes

    lines = [host.describe(),
             f"memory: {fmt_bytes(host.device_memory) + ' per device, ' if host.device_memory else ''}"
             f"{fmt_bytes(host.host_memory)} RAM; {host.cpu_devices} CPU device(s), {host.processes} process(es)"]
    for threads, rows in sorted(host.physics.items()):
        tasks = sorted({(r["task"], r.get("model", "brax"), r["solver"]) for r in rows})
        for task, model, solver in tasks:
            mine = [r for r in rows if (r["task"], r.get("model", "brax"), r["solver"]) == (task, model, solver)]
            backends = sorted({k[:-3] for r in mine for k in r if k.endswith("_ms")})
            batches = ", ".join(f"{b:,}" for b in sorted({r["batch"] for r in mine}))
            lines.append(f"physics ({threads} threads): {task} ({model}, {solver}) at {batches} on "
                         f"{'/'.join(backends)}")
    if not host.physics:
        lines.append("physics: none recorded")
    kinds = sorted({r.get("study", "train") for r in host.costs})
    lines.append(f"program costs: {len(host.costs)} rows" + (f" ({', '.join(kinds)})" if kinds else ""))
    return "\n".join(lines)


__all__ = ["add_hosts", "cmd_host_save", "cmd_host_show", "describe", "recorded_host"]
