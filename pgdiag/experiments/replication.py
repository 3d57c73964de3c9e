"""The replication: both papers' claims measured at the papers' own settings, run part by part, and one page.

A *part* ([`Part`][pgdiag.experiments.replication.Part]) is what one command trains and measures at
``SCALE=replication`` (the papers' experiment: Gym's models, CL's 488 iterations and checkpoints, the agents each
section needs; [`replication_training`][pgdiag.experiments.scales.replication_training]), into a run directory
outside the repository, resumable over days. [`publish`][pgdiag.experiments.replication.publish] copies what it
measured — the claims reports' evidence, claims and findings tables and its figures, not checkpoints — into
``replication/<part>/`` with a record of the host, date, commit, wall time and the settings it ran; the page
``docs/replication.md`` is a function of those folders alone
([`page`][pgdiag.experiments.replication_page.page]), so a
test can check it is current. A claim no part measures at the paper's settings says which command measures it.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import shutil
import subprocess

from pgdiag.config import ConfigError
from pgdiag.experiments import replication_sessions as sessions

ROOT = "replication"
PAGE = os.path.join("docs", "replication.md")
RECORD = "part.json"
EVIDENCE = "evidence.csv.gz"   # a published paper's evidence rows, gzipped
SCALE = "replication"


@dataclasses.dataclass(frozen=True)
class Part:
    name: str
    targets: tuple      # the targets it runs at SCALE=replication (their shared runs trained once)
    what: str           # the papers' figures it covers, in words
    device: str = "cpu"  # where it fits: "cpu" (this 2-core machine, hours) or "gpu" (a 16-core GPU host)
    scale: str = SCALE   # the targets' scale (the papers' settings; a model pair's, beside them)
    #: the CPU devices its runs shard their agents over (pgdiag.run.host_devices): on 2 cores, 2 run a long
    #: training's updates side by side, 1.53× faster (benchmarks/results/native-pool-cpu-2026-12-07.md); its
    #: runs' programs, so every session of the part asks for the same count
    cpu_devices: int = 1
    #: where it falls short of the paper's settings (sample sizes a CPU cannot reach), said wherever the page names
    #: it as what measures a finding
    short_of: str = ""


PARTS = (
    Part("trust-regions", ("fig-trust-region",),
         "CL Figs 9, 29 and IM Figs 2, 4 on Gym's Humanoid: PPO, PPO-M and TRPO, 488 iterations, 8 agents each"),
    Part("brax-pair", ("fig-trust-region",),
         "the trust-regions part's model pair: the same presets and agents on Brax's Humanoid at 100 iterations, "
         "against Gym's first 100", scale="brax-pair"),
    Part("landscapes", ("fig-landscape-concentration", "fig-landscape-surrogate"),
         "CL Figs 6, 26, 27 on the trust-regions part's Humanoid runs at iteration 300 (2K/20K/100K pairs a "
         "point); the surrogate at 0 and 300 with mid-scale sample sizes",
         short_of="its surrogate steps from the mid scale's sample sizes, not the paper's 1e6 pairs a point"),
    Part("value", ("fig-value", "fig-no-baseline"),
         "CL Figs 4, 14, 15 and §5.2's agents without a baseline on Gym's Walker2d and Hopper, 488 iterations"),
    Part("trust-regions-others", ("fig-trust-region",), "IM Fig 3 on the value part's Walker2d and Hopper runs "
         "(their training metrics): IM's ratio and KL-region findings on their other tasks",
         scale="replication-others"),
    Part("value-humanoid", ("fig-value",), "CL Figs 14, 15 on the trust-regions part's Humanoid runs (their "
         "value errors, every 10 iterations): the value claims' third task", scale="replication-humanoid"),
    Part("baselines-humanoid", ("fig-baselines",), "the value findings' noise floor on the trust-regions part's "
         "Humanoid runs (the baselines part's measurement there; its baseline rows exploratory: CL Figs 5, 16 show "
         "Walker2d)", scale="replication-humanoid"),
    Part("baselines", ("fig-baselines",),
         "CL Figs 5, 16 on the value part's runs (Gym's Walker2d, and Hopper for the value findings' noise floor "
         "there; 488 iterations, checkpoints 150/300/450) at the paper's sample sizes (N up to 1e4; V* fit on 5e5 "
         "pairs): the baselines' variance and the value network's noise floor"),
    Part("gradients-cpu", ("fig-grad-variance", "fig-grad-true", "fig-step-variance"),
         "CL Figs 2, 3, 11–13 on the trust-regions and value parts' runs (Gym's three tasks, 488 iterations, "
         "checkpoints 0/150/300/450) with the mid scale's sample sizes (N up to 8,192, truth from 81,920)",
         scale="replication-cpu", short_of="N up to 8,192 and a truth from 81,920 pairs, not the paper's 1e6 and "
                                           "1e7"),
    Part("ablation-walker2d", ("fig-ablation",), "IM Fig 1 on Gym's Walker2d alone (the half of the "
         "`ablation` part a 2-core CPU can train), the paper's learning-rate grid and one rate above it, 6 seeds, "
         "488 iterations, its agents over 2 CPU devices", scale="replication-walker2d", cpu_devices=2),
    Part("ablation", ("fig-ablation",), "IM Fig 1 (CL Fig 1: Humanoid) on Gym's Walker2d and Humanoid, the "
         "paper's learning-rate grid and one rate above it, 6 seeds", device="gpu"),
    Part("gradients", ("fig-grad-variance", "fig-grad-true", "fig-step-variance"),
         "CL Figs 2, 3, 11–13 on Gym's three tasks at the paper's sample sizes (1e2 … 1e6 pairs, truth from 1e7)",
         device="gpu"),
    Part("tables", ("table-2", "table-3"), "IM Tables 2, 3 on Gym's three tasks, 80 agents per algorithm",
         device="gpu"),
)


def part(name: str) -> Part:
    """The part ``name``, or a ConfigError naming the parts."""
    for p in PARTS:
        if p.name == name:
            return p
    raise ConfigError(f"unknown replication part {name!r}; parts are: {', '.join(p.name for p in PARTS)}")


def decides(p: Part) -> dict:
    """{"finding"/"extension"/"floor": claim keys} ``p`` measures: the claims whose evidence (or noise floor) its
    targets provide, on a task they run where the claim's figure names tasks (a row on another task is
    exploratory and decides nothing)."""
    from pgdiag.experiments import claims, targets

    out: dict = {"finding": [], "extension": [], "floor": []}
    for claim in claims.CLAIMS:
        for name in p.targets:
            t = targets.get(name)
            if not t.provides or (claim.tasks and not set(t.scales[p.scale].tasks_of(name)) & set(claim.tasks)):
                continue
            for role, series in ((claim.role, claim.evidence), ("floor", claim.floor)):
                if series and series.startswith(t.provides) and claim.key not in out[role]:
                    out[role].append(claim.key)
    return {role: keys for role, keys in out.items() if keys}


def settings(p: Part) -> dict:
    """What a part runs, as its targets declare it at the replication scale: per target, each task's training
    settings, the agents and the presets. A published part whose record differs was run with other settings."""
    from pgdiag.experiments import targets

    out = {}
    for name in p.targets:
        sc = targets.get(name).scales[p.scale]
        out[name] = {"seeds": sc.seeds, "presets": list(sc.presets), "measured": dict(sc.settings),
                     "measured_at": dict(sc.measured_at),
                     "tasks": {t: sc.training(t) for t in sc.tasks_of(name)}}
    return json.loads(json.dumps(out, default=list))   # as a record reads back (tuples as lists)


def commands(p: Part, runs: str) -> list:
    """The commands that run ``p`` into ``runs`` (each target into ``runs/<study>-replication``, as make writes)."""
    from pgdiag.experiments import targets

    from pgdiag.run import host_devices

    # on a CPU-only host, the part's count whatever the host's default; a GPU host keeps its device per core
    devices = f"PGDIAG_HOST_DEVICES={p.cpu_devices} " if host_devices.cpu_only() else ""
    return [f"{devices}pgdiag {name} --scale {p.scale} --out {runs}/{targets.get(name).study}-{p.scale} --progress"
            for name in p.targets]


def use_devices(p: Part) -> None:
    """Give JAX the CPU devices ``p``'s runs were begun on, before anything runs; refused, in words, where JAX
    already has another count (``PGDIAG_HOST_DEVICES`` set otherwise): the part's runs would continue as other
    programs."""
    import jax

    from pgdiag.run import host_devices

    if not host_devices.cpu_only():   # a GPU host: its CPU devices collect, one per core, whatever the part's
        return
    host_devices.configure(p.cpu_devices)   # the part's count, not the host's default (a CPU-only host's is 2)
    if jax.default_backend() == "cpu" and jax.device_count() != p.cpu_devices:
        raise ConfigError(f"replication {p.name}: its runs shard their agents over {p.cpu_devices} CPU device(s), "
                          f"this process has {jax.device_count()} (JAX started before the part could ask for its "
                          f"count); run it again in a new process")


def run(p: Part, runs: str) -> float:
    """Run ``p``'s targets into ``runs`` (resuming what an earlier call left), each call recorded as a session in
    ``runs/<part>.sessions.json`` ([`replication_sessions`][pgdiag.experiments.replication_sessions]); returns the
    wall time of all sessions."""
    from pgdiag.experiments import targets
    from pgdiag.run import provenance

    record = {"host": platform.node(), "commit": _commit(), "cpu_devices": p.cpu_devices, "cpu": provenance.cpu_model()}
    with sessions.recorded(sessions.log(runs, p.name), record):
        for name in p.targets:
            t = targets.get(name)
            t.train(p.scale, out=os.path.join(runs, f"{t.study}-{p.scale}"), progress=True)
    return wall(runs, p)


def wall(runs: str, p: Part) -> float | None:
    """The wall time of ``p``'s sessions in ``runs``, each to its end or its last record."""
    return sessions.wall(sessions.log(runs, p.name))


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def publish(p: Part, runs: str, root: str = ROOT, wall_s: float | None = None) -> str:
    """Read ``p``'s studies in ``runs`` with both papers' reports and copy their tables and figures into
    ``root/<part>/`` beside a record of the host, date, commit, wall time and settings; returns that folder."""
    from pgdiag.experiments import targets
    from pgdiag.experiments.report import report
    from pgdiag.run import provenance

    dest = os.path.join(root, p.name)
    staging = dest + ".new"
    shutil.rmtree(staging, ignore_errors=True)
    studies = {targets.get(n).study for n in p.targets}
    for study in studies:
        if not os.path.isfile(os.path.join(runs, f"{study}-{p.scale}", "study.json")):
            raise ConfigError(f"replication {p.name}: no {study!r} study in {runs}; run `pgdiag replication run "
                              f"{p.name} --runs {runs}` first")
    papers = sorted({paper for n in p.targets for paper in targets.get(n).papers})
    for paper in papers:   # only this part's studies: the run directory holds the other parts' too
        out = os.path.join(staging, paper)
        report(runs, out, p.scale, paper, studies=studies)
        os.remove(os.path.join(out, "report.md"))   # the page is docs/replication.md, written from these tables
        _gzip(os.path.join(out, "evidence.csv"))    # its per-iteration rows: megabytes of text, a fifth gzipped
    held = sessions.read(sessions.log(runs, p.name))
    record = {"part": p.name, "targets": list(p.targets), "settings": settings(p), "commit": _commit(),
              "date": datetime.date.today().isoformat(), "host": f"{platform.node()} ({os.cpu_count()} cores, "
              f"{provenance.cpu_model()})", "wall_s": wall_s if wall_s is not None else wall(runs, p),
              **sessions.summary(held),
              "runs": os.path.abspath(runs), "cpu_devices": p.cpu_devices, "papers": papers}
    with open(os.path.join(staging, RECORD), "w") as f:
        json.dump(record, f, indent=1)
    if os.path.isdir(dest):   # the published folder is replaced whole, never mixed with an older one
        shutil.rmtree(dest)
    os.replace(staging, dest)
    return dest


