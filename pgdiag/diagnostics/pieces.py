"""A long measurement kept piece by piece, so an interrupted one resumes where it stopped.

At the papers' sample sizes one study program runs for an hour or more on a laptop (the Humanoid landscapes at
iteration 300: 8 subjects × 16 points × up to 100K pairs a point, about 80 minutes on two cores), and a machine
that goes away meanwhile loses all of it. Where a program is planned over [`PIECE_S`][pgdiag.diagnostics.pieces.
PIECE_S], the engine measures its subjects in equal blocks, each block's tables kept as soon as they are measured

    RUN_DIR/diagnostics/.pieces/<study name>/<key>/   key.json (written last), <table>.parquet, timing.json

under the first subject's run (a name cannot start with '.', so no study is saved there). A later run of the same
study — same kind, settings and subjects — reads a kept block back instead of measuring it again; the blocks go
when the study is saved whole. A subject's estimates do not depend on the subjects measured beside it
([`subject_keys`][pgdiag.diagnostics.subjects.subject_keys]: its streams' keys are its own), so a study measured in
pieces holds what it holds measured in one program, to float32 rounding.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil

import jax
import numpy as np

from pgdiag.diagnostics.tables import DIAGNOSTICS
from pgdiag.run import store

#: the longest a program is planned to run before its subjects are split into blocks kept one by one (seconds):
#: a machine lent for a session loses at most this much of a measurement
PIECE_S = 600.0
FORMAT = "pgdiag.piece/1"


def directory(run_path: str, name: str) -> str:
    """Where the blocks of the study ``name`` measured with ``run_path``'s subjects first are kept."""
    return os.path.join(run_path, DIAGNOSTICS, ".pieces", name)


def count(units: int, planned_s: float | None, limit: float = PIECE_S) -> int:
    """How many blocks a program of ``units`` subjects planned at ``planned_s`` seconds is measured in: enough
    that each is planned within ``limit`` (one where no plan is given), never more than its subjects."""
    if planned_s is None or not planned_s > limit or units < 2:
        return 1
    return min(units, math.ceil(planned_s / limit))


def settled(where: str, what: dict, proposed: int) -> int:
    """The block count of the program ``what`` (its record, every subject): the one an earlier run kept blocks
    under, else ``proposed``, written down so a later plan (this host's costs recorded meanwhile) splits it the
    same way and finds the blocks kept."""
    path = _path(where, what) + ".json"
    try:
        with open(path) as f:
            kept = json.load(f)
        if isinstance(kept, dict) and kept.get("record") == what and isinstance(kept.get("pieces"), int):
            return max(1, min(kept["pieces"], len(what["subjects"])))
    except (OSError, ValueError, UnicodeDecodeError):
        pass
    if proposed > 1:
        os.makedirs(where, exist_ok=True)
        store.write_json(path, {"record": what, "pieces": proposed})
    return proposed


def blocks(units: int, pieces: int) -> list:
    """``units`` subjects in ``pieces`` contiguous blocks of sizes differing by at most one: [(start, stop)]."""
    edges = np.linspace(0, units, pieces + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def take(subjects, start: int, stop: int):
    """The subjects ``start`` … ``stop − 1`` of ``subjects`` (sliced on the host: indexing device arrays would
    compile a program per leaf)."""
    cut = lambda x: jax.device_put(np.asarray(x)[start:stop])  # noqa: E731
    return dataclasses.replace(subjects, states=jax.tree.map(cut, subjects.states),
                               knobs=jax.tree.map(cut, subjects.knobs), rows=subjects.rows[start:stop],
                               statics=subjects.statics[start:stop])


def record(kind: str, settings: dict, rows: list) -> dict:
    """What a block is: the study's kind, its settings and its subjects (run, agent, seed, iteration)."""
    subjects = [[os.path.abspath(r["run"]), int(r["agent"]), int(r["seed"]), int(r["iteration"])] for r in rows]
    return json.loads(json.dumps({"format": FORMAT, "kind": kind, "settings": settings, "subjects": subjects},
                                 default=str))


def _path(where: str, what: dict) -> str:
    digest = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:20]
    return os.path.join(where, digest)


def load(where: str, what: dict, tables) -> tuple | None:
    """The kept block ``what`` (its {table: frame}, its timing), or None where none is kept whole: its record
    must equal ``what`` field for field, and every table be there."""
    import pandas as pd

    path = _path(where, what)
    try:
        with open(os.path.join(path, "key.json")) as f:
            if json.load(f) != what:
                return None
        with open(os.path.join(path, "timing.json")) as f:
            timing = json.load(f)
        frames = {t: pd.read_parquet(os.path.join(path, f"{t}.parquet")) for t in tables}
    except (OSError, ValueError, UnicodeDecodeError):
        return None   # not kept, or kept in part: measured again
    return frames, {**(timing if isinstance(timing, dict) else {}), "kept": True}


def save(where: str, what: dict, frames: dict, timing: dict) -> None:
    """Keep a measured block: its tables and timing, then its record (a block without one is not read)."""
    path = _path(where, what)
    os.makedirs(path, exist_ok=True)
    for table, frame in frames.items():
        store.write_metrics(os.path.join(path, f"{table}.parquet"), frame)
    store.write_json(os.path.join(path, "timing.json"), timing)
    store.write_json(os.path.join(path, "key.json"), what)


def clear(where: str) -> None:
    """The kept blocks of a study saved whole, removed."""
    shutil.rmtree(where, ignore_errors=True)
    parent = os.path.dirname(where)
    if os.path.isdir(parent) and not os.listdir(parent):
        os.rmdir(parent)


__all__ = ["PIECE_S", "blocks", "clear", "count", "directory", "load", "record", "save", "settled", "take"]
