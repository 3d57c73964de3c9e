"""Native MuJoCo stepping through an XLA FFI handler (``native_step.cc``): a batched step calls MuJoCo's C API
from inside the compiled program, on the stepper's own threads, without Python or the GIL. A host callback
(``jax.pure_callback``) costs ~0.15 ms per call on a CPU — several times one environment's physics at the
papers' shape of one environment per agent (``benchmarks/bench_floor.py``); the handler's fixed cost is a few
microseconds.

The handler is compiled on first use against the installed MuJoCo's headers and library and jaxlib's FFI headers,
into ``$PGDIAG_BUILD_DIR`` (default ``~/.cache/pgdiag/native``; one build per MuJoCo, jaxlib and source version,
shared by every process; ``make setup`` builds it ahead). Where no C++ compiler is found or the build fails,
[`library`][pgdiag.envs.native_ffi.library] returns ``None`` with the reason in
[`unavailable`][pgdiag.envs.native_ffi.unavailable], and the tasks step through the host-callback path (same
results, bitwise). ``PGDIAG_NATIVE_FFI=0`` asks for the callback path."""

from __future__ import annotations

import ctypes
import fcntl
import functools
import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

SOURCE = os.path.join(os.path.dirname(__file__), "native_step.cc")

#: the fields a task may read back, by the codes native_step.cc knows them by
FIELDS = {"qacc_warmstart": 0, "mass_center": 1, "cinert": 2, "cvel": 3, "qfrc_actuator": 4, "cfrc_ext": 5,
          "subtree_com": 6}
#: what mode 0 recomputes from the new state (its kinematics), and so may return
KINEMATIC_FIELDS = ("subtree_com", "cinert", "cvel")

_why_not: list[str] = []


