"""Random bits without loops on the CPU (pgdiag.run.cpu_random): the unrolled lowering draws the same bits as JAX's
rolled one — keys, normals, uniforms, raw bits and a permutation, compared bit for bit across two processes — its
program has fewer loops than JAX's, a run's manifest records which is in use, and PGDIAG_UNROLLED_THREEFRY=0 keeps
JAX's lowering."""

import json
import os
import subprocess
import sys

from pgdiag.run import cpu_random

CHILD = ("import hashlib, json, jax, numpy as np, pgdiag, pgdiag.run.provenance\n"
         "def draws(k):\n"
         "    ks = jax.random.split(k, 64)\n"
         "    return (jax.random.key_data(ks), jax.vmap(lambda kk: jax.random.normal(kk, (5,)))(ks),\n"
         "            jax.random.uniform(k, (257,)), jax.random.bits(k, (99,)), jax.random.permutation(k, 300))\n"
         "f = jax.jit(draws)\n"
         "out = f(jax.random.key(11))\n"
         "text = f.lower(jax.random.key(11)).as_text()\n"
         "print(json.dumps({'digest': [hashlib.sha256(np.asarray(o).tobytes()).hexdigest() for o in out],\n"
         "                  'loops': text.count('stablehlo.while'),\n"
         "                  'recorded': pgdiag.run.provenance.device_info()['cpu_threefry']}))")


def child(value: str) -> dict:
    env = {**os.environ, cpu_random.ENV: value, "PGDIAG_COMPILATION_CACHE": "0", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_unrolled_lowering_draws_the_same_bits_without_loops():
    rolled, unrolled = child("0"), child("1")
    assert unrolled["digest"] == rolled["digest"]   # the same bits, drawn by two different programs
    assert rolled["loops"] > 0 and unrolled["loops"] < rolled["loops"]
    assert (rolled["recorded"], unrolled["recorded"]) == ("rolled", "unrolled")   # as a run's manifest says


def test_the_setting_reads_off_and_on(monkeypatch):
    monkeypatch.setenv(cpu_random.ENV, "0")
    assert not cpu_random.wanted() and not cpu_random.configure()
    monkeypatch.delenv(cpu_random.ENV)
    assert cpu_random.wanted()
