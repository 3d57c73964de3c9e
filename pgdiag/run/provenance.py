"""Where and with what a run ran: the package versions, the source revision, the device and the physics
backend (``auto`` resolved, and why), as a run's and a study's manifests record them."""

from __future__ import annotations

import os
import platform
import subprocess

import jax


def versions() -> dict:
    from importlib import metadata

    from pgdiag import __version__

    out = {"python": platform.python_version(), "pgdiag": __version__}   # the distribution is pgdiag-rl
    for pkg in ("jax", "jaxlib", "flax", "optax", "chex", "numpy", "mujoco", "mujoco-mjx", "brax",
                "orbax-checkpoint", "pandas", "pyarrow"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def git_revision() -> str | None:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        rev = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        return rev.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def physics_info(static, batch: int | None = None) -> dict:
    """The physics backend a run uses (``auto`` resolved: by the ``batch`` each device steps when
    given, [`pgdiag.envs.choose_physics`][pgdiag.envs.choose_physics]), its thread count and why it was chosen."""
    from importlib import metadata

    from pgdiag.envs import choose_physics, resolve_physics

    if batch is None:
        backend, threads = resolve_physics(static.task, static.physics, static.physics_threads, static.model)
        info = {"requested": static.physics, "backend": backend}
    else:
        backend, threads, why = choose_physics(static.task, static.physics, static.physics_threads,
                                               static.solver, batch, static.model)
        info = {"requested": static.physics, "backend": backend, "batch_per_device": batch, "chosen_by": why}
    if backend != "jax":
        from pgdiag.envs.mujoco_models import mujoco_task
        from pgdiag.envs.mujoco_tasks import solver_options
        task = mujoco_task(static.task, static.model)
        info.update(model=static.model, solver=static.solver, solver_options=solver_options(task, static.solver))
    if backend == "native":
        from pgdiag.envs import native_ffi

        info.update(threads=threads, mujoco=metadata.version("mujoco"), step=native_ffi.stepper_id())
        if native_ffi.unavailable():   # the host-callback path: same results, slower; why, kept with the run
            info["step_fallback_reason"] = native_ffi.unavailable()
    elif backend == "mjx":
        info.update(mujoco_mjx=metadata.version("mujoco-mjx"))
    elif backend == "warp":
        info.update(mujoco_mjx=metadata.version("mujoco-mjx"), warp_lang=metadata.version("warp-lang"))
    return info


#: vector instruction sets, widest first: XLA compiles a CPU program for the widest the host has
_ISAS = ("avx512f", "avx2", "avx", "sse4_2", "sve", "asimd")


def cpu_model() -> str:
    """The host CPU's model name and its widest vector instructions (Linux's /proc/cpuinfo; the machine type
    elsewhere). XLA compiles for them, so one program rounds differently on another CPU."""
    name, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and name in (platform.processor(), platform.machine()):
                    name = value.strip()
                elif key.strip() in ("flags", "Features"):
                    flags |= set(value.split())
    except OSError:
        pass
    isa = next((i for i in _ISAS if i in flags), "")
    return f"{name} ({isa})" if isa else name


def device_info() -> dict:
    from pgdiag.run import cpu_random

    devices = jax.devices()
    return {"backend": jax.default_backend(), "count": len(devices),
            "kinds": sorted({d.device_kind for d in devices}), "host": platform.node(),
            "cpu_count": os.cpu_count(), "cpu": cpu_model(), "processes": jax.process_count(),
            "cpu_threefry": "unrolled" if cpu_random.IN_USE else "rolled"}   # the draws' lowering on the CPU