def _gzip(path: str) -> None:
    """``path`` replaced by ``path.gz``, with no time stamp inside: a part published twice from the same runs writes
    the same bytes."""
    import gzip

    with open(path, "rb") as src, open(path + ".gz", "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)


def published(root: str = ROOT) -> dict:
    """{part name: its record} of the parts published under ``root``; a part whose record's settings are not what
    it runs today is a ConfigError naming what to rerun."""
    out = {}
    for p in PARTS:
        path = os.path.join(root, p.name, RECORD)
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            record = json.load(f)
        if record.get("settings") != settings(p):
            raise ConfigError(f"replication/{p.name} was measured with other settings than the part runs today "
                              f"(commit {str(record.get('commit'))[:10]}); rerun it: pgdiag replication run {p.name} "
                              f"then pgdiag replication publish {p.name}")
        out[p.name] = record
    return out


def evidence(root: str = ROOT):
    """Every published part's evidence, one frame per paper: {"cl": frame, "im": frame}."""
    import pandas as pd

    from pgdiag.experiments.evidence_rows import COLUMNS

    frames: dict = {"cl": [], "im": []}
    for name, record in published(root).items():
        for paper in record["papers"]:
            frames[paper].append(pd.read_csv(os.path.join(root, name, paper, EVIDENCE)))
    return {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame(columns=COLUMNS) for k, v in frames.items()}


__all__ = ["PAGE", "PARTS", "Part", "ROOT", "commands", "evidence", "part", "publish", "published", "run", "settings"]
