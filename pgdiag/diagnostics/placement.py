"""Where a study's program runs: native MuJoCo's measurements on a host with an accelerator run on the host's CPU.

A program compiled for an accelerator steps native MuJoCo by host callback, the state crossing to the host and back
every batched step: 0.36–0.40 ms a step at batch 1 on an H100 host against 0.022–0.086 ms for ``mj_step``
(``benchmarks/bench_native_placement.py``). A study's networks are small (the papers' 64 × 64), so the whole
measurement — sampling, physics, the estimates — is compiled for the host's CPU devices instead, where the FFI
handler steps MuJoCo inside the program ([`pgdiag.envs.native_physics`][pgdiag.envs.native_physics]). Its subjects
are spread over those devices in equal blocks ([`host_devices`][pgdiag.diagnostics.placement.host_devices]), as a
split training run spreads its collection ([`pgdiag.run.split.collectors`][pgdiag.run.split.collectors]).

A study of runs left at ``physics="auto"`` steps the backend a sweep would pick at the program's width
([`with_physics`][pgdiag.diagnostics.placement.with_physics]). The runs' ``placement`` setting says where:
``"auto"`` on the host's CPU where the default device is an accelerator (or a CPU-only host has several CPU
devices, two by default: [`pgdiag.run.host_devices`][pgdiag.run.host_devices]), the physics is native and the study runs
on one process; ``"split"`` there always; ``"device"`` on the default devices (by callback on an accelerator).
MJX, Warp and the pure-JAX tasks stay on the default devices.
"""

from __future__ import annotations

import dataclasses
import os

import jax

from pgdiag import envs
from pgdiag.diagnostics import memory
from pgdiag.envs import hosts


def on_host(static) -> bool:
    """Whether a study of runs of ``static`` runs on the host's CPU devices rather than the default ones."""
    if hosts.process_count() > 1 or static.placement == "device":
        return False
    if static.placement == "split":
        return True
    physics, _ = envs.resolve_physics(static.task, static.physics, static.physics_threads, static.model)
    # a CPU-only host's several CPU devices (two by default: pgdiag.run.host_devices) take its subjects too
    return physics == "native" and (hosts.backend() != "cpu" or hosts.cpu_device_count() > 1)


def memory_bytes(static) -> int:
    """The bytes a study program of runs of ``static`` may use where it runs (the host's RAM on its CPU devices, the
    accelerator's otherwise; [`pgdiag.diagnostics.memory.available_memory`][pgdiag.diagnostics.memory.
    available_memory]). Runs left at ``physics="auto"`` on an accelerator host go where the program's width sends
    them ([`with_physics`][pgdiag.diagnostics.placement.with_physics]), which its memory decides: shaped for the
    smaller of the two, the program fits wherever it lands."""
    auto = (static.physics == "auto" and static.placement == "auto" and hosts.backend() != "cpu"
            and hosts.process_count() == 1 and envs.task_entry(static.task).kind == "mujoco")
    if auto:
        return min(memory.available_memory(host=False), memory.available_memory(host=True))
    return memory.available_memory(host=on_host(static))


def host_devices(units: int, width: int, threads: int = 0, cpus=None) -> tuple:
    """The CPU devices a program of ``units`` subjects stepping ``width`` environments together runs on: as many as
    the largest divisor of ``units`` the host has (equal blocks, no subject padded), where those blocks, one
    physics thread each, keep at least as many cores stepping as one device's pool of ``threads`` (0: every core)
    would; else the first device alone, its pool stepping every environment."""
    cpus = tuple(jax.devices("cpu") if cpus is None else cpus)
    count = max(d for d in range(1, min(len(cpus), max(units, 1)) + 1) if units % d == 0)
    pooled = min(threads or (os.cpu_count() or 1), max(width, 1))
    return cpus[:count] if count >= pooled else cpus[:1]


def with_physics(shape) -> tuple:
    """(``shape`` with its runs' ``physics="auto"`` resolved, why): the backend a sweep would take for a batch of the
    program's width on this host ([`pgdiag.envs.choose_physics`][pgdiag.envs.choose_physics]: the faster one
    recorded here, timed the first time on an accelerator host; native MuJoCo on a CPU without measurements), so a
    study of many streams on one GPU host steps MJX or Warp where they are faster at its width, and native MuJoCo
    over the host's cores where that is. A backend asked for, and the pure-JAX tasks, stay as they are."""
    s = shape.static
    backend, _, why = envs.choose_physics(s.task, s.physics, s.physics_threads, s.solver, shape.width, s.model)
    if s.physics != "auto" or backend == "jax":
        return shape, why
    return dataclasses.replace(shape, static=dataclasses.replace(s, physics=backend)), why


def devices_for(shape) -> tuple | None:
    """The devices ``shape`` (an engine `Shape`) runs on: the host's CPU devices where
    [`on_host`][pgdiag.diagnostics.placement.on_host], else None (the default devices)."""
    if not on_host(shape.static):
        return None
    return host_devices(shape.units, shape.width, shape.static.physics_threads)


def program_shape(shape, devices):
    """``shape`` as its program is built on ``devices``: over several CPU devices each steps its block on one
    physics thread (a pool per device would oversubscribe the cores; the thread count never changes results)."""
    if devices is None or len(devices) < 2:
        return shape
    return dataclasses.replace(shape, static=dataclasses.replace(shape.static, physics_threads=1))


def describe(devices) -> str:
    """Where a program ran, as its timing record says it."""
    if devices is None:
        return "default"
    return f"host CPU x {len(devices)}"


__all__ = ["describe", "devices_for", "host_devices", "memory_bytes", "on_host", "program_shape", "with_physics"]
