"""The errors and notices every layer raises, in a module that imports nothing of pgdiag (the lowest layer)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is unknown, of the wrong type, or out of range."""


class Notice(UserWarning):
    """What pgdiag assumed or chose for the user (raw observations where a file holds no statistics, ...): a
    warning printed as one line, "pgdiag: <message>", without the source line Python's warnings add."""


def show_notices(showwarning):
    """``warnings.showwarning`` that prints a [`Notice`][pgdiag.errors.Notice] as one line and leaves every other
    warning to ``showwarning``."""
    import sys

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, Notice):
            (file or sys.stderr).write(f"pgdiag: {message}\n")
        else:
            showwarning(message, category, filename, lineno, file, line)
    show.pgdiag = True
    return show


__all__ = ["ConfigError", "Notice", "show_notices"]
