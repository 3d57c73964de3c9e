"""The registry of algorithms, below the configuration that reads it.

A configuration names its algorithm and may hold the algorithm's own settings, so checking one needs the registered
algorithms: their names, their declared settings ([`pgdiag.config.Option`][pgdiag.config.knobs.Option] records)
and which algorithms declare a setting. This module holds the registry and those lookups and imports nothing of
pgdiag; [`pgdiag.algorithms.register_algorithm`][pgdiag.algorithms.base.register_algorithm] checks an algorithm
and adds it here.
"""

from __future__ import annotations


class AlgorithmError(ValueError):
    """An algorithm is unknown, registered twice, or declared inconsistently."""


_REGISTRY: dict = {}


def add(algorithm) -> None:
    """Store a checked algorithm under its name
    ([`pgdiag.algorithms.register_algorithm`][pgdiag.algorithms.base.register_algorithm] checks it)."""
    _REGISTRY[algorithm.name] = algorithm


def remove(name: str) -> None:
    """Remove a registered algorithm (a user's, e.g. between tests)."""
    get(name)
    del _REGISTRY[name]


def get(name: str):
    """The registered algorithm ``name``; a clear error listing the registered ones otherwise."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise AlgorithmError(f"unknown algorithm {name!r}; registered algorithms: {', '.join(_REGISTRY)}") from None


def names() -> tuple:
    """The registered algorithms' names, in registration order."""
    return tuple(_REGISTRY)


def registered() -> tuple:
    """The registered algorithms, in registration order."""
    return tuple(_REGISTRY.values())


def declared_static(field: str) -> bool:
    """Whether the registered algorithms declare ``field`` as a static setting of their own (a name has one
    kind in every algorithm that declares it)."""
    return any(field in a.static for a in _REGISTRY.values())


def owners(field: str) -> tuple:
    """The registered algorithms that declare ``field`` (a knob or static setting) as their own."""
    return tuple(n for n, a in _REGISTRY.items() if field in a.knobs or field in a.static)


def declared_default(field: str):
    """The default of ``field`` where registered algorithms declare it as their own (one type per name)."""
    own = owners(field)
    return get(own[0]).setting(field).default if own else None


__all__ = ["AlgorithmError", "add", "declared_default", "declared_static", "get", "names", "owners", "registered",
           "remove"]
