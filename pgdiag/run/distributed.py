"""Several processes (hosts) as one SPMD program, on ``jax.distributed``.

Every process runs the same command; the agent axis is sharded over the
global device mesh ([`pgdiag.run.shard`][pgdiag.run.shard]), each process steps the physics
of its own agents, and process 0 writes the run directory. Where the
processes come from:

* explicit: ``initialize(coordinator="host:port", num_processes=N, process_id=I)``,
  the CLI's ``--coordinator --num-processes --process-id``;
* the environment: ``PGDIAG_COORDINATOR``, ``PGDIAG_NUM_PROCESSES``,
  ``PGDIAG_PROCESS_ID``;
* detected: ``coordinator="auto"`` (or, with nothing given, a SLURM job step
  of several tasks or a multi-host TPU slice) lets JAX find the cluster.

On CPUs the processes exchange data through gloo.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time

import jax

from pgdiag.config import ConfigError, Range, Setting

ENV = {"coordinator": "PGDIAG_COORDINATOR", "num_processes": "PGDIAG_NUM_PROCESSES",
       "process_id": "PGDIAG_PROCESS_ID"}


def _detected() -> bool:
    """A cluster JAX can read itself: a SLURM step of several tasks, or a TPU slice of several hosts."""
    if int(os.environ.get("SLURM_NTASKS", "1") or 1) > 1 and "SLURM_JOB_ID" in os.environ:
        return True
    return "," in os.environ.get("TPU_WORKER_HOSTNAMES", "")


def settings(coordinator=None, num_processes=None, process_id=None) -> dict | None:
    """The checked settings (arguments first, then the environment), ``{}`` for cluster detection, or
    None for a single process."""
    given = {"coordinator": coordinator, "num_processes": num_processes, "process_id": process_id}
    for name, var in ENV.items():
        if given[name] is None and os.environ.get(var):
            given[name] = os.environ[var]
    if given["coordinator"] == "auto" or (given["coordinator"] is None and given["num_processes"] is None
                                          and given["process_id"] is None and _detected()):
        return {}
    if all(v is None for v in given.values()):
        return None
    missing = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is None]
    if missing:
        raise ConfigError(f"several processes need --coordinator, --num-processes and --process-id together "
                          f"(or their {', '.join(ENV.values())} variables); missing: {', '.join(missing)}")
    address = str(given["coordinator"])
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"coordinator must be HOST:PORT with a port in 1 … 65535 (or 'auto'), got {address!r}")
    try:
        n = int(given["num_processes"])
        i = int(given["process_id"])
    except (TypeError, ValueError):
        raise ConfigError(f"num_processes and process_id must be integers, got {given['num_processes']!r} and "
                          f"{given['process_id']!r}") from None
    if n < 1:
        raise ConfigError(f"num_processes must be ≥ 1, got {n}")
    if not 0 <= i < n:
        raise ConfigError(f"process_id must be in 0 … {n - 1} (num_processes = {n}), got {i}")
    return {"coordinator_address": address, "num_processes": n, "process_id": i}


#: ``initialize``'s wait for every process to join (``--join-timeout``)
JOIN_TIMEOUT = Setting(120, "Seconds to wait for every process to join.", Range(1))


def initialize(coordinator=None, num_processes=None, process_id=None, timeout: int = JOIN_TIMEOUT.default) -> bool:
    """Join the processes of a multi-process run (see the module docstring); True if it did. Call it
    before anything else touches JAX's devices. ``timeout``: seconds to wait for every process."""
    chosen = settings(coordinator, num_processes, process_id)
    if chosen is None or chosen.get("num_processes") == 1:
        return False
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")  # used by CPU devices only
    where = (f"coordinator {chosen['coordinator_address']} as process {chosen['process_id']} of "
             f"{chosen['num_processes']}" if chosen else "the cluster JAX detected")
    start = time.monotonic()
    if chosen:  # JAX aborts the process when it cannot reach the coordinator or its peers: find that out first
        _check_reachable(chosen["coordinator_address"], chosen["process_id"], timeout, where,
                         chosen["num_processes"])
    try:
        jax.distributed.initialize(**chosen, initialization_timeout=max(1, int(timeout - (time.monotonic() - start))))
    except Exception as e:  # the coordination service reports failures in many types; name what was asked
        raise ConfigError(f"could not join {where} within {timeout} s: is every process started? "
                          f"({type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''})") from None
    return True


