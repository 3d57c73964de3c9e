"""Crafted and mutated parameter files against pgdiag's loaders (pgdiag.adapters.archives), each loaded in a child
process under a memory cap. Prints a Markdown table of outcomes per family.

A case passes when its child neither dies of a signal nor hits the memory cap (a cap pgdiag's own limits should
reach first), no code ran (a marker file the hostile cases would create stays absent), and the loader either
refuses in one printable line of at most 300 characters or returns a value: for an archive (whose members carry a
CRC-32) that value equals the original's, for a plain pickle it may differ only where the file's numbers did.

Families: the crafted files of `crafted()` (code execution, forged dtypes, out-of-bounds views, size bombs,
billion laughs, deep nesting, cycles, class poisoning, corrupt compression) and, per real fixture in tests/data
(Brax's `save_params`, CleanRL's `torch.save`, a Stable-Baselines3 zip, its VecNormalize pickle), every prefix
(truncation) and seeded mutations (byte flips, insertions, deletions, repeated chunks, interesting integers).

    python benchmarks/fuzz_loaders.py [--mutations 20000] [--seed 0] [--memory-gib 2]
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import pathlib
import random
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

DATA = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data"
FIXTURES = {"brax": "brax_params.pkl", "cleanrl": "cleanrl_hopper.cleanrl_model", "sb3": "sb3_hopper.zip",
            "vecnormalize": "sb3_hopper_vecnormalize.pkl"}
ARCHIVES = {"cleanrl", "sb3"}   # zips: their members carry CRC-32s, so a value that loads equals the original

# --- the child: loads each case, one JSON line per case on stdout ---------------------------------------------

CHILD = r"""
import hashlib, json, resource, sys
cap = int(sys.argv[1]) << 20
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
import numpy as np
from pgdiag.adapters import archives, torch_zip
from pgdiag.adapters.policies import read_policy

def load(kind, path):
    if kind == "cleanrl":
        return torch_zip.load_torch(open(path, "rb").read())
    if kind == "sb3":
        return read_policy("sb3", path).policy
    return archives.load_pickle_file(path)

def digest(value, h):
    if isinstance(value, np.ndarray):
        h.update(f"a{value.dtype.str}{value.shape}".encode()); h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, dict):
        h.update(b"d")
        for k in sorted(value, key=repr):
            h.update(repr(k).encode()); digest(value[k], h)
    elif isinstance(value, (list, tuple)):
        h.update(b"l" + str(len(value)).encode())
        for v in value:
            digest(v, h)
    elif isinstance(value, archives.Fields):
        digest({k: v for k, v in vars(value).items()}, h)
    else:
        h.update(repr(value).encode())
    return h.hexdigest()

for line in sys.stdin:
    i, kind, path = json.loads(line)
    try:
        out = {"i": i, "outcome": "loaded", "digest": digest(load(kind, path), hashlib.sha256())}
    except archives.ArchiveError as err:
        out = {"i": i, "outcome": "refused", "line": str(err)}
    except MemoryError:
        out = {"i": i, "outcome": "memory"}
    except BaseException as err:
        out = {"i": i, "outcome": "error", "line": f"{type(err).__name__}: {str(err)[:200]}"}
    print(json.dumps(out), flush=True)
