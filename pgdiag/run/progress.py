"""Compile accounting, the progress bar, and how a run is cut into compiled chunks."""

from __future__ import annotations

import sys
import time

import jax


class CompileCounter:
    """Counts XLA backend compiles (and their seconds) while active."""

    _installed = False
    _active: list["CompileCounter"] = []

    def __init__(self):
        self.count = 0
        self.seconds = 0.0

    @classmethod
    def _listener(cls, name, duration, **_):
        if name == "/jax/core/compile/backend_compile_duration":
            for c in cls._active:
                c.count += 1
                c.seconds += duration

    def __enter__(self):
        if not CompileCounter._installed:
            jax.monitoring.register_event_duration_secs_listener(CompileCounter._listener)
            CompileCounter._installed = True
        CompileCounter._active.append(self)
        return self

    def __exit__(self, *exc):
        CompileCounter._active.remove(self)


def attached() -> bool:
    """Whether a person watches this process: a terminal on stderr, or a Jupyter/Colab kernel."""
    if sys.stderr.isatty():
        return True
    shell = sys.modules.get("IPython")
    try:
        ip = shell.get_ipython() if shell is not None else None
    except Exception:  # an IPython too old or half imported
        return False
    return ip is not None and type(ip).__name__ in ("ZMQInteractiveShell", "Shell", "TerminalInteractiveShell")


#: how often a bar written into a log (stderr not a terminal) adds a line, in seconds
LOG_EVERY = 30.0


def _terminal(stream) -> bool:
    """Whether ``stream`` is drawn on (a terminal, a notebook): there a bar redraws in place with "\\r"; in a log
    file it adds a line now and then instead of hundreds of redraws."""
    if stream is sys.stderr:
        return attached()
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """A one-line progress bar on stderr, redrawn between compiled chunks (in a log: a line at most every
    ``LOG_EVERY`` seconds, and the last)."""

    def __init__(self, total: int, label: str, enabled: bool, terminal: bool | None = None):
        self.total, self.label, self.enabled = total, label, enabled
        self.terminal = _terminal(sys.stderr) if terminal is None else terminal
        self.start = self.logged = time.perf_counter()

    def update(self, done: int, extra: str = ""):
        if not self.enabled:
            return
        now = time.perf_counter()
        elapsed = now - self.start
        frac = done / max(self.total, 1)
        eta = elapsed / frac - elapsed if frac > 0 else float("nan")
        bar = "#" * int(30 * frac) + "." * (30 - int(30 * frac))
        line = f"{self.label} [{bar}] {done}/{self.total} it  {elapsed:6.1f}s  eta {eta:6.1f}s {extra}"
        if self.terminal:
            sys.stderr.write("\r" + line)
        elif now - self.logged >= LOG_EVERY or done >= self.total:
            sys.stderr.write(line.rstrip() + "\n")
            self.logged = now
        sys.stderr.flush()

    def close(self):
        if self.enabled and self.terminal:
            sys.stderr.write("\n")
            sys.stderr.flush()


