"""A pickle read as data: its opcode stream interpreted into inert values, nothing it names ever called.

`pickle.Unpickler` (restricted or not) executes a program: every global a file names is imported and called,
and BUILD writes into real objects, so the allowed names themselves become the attack surface (a numpy dtype
fed crafted state turns file bytes into pointers). Here the stream is only *parsed* (the opcodes decoded by the
standard library's `pickletools.genops`, which reads and never executes) and a small stack machine builds plain
values from them: numbers, strings, bytes, tuples, lists and dicts, plus three inert records — `Global` (a name
the file mentions), `Call` (what it asks to be called with which arguments; BUILD, SETITEM and APPEND on it are
recorded, never applied) and `Persistent` (an external reference, a torch storage). What those records mean is
decided afterwards by `pgdiag.adapters.archives`, for a fixed list of names, from values already checked.

Every resource a file can ask for is capped (`Caps`) and each refusal names its cap. Tuples (the only containers
that can be dict keys) are depth-capped as they are made, so hashing one cannot recurse without bound.
"""

from __future__ import annotations

import dataclasses
import io
import pickletools


class ArchiveError(ValueError):
    """A file from elsewhere that cannot be read safely or is not what it should be (malformed, asking for what
    is not allowed, or over a cap): its message is one line naming why."""


@dataclasses.dataclass(frozen=True)
class Caps:
    """What one parameter file may ask for; the defaults hold any policy network several times over."""
    pickle_bytes: int = 64 << 20        # one pickle stream
    memo: int = 1 << 17                 # memo entries
    stack: int = 1 << 16                # values on the stack and marks open at once
    items: int = 1 << 21                # elements put into containers, over the whole stream
    depth: int = 64                     # nesting of tuples as made, and of any value as resolved
    nodes: int = 1 << 20                # values visited when resolving (shared references counted each time)
    member_bytes: int = 64 << 20        # one archive member, decompressed
    members: int = 4096                 # members of one archive
    total_bytes: int = 512 << 20        # all storages read and arrays built from one file
    elements: int = 1 << 24             # elements of one array (a 4096 × 4096 layer)


#: the caps every loader applies unless given others
CAPS = Caps()


@dataclasses.dataclass(frozen=True)
class Global:
    """A name the pickle mentions (GLOBAL, STACK_GLOBAL): never imported."""
    module: str
    name: str

    def __str__(self) -> str:
        return f"{self.module}.{self.name}"


@dataclasses.dataclass(eq=False)
class Call:
    """What the pickle asks to be made: ``func(*args, **kwargs)``, then BUILD with ``states``, SETITEM with
    ``items`` and APPEND with ``appended`` — recorded in order, applied by no one here."""
    func: object
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    states: list = dataclasses.field(default_factory=list)
    items: list = dataclasses.field(default_factory=list)
    appended: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Persistent:
    """A persistent reference (PERSID, BINPERSID): what the file says lives outside the pickle."""
    pid: object


_SCALARS = (type(None), bool, int, float, str, bytes)


