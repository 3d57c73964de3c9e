"""Reading another framework's saved parameters without running its code.

A pickle can name any importable callable and call it while it loads (`os.system` among them), so a parameter
file from elsewhere is read by a restricted unpickler: it rebuilds numpy arrays, plain containers and the few
records the frameworks wrap them in (as stand-ins holding their fields), and refuses any other global before
calling anything, naming it. Nothing of the framework that wrote the file is imported.

Brax's `brax.io.model.save_params` writes a plain pickle of its (normalizer, policy, value) parameters: jax
arrays (rebuilt here as numpy arrays), the running statistics' record, its `UInt64` count and its
normalization mode. `torch.save` (CleanRL's `--save-model`, the `policy.pth` inside a Stable-Baselines3 zip) writes
a zip holding a pickle whose tensors point at raw little-endian storages beside it; `load_torch` rebuilds each
tensor as a numpy array from its storage, offset, shape and strides, without torch. Stable-Baselines3's
`VecNormalize.save` pickles the wrapper itself: its statistics are read into stand-ins, its spaces and random
generators into inert ones.
"""

from __future__ import annotations

import io
import pickle
import zipfile

import numpy as np

try:   # numpy ≥ 2 names its internals numpy._core; a pickle from either names either
    from numpy._core import multiarray as _multiarray
except ImportError:   # pragma: no cover (numpy < 2)
    from numpy.core import multiarray as _multiarray


class Fields:
    """A stand-in for a framework's record (a dataclass or a flax struct): its fields as attributes."""

    def __init__(self, *args, **kwargs):
        self._args = args
        self.__dict__.update(kwargs)

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2 and all(isinstance(x, (dict, type(None))) for x in state):
            state = {**(state[0] or {}), **(state[1] or {})}   # (dict state, slots state)
        if isinstance(state, dict):
            self.__dict__.update(state)
        else:   # an opaque state (a random generator's): kept, never interpreted
            self._state = state

    def __repr__(self) -> str:
        return f"Fields({', '.join(k for k in self.__dict__ if not k.startswith('_'))})"


class _Dict(dict):
    """An OrderedDict's pickle: a dict that also takes the attributes some carry (torch's ``_metadata``)."""


def _array(fun, args, arr_state, aval_state):
    """A jax array's pickle, rebuilt as the numpy array it holds (`fun` is numpy's own, already allowed)."""
    value = fun(*args)
    value.__setstate__(arr_state)
    return value


def _value(value):
    """An enum member's pickle (its class called with its value): the value itself."""
    return value


#: (module, name) -> what the restricted unpickler gives for it; every other global is refused
ALLOWED = {
    ("numpy._core.multiarray", "_reconstruct"): _multiarray._reconstruct,
    ("numpy.core.multiarray", "_reconstruct"): _multiarray._reconstruct,
    ("numpy._core.multiarray", "scalar"): _multiarray.scalar,
    ("numpy.core.multiarray", "scalar"): _multiarray.scalar,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("collections", "OrderedDict"): _Dict,
    ("jax._src.array", "_reconstruct_array"): _array,
    ("brax.training.acme.running_statistics", "RunningStatisticsState"): Fields,
    ("brax.training.acme.running_statistics", "NormalizationMode"): _value,
    ("brax.training.types", "UInt64"): Fields,
    ("stable_baselines3.common.vec_env.vec_normalize", "VecNormalize"): Fields,
    ("stable_baselines3.common.running_mean_std", "RunningMeanStd"): Fields,
    ("gymnasium.spaces.box", "Box"): Fields,
    ("numpy.random._pickle", "__generator_ctor"): Fields,        # a space's generator: inert stand-ins
    ("numpy.random._pickle", "__bit_generator_ctor"): Fields,
    ("numpy.random._pcg64", "PCG64"): Fields,
    ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"): Fields,
    ("numpy.random.bit_generator", "SeedSequence"): Fields,
}

#: torch's storage classes (the typed names torch.save writes) -> the numpy dtype of their bytes
TORCH_STORAGES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
                  "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
                  "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_}


