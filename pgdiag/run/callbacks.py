"""What a training run tells the code watching it: callbacks called on the host between compiled chunks.

    class Print(pgdiag.Callback):
        def on_chunk(self, event):
            print(event.iteration, event.rows.groupby("agent").mean_return.last().mean())

    pgdiag.sweep(config, seeds=5, out="runs/x", callbacks=[Print()], loggers=["tensorboard"])

Each event carries the run's directory, label and manifest, the iterations done, and (after a chunk) the metric
rows of that chunk's iterations, one per agent and iteration, as the run's metrics table holds them: the values
the chunk's one transfer brought to the host, never a value read from inside the compiled program. Only the
process that writes the run directory calls them. A callback that raises is named once on stderr and called no
more; the run goes on.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any


@dataclasses.dataclass(frozen=True)
class Event:
    """What a callback is told."""

    run_dir: str | None   # the run directory (None: a run kept in memory)
    label: str            # the run's label
    manifest: dict        # its manifest as written after the event (configuration, agents, grid)
    iteration: int        # iterations done by every agent
    total: int            # iterations the run trains
    rows: Any = None      # on_chunk: this chunk's metric rows (pandas; agent, iteration, env_steps, metrics, ...)
    checkpoint: int | None = None   # on_checkpoint: the iteration whose kept checkpoint was written
    status: str | None = None       # on_end: "complete", "interrupted" or "failed"


class Callback:
    """Hooks a run calls on the host; override the ones wanted."""

    def on_start(self, event: Event) -> None:
        """Before the first chunk (after a resume's restore)."""

    def on_chunk(self, event: Event) -> None:
        """After each chunk is written: ``event.rows`` holds its iterations' metrics."""

    def on_checkpoint(self, event: Event) -> None:
        """After a checkpoint that the run keeps is written (``event.checkpoint``)."""

    def on_end(self, event: Event) -> None:
        """However the run ended (``event.status``)."""


class Function(Callback):
    """A plain function, called on each chunk."""

    def __init__(self, fn):
        self.fn = fn

    def on_chunk(self, event: Event) -> None:
        self.fn(event)


class Dispatch:
    """Calls every callback's hook; one that raises is named and dropped, the others go on."""

    def __init__(self, callbacks: list):
        self.callbacks = list(callbacks)

    def __bool__(self) -> bool:
        return bool(self.callbacks)

    def call(self, hook: str, event: Event) -> None:
        for c in list(self.callbacks):
            try:
                getattr(c, hook)(event)
            except Exception as err:   # noqa: BLE001 — a watcher's failure must not stop the training it watches
                self.callbacks.remove(c)
                why = " ".join(str(err).split())[:300]
                sys.stderr.write(f"{event.label}: callback {type(c).__name__}.{hook} failed "
                                 f"({type(err).__name__}: {why}); it is called no more, the run goes on\n")


__all__ = ["Callback", "Dispatch", "Event", "Function"]
