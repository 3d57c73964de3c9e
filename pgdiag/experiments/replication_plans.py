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


def plans(host=None) -> dict:
    """{part: its planned seconds} on this host, or on the host the profile ``host`` declares (None where the
    profile records no cost for some program): each program once, however many of the part's targets read it, and
    not again in a later part on the same kind of host (the landscapes measure the trust-regions part's runs).

    On this host, a CPU-only one, each part is planned on the CPU devices it runs on
    ([`Part.cpu_devices`][pgdiag.experiments.replication.Part]): the parts on another count than this process's
    in a process of its own ([`planned_at`][pgdiag.experiments.replication_plans.planned_at]), since the count
    decides the update's cost and which recorded costs apply. No program is read by parts of two counts
    (tests/test_replication.py), so each count's parts leave out only their own earlier parts' programs."""
    from pgdiag.envs import hosts
    from pgdiag.run import host_devices

    if host is not None or not host_devices.cpu_only():
        return _plans(rep.PARTS, host)
    out = {}
    for count in sorted({p.cpu_devices for p in rep.PARTS}):
        out.update(_plans(_of(count), None) if count == hosts.cpu_device_count() else _planned_apart(count))
    return {p.name: out[p.name] for p in rep.PARTS}


def _of(count: int) -> list:
    return [p for p in rep.PARTS if p.cpu_devices == count]


def _plans(parts, host) -> dict:
    earlier: dict = {"cpu": set(), "gpu": set()}
    return {p.name: _planned(p, host, earlier) for p in parts}


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


#: the line a planning process writes its result on (whatever else it prints)
_RESULT = "pgdiag replication plans: "


def planned_at(count: int) -> dict:
    """The plans of the parts on ``count`` CPU devices, in a process that has not started JAX: given that count
    first (whatever ``XLA_FLAGS`` or ``PGDIAG_HOST_DEVICES`` say), refused where JAX has started on another."""
    from pgdiag.envs import hosts
    from pgdiag.errors import ConfigError
    from pgdiag.run import host_devices

    host_devices.configure(count)
    if hosts.cpu_device_count() != count:
        raise ConfigError(f"planning the parts on {count} CPU device(s) in a process that has "
                          f"{hosts.cpu_device_count()}: run it in a new process")
    return _plans(_of(count), None)


def _planned_apart(count: int) -> dict:
    """[`planned_at`][pgdiag.experiments.replication_plans.planned_at] ``count`` in a new process (what it says on
    stderr shown as it goes)."""
    import subprocess
    import sys

    code = ("import json, sys; from pgdiag.experiments import replication_plans as r; "
            "print(r._RESULT + json.dumps(r.planned_at(int(sys.argv[1]))))")
    done = subprocess.run([sys.executable, "-c", code, str(count)], stdout=subprocess.PIPE, text=True,
                          timeout=3600)
    lines = [x for x in done.stdout.splitlines() if x.startswith(_RESULT)]
    if done.returncode or not lines:
        raise RuntimeError(f"planning the parts on {count} CPU device(s) in a process of their own failed "
                           f"(exit {done.returncode}); its output ends:\n{done.stdout[-2000:]}")
    return json.loads(lines[-1][len(_RESULT):])


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


__all__ = ["PLANS", "planned_at", "plans", "write_plans"]