class ArchiveError(ValueError):
    """A parameter file that cannot be read safely or is not what it should be."""


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in ALLOWED:
            return ALLOWED[(module, name)]
        raise ArchiveError(f"refusing to load {module}.{name}: a parameter file holds arrays and plain records "
                           f"only, and a pickle naming anything else could run code")

    def persistent_load(self, pid):
        raise ArchiveError(f"refusing a persistent reference {pid!r}: not a plain parameter pickle")


class _Storage:
    """A torch storage class named in the pickle: the dtype its bytes hold."""

    def __init__(self, dtype):
        self.dtype = dtype


def _rebuild_tensor(storage, offset, size, stride, requires_grad=False, hooks=None, metadata=None):
    """torch._utils._rebuild_tensor_v2: a view of ``storage`` (a flat array) at an element offset, shape and
    strides, copied out."""
    if not size:
        return storage[offset].copy()
    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape=tuple(size), strides=[s * item for s in stride])
    return np.ascontiguousarray(view)


def _rebuild_parameter(data, requires_grad=False, hooks=None):
    return data


class _TorchRestricted(_Restricted):
    """Also the globals of a torch tensor's pickle, each rebuilt by numpy; storages read from the archive."""

    def __init__(self, file, storage_bytes):
        super().__init__(file)
        self._storage_bytes = storage_bytes

    def find_class(self, module: str, name: str):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in TORCH_STORAGES:
            return _Storage(TORCH_STORAGES[name])
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _Storage)):
            raise ArchiveError(f"refusing a persistent reference {pid!r}: not a torch tensor storage")
        return np.frombuffer(self._storage_bytes(str(pid[2])), dtype=pid[1].dtype)


def load_torch(data: bytes) -> dict:
    """The object a `torch.save` zip holds (a state dict: names to numpy arrays), read without torch."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ArchiveError("not a torch.save archive (not a zip file; a file from torch older than 1.6, a "
                           "plain pickle, is not read)") from None
    pickles = [n for n in archive.namelist() if n.endswith("/data.pkl")]
    if len(pickles) != 1:
        raise ArchiveError(f"not a torch.save archive: expected one */data.pkl, found {pickles or 'none'}")
    prefix = pickles[0][:-len("data.pkl")]
    names = set(archive.namelist())
    if f"{prefix}byteorder" in names and archive.read(f"{prefix}byteorder").strip() != b"little":
        raise ArchiveError("a big-endian torch archive: only little-endian archives are read")

    def storage(key: str) -> bytes:
        if f"{prefix}data/{key}" not in names:
            raise ArchiveError(f"the archive names a storage {key!r} it does not hold")
        return archive.read(f"{prefix}data/{key}")

    try:
        loaded = _TorchRestricted(io.BytesIO(archive.read(pickles[0])), storage).load()
    except ArchiveError:
        raise
    except Exception as err:
        raise ArchiveError(f"not a readable torch archive ({type(err).__name__}: {err})") from None
    return dict(loaded) if isinstance(loaded, dict) else loaded


def load_pickle(data: bytes):
    """The object a parameter pickle holds, rebuilt with numpy arrays and `Fields` records only."""
    try:
        return _Restricted(io.BytesIO(data)).load()
    except ArchiveError:
        raise
    except Exception as err:   # truncated or not a pickle: named, never a traceback into the unpickler
        raise ArchiveError(f"not a readable parameter pickle ({type(err).__name__}: {err})") from None


def load_pickle_file(path: str):
    """`load_pickle` of a file's bytes."""
    with open(path, "rb") as f:
        return load_pickle(f.read())


def read_bytes(path: str, what: str) -> bytes:
    """A file's bytes, or one line naming the missing file and what it should be."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise ArchiveError(f"cannot read {what} {path!r}: {err.strerror or err}") from None


__all__ = ["ALLOWED", "ArchiveError", "Fields", "load_pickle", "load_pickle_file", "load_torch"]
