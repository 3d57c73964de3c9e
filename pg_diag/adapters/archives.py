"""Reading another framework's saved parameters without running its code.

A pickle can name any importable callable and call it while it loads (`os.system` among them), so a parameter
file from elsewhere is read by a restricted unpickler: it rebuilds numpy arrays, plain containers and the few
records the frameworks wrap them in (as stand-ins holding their fields), and refuses any other global before
calling anything, naming it. Nothing of the framework that wrote the file is imported.

Brax's `brax.io.model.save_params` writes a plain pickle of its (normalizer, policy, value) parameters: jax
arrays (rebuilt here as numpy arrays), the running statistics' record, its `UInt64` count and its
normalization mode.
"""

from __future__ import annotations

import io
import pickle

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
        if isinstance(state, tuple) and len(state) == 2:   # (dict state, slots state)
            state = {**(state[0] or {}), **(state[1] or {})}
        self.__dict__.update(state or {})

    def __repr__(self) -> str:
        return f"Fields({', '.join(k for k in self.__dict__ if not k.startswith('_'))})"


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
    ("collections", "OrderedDict"): dict,
    ("jax._src.array", "_reconstruct_array"): _array,
    ("brax.training.acme.running_statistics", "RunningStatisticsState"): Fields,
    ("brax.training.acme.running_statistics", "NormalizationMode"): _value,
    ("brax.training.types", "UInt64"): Fields,
}


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


__all__ = ["ALLOWED", "ArchiveError", "Fields", "load_pickle", "load_pickle_file"]
