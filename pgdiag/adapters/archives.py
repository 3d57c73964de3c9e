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

from pgdiag.adapters.files import load_json, load_npz, open_zip, read_bytes, read_member
from pgdiag.adapters.pickles import CAPS, ArchiveError, Call, Caps, Global, Persistent, parse, shown


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
TORCH_TENSOR = {("torch._utils", "_rebuild_tensor_v2")}
TORCH_PARAMETER = {("torch._utils", "_rebuild_parameter")}
#: torch's storage classes (the typed names torch.save writes) -> the numpy dtype of their bytes
TORCH_STORAGES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
                  "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
                  "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_}
PLAIN = ARRAY | FROMBUFFER | SCALAR | MARKERS | DTYPE | ORDERED_DICT | JAX_ARRAY | VALUE | RECORDS
TORCH = PLAIN | TORCH_TENSOR | TORCH_PARAMETER | {("torch", name) for name in TORCH_STORAGES}
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

    def __init__(self, caps: Caps, storage=None):
        self.budget, self.caps, self.storage = _Budget(caps), caps, storage
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
        if key in TORCH_TENSOR:
            return self._tensor(c)
        if key in TORCH_PARAMETER and c.args:
            return self(c.args[0], depth)
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

    # -- torch
    def _tensor(self, c: Call) -> np.ndarray:
        """torch's _rebuild_tensor_v2(storage, offset, size, stride, …): the view, bounds-checked, copied out."""
        if len(c.args) < 4 or not isinstance(c.args[0], Persistent) or self.storage is None:
            raise ArchiveError("a torch tensor pickled other than torch.save writes one")
        storage = self._storage(c.args[0].pid)
        offset = _int(c.args[1], "a tensor's storage offset")
        shape = _shape(c.args[2], "a tensor", self.caps)
        stride = c.args[3]
        if not (isinstance(stride, tuple) and len(stride) == len(shape)):
            raise ArchiveError(f"a tensor's strides {str(stride)[:60]} do not match its shape {shape}")
        stride = tuple(_int(s, "a tensor's stride") for s in stride)
        if 0 in shape:
            return np.zeros(shape, storage.dtype)
        last = offset + sum((n - 1) * s for n, s in zip(shape, stride))
        if last >= storage.size:
            raise ArchiveError(f"a tensor {shape} at offset {offset} with strides {stride} reaches element {last} "
                               f"of a storage holding {storage.size}")
        self.budget.take(int(np.prod(shape, dtype=np.int64)) * storage.itemsize, f"a {shape} tensor")
        # every element the view reaches lies in [offset, last] ⊂ the storage (strides ≥ 0, checked above)
        view = np.lib.stride_tricks.as_strided(storage[offset:], shape=shape,
                                               strides=[s * storage.itemsize for s in stride], writeable=False)
        return np.array(view, dtype=storage.dtype.newbyteorder("="), order="C")

    def _storage(self, pid) -> np.ndarray:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], Global)
                and pid[1].module == "torch" and pid[1].name in TORCH_STORAGES and isinstance(pid[2], str)):
            raise ArchiveError(f"refusing a persistent reference {str(pid)[:80]}: not a torch tensor storage")
        numel = _int(pid[4], "a storage's element count")
        return self.storage(pid[2], np.dtype(TORCH_STORAGES[pid[1].name]), numel, self.budget)


def _name(value) -> str:
    return str(value.func) + "(…)" if isinstance(value, Call) else type(value).__name__


def load_pickle(data: bytes, caps: Caps = CAPS):
    """The value a parameter pickle holds: numpy arrays, dicts, lists, tuples, scalars and `Fields` records."""
    value = parse(data, _allows(PLAIN), caps)
    return _Resolve(caps)(value)


def load_pickle_file(path: str, caps: Caps = CAPS):
    """`load_pickle` of a file's bytes (read up to the cap on one pickle)."""
    return load_pickle(read_bytes(path, "the parameter pickle", caps.pickle_bytes), caps)


def load_torch(data: bytes, caps: Caps = CAPS) -> dict:
    """The object a `torch.save` zip holds (a state dict: names to numpy arrays), read without torch."""
    archive = open_zip(data, "a torch.save archive", caps)
    pickles = [n for n in archive.namelist() if n.endswith("/data.pkl")]
    if len(pickles) != 1:
        raise ArchiveError(f"not a torch.save archive: expected one */data.pkl, found {pickles[:4] or 'none'}")
    prefix = pickles[0][:-len("data.pkl")]
    names = set(archive.namelist())
    if f"{prefix}byteorder" in names and read_member(archive, f"{prefix}byteorder", 64).strip() \
            != b"little":
        raise ArchiveError("a big-endian torch archive: only little-endian archives are read")
    storages: dict = {}

    def storage(key: str, dtype: np.dtype, numel: int, budget: _Budget) -> np.ndarray:
        if key not in storages:   # read once, however many tensors view it
            member = f"{prefix}data/{key}"
            if member not in names:
                raise ArchiveError(f"the archive names a storage {shown(key)!r} it does not hold")
            raw = read_member(archive, member, caps.member_bytes)
            if len(raw) != numel * dtype.itemsize:
                raise ArchiveError(f"storage {shown(key)!r} holds {len(raw)} bytes, not the {numel} elements of "
                                   f"{dtype.itemsize} bytes it declares")
            budget.take(len(raw), f"storage {shown(key)!r}")
            storages[key] = np.frombuffer(raw, dtype=dtype.newbyteorder("<"))
        if storages[key].size != numel:
            raise ArchiveError(f"storage {shown(key)!r} is named with {numel} elements and with {storages[key].size}")
        return storages[key]

    value = parse(read_member(archive, pickles[0], caps.pickle_bytes), _allows(TORCH), caps)
    loaded = _Resolve(caps, storage)(value)
    if not isinstance(loaded, dict):
        raise ArchiveError(f"a torch archive holding a {type(loaded).__name__}, not a state dict")
    return loaded


__all__ = ["ArchiveError", "Caps", "Fields", "load_json", "load_npz", "load_pickle", "load_pickle_file",
           "load_torch", "read_bytes"]