class Ticker:
    """A one-line bar on stderr for one compiled program whose call cannot report its own progress: redrawn
    twice a second from the clock — compiling, then running against ``planned`` seconds (the plan's estimate,
    None where this host has no cost for it) — and closed with the time it took beside the plan's.

        with Ticker("gradient study 1/2", planned=90.0, enabled=True) as tick:
            tick.phase("compiling"); compiled = ...; tick.phase("running"); compiled(...)
    """

    def __init__(self, label: str, planned: float | None, enabled: bool, stream=None, interval: float = 0.5,
                 terminal: bool | None = None):
        self.label, self.planned, self.enabled = label, planned, enabled
        self.stream = stream or sys.stderr
        self.terminal = _terminal(self.stream) if terminal is None else terminal
        self.interval = interval if self.terminal else max(interval, LOG_EVERY)   # a log: a line now and then
        self._phase, self._since, self._start = "starting", time.perf_counter(), time.perf_counter()
        self._stop = None
        self._took = {}

    def __enter__(self):
        if self.enabled:
            import threading

            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def phase(self, name: str) -> None:
        now = time.perf_counter()
        self._took[self._phase] = self._took.get(self._phase, 0.0) + now - self._since
        self._phase, self._since = name, now

    def line(self, now: float | None = None) -> str:
        """The bar as drawn at ``now``."""
        now = time.perf_counter() if now is None else now
        elapsed = now - self._since
        if self._phase != "running" or not self.planned:
            return f"{self.label}: {self._phase} {clock(elapsed)}"
        frac = min(elapsed / self.planned, 1.0)
        bar = "#" * int(24 * frac) + "." * (24 - int(24 * frac))
        left = (f"about {clock(self.planned - elapsed)} left" if elapsed < self.planned
                else f"{clock(elapsed - self.planned)} past the plan")
        return f"{self.label}: [{bar}] {clock(elapsed)} of ~{clock(self.planned)} planned, {left}"

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.stream.write("\r" + self.line().ljust(100) if self.terminal else self.line() + "\n")
            self.stream.flush()

    def __exit__(self, *exc):
        if self._stop is None:
            return
        self._stop.set()
        self._thread.join()
        summary = self.summary(failed=exc[0] is not None)
        self.stream.write(("\r" + summary.ljust(100) if self.terminal else summary) + "\n")
        self.stream.flush()

    def summary(self, failed: bool = False) -> str:
        """The closing line: the whole time, compiling and running apart, beside the plan's running time."""
        self.phase("closed")
        took = self._took
        parts = [f"{name} {clock(took[name])}" for name in ("compiling", "running") if name in took]
        plan = f"; planned ~{clock(self.planned)} running" if self.planned else ""
        return (f"{self.label}: {'stopped' if failed else 'done'} in {clock(time.perf_counter() - self._start)}"
                + (f" ({', '.join(parts)}{plan})" if parts or plan else ""))


def clock(seconds: float) -> str:
    """``seconds`` as m:ss (h:mm:ss past an hour)."""
    s = max(int(round(seconds)), 0)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def duration(seconds: float) -> str:
    """``seconds`` in the unit a person reads: 45 s, 12 min, 2.4 h."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate(label: str, done: int, seconds: float, remaining: int, now: float | None = None) -> str | None:
    """The line a long run prints after its first chunk: ``done`` iterations took ``seconds`` (compiling
    excluded), so ``remaining`` more take about that many times as long. None when that is under a minute."""
    left = seconds / max(done, 1) * remaining
    if left < 60:
        return None
    end = time.strftime("%H:%M", time.localtime((time.time() if now is None else now) + left))
    return (f"{label}: {done} iteration{'s' if done != 1 else ''} in {duration(seconds)}; about {duration(left)} "
            f"for the remaining {remaining} (until about {end})")


#: the most agent-iterations a default chunk holds: a sweep of hundreds of agents (the 2^4 ablation's 480 at the
#: papers' length) would otherwise run most of an hour on a laptop between the states a resume starts from
CHUNK_AGENT_ITERATIONS = 2048


def default_chunk(num_iterations: int, target_chunks: int = 20, agents: int = 1) -> int:
    """Iterations per chunk giving at least ``target_chunks`` chunks (progress, and the state a resume
    starts from, at most about ``1/target_chunks`` of the run apart), and at most
    [`CHUNK_AGENT_ITERATIONS`][pgdiag.run.progress.CHUNK_AGENT_ITERATIONS] over ``agents``; the last chunk may
    be shorter (the chunk program runs any count up to its length: no extra compile)."""
    return max(1, min(num_iterations // target_chunks, CHUNK_AGENT_ITERATIONS // max(agents, 1)))


def chunk_lengths(start: int, num_iterations: int, chunk: int, stops=()) -> list[int]:
    """The lengths of the compiled chunks that take a run from iteration ``start``
    to ``num_iterations``: cut at the multiples of ``chunk`` and at every
    iteration in ``stops`` (checkpoints), so each checkpoint falls between two
    chunks. The cuts depend on absolute iterations only, so a resumed run is cut
    exactly as the uninterrupted one."""
    cuts = set(range(chunk, num_iterations, chunk)) | {i for i in stops if 0 < i < num_iterations}
    cuts = sorted(c for c in cuts | {num_iterations} if c > start)
    return [b - a for a, b in zip([start] + cuts[:-1], cuts)]
