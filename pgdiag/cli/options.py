"""Command-line options read from the library's declarations: an option whose value feeds a library function
takes its default, its choices and its words from the `Setting` that function's signature takes its own default
from, so the two cannot drift apart."""

from __future__ import annotations

from pgdiag.config import Choices, Range, Setting


def option(s: Setting, help: str | None = None, choices: bool = True, **extra) -> dict:
    """``add_argument``'s keywords for the declared setting ``s``: its default; its allowed values as ``choices``
    where it declares a list of them (unless ``choices`` is False: the library's own refusal says more); its
    number type; and ``help`` (default: its doc) with the default named. ``extra`` adds or overrides keywords."""
    kwargs = {"default": s.default, "help": _help(s, help or s.doc)}
    if type(s.default) in (int, float):   # bool is not a number here: a flag takes store_true
        kwargs["type"] = type(s.default)
    allowed = Choices(s.allowed) if isinstance(s.allowed, tuple) else s.allowed
    if choices and isinstance(allowed, Choices):
        kwargs["choices"] = list(allowed.all())
    return {**kwargs, **extra}


def _help(s: Setting, text: str) -> str:
    """``text`` as the other options' help reads (lower case, no full stop), what a number may be (its range), and
    the default; argparse formats help with %, so a literal one is doubled."""
    word = text.split(" ", 1)[0]
    if not word[1:] or word[1:].islower():   # a declaration's sentence ("The agent's seed."), not "MuJoCo ..."
        text = text[:1].lower() + text[1:]
    allowed = f": {s.says()}" if isinstance(s.allowed, Range) else ""
    return f"{text.rstrip('.')}{allowed}; default {s.default}".replace("%", "%%")


__all__ = ["option"]
