"""Random bits at the speed of the step: JAX's threefry hash lowered without loops on the CPU.

JAX lowers ``threefry2x32`` on the CPU as rolled ``fori_loop``s (its CPU rule sets ``use_rolled_loops``), which
keeps very large programs quick to compile but makes every draw a handful of nested ``while`` loops, each a
separate run-time thunk. A rollout draws a few keys and one action noise per step; on Gym's Humanoid at 14
agents × 1 environment the loops cost 18–19% of the rollout and 8–23% of a training iteration
(benchmarks/results/cpu-random-2026-12-06.md), on Hopper less than the host's noise. This module registers
JAX's own platform-independent rule (the same twenty rounds, unrolled) for the CPU. The bits are the same
(tests/test_cpu_random.py draws keys, normals, uniforms and permutations both ways and compares them bit for bit);
only the surrounding floating-point fusions may change, so a trained agent can differ from one trained with the
setting off in the last bits, as between two XLA releases. Other platforms are untouched.

``PGDIAG_UNROLLED_THREEFRY=0`` keeps JAX's rolled lowering. The lowering is registered once per process at import,
before anything is traced; JAX programs compiled earlier in the process keep the lowering they were built with.
"""

from __future__ import annotations

import os

#: the setting: 0 (JAX's rolled loops) or unset (unrolled, the default)
ENV = "PGDIAG_UNROLLED_THREEFRY"
OFF = ("0", "off", "false", "no")
#: whether the unrolled lowering is registered now (a run's manifest records it: ``device.cpu_threefry``)
IN_USE = False


def wanted() -> bool:
    """Whether this process asks for the unrolled lowering (the default)."""
    return os.environ.get(ENV, "").strip().lower() not in OFF


def use(unrolled: bool) -> bool:
    """Register the unrolled (True) or JAX's rolled (False) lowering for the CPU, for programs lowered from now on;
    returns whether it could (a JAX release without the private names this needs keeps its own lowering, whose
    bits are the same)."""
    global IN_USE
    try:
        from jax._src.interpreters import mlir
        from jax._src.random import threefry2x32 as threefry
        rule = threefry._threefry2x32_lowering_rule if unrolled else threefry._threefry2x32_cpu_lowering_rule
        mlir.register_lowering(threefry.threefry2x32_p, rule, platform="cpu")
    except (ImportError, AttributeError):
        return False
    IN_USE = unrolled
    return True


def configure() -> bool:
    """Register the unrolled lowering for the CPU unless turned off; returns whether it is in use."""
    return wanted() and use(True)


__all__ = ["ENV", "IN_USE", "configure", "use", "wanted"]