"""


def run_cases(cases: list, memory_mib: int = 2048) -> list:
    """Each case (kind, path) loaded in a child under an address-space cap of ``memory_mib``: one result dict per
    case (outcome loaded, refused, memory, error or signal), restarting the child after a crash."""
    results: dict = {}
    todo = list(range(len(cases)))
    while todo:
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(memory_mib)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        feed = "".join(json.dumps([i, *cases[i]]) + "\n" for i in todo)
        out, _ = child.communicate(feed)
        for line in out.splitlines():
            r = json.loads(line)
            results[r["i"]] = r
        todo = [i for i in todo if i not in results]
        if child.returncode != 0 and todo:   # the first case without a result took the child down
            results[todo[0]] = {"i": todo[0], "outcome": "signal", "line": f"exit {child.returncode}"}
            todo = todo[1:]
    return [results[i] for i in range(len(cases))]


def verdict(result: dict, expect: str, original: str) -> str:
    """"ok" or why the case failed; ``expect`` is "refused", "original" (refused or loaded as the original) or
    "any" (refused or loaded)."""
    outcome = result["outcome"]
    if outcome == "refused":
        line = result["line"]
        if len(line) > 300 or not line.isprintable():
            return f"a refusal that is not one short printable line: {line[:80]!r}…"
        return "ok"
    if outcome == "loaded":
        if expect == "refused":
            return "loaded a file that should be refused"
        return "ok" if expect == "any" or result["digest"] == original else "loaded other weights than the original"
    return f"{outcome}: {result.get('line', '')}"


# --- crafted files -------------------------------------------------------------------------------------------

def _op_str(s: str) -> bytes:
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b if len(b) < 256 else b"X" + struct.pack("<I", len(b)) + b


def _global(module: str, name: str) -> bytes:
    return f"c{module}\n{name}\n".encode()


def _pickle(body: bytes) -> bytes:
    return b"\x80\x04" + body + b"."


def _billion_laughs(width: int = 10, depth: int = 9) -> bytes:
    body = b"]" + b"(" + b"K\x00" * width + b"e" + b"\x94"   # L0 = [0] * width, memo 0
    for level in range(1, depth):
        body += b"0](" + (b"h" + bytes([level - 1])) * width + b"e\x94"   # drop the last level, build the next
    return _pickle(body)


def _dtype(code: str, state: bytes | None = None) -> bytes:
    state = state if state is not None else b"(K\x03" + _op_str("<") + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00t"
    return _global("numpy", "dtype") + _op_str(code) + b"\x89\x88\x87R" + state + b"b"


def _array(code: str, shape: tuple, data: bytes, dtype_state: bytes | None = None) -> bytes:
    dims = b"(" + b"".join(b"J" + struct.pack("<i", d) for d in shape) + b"t"
    return (_global("numpy.core.multiarray", "_reconstruct") + _global("numpy", "ndarray") + b"K\x00\x85C\x01b\x87R"
            + b"(K\x01" + dims + _dtype(code, dtype_state) + b"\x89B" + struct.pack("<I", len(data)) + data + b"tb")


def _tensor(key: str, numel: int, offset: int, size: tuple, stride: tuple) -> bytes:
    ints = lambda xs: b"(" + b"".join(b"\x8a\x08" + struct.pack("<q", x) for x in xs) + b"t"   # noqa: E731
    pid = b"(" + _op_str("storage") + _global("torch", "FloatStorage") + _op_str(key) + _op_str("cpu") \
        + b"\x8a\x08" + struct.pack("<q", numel) + b"tQ"
    return (_global("torch._utils", "_rebuild_tensor_v2") + b"(" + pid + b"\x8a\x08" + struct.pack("<q", offset)
            + ints(size) + ints(stride) + b"\x89" + _global("collections", "OrderedDict") + b")Rt" + b"R")


def _state_dict(entries: list, extra: bytes = b"") -> bytes:
    body = _global("collections", "OrderedDict") + b")R" + extra + b"("
    for name, tensor in entries:
        body += _op_str(name) + tensor
    return b"\x80\x02" + body + b"u."


def torch_zip(pickled: bytes, storages: dict, compress: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compress) as z:
        z.writestr("archive/data.pkl", pickled)
        z.writestr("archive/byteorder", "little")
        for key, raw in storages.items():
            z.writestr(f"archive/data/{key}", raw)
    return buf.getvalue()


def _deflate_bomb(mib: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", _state_dict([("w", _tensor("0", mib << 18, 0, (mib << 18,), (1,)))]))
        with z.open("archive/data/0", "w", force_zip64=True) as f:
            for _ in range(mib):
                f.write(bytes(1 << 20))
    return buf.getvalue()


def crafted(marker: str) -> list:
    """[(family, name, kind, bytes, expect)]: hand-made hostile files, each naming what it tries; all refused but
    the class-poisoning one (whose BUILD is ignored), after which the real file must load as itself."""
    touch = f"touch {marker}"
    floats = bytes(704 * 4)
    W = lambda off, size, stride, numel=704, data=floats: torch_zip(   # noqa: E731
        _state_dict([("w", _tensor("0", numel, off, size, stride))]), {"0": data})
    cases = [
        ("code", "os.system by REDUCE", "brax", _pickle(_global("os", "system") + _op_str(touch) + b"\x85R")),
        ("code", "posix.system by STACK_GLOBAL", "brax",
         _pickle(_op_str("posix") + _op_str("system") + b"\x93" + _op_str(touch) + b"\x85R")),
        ("code", "builtins.eval", "brax", _pickle(_global("builtins", "eval") + _op_str("1") + b"\x85R")),
        ("code", "INST", "brax", b"(S'" + touch.encode() + b"'\nios\nsystem\n."),
        ("code", "OBJ", "brax", b"(cos\nsystem\nS'" + touch.encode() + b"'\no."),
        ("code", "EXT1 from the copyreg registry", "brax", b"\x80\x02\x82\x01."),
        ("code", "getattr chain", "brax", _pickle(_global("builtins", "getattr") + _global("builtins", "__import__")
                                                   + _op_str("os") + b"\x85R" + _op_str("system") + b"\x86R")),
        ("code", "a gadget inside numpy", "brax", _pickle(_global("numpy.testing._private.utils", "runstring")
                                                          + _op_str("import os") + b"}\x86R")),
        ("code", "a torch persistent id pointing at a callable", "cleanrl",
         torch_zip(b"\x80\x02" + _global("collections", "OrderedDict") + b")R" + _op_str("w")
                   + _global("os", "system") + b"Qs.", {})),
        ("dtype", "object dtype", "brax", _pickle(_array("O8", (1,), b"A" * 8))),
        ("dtype", "object field over an int field", "brax", _pickle(_array("V8", (1,), b"A" * 8, (
            b"(K\x03" + _op_str("|") + b"N(" + _op_str("a") + b"t}" + _op_str("a") + _dtype("O8")
            + b"K\x00\x86sJ\x08\x00\x00\x00K\x01K\x3ft")))),
        ("dtype", "object flag on a float dtype", "brax", _pickle(_array("f8", (1,), b"A" * 8, (
            b"(K\x03" + _op_str("<") + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x3ft")))),
        ("dtype", "more data than the shape holds", "brax", _pickle(_array("f4", (2,), bytes(64)))),
        ("dtype", "a shape of 2^31 elements over 8 bytes", "brax", _pickle(_array("f4", (1 << 15, 1 << 16), bytes(8)))),
        ("view", "stride (100000, 1)", "cleanrl", W(0, (64, 11), (100000, 1))),
        ("view", "stride 20", "cleanrl", W(0, (64, 11), (20, 1))),
        ("view", "storage offset 100", "cleanrl", W(100, (64, 11), (11, 1))),
        ("view", "negative stride", "cleanrl", W(0, (64, 11), (-11, 1))),
        ("view", "offset 1e8", "cleanrl", W(10 ** 8, (64, 11), (11, 1))),
        ("view", "declared storage of 1e10 over 704 floats", "cleanrl", W(0, (64, 11), (11, 1), numel=10 ** 10)),
        ("view", "a 4-byte storage as 256 MiB", "cleanrl", W(0, (8192, 8192), (0, 0), numel=1, data=bytes(4))),
        ("bomb", "a 96 MiB deflate bomb", "cleanrl", _deflate_bomb(96)),
        ("bomb", "one storage referenced 4,000 times", "cleanrl", torch_zip(_state_dict(
            [(f"w{i}", _tensor("0", 1 << 16, 0, (1 << 16,), (1,))) for i in range(4000)]), {"0": bytes(1 << 18)})),
        ("bomb", "billion laughs", "brax", _billion_laughs()),
        ("bomb", "tuples nested 100,000 deep", "brax", _pickle(b")" + b"\x85" * 100_000)),
        ("bomb", "lists nested 60,000 deep", "brax", _pickle(b"]" * 60_000 + b"a" * 59_999)),
        ("bomb", "a list that holds itself", "brax", _pickle(b"]\x94h\x00a")),
        ("bomb", "a stack of 10 million values", "brax", _pickle(b"N" * 10_000_000)),
        ("poison", "BUILD on OrderedDict sets attributes", "cleanrl", torch_zip(_state_dict(
            [("w", _tensor("0", 704, 0, (64, 11), (11, 1)))],
            extra=b"}" + _op_str("keys") + b"Ns" + _op_str("__class__") + b"Nsb"), {"0": floats})),
        ("poison", "the real CleanRL file after it", "cleanrl", (DATA / FIXTURES["cleanrl"]).read_bytes()),
        ("zip", "corrupt compression", "cleanrl", _corrupt(torch_zip(_state_dict(
            [("w", _tensor("0", 704, 0, (64, 11), (11, 1)))]), {"0": random.Random(0).randbytes(2816)},
            zipfile.ZIP_DEFLATED))),
        ("zip", "a big-endian archive", "cleanrl", _big_endian()),
        ("zip", "not a zip", "cleanrl", b"PK\x03\x04" + bytes(100)),
    ]
    expect = {"BUILD on OrderedDict sets attributes": "any", "the real CleanRL file after it": "original"}
    return [(*case, expect.get(case[1], "refused")) for case in cases]


def _corrupt(data: bytes) -> bytes:
    """``data`` with 16 bytes inside member archive/data/0's deflate stream inverted."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo("archive/data/0")
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    at = info.header_offset + 30 + name_len + extra_len + info.compress_size // 2
    return data[:at] + bytes(b ^ 0xFF for b in data[at:at + 16]) + data[at + 16:]


