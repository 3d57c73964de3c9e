"""Continuing a recorded run: its manifest read and checked, what the caller gave compared with what it recorded,
and the run started again from its last saved state with each continuation recorded."""

from __future__ import annotations

import inspect
import json
import sys
import time

from pgdiag.config import ConfigError
from pgdiag.run import provenance, store
from pgdiag.run.claim import stopped_before_starting
from pgdiag.run.rosters import roster
from pgdiag.run.start import complete, start


def check_unchanged(resume: str, **given) -> None:
    """A resumed run continues as it was recorded: every setting of how it runs left at its default."""
    from pgdiag.run.execute import sweep   # its defaults, read from its signature (execute imports this module)

    defaults = inspect.signature(sweep).parameters
    changed = [f"{k}={v!r}" for k, v in given.items() if v != defaults[k].default]
    if changed:
        raise ConfigError(f"resume={resume!r} continues the run as recorded in it; {', '.join(changed)} cannot "
                          f"be changed (rerun it into a new directory with other settings)")


def training_manifest(run_dir: str, what: str) -> dict:
    """The manifest of the training run in ``run_dir``, for ``what`` (resume, rerun): refused, in words, where there
    is none or it is not a training run's."""
    try:
        manifest = store.read_manifest(run_dir)
    except FileNotFoundError:
        if stopped_before_starting(run_dir):
            raise ConfigError(f"cannot {what} {run_dir!r}: the run there was stopped before it started (the "
                              f"directory holds only its lock, no {store.MANIFEST}); nothing was trained, so run "
                              f"the same command again with --out {run_dir} (out=...): it takes the directory "
                              f"over") from None
        raise ConfigError(f"cannot {what} {run_dir!r}: it is not a pgdiag run directory (no "
                          f"{store.MANIFEST}); give the directory a sweep or train wrote with out=...") from None
    if not store.is_training(manifest):
        raise ConfigError(f"cannot {what} {run_dir!r}: its {store.MANIFEST} is not a training run's "
                          f"(format {manifest.get('format')!r})")
    return manifest


def continue_run(run_dir, base, grid, seeds, labels, progress, watchers=()) -> store.RunResult:
    """The interrupted run in ``run_dir`` continued from its last saved state; ``base``, ``grid``, ``seeds`` and
    ``labels`` where given must be the run's own. Each continuation is recorded in the manifest's ``resumed``."""
    manifest = training_manifest(run_dir, "resume")
    p = store.plan_from_manifest(manifest)
    if base is not None:   # what is omitted is the run's own
        given = roster(base, manifest["grid_points"] or None if grid is None else grid,
                     manifest["seeds"] if seeds is None else seeds,
                     manifest.get("labels") or None if labels is None else labels)
        for what, mine, theirs in (("base configuration", base.to_dict(), store.requested_config(manifest)),
                                   ("grid", list(given.points), manifest["grid_points"]),
                                   ("seeds", list(given.seeds), manifest["seeds"])):
            if json.loads(json.dumps(mine, default=list)) != theirs:
                raise ConfigError(f"cannot resume {run_dir!r} with another {what}: the run has {theirs!r}, "
                                  f"got {mine!r}; omit it to use the run's own")
    if manifest["status"] == "complete":
        return complete(run_dir, manifest)

    def current():
        """The manifest read again once the directory's lock is held (another process may have resumed the run
        since), with this continuation added; None when it is complete."""
        manifest = training_manifest(run_dir, "resume")
        if manifest["status"] == "complete":
            return None
        # where and how each continuation ran (the "device" entry stays the first run's)
        _say_if_other_devices(run_dir, manifest)
        manifest.setdefault("resumed", []).append({
            "after_iteration": manifest["iterations_done"], "device": provenance.device_info(),
            "command": " ".join(sys.argv), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "versions": provenance.versions()})
        return manifest

    return start(p, current, run_dir, progress, resume=True, callbacks=watchers)


def _say_if_other_devices(run_dir: str, manifest: dict) -> None:
    """One line where a run continues on another device count than it began on (its agents are then sharded into
    other blocks), or on another CPU model than its last session's: the rest of the run is then other compiled
    programs, equal to an uninterrupted run to float32 rounding only (which learning amplifies), not bitwise."""
    began, now = manifest.get("device", {}).get("count"), provenance.device_info()["count"]
    if began is not None and began != now:
        print(f"pgdiag: {run_dir} began on {began} device(s) and continues on {now}: its remaining iterations are "
              f"other programs, equal to an uninterrupted run to float32 rounding, not bitwise "
              f"(PGDIAG_HOST_DEVICES={began} continues it as it began)", flush=True)
    # XLA compiles for the host's CPU: on another model (other vector instructions) the same program rounds otherwise
    last = (manifest.get("resumed") or [{}])[-1].get("device") or manifest.get("device", {})
    cpu_then, cpu_now = last.get("cpu"), provenance.cpu_model()
    if cpu_then and cpu_then != cpu_now:
        print(f"pgdiag: {run_dir} ran on {cpu_then} and continues on {cpu_now}: XLA compiles for each CPU, so its "
              f"remaining iterations equal an uninterrupted run to float32 rounding, not bitwise", flush=True)
