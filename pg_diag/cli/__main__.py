"""``python -m pg_diag.cli``: the ``pg-diag`` command line."""

from pg_diag.cli import entry

entry()
