"""The study protocol: what a measurement on checkpointed agents declares, and the records its methods take.

A measurement is a subclass of [`Diagnostic`][pgdiag.diagnostics.protocol.Diagnostic]. The engine
([`pgdiag.diagnostics.engine`][]) calls its methods in one order for every study, each with one typed record:

1. `resolve(settings, statics)`: the settings against every run's `Static` (bad settings fail here, before
   a checkpoint is read); returns the study's resolved settings.
2. `group_by(settings, static)`: which subjects share a compiled program.
3. `shape(group: Group) -> Shape`: one group's program before it compiles: how many pairs, how wide and long,
   its estimated peak memory and whether it fits. By default worked out from `work(group)`, what one subject's
   program samples and holds: every subject vmapped where they fit together, in turn where they do not.
   `Shape.resolved` is what that program compiles (the resolved settings, or ones widened or narrowed to fit);
   from here on they are read from the shape alone.
4. `program(shape: Shape) -> jitted (states, knobs, keys) -> outputs`.
5. `frames(measured: Measured) -> {table: DataFrame}`: the outputs as the study's tables.
6. `record(shapes) -> Record`: what the manifest keeps of the resolved settings.

`examples/own_study.py` defines one outside the package; `docs/guides/own-study.md` walks through it.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
from typing import Any, Callable, ClassVar, Generic, Hashable, NamedTuple, Sequence, TypeVar

Resolved = TypeVar("Resolved")


#: bytes per word of the memory model (float32 and int32 everywhere; `pgdiag.diagnostics.memory.WORD`)
WORD = 4


class Sizes(NamedTuple):
    """The network sizes a program is shaped for."""

    obs: int       # observation size
    act: int       # action size
    params: int    # policy + value parameters


@dataclasses.dataclass(frozen=True)
class Group(Generic[Resolved]):
    """One program's subjects, as [`Diagnostic.shape`][pgdiag.diagnostics.protocol.Diagnostic.shape] sees
    them: nothing is loaded for a dry run, only counted."""

    settings: Any          # the study's checked settings
    resolved: Resolved     # what `resolve` returned for every run of the study
    statics: tuple         # the `Static` of each subject of the group
    units: int             # subjects in the group
    sizes: Sizes           # network sizes
    memory: int            # bytes the program may take

    @property
    def static(self):
        """The configuration every subject of the group shares (the first one's)."""
        return self.statics[0]


@dataclasses.dataclass(frozen=True)
class Shape(Generic[Resolved]):
    """One compiled program of a study, before it compiles: what a dry run prints and the engine compiles."""

    batching: str           # "vmap": subjects together; "map": in turn
    units: int              # subjects
    pairs: int              # state–action pairs sampled
    sequential_steps: int   # batched steps one after another
    width: int              # environments one batched step moves
    bytes: int              # estimated peak (`pgdiag.diagnostics.memory`)
    fits: bool              # bytes within the memory it was shaped for
    note: str = ""          # what was changed to fit ("" when nothing)
    #: the labels (algorithms) whose subjects it measures: filled in by the engine, never by a measurement
    labels: tuple = dataclasses.field(default=(), kw_only=True)
    #: what `program` compiles: the group's own (widened, fitted) resolved settings
    resolved: Resolved = dataclasses.field(default=None, compare=False, repr=False)
    #: the study's settings and the group's shared configuration (filled in by the engine)
    settings: Any = dataclasses.field(default=None, compare=False, repr=False)
    static: Any = dataclasses.field(default=None, compare=False, repr=False)
    #: (what, shape, advice) of the refusal when it does not fit (`memory.require_memory`)
    refusal: tuple = dataclasses.field(default=(), compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class Measured(Generic[Resolved]):
    """One program's outputs, as [`Diagnostic.frames`][pgdiag.diagnostics.protocol.Diagnostic.frames] reads
    them."""

    subjects: Any          # `pgdiag.diagnostics.subjects.Subjects`: rows, stacked states and knobs
    shape: Shape           # the program's shape (its settings and its resolved settings)
    outputs: dict          # what the program returned, fetched to the host

    @property
    def resolved(self) -> Resolved:
        """The resolved settings the program compiled."""
        return self.shape.resolved

    @property
    def settings(self):
        return self.shape.settings


class Tables:
    """A measurement's saved result where it declares no type of its own: ``manifest`` (settings, what they resolved
    to, subjects, versions, timings) and each table as an attribute of its name (a DataFrame)."""

    def __init__(self, manifest: dict, **tables):
        taken = {"manifest", "tables"} & set(tables)
        if taken:
            raise ValueError(f"a table cannot be named {sorted(taken)[0]!r}: Tables keeps the manifest and the table "
                             f"names under those attributes")
        self.manifest = manifest
        self.tables = tuple(tables)
        for name, frame in tables.items():
            setattr(self, name, frame)

    def __repr__(self) -> str:
        return f"Tables({self.manifest.get('kind', '?')}: {', '.join(self.tables)})"


@dataclasses.dataclass(frozen=True)
class Work:
    """What one subject's program does and holds, in the measurement's own words: the default
    [`shape`][pgdiag.diagnostics.protocol.Diagnostic.shape] works the group's program out from it."""

    pairs: int       # state–action pairs it samples
    steps: int       # batched steps it takes one after another
    envs: int        # environments one of its batched steps moves
    words: int       # 4-byte words it holds at its peak (its arrays' elements, inputs and outputs included)


@dataclasses.dataclass(frozen=True)
class Record:
    """What the manifest keeps of a study's resolved settings: its `resolved` entry and any entries beside it."""

    resolved: dict
    extra: dict = dataclasses.field(default_factory=dict)


class Diagnostic(abc.ABC, Generic[Resolved]):
    """A measurement on checkpointed agents. Subclasses set the class attributes and implement `program`, `frames`
    and `work` or `shape` (a subclass missing one cannot be made); the other methods have defaults that suit a study
    of one program whose resolved settings are its settings."""

    kind: ClassVar[str]          # the manifest's kind, and the study's default name (its directory)
    title: ClassVar[str]         # how messages name it ("gradient study"; default: "<kind> study")
    settings: ClassVar[type]     # its settings dataclass (with `.check()`)
    tables: ClassVar[tuple]      # the tables it saves
    #: holds the manifest and one DataFrame per table, with its curves and summaries (default:
    #: [`Tables`][pgdiag.diagnostics.protocol.Tables], the tables as attributes)
    result: ClassVar[type]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__ and "title" not in cls.__dict__:
            cls.title = f"{cls.kind} study"
        if not hasattr(cls, "result"):
            cls.result = Tables
        if not inspect.isabstract(cls) and cls.shape is Diagnostic.shape and cls.work is Diagnostic.work:
            raise TypeError(f"{cls.__name__}: a Diagnostic declares work(group) (what one subject's program samples "
                            f"and holds) or shape(group)")

    def resolve(self, settings, statics: Sequence) -> Resolved:
        """The settings against every subject's `Static`; raise `DiagnosticError` naming what disagrees."""
        return settings

    def group_by(self, settings, static) -> Hashable:
        """The key of the program a subject with `static` joins (default: one program for all)."""
        return None

    def reads_optimizer(self, settings) -> bool:
        """Whether the programs read the agents' optimizer states (PPO's Adam and TRPO's none differ)."""
        return True

    def work(self, group: Group[Resolved]) -> Work:
        """What one subject's program samples and holds, from which the default `shape` is worked out. A concrete
        measurement declares it or its own `shape` (a class with neither is refused when defined)."""
        raise NotImplementedError(f"{type(self).__name__} declares neither work(group) nor shape(group)")

    def shape(self, group: Group[Resolved]) -> Shape[Resolved]:
        """The group's program before it compiles: its size, its memory and the resolved settings it compiles.
        Default: from [`work`][pgdiag.diagnostics.protocol.Diagnostic.work], every subject vmapped where they fit
        in the group's memory together, else one after another (refused before compiling where one alone does
        not fit)."""
        w, n = self.work(group), group.units
        together = WORD * w.words * n <= group.memory
        live = n if together else 1
        need = WORD * w.words * live
        return Shape(batching="vmap" if together else "map", units=n, pairs=w.pairs * n,
                     sequential_steps=w.steps * (1 if together else n), width=w.envs * live, bytes=need,
                     fits=need <= group.memory, note="" if together else "subjects in turn", resolved=group.resolved,
                     refusal=(f"the {self.title}", f"{w.pairs:,} pairs a subject, subjects in turn",
                              "lower its sizes"))

    @abc.abstractmethod
    def program(self, shape: Shape[Resolved]) -> Callable:
        """The jitted program `(states, knobs, keys) -> outputs` over the shape's subjects."""

    @abc.abstractmethod
    def frames(self, measured: Measured[Resolved]) -> dict:
        """The program's outputs as the study's tables, `{table: DataFrame}`."""

    def record(self, shapes: Sequence[Shape[Resolved]]) -> Record:
        """The manifest's `resolved` entry (default: the last program's resolved settings, where they are a
        dataclass)."""
        resolved = shapes[-1].resolved
        return Record(dataclasses.asdict(resolved) if dataclasses.is_dataclass(resolved) else {})

    def describe(self, shape: Shape[Resolved]) -> str:
        """The line `--progress` prints before the program compiles."""
        return f"{self.title}: {shape.units} subjects, {shape.pairs:,} pairs"


__all__ = ["WORD", "Diagnostic", "Group", "Measured", "Record", "Shape", "Sizes", "Tables", "Work"]
