"""The host's CPU as one JAX device per core where an accelerator does the learning.

JAX gives the CPU one device, and one CPU device runs a program's small operations one after another (its thread
pool splits only large ones): the policy networks of 320 one-environment agents, evaluated once per step, cost as
much as their physics. A split run ([`pgdiag.run.split`][pgdiag.run.split]) shards its collection over the CPU's
devices, so on a host with an accelerator ``import pgdiag`` asks JAX for one CPU device per core — before JAX
starts its backends, the only time it can be asked. A CPU-only host keeps JAX's one CPU device (nothing there is
split). ``PGDIAG_HOST_DEVICES=N`` asks for ``N`` anywhere (``1``: JAX's default);
[`configure`][pgdiag.run.host_devices.configure] asks from Python, before JAX has run anything.
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import os
import pkgutil

ENV = "PGDIAG_HOST_DEVICES"

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


def wanted() -> int | None:
    """The CPU device count to ask JAX for: ``$PGDIAG_HOST_DEVICES``, else one per core where an accelerator
    is present and the XLA flags name no count, else ``None`` (JAX's default)."""
    value = os.environ.get(ENV, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"{ENV}={value!r}: expected a whole number of CPU devices >= 1 (1: JAX's default)")
        return int(value)
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return None
    return (os.cpu_count() or 1) if _accelerator_present() else None


def configure(count: int | None = None) -> bool:
    """Give JAX's CPU backend ``count`` devices (default: [`wanted`][pgdiag.run.host_devices.wanted]); whether it
    was asked. Where JAX has already started its backends the count cannot change: the CPU keeps the devices it
    has."""
    import jax

    count = wanted() if count is None else count
    if count is None or count < 2:
        return False
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # JAX already ran something: too late, keep what it has
        return False
    return True
