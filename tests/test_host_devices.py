"""The host's CPU device count pgdiag asks JAX for at import (pgdiag/run/host_devices.py)."""

import json
import os
import subprocess
import sys

import pytest

from pgdiag.run import host_devices


def _clean(monkeypatch, flags=""):
    monkeypatch.delenv(host_devices.ENV, raising=False)
    monkeypatch.setenv("XLA_FLAGS", flags)


def test_a_cpu_only_host_gets_two_devices_whatever_its_cores(monkeypatch):
    _clean(monkeypatch)
    monkeypatch.setattr(host_devices, "_accelerator_present", lambda: False)
    for cores in (1, 2, 16):
        monkeypatch.setattr(os, "cpu_count", lambda: cores)
        assert host_devices.wanted() == 2
    _clean(monkeypatch, "--xla_force_host_platform_device_count=4")   # the user's own count stands
    assert host_devices.wanted() is None


def test_a_host_with_an_accelerator_gets_a_cpu_device_per_core(monkeypatch):
    _clean(monkeypatch)
    monkeypatch.setattr(host_devices, "_accelerator_present", lambda: True)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert host_devices.wanted() == 16
    _clean(monkeypatch, "--xla_force_host_platform_device_count=4")   # the user's own count stands
    assert host_devices.wanted() is None


def test_the_variable_asks_for_a_count_anywhere_and_a_bad_one_is_named(monkeypatch):
    _clean(monkeypatch)
    monkeypatch.setattr(host_devices, "_accelerator_present", lambda: False)
    monkeypatch.setenv(host_devices.ENV, "3")
    assert host_devices.wanted() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(host_devices.ENV, bad)
        with pytest.raises(ValueError, match=f"PGDIAG_HOST_DEVICES='{bad}': expected a whole number"):
            host_devices.wanted()


def test_an_accelerator_is_a_plugin_and_its_device(monkeypatch, tmp_path):
    """A CUDA build of JAX on a machine with no GPU device file runs on the CPU: no extra devices; with the
    device file it is an accelerator host, unless JAX_PLATFORMS keeps JAX on the CPU."""
    import types

    plugin = types.SimpleNamespace(name="xla_cuda12")
    monkeypatch.setattr(host_devices.importlib.metadata, "entry_points", lambda group: [plugin])
    monkeypatch.setattr(host_devices.glob, "glob", lambda pattern: [])
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    monkeypatch.setattr(host_devices, "_DEVICE_FILES", (str(tmp_path / "nvidiactl"),))
    assert host_devices._accelerator_present() is False
    (tmp_path / "nvidiactl").write_text("")
    assert host_devices._accelerator_present() is True
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert host_devices._accelerator_present() is False


def _devices_after_import(env_extra, before=""):
    env = {**os.environ, **env_extra}
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f)
    code = (f"import jax, os\n{before}\nimport pgdiag\nfrom pgdiag.envs import default_threads\n"
            "os.cpu_count = lambda: 16\nprint(json.dumps([len(jax.devices('cpu')), default_threads()]))")
    code = "import json\n" + code
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_pgdiag_sets_the_count_before_jax_starts_and_keeps_it_after():
    """On a 16-core host the native backend's default threads are the cores shared among the devices: 4 CPU
    devices, 4 threads each; one device, 16."""
    assert _devices_after_import({host_devices.ENV: "4"}) == [4, 4]
    assert _devices_after_import({host_devices.ENV: "", "JAX_PLATFORMS": "cpu"}) == [2, 8]   # a CPU-only host's
    # JAX already ran something: its backends are up and keep their one CPU device; the import does not fail
    assert _devices_after_import({host_devices.ENV: "4"}, before="jax.numpy.zeros(1).block_until_ready()") == [1, 16]
