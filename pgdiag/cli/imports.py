"""``pgdiag import`` and the diagnostics' ``--policy KIND:PATH``: a policy another framework saved, written as a
run directory ([`pgdiag.run.imported`][pgdiag.run.imported]) that every diagnostic measures. The kinds, their
options, defaults, choices and help are the registered loaders'
([`pgdiag.adapters.policy_loaders`][pgdiag.adapters.policy_loaders]), so a loader registered first
(``pgdiag --load FILE``) is a kind here too."""

from __future__ import annotations

import os

from pgdiag.adapters.policy_loaders import checked_options, get_loader, kinds, loader_options, loaders
from pgdiag.adapters.policies import DEFAULT_ALGORITHM
from pgdiag.config import Choices, ConfigError, parse_assignments

#: what ``--policy-option`` / ``pgdiag import`` take beside the file and the registered loaders' options
IMPORT_OPTIONS = ("task", "model", "algorithm")
_TRUE, _FALSE = ("1", "true", "on", "yes"), ("0", "false", "off", "no")


def add_import(sub) -> None:
    registered = loaders()
    p = sub.add_parser("import", help=f"write a policy another framework saved ({', '.join(registered)}) as a run "
                                      f"directory that every diagnostic measures (--run DIR)")
    p.add_argument("kind", choices=list(registered), help=_escape(
        "the kind of file: " + "; ".join(f"{k}: {loader.summary}" for k, loader in registered.items())))
    p.add_argument("path", help="the file the framework saved")
    p.add_argument("--task", required=True, help="the pgdiag task it acts in (see `pgdiag tasks`)")
    p.add_argument("--out", required=True, help="the new run directory")
    p.add_argument("--model", default=None, help="the task's MuJoCo model ('gym' for Gymnasium's Hopper-v4/v5)")
    p.add_argument("--algorithm", default=DEFAULT_ALGORITHM, help=f"the preset whose update the step and landscape "
                                                                  f"studies take from this agent (default: "
                                                                  f"{DEFAULT_ALGORITHM})")
    for name, option in loader_options().items():
        # no argparse default: only an option given reaches the loader (a kind refuses one it does not take), and
        # the declaration fills in the rest
        allowed = option.allowed.all() if isinstance(option.allowed, Choices) else option.allowed
        default = "" if option.default is None else f" (default: {option.default})"
        p.add_argument("--" + name.replace("_", "-"), dest=name, default=None, type=_typed(name),
                       choices=allowed if isinstance(allowed, tuple) else None,
                       help=_escape(f"{', '.join(kinds(name))}: {option.doc}{default}"))
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a setting of the preset")
    p.add_argument("--overwrite", action="store_true", help="replace the run directory OUT if it holds a run")
    p.set_defaults(func=cmd_import)


def policy_help() -> str:
    """``--policy``'s help: the registered kinds."""
    return (f"measure a policy another framework saved ({', '.join(f'{k}:FILE' for k in kinds())}; repeatable), "
            f"imported into OUT/imported/; with --policy-option task=NAME")


def policy_option_help() -> str:
    """``--policy-option``'s help: the import's options and the registered loaders'."""
    return "for --policy: " + ", ".join(f"{name}=" for name in (*IMPORT_OPTIONS, *loader_options()))


def _escape(text: str) -> str:
    return text.replace("%", "%%")   # argparse formats help with %


def _typed(name: str):
    """A loader option's command-line text as its declared kind (bool, int or float); text that is not one stays
    text, for the declaration to refuse in its own words."""
    def convert(text):
        default = getattr(loader_options().get(name), "default", None)
        if text is None or not isinstance(default, (bool, int, float)):
            return text
        if isinstance(default, bool):
            low = text.strip().lower()
            return True if low in _TRUE else False if low in _FALSE else text
        try:
            return type(default)(text)
        except ValueError:
            return text
    return convert


def cmd_import(args) -> None:
    read = {name: getattr(args, name, None) for name in loader_options()}
    run = _import(args.kind, args.path, args.out, dict(task=args.task, model=args.model, algorithm=args.algorithm,
                                                       **read), parse_assignments(args.set, "--set"),
                  overwrite=args.overwrite)
    print(f"wrote {run.path}: {run.manifest['imported']['kind']} policy, {run.manifest['imported']['network']} "
          f"network, observations {run.manifest['imported']['observation_filter']}; measure it with --run "
          f"{run.path}")


def policy_runs(policies: list | None, options: list | None, out: str) -> list:
    """The run directories of ``--policy KIND:PATH`` (each imported under ``out``/imported/, or reused there
    when it holds the same file). A loader's ``--policy-option`` goes to the policies whose kind takes it; one
    that none of them takes is refused, as are an unknown kind and a value not allowed, before any file is read."""
    if not policies:
        if options:
            raise ConfigError("--policy-option applies to --policy KIND:PATH")
        return []
    names, given = (*IMPORT_OPTIONS, *loader_options()), {}
    for item in options or ():
        name, sep, value = item.partition("=")
        if not sep or name not in names:
            raise ConfigError(f"--policy-option takes NAME=VALUE with NAME one of {', '.join(names)}, got "
                              f"{item!r}")
        given[name] = _typed(name)(value)
    if "task" not in given:
        raise ConfigError("--policy needs the task it acts in: --policy-option task=NAME (see `pgdiag tasks`)")
    specs = []
    for spec in policies:
        kind, sep, path = spec.partition(":")
        if not sep or not path:
            raise ConfigError(f"--policy takes KIND:PATH (kinds: {', '.join(kinds())}), got {spec!r}")
        mine = {k: v for k, v in given.items() if k in IMPORT_OPTIONS or k in get_loader(kind).options}
        checked_options(kind, {k: v for k, v in mine.items() if k not in IMPORT_OPTIONS})
        specs.append((kind, path, mine))
    taken = {k for _, _, mine in specs for k in mine}
    for name in given.keys() - taken:   # taken by no policy given: refused in the loaders' words
        checked_options(specs[0][0], {name: given[name]})
    return [_reused(kind, path, out, mine) for kind, path, mine in specs]


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
    from pgdiag.run import import_policy

    task, model, algorithm = (options.pop(k, None) for k in IMPORT_OPTIONS)
    read = {k: v for k, v in options.items() if v is not None}
    checked_options(kind, read)   # the kind and its options refused before the file is read
    return import_policy(kind, path, task=str(task), out=out, model=model, algorithm=algorithm or DEFAULT_ALGORITHM,
                         settings=settings, overwrite=overwrite, **read)
