"""A replication part's sessions: each call of ``pgdiag replication run PART`` recorded in
``RUNS/<part>.sessions.json`` — when it began, on which host, commit and CPU, and how long it ran.

A part runs for hours and resumes over several sessions, and the machine may stop one without a word (its process
goes with it). A running session therefore records how long it has run every
[`HEARTBEAT_S`][pgdiag.experiments.replication_sessions.HEARTBEAT_S]; one that ends records its end. A part's wall
time sums them: a session cut short counts up to its last record.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import threading

#: how often a running session records how long it has run (seconds): a machine that stops it loses at most this
HEARTBEAT_S = 60.0


def log(runs: str, part: str) -> str:
    """Where ``part``'s sessions in ``runs`` are recorded."""
    return os.path.join(runs, f"{part}.sessions.json")


def read(path: str) -> list:
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        return list(json.load(f))


def _write(path: str, record) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(record, f, indent=1)
    os.replace(path + ".tmp", path)


def _since(start) -> float:
    return (datetime.datetime.now(datetime.timezone.utc) - start).total_seconds()


@contextlib.contextmanager
def recorded(path: str, record: dict):
    """A session appended to the log at ``path`` (``record``: its host, commit, …) for the time of the block: its
    running time kept every HEARTBEAT_S (``last_seconds``), its end (``seconds``) and, if the block raised, how it
    stopped (``stopped``: a signal or an error; its time still counts)."""
    sessions, start = read(path), datetime.datetime.now(datetime.timezone.utc)
    sessions.append({"start": start.isoformat(timespec="seconds"), **record})
    _write(path, sessions)
    lock, done = threading.Lock(), threading.Event()

    def beat():
        while not done.wait(HEARTBEAT_S):
            with lock:
                if not done.is_set():
                    sessions[-1]["last_seconds"] = _since(start)
                    _write(path, sessions)

    threading.Thread(target=beat, daemon=True).start()
    try:
        yield
    except BaseException as err:
        with lock:
            sessions[-1]["stopped"] = type(err).__name__
        raise
    finally:
        done.set()
        with lock:
            sessions[-1]["seconds"] = _since(start)
            _write(path, sessions)


def seconds(session: dict) -> float | None:
    """A session's wall time: to its end, or for one the machine cut short to its last record (None: a session
    recorded before running sessions kept their time has none)."""
    return session.get("seconds", session.get("last_seconds"))


def wall(path: str) -> float | None:
    """The wall time of the sessions recorded at ``path``, each to its end or last record; None without any."""
    known = [t for t in map(seconds, read(path)) if t is not None]
    return float(sum(known)) if known else None


def summary(sessions: list) -> dict:
    """What a published part says of its sessions: how many, how many the machine cut short (no end), how many of
    those have no time at all, and the commits and CPUs they ran (XLA compiles for each CPU: a run continued on
    another model is equal to float32 rounding, not bitwise)."""
    return {"sessions": len(sessions), "sessions_cut_short": sum("seconds" not in s for s in sessions),
            "sessions_uncounted": sum(seconds(s) is None for s in sessions),
            "session_commits": list(dict.fromkeys(s.get("commit", "unknown") for s in sessions)),
            "session_cpus": list(dict.fromkeys(s.get("cpu", "unknown") for s in sessions))}


__all__ = ["HEARTBEAT_S", "log", "read", "recorded", "seconds", "summary", "wall"]
