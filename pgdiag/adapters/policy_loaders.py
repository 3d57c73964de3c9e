"""The policy loaders: one [`PolicyLoader`][pgdiag.adapters.policy_loaders.PolicyLoader] per kind of file, with the
keyword options it takes, each declared once as an [`Option`][pgdiag.config.knobs.Option] (its default, what it
means, what it allows).

[`read_policy`][pgdiag.adapters.policies.read_policy], [`load_policy`][pgdiag.run.checkpoints.load_policy],
[`import_policy`][pgdiag.run.imported.import_policy] and ``pgdiag import`` take their kinds, options, defaults,
choices and help from here. pgdiag's own loaders (Brax, CleanRL, Stable-Baselines3) are registered by
[`pgdiag.adapters.policies`][pgdiag.adapters.policies] with
[`register_loader`][pgdiag.adapters.policy_loaders.register_loader], as a user's loader is:

    def read_linear(path, scale):
        weights = np.load(path, allow_pickle=False)   # a file from elsewhere is data: never unpickled
        return ExternalPolicy(kind="linear", path=path, network="mlp", ...)

    register_loader(PolicyLoader("linear", "linear policies' weights in an .npz", read_linear,
                                 options={"scale": Option(1.0, "multiplies the weights", Range(0, low_open=True))}))
    pgdiag.load_policy("linear", "weights.npz", scale=2.0)

Options are checked before the reader runs: an unknown kind, an option the kind does not take and a value its
declaration does not allow are each refused in one line, before any file is opened.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

from pgdiag.adapters.archives import ArchiveError
from pgdiag.adapters.policy_formats import ExternalPolicy
from pgdiag.config import ConfigError, Setting

#: names an option cannot take: the arguments that read_policy, load_policy, import_policy and ``pgdiag import``
#: take themselves, beside which a loader's options are passed (as keywords, and as flags named after them)
RESERVED = ("kind", "path", "source", "run", "iteration", "agent", "task", "model", "algorithm", "out", "settings",
            "set", "overwrite", "help")


@dataclasses.dataclass(frozen=True)
class PolicyLoader:
    """How one kind of policy file is read into an [`ExternalPolicy`][pgdiag.adapters.policies.ExternalPolicy].

    Attributes:
        kind: its name (``read_policy``'s first argument, ``--policy KIND:PATH``'s KIND): letters, digits,
            '-' or '_'.
        summary: the files it reads, as a plural noun ("Stable-Baselines3 zips of a PPO MlpPolicy"): said in
            ``pgdiag import --help`` and in the refusal of an option meant for this kind.
        read: ``read(path, **options)`` returning the ExternalPolicy; it receives every declared option, values
            checked, defaults filled in. It must read the file as data: nothing in it called or unpickled.
        options: option name -> its [`Option`][pgdiag.config.knobs.Option]: default (None: given or absent),
            doc, and what it allows (a `Choices`, `Range` or tuple; or a wording that ``check`` decides). A name
            several kinds take has one declaration (``pgdiag import`` has one flag for it).
    """

    kind: str
    summary: str
    read: Callable[..., ExternalPolicy]
    options: Mapping[str, Setting] = dataclasses.field(default_factory=dict)


_LOADERS: dict = {}
_BUILT_IN: set = set()


def register_loader(loader: PolicyLoader, built_in: bool = False) -> PolicyLoader:
    """Add ``loader`` under its kind; returns it. Refused (ConfigError) where the kind is taken or malformed, an
    option is not declared as an [`Option`][pgdiag.config.knobs.Option], has a reserved name, has a default its
    own declaration refuses, or is declared otherwise by another kind. ``built_in``: one of pgdiag's own (it
    stays registered)."""
    if not isinstance(loader, PolicyLoader):
        raise ConfigError(f"register_loader takes a PolicyLoader, got {type(loader).__name__}")
    kind = loader.kind
    if not isinstance(kind, str) or not kind.replace("-", "").replace("_", "").isalnum():
        raise ConfigError(f"a policy kind must be letters, digits, '-' or '_', got {kind!r}")
    if kind in _LOADERS:
        raise ConfigError(f"policy kind {kind!r} is already registered; registered kinds: {', '.join(_LOADERS)}")
    if not callable(loader.read) or not (isinstance(loader.summary, str) and loader.summary):
        raise ConfigError(f"policy kind {kind!r}: read must be a function of (path, **options) and summary the "
                          f"files it reads, in words")
    if not isinstance(loader.options, Mapping):
        raise ConfigError(f"policy kind {kind!r}: options must map each option's name to an Option, got "
                          f"{type(loader.options).__name__}")
    for name, option in loader.options.items():
        _check_option(kind, name, option)
    _LOADERS[kind] = loader
    if built_in:
        _BUILT_IN.add(kind)
    return loader


def _check_option(kind: str, name, option) -> None:
    if not (isinstance(name, str) and name.isidentifier()) or name in RESERVED:
        raise ConfigError(f"policy kind {kind!r}: an option's name must be an identifier other than "
                          f"{', '.join(RESERVED)}, got {name!r}")
    if not isinstance(option, Setting):
        raise ConfigError(f"policy kind {kind!r}: option {name!r} must be declared as an Option (default, doc, "
                          f"allowed), got {type(option).__name__}")
    if option.default is not None:   # the default satisfies its own declaration
        option.normalize(name, option.default, "", error=ConfigError)
    theirs = loader_options().get(name)
    if theirs is not None and theirs != option:
        raise ConfigError(f"policy kind {kind!r} declares option {name!r} otherwise than {', '.join(kinds(name))} "
                          f"do: an option's name has one declaration (one default, one flag of `pgdiag import`)")


def unregister_loader(kind: str) -> None:
    """Remove a loader added with [`register_loader`][pgdiag.adapters.policy_loaders.register_loader] (pgdiag's own
    stay)."""
    if kind in _BUILT_IN:
        raise ConfigError(f"unregister_loader: {kind!r} is one of pgdiag's own policy kinds")
    if kind not in _LOADERS:
        raise ConfigError(f"unregister_loader: no policy kind {kind!r}; registered kinds: {', '.join(_LOADERS)}")
    del _LOADERS[kind]


def loaders() -> dict:
    """Every registered [`PolicyLoader`][pgdiag.adapters.policy_loaders.PolicyLoader] by kind, in registration order."""
    return dict(_LOADERS)


def get_loader(kind: str) -> PolicyLoader:
    """The loader of ``kind``; an ArchiveError naming it and the registered kinds otherwise."""
    try:
        return _LOADERS[kind]
    except (KeyError, TypeError):
        raise ArchiveError(f"unknown policy kind {kind!r}; kinds are {', '.join(_LOADERS)}") from None


def kinds(option: str | None = None) -> tuple:
    """The registered kinds in registration order; with ``option``, those whose loader takes it."""
    return tuple(k for k, loader in _LOADERS.items() if option is None or option in loader.options)


def loader_options() -> dict:
    """Every registered loader's options: name -> its [`Option`][pgdiag.config.knobs.Option], first declared
    first (a name several kinds take has one declaration)."""
    out = {}
    for loader in _LOADERS.values():
        for name, option in loader.options.items():
            out.setdefault(name, option)
    return out


def checked_options(kind: str, options: Mapping) -> dict:
    """The options ``kind``'s reader is called with: every one it declares, ``options``' values checked against
    their declarations, defaults where a value is not given (or None). An unknown kind, an option ``kind`` does
    not take or a value not allowed is an ArchiveError in one line; nothing is read."""
    declared = get_loader(kind).options
    for name in options:
        if name not in declared:
            takers = kinds(name)
            where = (f"{name} is for " + " and ".join(f"{_LOADERS[k].summary} (kind {k})" for k in takers)
                     if takers else f"no policy kind takes an option {name!r}")
            raise ArchiveError(f"{where}; kind {kind!r} takes {', '.join(declared) or 'no options'}")
    return {name: _checked(name, option, options.get(name)) for name, option in declared.items()}


def _checked(name: str, option: Setting, value):
    if value is None:
        return option.default
    if option.default is None:   # optional: no default to take a kind from, so its check alone decides
        verdict = True if option.check is None else option.check(value)
        if verdict is False or (isinstance(verdict, str) and verdict):
            raise ArchiveError(verdict if isinstance(verdict, str) else
                               f"{option.label or name} must be {option.says()}, got {value!r}")
        return value if option.convert is None else option.convert(value)
    return option.normalize(name, value, "", error=ArchiveError)


__all__ = ["RESERVED", "PolicyLoader", "checked_options", "get_loader", "kinds", "loader_options", "loaders",
           "register_loader", "unregister_loader"]
