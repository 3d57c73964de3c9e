"""A run's metrics as TensorBoard event files: one directory per agent, a scalar per metric and iteration.

    pgdiag export RUN_DIR [--logdir DIR]        # default RUN_DIR/tensorboard
    tensorboard --logdir RUN_DIR/tensorboard

Written without TensorFlow: an event file is a TFRecord stream (length, masked
CRC-32C of the length, payload, masked CRC-32C of the payload) of ``Event``
protocol buffers — ``wall_time`` (field 1, double), ``step`` (2, int64),
``file_version`` (3, string) or ``summary`` (5) holding ``Value``s of ``tag``
(1, string) and ``simple_value`` (2, float). The step is the iteration; the
agent's directory is named by its index, grid point (label or knob values)
and seed, so TensorBoard's run filter groups seeds of a configuration.
"""

from __future__ import annotations

import os
import re
import struct
import time

import numpy as np

from pgdiag.run.store import load_run

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1   # Castagnoli polynomial, reflected
    _CRC_TABLE.append(_c)


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def record(payload: bytes) -> bytes:
    """One TFRecord."""
    length = struct.pack("<Q", len(payload))
    return length + struct.pack("<I", _masked(length)) + payload + struct.pack("<I", _masked(payload))


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1   # int64 fields encode negatives in ten bytes
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes_field(number: int, data: bytes) -> bytes:
    return _field(number, 2) + _varint(len(data)) + data


def scalar_event(tag: str, value: float, step: int, wall_time: float) -> bytes:
    value_msg = _bytes_field(1, tag.encode()) + _field(2, 5) + struct.pack("<f", value)
    summary = _bytes_field(1, value_msg)
    return (_field(1, 1) + struct.pack("<d", wall_time) + _field(2, 0) + _varint(step)
            + _bytes_field(5, summary))


def version_event(wall_time: float) -> bytes:
    return _field(1, 1) + struct.pack("<d", wall_time) + _bytes_field(3, b"brain.Event:2")


def _agent_dirname(row, names: dict) -> str:
    name = f"agent{int(row.agent):03d}_{names[int(row.point)]}_seed{int(row.seed)}"
    return re.sub(r"[^A-Za-z0-9_.=,+-]+", "_", name)


def agent_names(manifest: dict) -> dict:
    """Each grid point's name in the agents' directory names: its label, else its knob values."""
    points = manifest["grid_points"] or [{}]
    labels = manifest.get("labels") or []
    return {i: labels[i] if labels else (",".join(f"{k}={v}" for k, v in p.items()) or "run")
            for i, p in enumerate(points)}


def scalar_records(rows, metrics, wall: float) -> bytes:
    """The TFRecords of ``rows``' finite ``metrics`` (metrics not measured at an iteration are left out)."""
    chunks = []
    for row in rows.sort_values("iteration").itertuples(index=False):
        for m in metrics:
            v = float(getattr(row, m))
            if np.isfinite(v):
                chunks.append(record(scalar_event(m, v, int(row.iteration), wall)))
    return b"".join(chunks)


def event_path(logdir: str, first_row, names: dict, wall: float) -> str:
    """An agent's event file (its directory made)."""
    directory = os.path.join(logdir, _agent_dirname(first_row, names))
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, f"events.out.tfevents.{int(wall)}.pgdiag")


def export(run_dir: str, logdir: str | None = None) -> list[str]:
    """Write one event file per agent of the run in ``run_dir``; returns their paths."""
    run = load_run(run_dir)
    logdir = logdir or os.path.join(run_dir, "tensorboard")
    names = agent_names(run.manifest)
    metrics = [m for m in run.manifest["metrics"] if m in run.metrics.columns]
    wall = time.time()
    paths = []
    for agent, part in run.metrics.groupby("agent", sort=True):
        path = event_path(logdir, part.iloc[0], names, wall)
        with open(path, "wb") as f:
            f.write(record(version_event(wall)) + scalar_records(part, metrics, wall))
        paths.append(path)
    return paths