def _cache_dir() -> str:
    # not under $PGDIAG_CACHE (which tests point at fresh directories to isolate measurements): a build is
    # named by what it was built from, so every process may share it
    return os.environ.get("PGDIAG_BUILD_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "pgdiag", "native")


def _mujoco_library() -> tuple[str, str]:
    """(include directory, shared library) of the installed MuJoCo package."""
    import mujoco

    root = os.path.dirname(mujoco.__file__)
    libs = sorted(f for f in os.listdir(root) if f.startswith("libmujoco.so"))
    if not libs:
        raise FileNotFoundError(f"no libmujoco.so in {root}")
    return os.path.join(root, "include"), os.path.join(root, libs[0])


def _build_key() -> str:
    import jax
    import jaxlib
    import mujoco

    with open(SOURCE, "rb") as f:
        source = f.read()
    text = f"{mujoco.__version__}|{jaxlib.__version__}|{jax.ffi.include_dir()}|{_mujoco_library()[1]}|{sys.platform}"
    return hashlib.sha256(source + text.encode()).hexdigest()[:16]


def build(verbose: bool = False) -> str:
    """Compiles the handler if this MuJoCo/jaxlib/source has no build yet; returns the shared library's path.
    Concurrent processes (test workers) wait on one lock and build once."""
    import jax

    out_dir = _cache_dir()
    target = os.path.join(out_dir, f"pgdiag_native_{_build_key()}.so")
    if os.path.exists(target):
        return target
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        raise RuntimeError("no C++ compiler found (set CXX, or install g++)")
    os.makedirs(out_dir, exist_ok=True)
    include, library = _mujoco_library()
    with open(os.path.join(out_dir, ".build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(target):
            return target
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=out_dir)
        os.close(fd)
        command = [compiler, "-O2", "-std=c++17", "-shared", "-fPIC", "-pthread", "-I", jax.ffi.include_dir(),
                   "-I", include, SOURCE, "-o", tmp, library, f"-Wl,-rpath,{os.path.dirname(library)}"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            os.unlink(tmp)
            output = (done.stderr or done.stdout or "").strip()
            raise RuntimeError(f"{os.path.basename(compiler)} exited with code {done.returncode} building "
                               f"{os.path.basename(SOURCE)}: {output[-2000:] or '(no output)'}")
        if verbose:
            print(" ".join(command))
        os.replace(tmp, target)
    return target


@functools.lru_cache(maxsize=None)
def library():
    """The loaded handler library with both handlers registered for the CPU, or ``None`` (see
    [`unavailable`][pgdiag.envs.native_ffi.unavailable])."""
    if os.environ.get("PGDIAG_NATIVE_FFI", "1") == "0":
        _why_not.append("PGDIAG_NATIVE_FFI=0")
        return None
    try:
        import jax
        importlib.import_module("mujoco")  # loaded first: the bindings' libmujoco is the one the handler links

        lib = ctypes.CDLL(build())
    except Exception as e:  # noqa: BLE001 — any failure means the callback path, with the reason kept
        _fall_back(f"{type(e).__name__}: {e}".strip().rstrip(":"))
        return None
    lib.pgd_stepper_new.restype = ctypes.c_void_p
    lib.pgd_stepper_new.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    lib.pgd_stepper_out_size.argtypes = [ctypes.c_void_p]
    lib.pgd_stepper_free.argtypes = [ctypes.c_void_p]
    lib.pgd_stepper_step.argtypes = [ctypes.c_void_p, ctypes.c_int64] + [ctypes.c_void_p] * 5
    for name in ("PgdStepState", "PgdStepFields"):
        jax.ffi.register_ffi_target(f"pgdiag_{name}", jax.ffi.pycapsule(getattr(lib, name)), platform="cpu")
    return lib


def _fall_back(reason: str) -> None:
    """Keep why the handler is not in use and say so once, on stderr: the run then steps native MuJoCo through
    host callbacks (the same numbers, several times slower at one environment per agent)."""
    _why_not.append(reason)
    first_line = reason.splitlines()[0] if reason else "no reason given"
    sys.stderr.write(f"pgdiag: native MuJoCo steps through host callbacks (same results, slower): its stepping "
                     f"handler could not be built or loaded ({first_line}); the run's manifest keeps the reason\n")


def stepper_id() -> str:
    """Which native step this process runs, for keying measurements of its cost: the handler's build (its
    source and what it was built against) or the host callback."""
    return f"FFI handler {_build_key()[:8]}" if library() is not None else "host callback"


def unavailable() -> str | None:
    """Why the handler is not in use (``None`` when it is)."""
    return None if library() is not None else (_why_not[-1] if _why_not else "unknown")


class FfiStepper:
    """One stepper of ``native_step.cc``: a copy of ``model``, ``threads`` MuJoCo data and threads. ``mode`` 0 steps
    from qpos/qvel as MuJoCo's rollout does, ``fields`` (of
    [`KINEMATIC_FIELDS`][pgdiag.envs.native_ffi.KINEMATIC_FIELDS]) those of the new state (``n_frames=0``: of the
    given state); mode 1 as Gym does, reading ``fields`` back. The C object lives as long as the process (compiled
    programs hold its address)."""

    _alive: list = []

    def __init__(self, model, n_frames: int, threads: int, fields: tuple = (), mode: int = 0):
        lib = library()
        if lib is None:
            raise RuntimeError(f"the native step handler is unavailable: {unavailable()}")
        allowed = KINEMATIC_FIELDS if mode == 0 else tuple(FIELDS)
        if any(f not in allowed for f in fields):
            raise ValueError(f"fields {fields!r} cannot be read in mode {mode}; allowed: {', '.join(allowed)}")
        codes = (ctypes.c_int * max(1, len(fields)))(*[FIELDS[f] for f in fields])
        self.handle = lib.pgd_stepper_new(model._address, n_frames, threads, mode, codes, len(fields))
        self.nq, self.nv, self.nu = model.nq, model.nv, model.nu
        self.out_size = lib.pgd_stepper_out_size(self.handle)
        self.mode, self.lib = mode, lib
        FfiStepper._alive.append(self)

    def call(self, qpos, qvel, ctrl, warm=None):
        """The packed float32 output (…, out_size) inside a compiled program (one FFI call per batched step)."""
        import jax
        import jax.numpy as jnp

        args = [qpos, qvel] + ([warm] if self.mode == 1 else []) + [ctrl]
        args = [jnp.asarray(a, jnp.float32) for a in args]
        target = "pgdiag_PgdStepFields" if self.mode == 1 else "pgdiag_PgdStepState"
        shape = jax.ShapeDtypeStruct(qpos.shape[:-1] + (self.out_size,), jnp.float32)
        return jax.ffi.ffi_call(target, shape, vmap_method="broadcast_all")(*args, handle=np.int64(self.handle))

    def step_numpy(self, qpos, qvel, ctrl, warm=None) -> np.ndarray:
        """The same step on host arrays, outside any compiled program."""
        arrays = [np.ascontiguousarray(a, np.float32) for a in (qpos, qvel, ctrl)]
        warm = None if warm is None else np.ascontiguousarray(warm, np.float32)
        lead = arrays[0].shape[:-1]
        out = np.empty(lead + (self.out_size,), np.float32)
        ptr = lambda a: None if a is None else a.ctypes.data  # noqa: E731
        self.lib.pgd_stepper_step(self.handle, int(np.prod(lead, dtype=np.int64)), ptr(arrays[0]),
                                  ptr(arrays[1]), ptr(warm), ptr(arrays[2]), out.ctypes.data)
        return out


if __name__ == "__main__":  # ``python -m pgdiag.envs.native_ffi``: build now (make setup)
    try:
        print(build(verbose=True))
    except Exception as e:  # noqa: BLE001
        print(f"native step handler not built ({e}); native MuJoCo will step through host callbacks")
