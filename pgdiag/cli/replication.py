"""``pgdiag replication``: the papers' claims at their own settings, part by part, and the page.

    pgdiag replication run trust-regions --runs ~/pgdiag-runs   # train and measure (resumes where it stopped)
    pgdiag replication run value --dry-run                       # its programs on this host, nothing runs
    pgdiag replication run value --dry-run --host gpu.json       # ... on the host a profile declares
    pgdiag replication publish trust-regions --runs ~/pgdiag-runs  # its tables and figures into replication/
    pgdiag replication page                                      # docs/replication.md from replication/*/
"""

from __future__ import annotations

import os

RUNS = os.path.join("..", "pgdiag-runs", "replication")


def add_replication(sub) -> None:
    p = sub.add_parser("replication", help="the papers' claims at their own settings: run a part, publish it, "
                                           "write the page (docs/replication.md)")
    how = p.add_subparsers(dest="action", required=True)
    r = how.add_parser("run", help="train and measure a part at the replication scale (resumes where it stopped), "
                                   "then publish it")
    r.add_argument("part", help="the part: " + ", ".join(_names()))
    r.add_argument("--runs", default=RUNS, help=f"the run directory, outside the repository (default {RUNS})")
    r.add_argument("--dry-run", action="store_true", help="print the part's programs and planned time here")
    r.add_argument("--host", default=None, metavar="PROFILE",
                   help="with --dry-run: plan on the host this profile declares (`pgdiag host save`) instead")
    r.set_defaults(func=cmd_run)
    s = how.add_parser("publish", help="copy a part's tables and figures from --runs into replication/<part>/")
    s.add_argument("part")
    s.add_argument("--runs", default=RUNS)
    s.set_defaults(func=cmd_publish)
    q = how.add_parser("plan", help="plan every part here and on a host profile (--host), into "
                                     "replication/plans.json, which the page states")
    q.add_argument("--host", action="append", default=[], metavar="NAME=PROFILE",
                   help="another host by its profile, e.g. gpu=benchmarks/results/…-host.json (repeatable)")
    q.set_defaults(func=cmd_plan)
    g = how.add_parser("page", help="write docs/replication.md from the published parts")
    g.add_argument("--check", action="store_true", help="only say whether the committed page is current")
    g.set_defaults(func=cmd_page)


def _names() -> list:
    from pgdiag.experiments.replication import PARTS

    return [p.name for p in PARTS]


def cmd_run(args) -> None:
    from pgdiag.experiments import replication as rep

    p = rep.part(args.part)
    if args.host and not args.dry_run:
        from pgdiag.config import ConfigError
        raise ConfigError("--host plans on another host: it goes with --dry-run (a part runs on this one)")
    if args.dry_run:   # each program once, with the targets that read it (shared runs train once)
        if not args.host:   # planned on the CPU devices the part runs on (the update's cost, the recorded costs)
            rep.use_devices(p)
        from pgdiag.envs.hosts import declare
        from pgdiag.experiments import targets
        from pgdiag.experiments.planner import show_plan

        owners: dict = {}
        for name in p.targets:
            for program in targets.get(name).dry_run(p.scale, host=args.host):
                owners.setdefault(program, []).append(name)
        with declare(args.host):
            show_plan(list(owners), None, owners=[", ".join(v) for v in owners.values()])
        words = {"finding": "findings it decides", "extension": "extensions it measures",
                 "floor": "claims whose noise floor it measures"}
        for role, keys in rep.decides(p).items():
            print(f"{words[role]}: {', '.join(keys)}")
        return
    rep.use_devices(p)
    print("\n".join(rep.commands(p, args.runs)), flush=True)
    wall = rep.run(p, args.runs)
    print(f"published {rep.publish(p, args.runs, wall_s=wall)}")


def cmd_publish(args) -> None:
    from pgdiag.experiments import replication as rep

    print(f"published {rep.publish(rep.part(args.part), args.runs)}")


def cmd_plan(args) -> None:
    from pgdiag.config import ConfigError
    from pgdiag.experiments import replication_plans

    hosts = {"this host": None}
    for item in args.host:
        name, _, path = item.partition("=")
        if not name or not path:
            raise ConfigError(f"--host {item!r}: expected NAME=PROFILE, e.g. gpu=host.json")
        hosts[name] = path
    print(f"wrote {replication_plans.write_plans(hosts)}")


def cmd_page(args) -> None:
    from pgdiag.config import ConfigError
    from pgdiag.experiments import replication as rep
    from pgdiag.experiments import replication_page

    if args.check:
        with open(rep.PAGE, encoding="utf-8") as f:
            if f.read() != replication_page.page():
                raise ConfigError(f"{rep.PAGE} is not what replication/ gives: run `pgdiag replication page`")
        print(f"{rep.PAGE} is current")
        return
    print(f"wrote {replication_page.write()}")
