"""Files from elsewhere read within caps (pgdiag.adapters.pickles.Caps), every failure one `ArchiveError` line:
bounded reads of a path, zip archives whose central directory is sized before `zipfile` reads it and whose members
are decompressed through a bounded read (a deflate bomb stops at its cap, not in memory), JSON whose nesting is
measured before it is parsed, and `np.savez` files read without unpickling."""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib

import numpy as np

from pgdiag.adapters.pickles import CAPS, ArchiveError, Caps, shown

_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"


def _directory(data: bytes):
    """(entries, directory bytes) as the end-of-central-directory record declares them, or None."""
    at = data.rfind(_EOCD, max(0, len(data) - (1 << 16) - 22))
    if at < 0 or len(data) < at + 22:
        return None
    entries, size = struct.unpack_from("<10xH I", data, at)[0], struct.unpack_from("<12xI", data, at)[0]
    if (entries == 0xFFFF or size == 0xFFFFFFFF) and at >= 20 and data[at - 20:at - 16] == _EOCD64_LOCATOR:
        (where,) = struct.unpack_from("<8xQ", data, at - 20)
        if where + 56 <= len(data) and data[where:where + 4] == b"PK\x06\x06":
            entries, size = struct.unpack_from("<32xQQ", data, where)
    return entries, size


def open_zip(data: bytes, what: str, caps: Caps = CAPS):
    """A `zipfile.ZipFile` over ``data`` once its directory is within ``caps.members``."""
    found = _directory(data)
    if found is None:
        raise ArchiveError(f"not {what}: not a zip file")
    entries, size = found
    if entries > caps.members or size > caps.members * 1024:
        raise ArchiveError(f"{what} declares {entries} members in {size} bytes of directory; at most {caps.members} "
                    f"are read")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, NotImplementedError, struct.error) as err:
        raise ArchiveError(f"not {what}: {shown(err, 120)}") from None
    if len(archive.infolist()) > caps.members:
        raise ArchiveError(f"{what} holds more than {caps.members} members")
    return archive


def read_member(archive: zipfile.ZipFile, name: str, cap: int) -> bytes:
    """Member ``name``'s bytes, decompressed at most ``cap`` (plus one, to know it is over)."""
    try:
        with archive.open(name) as f:
            data = f.read(cap + 1)
    except KeyError:
        raise ArchiveError(f"the archive has no member {shown(name)!r}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError, ValueError) as err:
        raise ArchiveError(f"member {shown(name)} cannot be read ({type(err).__name__}: {str(err)[:100]})") from None
    if len(data) > cap:
        raise ArchiveError(f"member {shown(name)} would decompress to more than {_size(cap)}")
    return data


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def load_json(data: bytes, what: str, depth: int = CAPS.depth):
    """JSON from elsewhere: UTF-8, nested at most ``depth`` deep (checked before parsing), else one line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveError(f"{what} is not UTF-8 text") from None
    deepest = level = 0
    in_string = escaped = False
    for ch in text:   # brackets outside strings: the depth json.loads would recurse to
        if in_string:
            escaped, in_string = (not escaped and ch == "\\"), in_string and (escaped or ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            level += 1
            deepest = max(deepest, level)
        elif ch in "]}":
            level -= 1
    if deepest > depth:
        raise ArchiveError(f"{what} nests JSON {deepest} deep; at most {depth} is read")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ArchiveError(f"{what} is not valid JSON ({str(err)[:100]})") from None


def load_npz(data: bytes, what: str, caps: Caps = CAPS) -> dict:
    """An ``np.savez`` file's numeric arrays by name, each member read within the caps, never unpickled."""
    archive = open_zip(data, what, caps)
    out = {}
    for name in archive.namelist():
        if not name.endswith(".npy"):
            raise ArchiveError(f"{what}: member {shown(name)!r} is not an .npy array")
        raw = read_member(archive, name, caps.member_bytes)
        try:
            array = np.lib.format.read_array(io.BytesIO(raw), allow_pickle=False, max_header_size=10000)
        except (ValueError, OSError, EOFError, SyntaxError) as err:
            raise ArchiveError(f"{what}: member {shown(name)!r} is not a readable array ({str(err)[:100]})") from None
        if array.dtype.kind not in "fiub":
            raise ArchiveError(f"{what}: member {shown(name)!r} holds {array.dtype} values, not numbers")
        out[name[:-4]] = array
    return out


def read_bytes(path: str, what: str, cap: int = CAPS.member_bytes) -> bytes:
    """A file's bytes (at most ``cap``), or one line naming the missing, unreadable or oversized file."""
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
    except OSError as err:
        raise ArchiveError(f"cannot read {what} {path!r}: {err.strerror or err}") from None
    if len(data) > cap:
        raise ArchiveError(f"{what} {path!r} is larger than the {cap >> 20} MiB a parameter file may be")
    return data


__all__ = ["load_json", "load_npz", "open_zip", "read_bytes", "read_member"]
