"""Compiles paid once (pgdiag.run.compile_cache): `import pgdiag` points JAX's persistent compilation cache at a
directory keyed by the host's CPU, a second process reads what the first compiled (the same executable: equal
results), and PGDIAG_COMPILATION_CACHE=0 turns it off."""

import json
import os
import subprocess
import sys

from pgdiag.run import compile_cache

CHILD = ("import json, jax, jax.numpy as jnp, pgdiag\n"
         "f = jax.jit(lambda x: jnp.tanh(x @ x.T).sum(axis=0) * 3.0 + 1.0)\n"
         "y = f(jnp.arange(12.0).reshape(3, 4) / 7)\n"
         "print(json.dumps({'dir': jax.config.jax_compilation_cache_dir, 'y': [float(v) for v in y]}))")


def child(env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True,
                         env={**os.environ, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", **env})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_process_reads_what_the_first_compiled(tmp_path):
    first = child({compile_cache.ENV: str(tmp_path)})
    assert first["dir"] == os.path.join(str(tmp_path), compile_cache._cpu_key())
    stored = sorted(os.listdir(first["dir"]))
    assert any(name.startswith("jit_") for name in stored), stored
    second = child({compile_cache.ENV: str(tmp_path)})
    assert second == first and sorted(os.listdir(first["dir"])) == stored   # read back, nothing new written


def test_the_cache_is_off_with_one_setting(tmp_path):
    assert child({compile_cache.ENV: "0"})["dir"] is None


def test_the_directory_is_keyed_by_the_cpu(monkeypatch, tmp_path):
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path))
    assert compile_cache.directory() == os.path.join(str(tmp_path), compile_cache._cpu_key())
    monkeypatch.delenv(compile_cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compile_cache.directory().startswith(str(tmp_path / "xdg" / "pgdiag" / "jax"))
    assert len(compile_cache._cpu_key()) == 12