def shown(text, limit: int = 80) -> str:
    """Text from a file as a refusal may quote it: non-printable characters escaped, at most ``limit`` long."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text)[:limit])
    return text + ("…" if len(str(text)) > limit else "")


class _Machine:
    """The stack machine: one method per opcode family; ``allowed(global) -> bool`` vets every name at once."""

    def __init__(self, allowed, caps: Caps):
        self.allowed, self.caps = allowed, caps
        self.stack: list = []
        self.marks: list = []
        self.memo: dict = {}
        self.items = 0
        self.depths: dict = {}   # id(tuple) -> its depth; the tuples are kept alive by `self.kept`
        self.kept: list = []

    # -- the stack
    def push(self, value) -> None:
        if len(self.stack) + len(self.marks) >= self.caps.stack:
            raise ArchiveError(f"the pickle keeps more than {self.caps.stack} values on its stack")
        self.stack.append(value)

    def pop(self):
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise ArchiveError("the pickle pops more values than it pushed since its last mark")
        return self.stack.pop()

    def popn(self, n: int) -> list:
        """The top ``n`` values, in the order they were pushed."""
        return [self.pop() for _ in range(n)][::-1]

    def top(self):
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise ArchiveError("the pickle works on a value it never pushed")
        return self.stack[-1]

    def mark(self) -> None:   # as pickle's own metastack: a mark is where the stack stood, not a value on it
        if len(self.stack) + len(self.marks) >= self.caps.stack:
            raise ArchiveError(f"the pickle keeps more than {self.caps.stack} values on its stack")
        self.marks.append(len(self.stack))

    def pop_mark(self) -> list:
        if not self.marks:
            raise ArchiveError("the pickle closes a mark it never opened")
        at = self.marks.pop()
        values = self.stack[at:]
        del self.stack[at:]
        return values

    def count(self, n: int) -> None:
        self.items += n
        if self.items > self.caps.items:
            raise ArchiveError(f"the pickle puts more than {self.caps.items} elements into containers")

    def tuple_of(self, values) -> tuple:
        self.count(len(values))
        depth = 1 + max((self.depths.get(id(v), 0) for v in values if isinstance(v, tuple)), default=0)
        if depth > self.caps.depth:
            raise ArchiveError(f"the pickle nests tuples more than {self.caps.depth} deep")
        t = tuple(values)
        self.depths[id(t)] = depth
        self.kept.append(t)
        return t

    # -- the opcodes
    def run(self, data: bytes):
        try:
            for op, arg, _ in pickletools.genops(io.BytesIO(data)):
                if op.name == "STOP":
                    break
                self.step(op.name, arg)
            else:
                raise ArchiveError("not a readable parameter pickle (it ends without STOP: truncated?)")
        except ArchiveError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, OverflowError, UnicodeDecodeError, EOFError) as err:
            raise ArchiveError(f"not a readable parameter pickle ({type(err).__name__}: {str(err)[:120]})") from None
        if len(self.stack) != 1 or self.marks:
            raise ArchiveError("the pickle leaves other than one value at STOP")
        return self.stack[0]

    def step(self, name: str, arg) -> None:
        handler = _HANDLERS.get(name)
        if handler is None:
            raise ArchiveError(f"refusing the pickle opcode {name}: a parameter file has no use for it")
        handler(self, arg)

    def global_(self, module, name) -> None:
        if not (isinstance(module, str) and isinstance(name, str)):
            raise ArchiveError("the pickle names a global with other than two strings")
        g = Global(module, name)
        if not self.allowed(g):
            raise ArchiveError(f"refusing to load {shown(g)}: a parameter file holds arrays and plain records only, "
                              f"and a pickle naming anything else could run code")
        self.push(g)

    def call(self, func, args, kwargs=None) -> None:
        if not isinstance(func, Global):
            raise ArchiveError(f"the pickle calls a {type(func).__name__}, not a named global")
        if not isinstance(args, tuple) or not isinstance(kwargs or {}, dict):
            raise ArchiveError("the pickle calls a global with arguments that are not a tuple")
        self.push(Call(func, args, dict(kwargs or {})))

    def build(self, _) -> None:
        state, target = self.pop(), self.pop()
        if not isinstance(target, Call):
            raise ArchiveError(f"the pickle sets state on a {type(target).__name__}")
        target.states.append(state)
        self.push(target)

    def setitems(self, target, pairs: list) -> None:
        """``pairs`` into ``target`` (None: the value on top of the stack, once the pairs are popped)."""
        target = self.top() if target is None else target
        self.count(len(pairs))
        if isinstance(target, dict):
            for k, v in pairs:
                target[_key(k)] = v
        elif isinstance(target, Call):
            target.items.extend(pairs)
        else:
            raise ArchiveError(f"the pickle sets items on a {type(target).__name__}")

    def appends(self, values: list) -> None:
        """``values`` appended to the value on top of the stack (once they are popped)."""
        target = self.top()
        self.count(len(values))
        if isinstance(target, list):
            target.extend(values)
        elif isinstance(target, Call):
            target.appended.extend(values)
        else:
            raise ArchiveError(f"the pickle appends to a {type(target).__name__}")

    def memo_put(self, index) -> None:
        value = self.top()
        if index not in self.memo and len(self.memo) >= self.caps.memo:
            raise ArchiveError(f"the pickle memoizes more than {self.caps.memo} values")
        self.memo[index] = value

    def memo_get(self, index) -> None:
        if index not in self.memo:
            raise ArchiveError(f"the pickle reads memo entry {index} it never wrote")
        self.push(self.memo[index])


def _key(k):
    """A dict key the pickle supplies: only values whose hash is bounded (scalars, depth-capped tuples)."""
    if isinstance(k, _SCALARS) or isinstance(k, Global) or (isinstance(k, tuple) and all(
            isinstance(x, _SCALARS + (tuple,)) for x in k)):
        return k
    raise ArchiveError(f"the pickle keys a dict by a {type(k).__name__}")


def _pairs(values: list) -> list:
    if len(values) % 2:
        raise ArchiveError("the pickle sets items from an odd number of values")
    return list(zip(values[0::2], values[1::2]))


def _dict(m: _Machine, _):
    d: dict = {}
    m.setitems(d, _pairs(m.pop_mark()))
    m.push(d)


def _list(m: _Machine, _):
    values = m.pop_mark()
    m.count(len(values))
    m.push(list(values))


def _pop(m: _Machine, _):   # as pickle's own: POP on an empty frame discards the mark
    if m.marks and len(m.stack) == m.marks[-1]:
        m.pop_mark()
    else:
        m.pop()


_HANDLERS = {
    "PROTO": lambda m, a: None, "FRAME": lambda m, a: None, "READONLY_BUFFER": lambda m, a: None,
    "MARK": lambda m, a: m.mark(), "POP": _pop, "POP_MARK": lambda m, a: m.pop_mark(),
    "DUP": lambda m, a: m.push(m.top()),
    "NONE": lambda m, a: m.push(None), "NEWTRUE": lambda m, a: m.push(True), "NEWFALSE": lambda m, a: m.push(False),
    **{op: (lambda m, a: m.push(a)) for op in (
        "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT",
        "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8",
        "BINBYTES", "SHORT_BINBYTES", "BINBYTES8")},
    "BYTEARRAY8": lambda m, a: m.push(bytes(a)),   # kept immutable: nothing here writes into it
    "EMPTY_TUPLE": lambda m, a: m.push(()), "TUPLE": lambda m, a: m.push(m.tuple_of(m.pop_mark())),
    **{f"TUPLE{n}": (lambda m, a, n=n: m.push(m.tuple_of(m.popn(n)))) for n in (1, 2, 3)},
    "EMPTY_LIST": lambda m, a: m.push([]), "LIST": _list,
    "APPEND": lambda m, a: m.appends(m.popn(1)), "APPENDS": lambda m, a: m.appends(m.pop_mark()),
    "EMPTY_DICT": lambda m, a: m.push({}), "DICT": _dict,
    "SETITEM": lambda m, a: m.setitems(None, [tuple(m.popn(2))]),
    "SETITEMS": lambda m, a: m.setitems(None, _pairs(m.pop_mark())),
    "FROZENSET": lambda m, a: m.push(frozenset(_key(v) for v in m.pop_mark())),
    "GLOBAL": lambda m, a: m.global_(*str(a).partition(" ")[::2]),
    "STACK_GLOBAL": lambda m, a: m.global_(*m.popn(2)),
    "REDUCE": lambda m, a: m.call(*m.popn(2)), "NEWOBJ": lambda m, a: m.call(*m.popn(2)),
    "NEWOBJ_EX": lambda m, a: m.call(*m.popn(3)), "BUILD": lambda m, a: m.build(a),
    "PERSID": lambda m, a: m.push(Persistent(a)), "BINPERSID": lambda m, a: m.push(Persistent(m.pop())),
    **{op: (lambda m, a: m.memo_put(a)) for op in ("PUT", "BINPUT", "LONG_BINPUT")},
    "MEMOIZE": lambda m, a: m.memo_put(len(m.memo)),
    **{op: (lambda m, a: m.memo_get(a)) for op in ("GET", "BINGET", "LONG_BINGET")},
}
# Refused by omission, each named in its refusal: INST and OBJ (protocol 0's calls of a class by name), EXT1/2/4
# (the copyreg extension registry), EMPTY_SET/ADDITEMS (no parameter file holds a set), NEXT_BUFFER (out-of-band
# data the file does not carry).


def parse(data: bytes, allowed, caps: Caps = CAPS):
    """The inert value a pickle holds; ``allowed(Global) -> bool`` decides which names it may mention."""
    if len(data) > caps.pickle_bytes:
        raise ArchiveError(f"the pickle is {len(data)} bytes, more than the {caps.pickle_bytes} a parameter file "
                          f"may hold")
    return _Machine(allowed, caps).run(bytes(data))


__all__ = ["ArchiveError", "CAPS", "Call", "Caps", "Global", "Persistent", "parse", "shown"]
