"""The host's CPU as several JAX devices: one per core where an accelerator does the learning, two on a CPU-only host.

JAX gives the CPU one device, and one CPU device runs a program's small operations one after another (its thread
pool splits only large ones): the policy networks of 320 one-environment agents, evaluated once per step, cost as
much as their physics. A split run ([`pgdiag.run.split`][pgdiag.run.split]) shards its collection over the CPU's
devices, so on a host with an accelerator ``import pgdiag`` asks JAX for one CPU device per core — before JAX
starts its backends, the only time it can be asked.

A CPU-only host gets [`CPU_ONLY`][pgdiag.run.host_devices.CPU_ONLY] = 2 devices, and a sweep's or a study's agents
are sharded over them: the learning update, which one device runs on one core while the physics uses them all, then
runs on two (a mid training of 14 Hopper agents 1.5× faster on 2 cores, the baseline study 1.2×:
``benchmarks/bench_host_devices.py``). Two, not one per core, so that a seed's result does not depend on the
host's core count: the count decides how agents are batched, and so the float32 rounding (the CPU's own model
still decides its instructions). ``PGDIAG_HOST_DEVICES=N`` asks for ``N`` anywhere (``1``: none added, JAX's own
count: one, unless the XLA flags name another);
[`configure`][pgdiag.run.host_devices.configure] asks from Python, before JAX has run anything.
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import os
import pkgutil

ENV = "PGDIAG_HOST_DEVICES"
#: the CPU devices of a host without an accelerator (its results the same whatever its cores)
CPU_ONLY = 2

#: device files that say an accelerator is present: NVIDIA, AMD, TPU
_DEVICE_FILES = ("/dev/nvidiactl", "/dev/kfd", "/dev/accel0", "/dev/vfio/0")


def _accelerator_present() -> bool:
    """A JAX accelerator plugin is installed and its device is on this host (a plugin alone is not enough: a
    CUDA build of JAX on a laptop runs on the CPU)."""
    if os.environ.get("JAX_PLATFORMS", "") == "cpu":
        return False
    # as JAX finds its plugins: modules of the jax_plugins namespace package and the "jax_plugins" entry points
    namespace = importlib.util.find_spec("jax_plugins")
    plugins = [m.name for m in pkgutil.iter_modules(namespace.submodule_search_locations)] if namespace else []
    plugins += [e.name for e in importlib.metadata.entry_points(group="jax_plugins")]
    if not plugins and importlib.util.find_spec("libtpu") is None:
        return False
    return any(os.path.exists(f) for f in _DEVICE_FILES) or bool(glob.glob("/dev/accel*"))


def cpu_only() -> bool:
    """Whether this host has no accelerator for JAX (its CPU devices: [`CPU_ONLY`][pgdiag.run.host_devices.CPU_ONLY]
    unless asked)."""
    return not _accelerator_present()


def wanted() -> int | None:
    """The CPU device count to ask JAX for: ``$PGDIAG_HOST_DEVICES``, else ``None`` (JAX's own) where the XLA
    flags name a count, else one per core where an accelerator is present and
    [`CPU_ONLY`][pgdiag.run.host_devices.CPU_ONLY] where none is."""
    value = os.environ.get(ENV, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"{ENV}={value!r}: expected a whole number of CPU devices >= 1 (1: JAX's default)")
        return int(value)
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return None
    return (os.cpu_count() or 1) if _accelerator_present() else CPU_ONLY


def configure(count: int | None = None) -> bool:
    """Give JAX's CPU backend ``count`` devices (default: [`wanted`][pgdiag.run.host_devices.wanted], where one
    leaves JAX's own count alone); whether it was asked. Where JAX has already started its backends the count
    cannot change: the CPU keeps the devices it has."""
    import jax

    asked = count is not None
    count = wanted() if count is None else count
    if count is None or (count < 2 and not asked):   # one device: JAX's own (or the XLA flags') count stands
        return False
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # JAX already ran something: too late, keep what it has
        return False
    return True
