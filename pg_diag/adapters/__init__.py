"""Agents and parameters from other frameworks: reading what they saved without running their code
([`pg_diag.adapters.archives`][pg_diag.adapters.archives])."""

from pg_diag.adapters.archives import ArchiveError, Fields, load_pickle, load_pickle_file

__all__ = ["ArchiveError", "Fields", "load_pickle", "load_pickle_file"]