def _big_endian() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", _state_dict([]))
        z.writestr("archive/byteorder", "big")
    return buf.getvalue()


# --- mutations -----------------------------------------------------------------------------------------------

INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to four seeded edits of ``data``: flips, insertions, deletions, a repeated chunk, an interesting int."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(b))
        kind = rng.randrange(5)
        if kind == 0:
            b[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == 2:
            del b[at:at + rng.randint(1, 8)]
        elif kind == 3:
            chunk = b[at:at + rng.randint(1, 64)]
            b[at:at] = chunk * rng.randint(2, 64)
        else:
            v = rng.choice(INTERESTING)
            b[at:at + 4] = struct.pack("<I", v & 0xFFFFFFFF)
    return bytes(b)


def fixture_cases(mutations: int, seed: int, prefixes: bool = True) -> list:
    """[(family, name, kind, bytes, expect)]: each fixture's prefixes (every one for pickles, which a prefix
    cannot end; 64 for archives) and ``mutations`` seeded mutations spread over the fixtures."""
    rng = random.Random(seed)
    out = []
    for kind, name in FIXTURES.items():
        data = (DATA / name).read_bytes()
        if prefixes:
            cuts = range(len(data)) if kind not in ARCHIVES else sorted(rng.sample(range(len(data)), 64))
            out += [("truncation", f"{name}[:{n}]", kind, data[:n], "original" if kind in ARCHIVES else "refused")
                    for n in cuts]
        out += [("mutation", f"{name} #{i}", kind, mutate(data, rng), "original" if kind in ARCHIVES else "any")
                for i in range(mutations // len(FIXTURES))]
    return out


def originals(memory_mib: int) -> dict:
    """Each fixture's digest as the loader reads it unmodified."""
    results = run_cases([(k, str(DATA / name)) for k, name in FIXTURES.items()], memory_mib)
    return {k: r.get("digest") for k, r in zip(FIXTURES, results)}


def check(cases: list, workdir: str, memory_mib: int = 2048) -> list:
    """[(family, name, outcome, verdict, refusal line or "")] of each case, its bytes written under ``workdir``."""
    base = originals(memory_mib)
    paths = []
    for n, (family, name, kind, data, _) in enumerate(cases):
        path = os.path.join(workdir, f"case{n}" + (".zip" if kind == "sb3" else ""))
        with open(path, "wb") as f:
            f.write(data)
        paths.append((kind, path))
    results = run_cases(paths, memory_mib)
    return [(family, name, r["outcome"], verdict(r, expect, base[kind]), r.get("line", ""))
            for (family, name, kind, _, expect), r in zip(cases, results)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutations", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--memory-gib", type=float, default=2.0)
    args = ap.parse_args()
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "code-ran")
        cases = crafted(marker) + fixture_cases(args.mutations, args.seed)
        rows = check(cases, tmp, int(args.memory_gib * 1024))
        ran = os.path.exists(marker)
    table = collections.defaultdict(collections.Counter)
    failures = [r for r in rows if r[3] != "ok"]
    for family, _, outcome, _, _ in rows:
        table[family][outcome] += 1
    print(f"| family | cases | refused | loaded | failed |\n|---|---|---|---|---|")
    for family, counts in table.items():
        failed = sum(1 for r in failures if r[0] == family)
        print(f"| {family} | {sum(counts.values())} | {counts['refused']} | {counts['loaded']} | {failed} |")
    print(f"\n{len(rows)} cases in {time.time() - start:.0f} s under a {args.memory_gib:g} GiB cap; code ran: {ran}")
    for family, name, outcome, why, _ in failures[:20]:
        print(f"FAILED {family} {name}: {why}")
    sys.exit(1 if failures or ran else 0)


if __name__ == "__main__":
    main()
