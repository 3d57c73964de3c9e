"""`torch.save` archives (CleanRL's `--save-model`, the `policy.pth` inside a Stable-Baselines3 zip) read without
torch: a zip holding a pickle whose tensors point at raw little-endian storages beside it. The pickle is parsed
as data ([`pgdiag.adapters.pickles`][pgdiag.adapters.pickles]); each tensor is built from its storage only once its
offset and strides are non-negative and every element it reaches lies inside that storage, and each storage is
read once (within the member cap) however many tensors view it and only when it holds exactly the elements it
declares."""

from __future__ import annotations

import numpy as np

from pgdiag.adapters.archives import PLAIN, _allows, _Budget, _int, _Resolve, _shape
from pgdiag.adapters.files import open_zip, read_member
from pgdiag.adapters.pickles import CAPS, ArchiveError, Call, Caps, Global, Persistent, parse, shown

TORCH_TENSOR = {("torch._utils", "_rebuild_tensor_v2")}
TORCH_PARAMETER = {("torch._utils", "_rebuild_parameter")}
#: torch's storage classes (the typed names torch.save writes) -> the numpy dtype of their bytes
TORCH_STORAGES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
                  "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
                  "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_}
#: the names a torch.save archive's pickle may mention: the plain ones, torch's tensor rebuilders and storage types
TORCH = PLAIN | TORCH_TENSOR | TORCH_PARAMETER | {("torch", name) for name in TORCH_STORAGES}


class _TorchResolve(_Resolve):
    """The resolver with torch's tensors: ``storage(key, dtype, numel, budget)`` reads a storage of the archive."""

    def __init__(self, caps: Caps, storage):
        super().__init__(caps)
        self.storage = storage

    def _other(self, c: Call, key: tuple, depth: int):
        if key in TORCH_TENSOR:
            return self._tensor(c)
        if key in TORCH_PARAMETER and c.args:
            return self(c.args[0], depth)
        return super()._other(c, key, depth)

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
    loaded = _TorchResolve(caps, storage)(value)
    if not isinstance(loaded, dict):
        raise ArchiveError(f"a torch archive holding a {type(loaded).__name__}, not a state dict")
    return loaded


__all__ = ["TORCH", "TORCH_STORAGES", "load_torch"]
