"""A host profile widened by ``bench_floor.py``'s measurements on the same kind of host: the native step of the
tasks and models the profile lacks, so that a plan for that host (``--host``) costs their programs.

``pgdiag host save`` records the physics a host has run; a profile saved before the papers' Gym models were
planned there holds Brax's Hopper only, and every replication part on Gym's models reads "not costed". The
``pgdiag ms`` column of ``bench_floor.py`` is the same quantity (pgdiag's native step of a batch, in a program
compiled for the host's CPU, on ``--threads`` threads), so its rows join the profile as ``native_ms`` rows under
their thread count, for every (task, model) the profile has no row of: the profile's own rows are never
replaced. ``--tables`` names which of the file's floor tables to read, by their order in it (1 = the first), and
the threads each ran on; a later table's row replaces an earlier one's at the same task, model, batch and threads
(e.g. the handler's chunked scheduling after fixed shares).

    python benchmarks/profile_with_floor.py PROFILE FLOOR.md --tables 1=1 2=16 3=16 4=16 --out NEW.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HEADER = ["task", "model", "batch", "mj_step ms", "rollout ms", "pgdiag ms"]


def floor_tables(text: str) -> list[list[dict]]:
    """Every markdown table of ``text`` whose header starts with ``bench_floor.py``'s columns, as rows."""
    tables, current = [], None
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            current = None
        elif cells[:len(HEADER)] == HEADER:
            current = []
            tables.append(current)
        elif current is not None and not set(cells[0]) <= {"-", ":"}:
            current.append({"task": cells[0], "model": cells[1], "batch": int(cells[2].replace(",", "")),
                            "native_ms": float(cells[5])})
    return tables


def widened(profile: dict, tables: list[list[dict]], chosen: dict[int, int]) -> tuple[dict, int]:
    """``profile`` with the rows of the ``chosen`` tables (ordinal -> threads) for the (task, model) pairs it has no
    row of; and how many rows were added."""
    have = {(r["task"], r.get("model", "brax")) for rows in profile["physics"].values() for r in rows}
    added: dict = {}
    for ordinal in sorted(chosen):
        if not 1 <= ordinal <= len(tables):
            raise SystemExit(f"--tables: {ordinal} is not a floor table of the file (it has {len(tables)})")
        for r in tables[ordinal - 1]:
            if (r["task"], r["model"]) not in have:
                added[(str(chosen[ordinal]), r["task"], r["model"], r["batch"])] = r
    physics = {k: list(v) for k, v in profile["physics"].items()}
    for (threads, task, model, batch), r in sorted(added.items()):
        physics.setdefault(threads, []).append({"task": task, "solver": "converged", "batch": batch, "steps": 64,
                                                "native_ms": r["native_ms"],
                                                **({"model": model} if model != "brax" else {})})
    return {**profile, "physics": physics}, len(added)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile")
    parser.add_argument("floor", help="a results file holding bench_floor.py's tables from the same kind of host")
    parser.add_argument("--tables", nargs="+", required=True, help="ORDINAL=THREADS for each table to read")
    parser.add_argument("--out", required=True, help="the new profile (a file already there is never replaced)")
    args = parser.parse_args(argv)
    from pgdiag.envs import hosts

    try:
        chosen = {int(a): int(b) for a, b in (t.split("=") for t in args.tables)}
    except ValueError:
        raise SystemExit(f"--tables: expected ORDINAL=THREADS pairs such as 2=16, got {' '.join(args.tables)}")
    if os.path.exists(args.out):
        raise SystemExit(hosts.taken(args.out))
    base = hosts.load(args.profile)   # checked as a plan reads it
    with open(args.profile) as f:
        profile = json.load(f)
    with open(args.floor) as f:
        new, count = widened(profile, floor_tables(f.read()), chosen)
    hosts.from_json(new, args.out)
    with open(args.out, "w") as f:
        json.dump(new, f, indent=1)
    print(f"{args.out}: {base.describe()}, {count} native-step rows added from {args.floor}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
