"""Compiles paid once: JAX's persistent compilation cache in the user's cache directory.

A compiled program is stored under a key JAX derives from the program itself (its HLO), the compile options, the
XLA flags and the jax/jaxlib and backend versions, so a changed program, another flag or another release never
reuses a stale executable; this module adds the host's CPU (its model and instruction-set flags) to the
directory, so a cache on a shared home directory is never read by a machine the code was not compiled for. A
program that compiled in under a second is not stored, and the directory is kept under ``MAX_BYTES`` (least
recently used first). Native MuJoCo's programs carry the address of their stepper and miss in a new process.

``PGDIAG_COMPILATION_CACHE=0`` turns it off; ``PGDIAG_COMPILATION_CACHE=DIR`` puts it in ``DIR``; a cache directory
the user gave JAX (``jax_compilation_cache_dir``) is left as it is.
"""

from __future__ import annotations

import hashlib
import os
import platform

#: the setting: 0 (off), a directory, or unset (the user's cache directory)
ENV = "PGDIAG_COMPILATION_CACHE"
#: the cache's size bound, in bytes
MAX_BYTES = 2 << 30
OFF = ("0", "off", "false", "no")


def _cpu_key() -> str:
    """The host's CPU as a short digest: its machine type and, on Linux, its model name and feature flags."""
    text = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            lines = [line for line in f if line.startswith(("model name", "flags", "Features"))]
        text += "".join(sorted(set(lines)))
    except OSError:
        text += platform.processor()
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def directory() -> str | None:
    """Where compiled programs are kept on this host (None: off)."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in OFF:
        return None
    root = value or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pgdiag", "jax")
    return os.path.join(root, _cpu_key())


def configure() -> str | None:
    """Point JAX's persistent compilation cache at [`directory`][pgdiag.run.compile_cache.directory] unless the
    user set one or turned it off; returns the directory in use (None: none)."""
    import jax

    if jax.config.jax_compilation_cache_dir:
        return jax.config.jax_compilation_cache_dir
    path = directory()
    if path is None:
        return None
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:   # an unwritable cache directory is no reason to stop: compile as JAX would without one
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    return path


__all__ = ["ENV", "MAX_BYTES", "configure", "directory"]
