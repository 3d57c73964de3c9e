"""Where a study's program runs (pgdiag.diagnostics.placement): native MuJoCo's measurements beside an accelerator
on the host's CPU devices, in equal blocks of subjects; everything else on the default devices."""

import dataclasses

import jax
import numpy as np
import pandas as pd
import pytest

from compare import assert_frames_close
from pgdiag import preset
from pgdiag.diagnostics import gradient_study, placement
from pgdiag.diagnostics.protocol import Shape


def _static(task="hopper", **over):
    return preset("ppo", task, **over).static


def test_native_runs_are_measured_on_the_host_cpu_beside_an_accelerator(monkeypatch):
    """auto: the host's CPU where the default device is an accelerator (or the CPU is several devices) and the
    physics native, on one process;
    "split" asks for it anywhere, "device" never; MJX, Warp and pure-JAX tasks stay on the default devices."""
    assert not placement.on_host(_static())                      # this CPU: its CPU devices are the default ones
    assert placement.on_host(_static(placement="split"))          # asked for
    from pgdiag.envs import hosts
    monkeypatch.setattr(hosts, "cpu_device_count", lambda: 2)      # a CPU-only host asked for two CPU devices
    assert placement.on_host(_static(physics="native")) and not placement.on_host(_static("point_mass"))
    monkeypatch.setattr(hosts, "cpu_device_count", lambda: 1)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert placement.on_host(_static(physics="native"))
    assert not placement.on_host(_static())                      # physics auto: MJX on an accelerator
    assert not placement.on_host(_static(physics="mjx"))
    assert not placement.on_host(_static(physics="warp"))
    assert not placement.on_host(_static(placement="device"))     # asked for: the host callback path
    assert not placement.on_host(_static("point_mass"))           # pure JAX: no host physics
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    assert not placement.on_host(_static(physics="native"))       # several processes: sharded over them all


def test_subjects_go_over_the_host_cpu_devices_in_equal_blocks(monkeypatch):
    """As many devices as the largest divisor of the subject count (no subject padded), where one thread each
    keeps at least as many cores stepping as one device's pool would; else one device and its pool."""
    cpus = tuple(range(16))
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert len(placement.host_devices(5, 5, cpus=cpus)) == 5          # the mid scale's 5 seeds
    assert len(placement.host_devices(7, 7, cpus=cpus)) == 7
    assert placement.host_devices(20, 20, cpus=cpus) == (0,)          # 10 blocks of 2 step 10 cores; a pool 16
    assert len(placement.host_devices(20, 10, threads=8, cpus=cpus)) == 10   # against a pool of 8 threads
    assert len(placement.host_devices(320, 320, cpus=cpus)) == 16
    assert len(placement.host_devices(1, 1, cpus=cpus)) == 1
    assert placement.host_devices(3, 48, cpus=cpus) == (0,)           # 48 environments: one pool of 16 threads
    assert len(placement.host_devices(4, 4, threads=2, cpus=cpus)) == 4   # a pool of 2 would step fewer
    # over several devices each block steps on one thread; on one device the runs' own thread count stays
    shape = Shape(labels=("ppo",), batching="vmap", units=5, pairs=10, sequential_steps=2, width=5, bytes=0,
                  fits=True, static=_static(physics_threads=4))
    assert placement.program_shape(shape, (0, 1)).static.physics_threads == 1
    assert placement.program_shape(shape, (0,)) is shape and placement.program_shape(shape, None) is shape
    assert dataclasses.replace(placement.program_shape(shape, (0, 1)), static=None) == \
        dataclasses.replace(shape, static=None)                     # nothing else changes


@pytest.fixture(scope="module")
def studies(lqr_runs, monkeypatch_module):
    """The same gradient study on the default device and placed on the host's CPU devices (a one-device mesh
    here: the program built inside the placement, compiled for the device it names)."""
    kw = dict(save=False, sizes=(64, 256), estimates=3, iterations=[0, 5], with_batch_size=False, batching="map")
    default = gradient_study([lqr_runs["ppo"]], **kw)
    monkeypatch_module.setattr(placement, "devices_for", lambda shape: tuple(jax.devices("cpu")))
    placed = gradient_study([lqr_runs["ppo"]], **kw)
    return default, placed


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_a_study_placed_on_the_host_cpu_gives_the_default_placements_estimates(studies):
    """Each subject's numbers are those of the default placement (the same sampling: subject keys depend on the
    study seed, the agent's seed and the iteration only); the programs differ (a mesh of one device against none),
    so they agree to float32 rounding, not bitwise. The timing record says where each program ran."""
    default, placed = studies
    assert len(default.pairs) > 0
    for t in ("pairs", "estimates"):
        assert_frames_close(getattr(placed, t).reset_index(drop=True), getattr(default, t).reset_index(drop=True))
    assert {t["placement"] for t in default.manifest["timings"]} == {"default"}
    assert {t["placement"] for t in placed.manifest["timings"]} == {f"host CPU x {len(jax.devices('cpu'))}"}
    assert np.isfinite(pd.to_numeric(placed.pairs.cosine)).all()


def test_a_study_of_auto_runs_steps_what_a_sweep_would_pick_at_its_width(monkeypatch):
    """physics="auto" is resolved at the program's width as a sweep resolves it: native MuJoCo on a CPU without
    measurements; the backend this host's recorded rows find faster at that width; a backend asked for, and the
    pure-JAX tasks, as they are."""
    from pgdiag.envs import crossover

    def shape(width, task="hopper", **over):
        return Shape(labels=("ppo",), batching="vmap", units=1, pairs=width, sequential_steps=1, width=width,
                     bytes=0, fits=True, static=_static(task, **over))

    monkeypatch.setattr(crossover, "load", lambda key: [])
    got, why = placement.with_physics(shape(64))
    assert got.static.physics == "native" and "CPU host" in why
    assert placement.with_physics(shape(64, physics="mjx"))[0].static.physics == "mjx"      # asked for
    assert placement.with_physics(shape(64, "lqr"))[0].static.physics == "auto"              # pure JAX
    rows = [{"task": "hopper", "solver": "converged", "batch": b, "native_ms": n, "warp_ms": w}
            for b, n, w in ((64, 0.3, 1.5), (320, 2.7, 2.1), (1024, 8.1, 2.4))]
    monkeypatch.setattr(crossover, "load", lambda key: rows)
    assert placement.with_physics(shape(64))[0].static.physics == "native"
    assert placement.with_physics(shape(500))[0].static.physics == "warp"                    # faster there


def test_a_program_placed_on_the_host_is_sized_to_the_hosts_memory(monkeypatch):
    """80% of an accelerator's memory for a program on it; half the host's RAM for one placed on the host's CPU
    (and on a host without an accelerator)."""
    import os
    import types

    from pgdiag.diagnostics import memory

    ram_half = int(0.5 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    assert memory.available_memory() == memory.available_memory(host=True) == ram_half
    monkeypatch.setattr(memory, "device_limit", lambda: (types.SimpleNamespace(device_kind="H100"), 80 * 10 ** 9))
    assert memory.available_memory() == 64 * 10 ** 9 and memory.available_memory(host=True) == ram_half
    assert memory.memory_source() == "80% of the H100's memory"
    assert memory.memory_source(host=True) == "half the host's RAM"