def _check_reachable(address: str, process_id: int, timeout: float, where: str, processes: int = 2) -> None:
    """Process 0 listens on the port until every other process has reached it; the others knock until it
    answers. A knock says the process's id and waits for process 0's ``ok``, so a process started twice or
    a probe of the port is not counted for a missing one, and a peer goes on only once it was counted. Either
    side gives up after ``timeout`` with one line naming what did not arrive (JAX itself would abort the
    process with a C++ check failure)."""
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout
    if process_id == 0:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # JAX's coordinator takes the port next
            try:
                s.bind(("", int(port)))
            except OSError as e:
                raise ConfigError(f"cannot host {where}: port {port} is not free on this host ({e.strerror})") from None
            s.listen(processes)
            arrived: set = set()
            while len(arrived) < processes - 1:
                left = deadline - time.monotonic()   # checked every pass: steady probes cannot hold it open
                if left <= 0:
                    missing = ", ".join(str(i) for i in range(1, processes) if i not in arrived)
                    raise ConfigError(f"could not join {where} within {timeout} s: {len(arrived)} of the "
                                      f"{processes - 1} other processes reached it (not process {missing}); "
                                      f"is every process started, with this coordinator?")
                s.settimeout(min(0.25, left))
                try:
                    conn, _ = s.accept()
                except socket.timeout:
                    continue
                with conn:
                    word, _, number = _read_line(conn, min(1.0, left)).partition(" ")
                    if word == "pgdiag" and number.isdigit() and 1 <= int(number) < processes:
                        arrived.add(int(number))
                        with contextlib.suppress(OSError):
                            conn.sendall(b"ok\n")
        return
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=1.0) as conn:
                conn.sendall(f"pgdiag {process_id}\n".encode())
                if _read_line(conn, max(0.1, min(5.0, deadline - time.monotonic()))) == "ok":
                    return
            why = "it did not answer"
        except OSError as e:
            why = f"{e.strerror or e}"
        if time.monotonic() > deadline:
            raise ConfigError(f"could not join {where} within {timeout} s: nothing answers at {address} "
                              f"({why}); is process 0 started, and the address reachable from this host?")
        time.sleep(0.25)


def _read_line(conn, seconds: float) -> str:
    """One short line from ``conn`` (up to its newline, the connection's end, 64 bytes or ``seconds``)."""
    data, end = b"", time.monotonic() + seconds
    while b"\n" not in data and len(data) < 64:
        left = end - time.monotonic()
        if left <= 0:
            break
        conn.settimeout(left)
        try:
            chunk = conn.recv(64 - len(data))
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data.split(b"\n")[0].decode("ascii", "replace").strip()


# --- who writes, and when the others may read -------------------------------------------

def is_lead() -> bool:
    """True in the process that writes run directories, tables and figures (process 0)."""
    return jax.process_index() == 0


def sync(tag: str) -> None:
    """Every process waits here until all have arrived (nothing to do for one process)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils
        multihost_utils.sync_global_devices(f"pgdiag: {tag}")


def _gathered(values):
    """[processes, len(values)] int32: every process's ``values``."""
    import numpy as np
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(np.asarray(values, np.int32))).reshape(
        jax.process_count(), -1)


def agree(what: str, parts: dict) -> None:
    """Every process was started with the same ``parts`` (name -> a JSON-able value: the plan, the settings,
    the output directory): compared across the processes before anything runs. Each process fills its own
    agents from its own arguments, so a difference would train or measure a mix that one manifest records
    as one configuration; every process stops instead, naming what differs."""
    if jax.process_count() <= 1:
        return
    import hashlib
    import json

    digests = [int.from_bytes(hashlib.sha256(json.dumps(v, sort_keys=True, default=str).encode()).digest()[:4],
                              "little") & 0x7FFFFFFF for v in parts.values()]
    every = _gathered(digests)
    differ = [name for k, name in enumerate(parts) if len(set(every[:, k].tolist())) > 1]
    if differ:
        others = sorted({i for i in range(len(every)) if (every[i] != every[0]).any()})
        raise ConfigError(f"{what}: process(es) {', '.join(map(str, others))} were started with another "
                          f"{', '.join(differ)} than process 0; every process runs the same command")


def lead_first(what: str, fn):
    """``fn()`` on process 0 (taking a directory, say), the others told whether it succeeded: where it
    failed, process 0 raises its error and the others stop with one line instead of waiting on a collective
    that process 0 never reaches. Returns what ``fn`` returned on process 0, None elsewhere."""
    if jax.process_count() <= 1:
        return fn()
    result, error = None, None
    if is_lead():
        try:
            result = fn()
        except Exception as e:   # told to the others first, then raised
            error = e
    if not _gathered([error is None]).all():
        if error is not None:
            raise error
        raise ConfigError(f"{what}: process 0 stopped (its message says why)")
    return result


@contextlib.contextmanager
def lead_writes(what: str):
    """``with lead_writes("study record") as lead: if lead: write(...)``: process 0 writes once every
    process has finished reading what the write replaces, and the others read it only after it is written."""
    sync(f"before {what}")
    yield is_lead()
    sync(f"after {what}")
