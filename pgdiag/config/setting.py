"""One declaration for every setting: `Setting` (default, doc, allowed values, checks), read by one validator.

The shared knobs (`Knobs`), the static settings (`Static`), an algorithm's own settings (its `Option`s, the
same type) and the diagnostics' settings dataclasses all declare their fields as `Setting` records, so what a
setting allows is written once and serves its validation, its error messages and the generated reference
(`docs/reference/settings.md`). A setting's kind is its default's type (bool, int, float, str or tuple);
``allowed`` is a `Range`, a `Choices` or, for a user's `Option`, a wording with a ``check`` predicate.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Callable, Optional

import numpy as np

from pgdiag.config.words import CONFIG, DIAGNOSTIC, Style, choices, interval
from pgdiag.errors import ConfigError, Notice, show_notices  # noqa: F401 (re-exported here; pgdiag.errors holds them)


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not _is_bool(v)


@dataclasses.dataclass(frozen=True)
class Range:
    """Numbers from ``low`` to ``high`` (None: unbounded), each end closed unless marked open."""

    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, v) -> bool:
        above = self.low is None or (v > self.low if self.low_open else v >= self.low)
        below = self.high is None or (v < self.high if self.high_open else v <= self.high)
        return above and below


@dataclasses.dataclass(frozen=True)
class Choices:
    """One of ``values`` (a tuple, or a callable returning one: registered tasks, algorithms). An error reads
    "unknown NOUN 'x'; INTRO: a, b" where ``noun`` is given, else "NAME must be one of a, b, got 'x'"."""

    values: Any
    noun: str = ""
    intro: str = "choose one of"

    def all(self) -> tuple:
        return tuple(self.values() if callable(self.values) else self.values)


@dataclasses.dataclass(frozen=True)
class Setting:
    """A setting's declaration: ``default`` (its type is the setting's kind), ``doc``, ``allowed`` (a `Range`, a
    `Choices`, a tuple of choices, or a wording that ``check`` decides), ``check`` (value -> True, False or
    an error message: what the range cannot say), ``allow_inf`` (a float that may be ±inf), ``items`` (what
    each element of a tuple setting allows), ``item`` (an element's name in errors, e.g. "N"), ``why``
    (said in parentheses after what is allowed), ``label`` (the setting's name in errors), ``convert`` (the
    stored form of a valid value) and ``nonempty`` (a tuple setting needs an element)."""

    default: Any
    doc: str
    allowed: Any = None
    check: Optional[Callable[[Any], Any]] = None
    allow_inf: bool = False
    items: Any = None
    item: str = ""
    why: str = ""
    label: str = ""
    convert: Optional[Callable[[Any], Any]] = None
    nonempty: bool = False

    def field(self) -> dataclasses.Field:
        """This declaration as a dataclass field (its default, the declaration in its metadata)."""
        return dataclasses.field(default=self.default, metadata={"setting": self, "doc": self.doc})

    def says(self, style: Style = CONFIG) -> str:
        """What is allowed, in words."""
        return describe(self, style)

    def normalize(self, name: str, value, what: str = "knob", style: Style = CONFIG, error=ConfigError):
        """``value`` checked against the declaration and normalized to its kind; ``error`` otherwise, naming
        the value and what is allowed. ``what`` prefixes the quoted name ("knob 'gamma'"); "" names it bare."""
        subject = f"{what} {name!r}" if what else (self.label or name)
        message = _problem(self, value, subject, style)
        if message:
            raise error(message)
        if self.convert is not None:
            return self.convert(value)
        kind = _kind_of(self.default)
        if kind is tuple:
            of = _element_kind(self)
            return tuple(of(v) if of in (bool, int, float, str) else v for v in value)
        return value if isinstance(_choices(self.allowed), Choices) else kind(value)


def setting(default, doc: str, *allowed, **declared) -> dataclasses.Field:
    """A dataclass field declared by a `Setting` (arguments as `Setting`'s)."""
    return Setting(default, doc, *allowed, **declared).field()


def declared(record_type) -> dict:
    """name -> `Setting` of every declared field of a settings dataclass."""
    return {f.name: f.metadata["setting"] for f in dataclasses.fields(record_type) if "setting" in f.metadata}


def check_record(record, error=ConfigError, style: Style = DIAGNOSTIC) -> None:
    """Every declared field of the dataclass instance ``record`` checked against its declaration."""
    for name, s in declared(type(record)).items():
        s.normalize(name, getattr(record, name), "", style, error)


def _kind_of(default) -> type:
    if _is_bool(default):
        return bool
    return int if isinstance(default, numbers.Integral) else type(default)


def _kind_ok(kind: type, value, allow_inf: bool = False) -> bool:
    if kind is bool:
        return _is_bool(value)
    if kind is int:
        return isinstance(value, numbers.Integral) and not _is_bool(value)
    if kind is float:
        return _is_real(value) and not math.isnan(value) and (allow_inf or not math.isinf(value))
    if kind is tuple:
        return isinstance(value, (tuple, list))
    return isinstance(value, kind)


def _problem(s: Setting, value, subject: str, style: Style) -> str:
    """The error message for ``value``, or "" where it is allowed."""
    kind, allowed = _kind_of(s.default), _choices(s.allowed)
    if isinstance(allowed, Choices):
        if value not in allowed.all():
            names = ", ".join(map(str, allowed.all()))
            return (f"unknown {allowed.noun} {value!r}; {allowed.intro}: {names}" if allowed.noun
                    else f"{subject} must be one of {names}, got {value!r}")
    elif not _kind_ok(kind, value, s.allow_inf):
        return f"{subject} must be {s.says(style)}, got {value!r} ({type(value).__name__})"
    elif kind is tuple:
        message = _element_problem(s, value, subject, style)
        if message:
            return message
    elif isinstance(allowed, Range) and value not in allowed:
        return f"{subject} must be {s.says(style)}, got {value!r}"
    verdict = True if s.check is None else s.check(value)
    if verdict is False:
        return f"{subject} must be {s.says(style)}, got {value!r}"
    return verdict if isinstance(verdict, str) else ""


def _element_problem(s: Setting, value, subject: str, style: Style) -> str:
    """What is wrong with a tuple setting's elements (or their number), or ""."""
    items, of = _choices(s.items), _element_kind(s)
    if s.nonempty and not len(value):
        return f"{subject} must be {s.says(style)}, got {value!r}"
    for v in value:
        if of is not None and not _kind_ok(of, v):
            return f"{subject} must be {s.says(style)}, got {v!r} in {value!r}"
        if isinstance(items, Choices) and v not in items.all() or isinstance(items, Range) and v not in items:
            if s.item and isinstance(items, Range):
                return f"every {s.item} must be {interval(items, style, None)}{_why(s)}, got {v!r}"
            return f"{subject} must be {s.says(style)}, got {value!r}"
    return ""


def _choices(allowed):
    return Choices(allowed) if isinstance(allowed, tuple) else allowed


def _element_kind(s: Setting):
    if s.default:
        return _kind_of(next((d for d in s.default if isinstance(d, float)), s.default[0]))
    items = _choices(s.items)
    return int if isinstance(items, Range) else (None if items is None else object)


def _why(s: Setting) -> str:
    return f" ({s.why})" if s.why else ""


def describe(s, style: Style) -> str:
    """What the `Setting` ``s`` allows, with its ``why``."""
    kind, allowed = _kind_of(s.default), _choices(s.allowed)
    if isinstance(allowed, str) and allowed:
        text = allowed
    elif kind is bool:
        text = "True or False"
    elif isinstance(allowed, Choices):
        text = f"one of {choices(allowed.all())}"
    elif kind is tuple:
        items, of = _choices(s.items), _element_kind(s)
        text = "a non-empty list" if s.nonempty else "a list"
        if isinstance(items, Range):
            text += f" of {interval(items, style, of, plural=True)}"
        elif isinstance(items, Choices):
            text += f" of: {choices(items.all())}"
        elif of in (int, float, str):
            text += " of " + {int: style.int_plural, float: style.real_plural, str: "strings"}[of]
    elif isinstance(allowed, Range):
        text = interval(allowed, style, kind)
    else:
        text = {int: style.int_noun, float: style.real_noun, str: "a string"}.get(kind, f"a {kind.__name__}")
    return f"{text} ({s.why})" if s.why else text


__all__ = ["CONFIG", "DIAGNOSTIC", "Choices", "ConfigError", "Range", "Setting", "check_record", "declared",
           "setting"]
