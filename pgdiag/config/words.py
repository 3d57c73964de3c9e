"""How an error message and the settings reference say what a declared setting allows ("a number in (0, 1]",
"an integer ≥ 2"): one phrasing from the declaration, in the configuration's words or the diagnostics'."""

from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Style:
    """The words a family of settings uses for kinds and bounds."""

    int_noun: str = "an int"
    int_plural: str = "ints"
    real_noun: str = "a number"
    real_plural: str = "numbers"
    ge: str = ">="
    le: str = "<="
    positive: bool = True           # "a positive int" for an int >= 1
    interval_noun: bool = True      # "a number in (0, 1]" rather than "in (0, 1)"


#: the configuration's (knobs, static settings, algorithms' options)
CONFIG = Style()
#: the diagnostics' settings
DIAGNOSTIC = Style(int_noun="an integer", int_plural="integers", real_noun="a finite number",
                   real_plural="finite numbers", ge="≥", le="≤", positive=False, interval_noun=False)


def number(v) -> str:
    """``v`` as a reader takes it in: powers of two from 2^10 (and one less) as 2^k, others as written."""
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1024:
        for k, suffix in ((math.log2(v), ""), (math.log2(v + 1), " − 1")):
            if k == int(k):
                return f"2^{int(k)}{suffix}"
    return str(v)


def interval(r, style: Style, kind, plural: bool = False) -> str:
    """A `Range` of ``kind`` (int, float, or None: the bare bounds) in ``style``'s words."""
    noun = {int: style.int_plural if plural else style.int_noun,
            float: style.real_plural if plural else style.real_noun}.get(kind, "")
    low, high = r.low, r.high
    if low is None and high is None:
        return "any finite number" if kind is float else noun
    if kind is int and style.positive and low == 1 and high is None and not r.low_open:
        return "positive ints" if plural else "a positive int"
    if high is None:
        bound = f"{'>' if r.low_open else style.ge} {number(low)}"
    elif low is None:
        bound = f"{'<' if r.high_open else style.le} {number(high)}"
    elif kind is float:
        bound = f"in {'(' if r.low_open else '['}{number(low)}, {number(high)}{')' if r.high_open else ']'}"
        noun = noun if style.interval_noun else ""
    else:
        bound = f"in {number(low)} … {number(high)}"
    return f"{noun} {bound}".strip()


def choices(values) -> str:
    return ", ".join(map(str, values))


__all__ = ["CONFIG", "DIAGNOSTIC", "Style", "choices", "interval", "number"]
