"""A run's signals: Ctrl-C and SIGTERM stop it at once, except while its run directory is being written,
where they wait for the write to finish; waiting on a compiled chunk polls so a signal is handled at once."""

from __future__ import annotations

import contextlib
import signal
import threading
import time

import jax


class Interrupted(KeyboardInterrupt):
    """A run was stopped by SIGTERM (Ctrl-C raises KeyboardInterrupt itself)."""


def wait(tree) -> None:
    """Block until ``tree`` is computed, polling so that Ctrl-C and SIGTERM are
    handled at once rather than when a long compiled chunk returns (and a signal whose exception was
    swallowed where it landed is raised here)."""
    delay = 1e-4
    for x in jax.tree.leaves(tree):
        while isinstance(x, jax.Array) and not x.is_ready():
            _raise_unhandled()
            time.sleep(delay)
            delay = min(2 * delay, 0.05)
    _raise_unhandled()


def _raise_unhandled() -> None:
    """Raise a signal received during the run that nothing raised yet: Python drops an exception raised in a
    callback such as JAX's garbage-collection hook ("Exception ignored in ..."), so a Ctrl-C landing there
    would otherwise be lost and the run go on."""
    if _Signals.received is not None and not _Signals.writing:
        signum, _Signals.received = _Signals.received, None
        _raise_for(signum)


class _Signals:
    """Ctrl-C and SIGTERM during a run: raised at once, except while the run directory is being written
    ([`writing`][pgdiag.run.interrupts._Signals.writing]), where they wait for the write to finish — an exception
    inside orbax's checkpoint save can leave its background threads waiting forever and the directory half
    written."""

    writing = False
    pending: int | None = None
    received: int | None = None   # the run's signal, until the run has ended (it may have been swallowed)


def _raise_for(signum: int):
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted(f"signal {signum}")


@contextlib.contextmanager
def sigterm_interrupts():
    """Turn SIGTERM into [`Interrupted`][pgdiag.run.interrupts.Interrupted] and Ctrl-C into KeyboardInterrupt for
    the duration of a run, deferred while the run directory is written (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, _frame):
        if _Signals.writing:
            _Signals.pending = signum
            return
        _Signals.received = signum
        _raise_for(signum)

    # a process started with a signal ignored (SIGINT in a background job) keeps ignoring it
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)
                if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        _Signals.pending = _Signals.received = None


@contextlib.contextmanager
def writing(raise_pending: bool = True):
    """A section during which a signal waits (see [`_Signals`][pgdiag.run.interrupts._Signals]); it is raised when
    the section ends (with ``raise_pending``; the run's last write, after which there is nothing left to stop, drops
    it)."""
    outer = _Signals.writing
    _Signals.writing = True
    try:
        yield
    finally:
        _Signals.writing = outer
    if not outer and raise_pending and _Signals.pending is not None:
        signum, _Signals.pending = _Signals.pending, None
        _raise_for(signum)


__all__ = ["Interrupted", "sigterm_interrupts", "wait", "writing"]
