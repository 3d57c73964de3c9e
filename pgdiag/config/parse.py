"""Values from the command line: ``NAME=VALUE`` settings and ``KNOB=V1,V2`` grid axes, parsed by declared type."""

from __future__ import annotations

from pgdiag.config import registry
from pgdiag.config.knobs import BOOL_KNOBS, KNOB_FIELDS, KNOB_NAMES, ConfigError
from pgdiag.config.static import STATIC_FIELDS, STATIC_NAMES


def _parse_bool(name: str, text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "on", "yes"):
        return True
    if low in ("0", "false", "off", "no"):
        return False
    raise ConfigError(f"{name} takes true/false (or on/off, 1/0), got {text!r}")


def _declared_default(name: str):
    """The default of ``name`` where registered algorithms declare it as their own (one type per name)."""
    return registry.declared_default(name)


def parse_value(name: str, text: str):
    """Parse a command-line value for a knob or static setting by its declared type."""
    own = _declared_default(name)
    if own is not None and name not in KNOB_FIELDS and name not in STATIC_FIELDS:
        if isinstance(own, bool):
            return _parse_bool(name, text)
        kind = type(own)
        try:
            return kind(text)
        except ValueError:
            raise ConfigError(f"{name} takes a{'n int' if kind is int else ' number' if kind is float else ' str'}"
                              f", got {text!r}") from None
    if name in BOOL_KNOBS or name == "reset_every_iteration":
        return _parse_bool(name, text)
    if name in KNOB_FIELDS:
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"knob {name!r} takes a number, got {text!r}") from None
    if name == "checkpoint_at":
        try:
            return tuple(int(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise ConfigError(f"{name} takes iterations like 0,150,300,450, got {text!r}") from None
    if name in ("policy_hidden", "value_hidden"):
        try:
            if text.strip().lower() in ("", "none", "linear"):
                return ()
            return tuple(int(x) for x in text.replace("x", ",").split(",") if x.strip())
        except ValueError:
            raise ConfigError(f"{name} takes widths like 64,64 or 64x64 (none, or an empty value, for a linear "
                              f"network), got {text!r}") from None
    if name in STATIC_FIELDS and isinstance(STATIC_FIELDS[name].default, str):  # task, physics, solver, model, ...
        return text
    if name in STATIC_FIELDS:
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{name} takes a positive integer, got {text!r}") from None
    raise ConfigError(f"unknown setting {name!r}; static settings are: {', '.join(STATIC_NAMES)}; "
                      f"knobs are: {', '.join(KNOB_NAMES)}; an algorithm's own settings are listed by "
                      f"`pgdiag algorithms`")


def _is_static(name: str) -> bool:
    return registry.declared_static(name)


def parse_assignments(items, what: str) -> dict:
    """``["name=value", ...]`` (``--set``) -> {name: parsed value}; a name given again takes its later value (a
    command's options can be appended to)."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"{what} expects name=value, got {item!r}")
        name, text = item.split("=", 1)
        name = name.strip()
        out[name] = parse_value(name, text.strip())   # the last of a name given twice wins, as a later flag
    return out


def parse_grid(items) -> dict:
    """``["knob=v1,v2", ...]`` (``--grid``) -> {knob: [values]}; static settings are refused."""
    grid = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"--grid expects knob=v1,v2,..., got {item!r}")
        name, text = item.split("=", 1)
        name = name.strip()
        if name in grid:
            raise ConfigError(f"--grid {name} is given twice; give all of its values in one: --grid {name}=v1,v2,...")
        if name in ("algorithm", "task"):
            raise ConfigError(f"{name!r} cannot be a grid axis of one compiled sweep: each {name} is a sweep of its "
                              f"own (--preset / --task)")
        if name in STATIC_FIELDS or _is_static(name):
            raise ConfigError(f"{name!r} is a static setting and cannot be a grid axis of one compiled sweep; "
                              f"use --set {name}=... instead")
        values = [v for v in text.split(",") if v.strip()]
        if not values:
            raise ConfigError(f"grid axis {name!r} has no values")
        grid[name] = [parse_value(name, v.strip()) for v in values]
    return grid
