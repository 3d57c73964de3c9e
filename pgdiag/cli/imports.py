"""``pgdiag import`` and the diagnostics' ``--policy KIND:PATH``: a policy another framework saved, written as a
run directory ([`pgdiag.run.imported`][pgdiag.run.imported]) that every diagnostic measures."""

from __future__ import annotations

import os

from pgdiag.config import ConfigError, parse_assignments

#: what ``--policy-option`` / ``pgdiag import`` take beside the file
OPTIONS = ("task", "model", "algorithm", "obs_stats", "vecnormalize", "activation")


def add_import(sub) -> None:
    p = sub.add_parser("import", help="write a policy saved by Brax, CleanRL or Stable-Baselines3 as a run "
                                      "directory that every diagnostic measures (--run DIR)")
    p.add_argument("kind", choices=["brax", "cleanrl", "sb3"], help="the framework that saved it")
    p.add_argument("path", help="the file: Brax's save_params file, CleanRL's .cleanrl_model, SB3's model zip")
    p.add_argument("--task", required=True, help="the pgdiag task it acts in (see `pgdiag tasks`)")
    p.add_argument("--out", required=True, help="the new run directory")
    p.add_argument("--model", default=None, help="the task's MuJoCo model ('gym' for Gymnasium's Hopper-v4/v5)")
    p.add_argument("--algorithm", default="ppo", help="the preset whose update the step and landscape studies "
                                                      "take from this agent (default: ppo)")
    p.add_argument("--obs-stats", default=None, metavar="FILE",
                   help="CleanRL: a .npz or .json with the NormalizeObservation wrapper's 'mean' and 'var'")
    p.add_argument("--vecnormalize", default=None, metavar="FILE", help="SB3: the VecNormalize.save file")
    p.add_argument("--activation", default="tanh", choices=["tanh", "relu"],
                   help="the MLP's hidden units (CleanRL and SB3 files do not state them; default tanh)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a setting of the preset")
    p.add_argument("--overwrite", action="store_true", help="replace the run directory OUT if it holds a run")
    p.set_defaults(func=cmd_import)


def cmd_import(args) -> None:
    run = _import(args.kind, args.path, args.out, dict(
        task=args.task, model=args.model, algorithm=args.algorithm, obs_stats=args.obs_stats,
        vecnormalize=args.vecnormalize, activation=args.activation), parse_assignments(args.set, "--set"),
        overwrite=args.overwrite)
    print(f"wrote {run.path}: {run.manifest['imported']['kind']} policy, {run.manifest['imported']['network']} "
          f"network, observations {run.manifest['imported']['observation_filter']}; measure it with --run "
          f"{run.path}")


def policy_runs(policies: list | None, options: list | None, out: str) -> list:
    """The run directories of ``--policy KIND:PATH`` (each imported under ``out``/imported/, or reused there
    when it holds the same file)."""
    if not policies:
        if options:
            raise ConfigError("--policy-option applies to --policy KIND:PATH")
        return []
    given = {}
    for item in options or ():
        name, sep, value = item.partition("=")
        if not sep or name not in OPTIONS:
            raise ConfigError(f"--policy-option takes NAME=VALUE with NAME one of {', '.join(OPTIONS)}, got "
                              f"{item!r}")
        given[name] = value
    if "task" not in given:
        raise ConfigError("--policy needs the task it acts in: --policy-option task=NAME (see `pgdiag tasks`)")
    runs = []
    for spec in policies:
        kind, sep, path = spec.partition(":")
        if not sep or not path:
            raise ConfigError(f"--policy takes KIND:PATH (kinds: brax, cleanrl, sb3), got {spec!r}")
        runs.append(_reused(kind, path, out, dict(given)))
    return runs


def _reused(kind: str, path: str, out: str, options: dict) -> str:
    """``OUT/imported/KIND-STEM-KEY``, KEY naming the file's content and the options it was read with: an import
    is reused only when both match (a replaced file or other options make another directory)."""
    from pgdiag.run import imported, load_run, store

    key = imported.import_key(path, imported.canonical_options(**options))
    stem = os.path.splitext(os.path.basename(path))[0]
    where = os.path.join(out, "imported", f"{kind}-{stem}-{key[:12]}")
    if os.path.exists(os.path.join(where, store.MANIFEST)):
        run = load_run(where)
        if run.manifest.get("imported", {}).get("key") == key:
            return run.path
    return _import(kind, path, where, options, {}).path


def _import(kind: str, path: str, out: str, options: dict, settings: dict, overwrite: bool = False):
    from pgdiag.adapters import policies
    from pgdiag.run import import_policy

    if kind not in policies.KINDS:
        raise ConfigError(f"unknown policy kind {kind!r}; kinds are {', '.join(policies.KINDS)}")
    task, model, algorithm = (options.pop(k, None) for k in ("task", "model", "algorithm"))
    read = {k: v for k, v in options.items() if v is not None and (k != "activation" or v != "tanh")}
    return import_policy(kind, path, task=str(task), out=out, model=model, algorithm=algorithm or "ppo",
                         settings=settings, overwrite=overwrite, **read)
