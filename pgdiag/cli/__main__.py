"""``python -m pgdiag.cli``: the ``pgdiag`` command line."""

from pgdiag.cli import entry

entry()
