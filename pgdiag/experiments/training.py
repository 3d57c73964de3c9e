"""Training for the study targets: the presets a study trains, grouped into one compiled sweep per static
configuration, into run directories that are reused (seed by seed) and never replaced.

Every figure module that trains calls [`train_once`][pgdiag.experiments.training.train_once] (one sweep into one
directory: fig-ablation) or [`train_study`][pgdiag.experiments.training.train_study] (every preset of a study on a
task, e.g. fig-rewards, table-2/3 and the closer-look targets' shared runs);
[`preset_groups`][pgdiag.experiments.training.preset_groups] is how both group presets, and how ``--dry-run``
counts their programs.
"""

from __future__ import annotations

import hashlib
import json
import os

from pgdiag.config import ALGORITHM_PRESETS, ConfigError, preset_names, study_preset
from pgdiag.experiments import study_dir
from pgdiag.experiments.figures import LABELS
from pgdiag.run.store import requested_config
from pgdiag.run import load_run, roster, sweep
from pgdiag.run.claim import held_run


def presets_of(chosen, default) -> tuple:
    """The presets a study trains: ``chosen`` (preset names, e.g. ``("ppo", "npg")``) or the study's
    ``default``; an unknown name is refused before anything trains."""
    names = tuple(chosen or default)
    unknown = [a for a in names if a not in preset_names()]
    if unknown:
        raise ConfigError(f"unknown preset {unknown[0]!r}; presets: {', '.join(preset_names())}")
    return names


def preset_groups(task: str, presets=ALGORITHM_PRESETS, /, **overrides) -> list:
    """Group the presets by static settings: each group is one compiled sweep.

    Returns ``[(base_config, [(preset, knob_overrides), ...]), ...]``;
    the overrides hold only the knobs in which a preset differs from the
    group's first.
    """
    groups: dict = {}
    for name in presets:
        cfg = study_preset(name, task, **overrides)
        groups.setdefault(cfg.static, []).append((name, cfg))
    out = []
    for members in groups.values():
        base = members[0][1]
        points = []
        for name, cfg in members:
            mine, theirs = cfg.knobs.values(), base.knobs.values()
            diff = {k: v for k, v in mine.items() if v != theirs[k]}
            points.append((name, diff))
        out.append((base.replace(name=f"{task}/{base.static.algorithm}-family"), points))
    return out


def _wanted(manifest: dict) -> dict:
    """What makes a saved run the one asked for: its requested configuration, grid and labels (JSON-normal)."""
    return {k: json.loads(json.dumps(manifest.get(k), default=list)) for k in ("base_config", "grid_points", "labels")}


