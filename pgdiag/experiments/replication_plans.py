"""The replication's plans: each part's planned time on this host and on a declared one, written once into
``replication/plans.json`` for the page ([`pgdiag.experiments.replication_page`][pgdiag.experiments.replication_page])
to state (planning times step costs, so the page does not plan)."""

from __future__ import annotations

import datetime
import json
import os

import numpy as np

from pgdiag.experiments import replication as rep

PLANS = "plans.json"
#: the profile a plan made on the machine that wrote plans.json records (its own recorded costs, no file)
HERE = "this host"


def plans(host=None, only=None) -> dict:
    """{part: its planned seconds} on this host, or on the host the profile ``host`` declares (None where the
    profile records no cost for some program): each program once, however many of the part's targets read it, and
    not again in a later part on the same kind of host (the landscapes measure the trust-regions part's runs).
    ``only``: those parts' names alone.

    On this host, a CPU-only one, each part is planned on the CPU devices it runs on
    ([`Part.cpu_devices`][pgdiag.experiments.replication.Part]): a part on another count than this process's is
    planned in a process of its own, since the count decides the update's cost and which recorded costs apply."""
    import jax

    from pgdiag.run import host_devices

    out, earlier, apart = {}, {"cpu": set(), "gpu": set()}, {}
    for p in rep.PARTS:
        if only is not None and p.name not in only:
            continue
        if host is None and host_devices.cpu_only() and p.cpu_devices != jax.device_count():
            apart.setdefault(p.cpu_devices, []).append(p.name)   # no training is shared across counts
            continue
        out[p.name] = _planned(p, host, earlier)
    for count, names in apart.items():
        out.update(_planned_apart(count, names))
    return {p.name: out[p.name] for p in rep.PARTS if p.name in out}


def _planned(p, host, earlier: dict) -> float | None:
    """``p``'s planned seconds, less the programs ``earlier`` holds ({device kind: programs}, added to)."""
    from pgdiag.envs.hosts import declare
    from pgdiag.experiments import targets
    from pgdiag.experiments.planner import show_plan

    owners: dict = {}
    for name in p.targets:
        for program in targets.get(name).dry_run(p.scale, host=host):
            # a training an earlier part on the same kind of host runs is trained once, there
            if program not in earlier[p.device]:
                owners.setdefault(program, []).append(name)
    earlier[p.device] |= set(owners)
    seconds = np.zeros(0)
    if owners:
        with declare(host):
            seconds = show_plan(list(owners), None, show=False)["estimated_s"].to_numpy(float)
    # a part that only reads an earlier part's runs plans nothing (its figures are drawn in seconds)
    return float(seconds.sum()) if (seconds > 0).all() else None


def _planned_apart(count: int, names: list) -> dict:
    """[`plans`][pgdiag.experiments.replication_plans.plans] of the parts ``names`` in a new process on ``count``
    CPU devices."""
    import subprocess
    import sys

    from pgdiag.run import host_devices

    code = ("import json; from pgdiag.experiments import replication_plans as r; "
            f"print(json.dumps(r.plans(only={names!r})))")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, host_devices.ENV: str(count)},
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"planning {', '.join(names)} on {count} CPU device(s) failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_plans(hosts: dict, root: str = rep.ROOT) -> str:
    """``root/plans.json``: per host name ({name: profile path or None for this host}) its description and each
    part's planned seconds — what the page states, planned once and committed (planning times step costs)."""
    from pgdiag.envs import hosts as host_profiles
    from pgdiag.run import provenance

    record = {}
    for name, profile in hosts.items():
        host = host_profiles.load(profile) if profile else None
        record[name] = {"profile": profile or HERE, "date": datetime.date.today().isoformat(),
                        "device": host.device_kind if host else f"{provenance.cpu_model()}, {os.cpu_count()} cores",
                        "seconds": plans(profile)}
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, PLANS)
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    return path


__all__ = ["PLANS", "plans", "write_plans"]
