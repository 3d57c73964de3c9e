"""Reading another framework's saved parameters as data, without running or instantiating anything from them.

A pickle is a program: a restricted unpickler still calls the globals it allows and BUILDs real objects, and
those allowed names (a numpy dtype given crafted state, a strided view given crafted strides) are enough to read
or corrupt memory. So a file is read in two steps. `pgdiag.adapters.pickles.parse` turns the opcode stream into
inert values, refusing any name not listed here before anything else happens. `_Resolve` then turns those values
into numpy arrays, dicts, lists and `Fields` records, for the listed names only, each from arguments it checks
first: a dtype from a fixed list of numeric types, an array's byte length equal to its shape times its item size,
a torch view's offset and strides non-negative and inside its storage, every size under a cap (`Caps`) named in
its refusal. Shared references are visited each time they are met (counted, so a "billion laughs" file stops at
the cap), and a cycle is refused.

Brax's `brax.io.model.save_params` writes a plain pickle of its (normalizer, policy, value) parameters (jax arrays,
the running statistics' record, its `UInt64` count, its normalization mode). `torch.save` (CleanRL's
`--save-model`, the `policy.pth` inside a Stable-Baselines3 zip) writes a zip holding a pickle whose tensors point
at raw little-endian storages beside it. Stable-Baselines3's `VecNormalize.save` pickles the wrapper itself: its
statistics are read into `Fields`, its spaces and random generators into inert ones.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pgdiag.adapters.files import read_bytes
from pgdiag.adapters.pickles import CAPS, ArchiveError, Call, Caps, Global, parse


class Fields:
    """A framework's record (a dataclass, a flax struct, SB3's wrapper) as data: its fields as attributes."""

    def __init__(self, args=(), fields=None):
        self._args = tuple(args)
        for k, v in (fields or {}).items():
            if isinstance(k, str) and k.isidentifier() and not k.startswith("__"):
                self.__dict__[k] = v

    def __repr__(self) -> str:
        return f"Fields({', '.join(k for k in self.__dict__ if not k.startswith('_'))})"


#: the names a parameter file may mention, by what they mean here (every other name is refused on sight)
ARRAY = {("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct")}
FROMBUFFER = {("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer")}
SCALAR = {("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar")}
MARKERS = {("numpy", "ndarray")}                       # only ever an argument of _reconstruct
DTYPE = {("numpy", "dtype")}
ORDERED_DICT = {("collections", "OrderedDict")}
JAX_ARRAY = {("jax._src.array", "_reconstruct_array")}
VALUE = {("brax.training.acme.running_statistics", "NormalizationMode")}   # an enum member: its value
RECORDS = {("brax.training.acme.running_statistics", "RunningStatisticsState"), ("brax.training.types", "UInt64"),
           ("stable_baselines3.common.vec_env.vec_normalize", "VecNormalize"),
           ("stable_baselines3.common.running_mean_std", "RunningMeanStd"), ("gymnasium.spaces.box", "Box"),
           ("numpy.random._pickle", "__generator_ctor"), ("numpy.random._pickle", "__bit_generator_ctor"),
           ("numpy.random._pcg64", "PCG64"), ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
           ("numpy.random.bit_generator", "SeedSequence")}
#: every name a plain parameter pickle (Brax's, SB3's VecNormalize) may mention
PLAIN = ARRAY | FROMBUFFER | SCALAR | MARKERS | DTYPE | ORDERED_DICT | JAX_ARRAY | VALUE | RECORDS
#: numpy type codes an array may have (numeric and boolean; never object, void, string or datetime)
DTYPES = {"f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1"}


def _allows(names: set):
    return lambda g: (g.module, g.name) in names


@dataclasses.dataclass
class _Budget:
    caps: Caps
    nodes: int = 0
    bytes: int = 0

    def take(self, n: int, what: str) -> None:
        self.bytes += n
        if self.bytes > self.caps.total_bytes:
            raise ArchiveError(f"{what} would take the file past {self.caps.total_bytes >> 20} MiB of arrays")


def _int(x, what: str, low: int = 0) -> int:
    if type(x) is not int or x < low:
        raise ArchiveError(f"{what} must be an integer ≥ {low}, got {str(x)[:40]!r}")
    return x


def _shape(shape, what: str, caps: Caps) -> tuple:
    if not isinstance(shape, tuple) or len(shape) > 32:
        raise ArchiveError(f"{what}: a shape must be a tuple of at most 32 sizes, got {str(shape)[:60]!r}")
    dims = tuple(_int(d, f"{what}: a size") for d in shape)
    if int(np.prod(dims, dtype=object)) > caps.elements:
        raise ArchiveError(f"{what}: {dims} holds more than {caps.elements} elements")
    return dims


class _Resolve:
    """Inert values -> numpy arrays, dicts, lists and `Fields`; ``storage(key, dtype, numel)`` reads torch's."""

    def __init__(self, caps: Caps):
        self.budget, self.caps = _Budget(caps), caps
        self.active: set = set()
        self.arrays: dict = {}   # id(Call) -> the array it made: a shared array is built (and counted) once

    def __call__(self, value, depth: int = 0):
        self.budget.nodes += 1
        if self.budget.nodes > self.caps.nodes:
            raise ArchiveError(f"the file's values expand to more than {self.caps.nodes} (shared references "
                               f"counted each time)")
        if depth > self.caps.depth:
            raise ArchiveError(f"the file nests values more than {self.caps.depth} deep")
        if isinstance(value, (type(None), bool, int, float, str, bytes)):
            return value
        if id(value) in self.active:
            raise ArchiveError("the file's values refer to themselves (a cycle)")
        self.active.add(id(value))
        try:
            return self._container(value, depth + 1)
        finally:
            self.active.discard(id(value))

    def _container(self, value, depth: int):
        if isinstance(value, tuple):
            return tuple(self(v, depth) for v in value)
        if isinstance(value, list):
            return [self(v, depth) for v in value]
        if isinstance(value, dict):
            return {self(k, depth): self(v, depth) for k, v in value.items()}
        if isinstance(value, frozenset):
            return frozenset(self(v, depth) for v in value)
        if isinstance(value, Call):
            return self._call(value, depth)
        if isinstance(value, Global) and (value.module, value.name) in RECORDS:
            return str(value)   # a record's class given as an argument (a generator's bit generator): its name
        raise ArchiveError(f"the file holds a bare {_name(value)} where a value belongs")

    def _call(self, c: Call, depth: int):
        if id(c) not in self.arrays:
            made = self._made(c, depth)
            if not isinstance(made, np.ndarray):
                return made
            self.arrays[id(c)] = made
        return self.arrays[id(c)]

    def _made(self, c: Call, depth: int):
        key = (c.func.module, c.func.name)
        if key in ARRAY:
            return self._array(c)
        if key in FROMBUFFER:
            return self._frombuffer(c)
        if key in SCALAR:
            return self._scalar(c)
        if key in JAX_ARRAY:
            return self._jax(c)
        if key in ORDERED_DICT:
            return self._ordered_dict(c, depth)
        if key in DTYPE:
            return self.dtype(c)
        if key in VALUE:
            if len(c.args) != 1 or c.states or c.items or c.appended:
                raise ArchiveError(f"{c.func}: an enum member is made from one value")
            return self(c.args[0], depth)
        if key in RECORDS:
            return self._record(c, depth)
        return self._other(c, key, depth)

    def _other(self, c: Call, key: tuple, depth: int):
        """A call of a name only a subclass reads (torch's): refused here."""
        raise ArchiveError(f"{c.func} is not made by a call here")

    def _ordered_dict(self, c: Call, depth: int) -> dict:
        pairs = list(c.items)
        if c.args:   # OrderedDict([(k, v), ...]) as older pickles write it
            if len(c.args) != 1 or not isinstance(c.args[0], list):
                raise ArchiveError("an OrderedDict is made from one list of pairs")
            pairs = [tuple(p) for p in c.args[0] if isinstance(p, (list, tuple)) and len(p) == 2] + pairs
        out = {}
        for k, v in pairs:   # its BUILD state (torch's `_metadata`: versions) is not parameters: left out
            k = self(k, depth)
            if not isinstance(k, (str, int, float, bytes, bool, type(None))):
                raise ArchiveError(f"an OrderedDict keyed by a {type(k).__name__}")
            out[k] = self(v, depth)
        return out

    def _record(self, c: Call, depth: int) -> Fields:
        fields: dict = dict(c.kwargs)
        for state in c.states:
            if isinstance(state, tuple) and len(state) == 2 and all(isinstance(x, (dict, type(None))) for x in state):
                state = {**(state[0] or {}), **(state[1] or {})}   # (dict state, slots state)
            if isinstance(state, dict):
                fields.update(state)
            else:   # an opaque state (a random generator's): kept, never interpreted
                fields["_state"] = state
        return Fields(self(c.args, depth), {k: self(v, depth) for k, v in fields.items() if isinstance(k, str)})

    # -- numpy
    def dtype(self, d) -> np.dtype:
        """numpy.dtype(code, False, True) with BUILD's (version, byte order, None, None, None, -1, -1, flags)."""
        if not (isinstance(d, Call) and (d.func.module, d.func.name) in DTYPE and d.args and len(d.states) <= 1):
            raise ArchiveError(f"an array's type must be a numpy dtype, got {_name(d)}")
        code = d.args[0]
        if code not in DTYPES:
            raise ArchiveError(f"an array of numpy type {str(code)[:16]!r}; read are {sorted(DTYPES)}")
        order = "|"
        if d.states:
            state = d.states[0]
            if not (isinstance(state, tuple) and len(state) == 8 and state[1] in ("<", ">", "|", "=")
                    and state[2:5] == (None, None, None) and state[5:7] == (-1, -1) and state[7] == 0):
                raise ArchiveError(f"a numpy dtype {code!r} with a state other than a plain number's")
            order = state[1]
        return np.dtype(code).newbyteorder(order) if order in "<>" else np.dtype(code)

    def _from_bytes(self, raw, dt: np.dtype, shape: tuple, fortran: bool, what: str) -> np.ndarray:
        if not isinstance(raw, bytes):
            raise ArchiveError(f"{what}: its data must be bytes, got {_name(raw)}")
        count = int(np.prod(shape, dtype=object))
        if len(raw) != count * dt.itemsize:
            raise ArchiveError(f"{what}: {len(raw)} bytes for {shape} elements of {dt.itemsize} bytes")
        self.budget.take(len(raw), what)
        flat = np.frombuffer(raw, dtype=dt)
        return flat.reshape(shape, order="F" if fortran else "C").astype(dt.newbyteorder("="), order="C")

    def _array(self, c: Call) -> np.ndarray:
        """numpy's _reconstruct(ndarray, (0,), b'b') with BUILD's (1, shape, dtype, is_fortran, raw bytes)."""
        if not (len(c.args) == 3 and isinstance(c.args[0], Global) and (c.args[0].module, c.args[0].name)
                in MARKERS and len(c.states) == 1 and not c.items and not c.appended):
            raise ArchiveError("a numpy array pickled other than numpy writes one")
        return self._state_array(c.states[0])

    def _state_array(self, state) -> np.ndarray:
        if not (isinstance(state, tuple) and len(state) == 5 and state[0] == 1 and isinstance(state[3], bool)):
            raise ArchiveError("a numpy array whose state is not (1, shape, dtype, is_fortran, data)")
        shape = _shape(state[1], "a numpy array", self.caps)
        return self._from_bytes(state[4], self.dtype(state[2]), shape, state[3], f"a {shape} array")

    def _frombuffer(self, c: Call) -> np.ndarray:
        """numpy ≥ 1.16's protocol-5 form: _frombuffer(data, dtype, shape, order)."""
        if len(c.args) != 4 or c.args[3] not in ("C", "F") or c.states:
            raise ArchiveError("a numpy array pickled other than numpy writes one")
        shape = _shape(c.args[2], "a numpy array", self.caps)
        return self._from_bytes(c.args[0], self.dtype(c.args[1]), shape, c.args[3] == "F", f"a {shape} array")

    def _scalar(self, c: Call):
        if len(c.args) != 2 or c.states:
            raise ArchiveError("a numpy scalar pickled other than numpy writes one")
        return self._from_bytes(c.args[1], self.dtype(c.args[0]), (), False, "a numpy scalar")[()]

    def _jax(self, c: Call) -> np.ndarray:
        """jax's _reconstruct_array(numpy's _reconstruct, its args, the array's state, the aval's): the array."""
        if not (len(c.args) == 4 and isinstance(c.args[0], Global) and (c.args[0].module, c.args[0].name) in ARRAY):
            raise ArchiveError("a jax array pickled other than jax writes one")
        return self._array(Call(c.args[0], c.args[1] if isinstance(c.args[1], tuple) else (), states=[c.args[2]]))

def _name(value) -> str:
    return str(value.func) + "(…)" if isinstance(value, Call) else type(value).__name__


def load_pickle(data: bytes, caps: Caps = CAPS):
    """The value a parameter pickle holds: numpy arrays, dicts, lists, tuples, scalars and `Fields` records."""
    value = parse(data, _allows(PLAIN), caps)
    return _Resolve(caps)(value)


def load_pickle_file(path: str, caps: Caps = CAPS):
    """`load_pickle` of a file's bytes (read up to the cap on one pickle)."""
    return load_pickle(read_bytes(path, "the parameter pickle", caps.pickle_bytes), caps)


__all__ = ["ArchiveError", "Caps", "Fields", "PLAIN", "load_pickle", "load_pickle_file"]