def config_key(wanted: dict) -> str:
    """A digest of a run's configuration, grid and labels: the suffix of its directory's name, so that runs of
    different configurations never share a directory."""
    text = json.dumps(_wanted(wanted), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _saved_manifest(run_dir: str) -> dict | None:
    """The manifest of a training run directory with its requested configuration (None: none readable)."""

    try:
        with open(os.path.join(run_dir, "manifest.json")) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(old, dict) or "base_config" not in old:
        return None
    return {**old, "base_config": requested_config(old)}


def _reusable_seeds(run_dir: str, manifest: dict) -> tuple:
    """The seeds of an existing complete run directory with the same configuration, grid and labels
    (empty when it has none or differs)."""
    old = _saved_manifest(run_dir)
    if old is None or old.get("status") != "complete":
        return ()
    return tuple(old.get("seeds") or ()) if _wanted(old) == _wanted(manifest) else ()


def _interrupted(out: str, siblings, wanted: dict, seeds) -> str | None:
    """A sibling run directory holding this configuration's ``seeds`` interrupted, whatever its name: the name's
    digest is of the configuration as it was written then, so a setting added since (at its default) renames the
    run without changing it, and it is still continued, never started again beside itself."""
    for d in siblings:
        old = _saved_manifest(os.path.join(out, d))
        if (old is not None and old.get("status") != "complete" and list(old.get("seeds") or ()) == list(seeds)
                and _wanted(old) == _wanted(wanted)):
            return d
    return None


def _seeds_name(seeds) -> str:
    """The suffix of a run directory holding the seeds a study added to an earlier run."""
    if len(seeds) == 1:
        return f"seeds-{seeds[0]}"
    if list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds-{seeds[0]}-{seeds[-1]}"
    return "seeds-" + "-".join(map(str, seeds)) if len(seeds) <= 4 else f"seeds-{seeds[0]}-{seeds[-1]}-{len(seeds)}"


def _train_into(path: str, wanted: dict, base, grid, seeds, labels, progress, label: str):
    """Train ``seeds`` into the new run directory ``path``. A directory already there is never replaced: an
    interrupted run of the same configuration and seeds is resumed, anything else refused."""

    # a directory holding no run files (a run stopped while compiling leaves only its lock) is trained into
    if os.path.lexists(path) and (not os.path.isdir(path) or held_run(path)):
        old = _saved_manifest(path)
        same = old is not None and _wanted(old) == _wanted(wanted) and list(old.get("seeds") or ()) == list(seeds)
        if not same or old.get("status") == "complete":
            held = ("no training run's manifest" if old is None else
                    f"a run of another configuration or seeds (seeds {old.get('seeds')})" if not same else
                    "this run complete, which reuse=False does not take")
            raise ConfigError(f"cannot train into {path!r}: it holds {held}, which training would overwrite; "
                              f"move it away or write this study to another output directory")
        # the same run, interrupted: continue it from its last saved state
        return sweep(base, grid, list(seeds), progress=progress, labels=labels, resume=path)
    return sweep(base, grid, list(seeds), out=path, progress=progress, labels=labels, label=label)


def train_once(path: str, base, grid, seeds, progress=None, labels=None, label: str | None = None):
    """The run of ``base`` × ``grid`` × ``seeds`` in ``path``: loaded where ``path`` holds it complete,
    continued where it was interrupted, trained where ``path`` is free; any other run there is refused
    (a study asked twice never trains twice, and never replaces a run)."""

    p = roster(base, grid, seeds, labels)
    wanted = {"base_config": base.to_dict(), "grid_points": list(p.points), "labels": list(p.labels)}
    if list(_reusable_seeds(path, wanted)) == list(p.seeds):
        return load_run(path)
    return _train_into(path, wanted, base, grid, list(p.seeds), labels, progress, label or base.name)


def train_study(task: str, seeds, out: str, presets=ALGORITHM_PRESETS, progress=None, reuse=True,
                **overrides):
    """Train every one of ``presets`` on ``task`` with ``seeds`` (a count or a list);
    returns ``(metrics, runs)``: one metrics DataFrame with an ``algorithm`` column, and the run
    directories under ``out`` it came from as ``(name, seeds taken from it)``.

    A run directory is named ``{task}-{program}-{key}``, ``key`` a digest of its configuration, grid and labels
    ([`config_key`][pgdiag.experiments.training.config_key]), so that studies of different configurations can share
    ``out`` without one replacing another's runs; a directory in the way is never overwritten
    ([`_train_into`][pgdiag.experiments.training._train_into]). Runs on disk with the same configuration are reused
    seed by seed: asking for 16 seeds where a run of seeds 0-7 is saved trains seeds 8-15 alone, into
    ``{task}-{program}-{key}-seeds-8-15``, and a saved run of more seeds than asked gives the ones asked for."""
    import pandas as pd


    frames, runs = [], []
    for base, points in preset_groups(task, presets, **overrides):
        name = f"{task}-{base.static.algorithm}"
        labels = [a for a, _ in points]
        grid = [p for _, p in points]
        p = roster(base, grid, seeds, labels)
        wanted = {"base_config": base.to_dict(), "grid_points": list(p.points), "labels": list(p.labels)}
        key = f"{name}-{config_key(wanted)}"
        # every run of this task and program is a candidate (the key only names it; the manifest decides)
        siblings = sorted(d for d in (os.listdir(out) if os.path.isdir(out) else ())
                          if d == name or d.startswith(f"{name}-"))
        covered = []
        for d in siblings if reuse else ():
            take = [s for s in _reusable_seeds(os.path.join(out, d), wanted) if s in p.seeds and s not in covered]
            if take:
                m = load_run(os.path.join(out, d)).metrics
                frames.append(study_dir.tidy(m[m.seed.isin(take)], task))
                runs.append((d, take))
                covered += take
        missing = [s for s in p.seeds if s not in covered]
        if missing:
            new = key if not covered else f"{key}-{_seeds_name(missing)}"
            new = _interrupted(out, siblings, wanted, missing) or new
            metrics = _train_into(os.path.join(out, new), wanted, base, grid, missing, labels, progress,
                                  f"{task}: {', '.join(LABELS[a] for a in labels)}").metrics
            frames.append(study_dir.tidy(metrics, task))
            runs.append((new, missing))
    return pd.concat(frames, ignore_index=True), runs
