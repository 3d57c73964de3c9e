"""Taking a run directory for writing: once, by one process, and only where it can be written.

A run directory holds results a researcher may publish, so training never writes over another run by
accident:

* **write once** — a directory that holds a run (a manifest, a metrics table or checkpoints) is refused,
  naming the choices: resume it, overwrite it (which removes the old run's files first, so no stale
  checkpoint survives to be read as this run's), or write elsewhere;
* **one writer** — a lock (``fcntl.flock`` on ``RUN/.lock``) is held for the run's life; a second writer
  fails at once with the holder's process id. The kernel drops the lock when its process dies, so a lock
  left by a killed run is recognised (the file names a process that no longer holds it) and taken over;
* **writable before compiling** — the directory is created and the lock file written before any
  program is compiled, so a path that is a file, lies under a file, or is read-only fails in a second
  with one line, not after training.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import platform
import shutil
import sys
import time

from pgdiag.run.store import CHECKPOINTS, MANIFEST, METRICS_FILE, RunDirError, is_training

LOCK = ".lock"
#: What a run writes into its directory (besides the lock), with the measurements the diagnostics save in it
#: (``diagnostics``); ``overwrite`` removes exactly these.
RUN_FILES = (MANIFEST, METRICS_FILE, CHECKPOINTS, "plots", "tensorboard", "diagnostics")


def held_run(path: str) -> list[str]:
    """The run files in ``path`` (empty when it holds no run)."""
    return [f for f in (MANIFEST, METRICS_FILE, CHECKPOINTS) if os.path.lexists(os.path.join(path, f))]


def _why(err: OSError) -> str:
    if err.errno == errno.EROFS:
        return "the file system is read-only"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if err.errno == errno.ENOSPC:
        return "no space left on the device"
    return err.strerror or str(err)


def _make_dir(path: str) -> None:
    if os.path.lexists(path) and not os.path.isdir(path):
        raise RunDirError(f"cannot write the run directory {path!r}: it is an existing file; give --out a "
                          f"directory")
    try:
        os.makedirs(path, exist_ok=True)
    except (NotADirectoryError, FileExistsError):
        parent = os.path.dirname(os.path.abspath(path))
        while parent and not os.path.exists(parent):
            parent = os.path.dirname(parent)
        raise RunDirError(f"cannot write the run directory {path!r}: {parent!r} is a file, not a directory") \
            from None
    except OSError as err:
        raise RunDirError(f"cannot create the run directory {path!r}: {_why(err)}") from None


class RunLock:
    """The lock of one run directory, held from [`acquire`][pgdiag.run.claim.RunLock.acquire] to
    [`release`][pgdiag.run.claim.RunLock.release]."""

    def __init__(self, path: str):
        self.path = path
        self.file = os.path.join(path, LOCK)
        self.fd: int | None = None
        self.taken_over: str | None = None     # the holder recorded by a lock its process no longer held

    def acquire(self) -> "RunLock":
        try:
            fd = os.open(self.file, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise RunDirError(f"cannot write into the run directory {self.path!r}: {_why(err)}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 512).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise RunDirError(f"{self.path!r} is being written by {holder}; wait for it to end, or write this run "
                              f"to another --out") from None
        old = os.read(fd, 512).decode(errors="replace").strip()
        self.taken_over = old or None          # its writer ended (or was killed) without clearing it
        record = f"process {os.getpid()} on {platform.node()} since {time.strftime('%Y-%m-%d %H:%M:%S')}"
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, record.encode(), 0)
            os.fsync(fd)
        except OSError as err:
            os.close(fd)
            raise RunDirError(f"cannot write into the run directory {self.path!r}: {_why(err)}") from None
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)           # an empty lock file: its last writer ended cleanly
        os.close(self.fd)                      # closing drops the flock
        self.fd = None


def stopped_before_starting(run_dir: str) -> bool:
    """Whether ``run_dir`` is what a run stopped while it compiled leaves: its lock and an empty checkpoints
    directory at most."""
    try:
        names = set(os.listdir(run_dir))
    except OSError:
        return False
    checkpoints = os.path.join(run_dir, CHECKPOINTS)
    return ".lock" in names and names <= {".lock", CHECKPOINTS} and (
        CHECKPOINTS not in names or (os.path.isdir(checkpoints) and not os.listdir(checkpoints)))


def claim(path: str, overwrite: bool = False, resume: bool = False) -> RunLock:
    """Create ``path`` if needed, take its lock and make sure training may write there.

    A directory that holds a run is refused unless ``resume`` (the caller continues that run) or ``overwrite`` (its
    run files are removed here, under the lock), and so is one inside another run's directory (its checkpoints, its
    diagnostics). Raises [`RunDirError`][pgdiag.run.store.RunDirError] with one line naming the directory and the
    choices. Returns the held [`RunLock`][pgdiag.run.claim.RunLock]."""
    if not resume:
        _refuse_around_a_run(path)
    left = not resume and stopped_before_starting(path)
    _make_dir(path)
    lock = RunLock(path).acquire()
    if left and stopped_before_starting(path):   # still so, under the lock
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(path, CHECKPOINTS))   # empty: nothing was saved in it
        sys.stderr.write(f"{path}: taking over the directory a run stopped before it started left (only its "
                         f"lock); nothing in it was trained\n")
    try:
        found = held_run(path)
        if found and not resume:
            if not overwrite:
                status = _status(path)
                raise RunDirError(f"{path!r} already holds a run ({status}: {', '.join(found)}); continue it with "
                                  f"`pgdiag resume {path}` (resume=...), replace it with --overwrite "
                                  f"(overwrite=True), or give another --out")
            for name in RUN_FILES:
                target = os.path.join(path, name)
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target)
                elif os.path.lexists(target):
                    os.remove(target)
    except BaseException:
        lock.release()
        raise
    return lock


def holds_training_run(path: str) -> bool:
    """Whether ``path`` holds a training run's manifest (a file of that name written by anything else is not
    one)."""
    try:
        with open(os.path.join(path, MANIFEST)) as f:
            return is_training(json.load(f))
    except (OSError, ValueError, UnicodeDecodeError):
        return False


def _refuse_around_a_run(path: str) -> None:
    """Refuse a run whose files would mix with another's: one inside another run's directory, or one in a
    directory that holds other runs below it (each of those could then no longer be resumed or loaded)."""
    parent = os.path.dirname(os.path.abspath(path))
    while True:
        if holds_training_run(parent):
            raise RunDirError(f"cannot write a run into {path!r}: it lies inside the run directory {parent!r}, "
                              f"whose files it would mix with; give --out a directory outside it")
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    for here, dirs, _ in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (here == path and d in RUN_FILES))
        if here != path and holds_training_run(here):
            raise RunDirError(f"cannot write a run into {path!r}: the run directory {here!r} lies inside it, and "
                              f"their files would mix; give --out a directory of its own")


def _status(path: str) -> str:
    try:
        with open(os.path.join(path, MANIFEST)) as f:
            m = json.load(f)
        return f"{m.get('status', 'unknown status')} after {m.get('iterations_done', '?')} iterations"
    except (OSError, ValueError, AttributeError):
        return "no readable manifest"


def fresh_dir(label: str, root: str = "runs") -> str:
    """A new directory name under ``root`` for a run given no output directory: ``root/YYYYMMDD-HHMMSS-label``
    (``-2``, ``-3`` … where that is taken)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in label).strip("-") or "run"
    stem = os.path.join(root, f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}")
    path, k = stem, 1
    while os.path.lexists(path):
        k += 1
        path = f"{stem}-{k}"
    return path
