"""The memory model of the diagnostic studies: what a program is estimated to need and what the host has.

Every study is refused before it compiles when its estimated peak exceeds
[`available_memory`][pgdiag.diagnostics.memory.available_memory], and chooses how to batch its subjects (together,
"vmap", or in turn, "map") by the same estimate. The estimates are sums of a few named terms in 4-byte words
(float32 everywhere): the state–action pairs a program holds at once, each costing
[`pair_words`][pgdiag.diagnostics.memory.pair_words], and the gradient-sized vectors it keeps. ``benchmarks/
bench_memory.py`` compares them with XLA's own peak of the compiled programs.
"""

from __future__ import annotations

import jax

from pgdiag import algorithms
from pgdiag.diagnostics.protocol import WORD  # bytes per word: every array the studies hold is float32 or int32
from pgdiag.diagnostics.subjects import DiagnosticError
from pgdiag.envs import hosts

#: scalars per pair a chunk of transitions keeps: reward, done, truncation, log-probability, value, next value,
#: advantage, return, the GAE carry, the episode return and length, the size masks' weight
PAIR_SCALARS = 12


def stored_words(obs_size: int, action_size: int) -> int:
    """Words one sampled pair costs while it is kept (a chunk's transitions, a fit segment, a return stream's
    chunk): ``2 × obs`` (the observation and the next one, for the value after the step), ``2 × action`` (the
    action and the policy's mean) and [`PAIR_SCALARS`][pgdiag.diagnostics.memory.PAIR_SCALARS] scalars."""
    return 2 * obs_size + 2 * action_size + PAIR_SCALARS


def pair_words(obs_size: int, action_size: int, static, value_passes: int = 3, heads: int = 0) -> int:
    """Words one state–action pair costs while it is differentiated (ref §4.2: sampling, GAE and the VJP): its
    [`stored_words`][pgdiag.diagnostics.memory.stored_words], and its activations

    * ``3`` words per policy hidden unit: pre-activation, activation and its cotangent in the backward pass;
    * ``value_passes`` per value hidden unit: 2 for a forward pass whose activations are kept (the gradient
      study differentiates the policy only), 3 where the value network is also trained or evaluated twice;
    * ``heads``: one advantage per extra head (the baseline study's baselines on the same pairs)."""
    return (stored_words(obs_size, action_size) + heads + 3 * sum(static.policy_hidden)
            + value_passes * sum(static.value_hidden))


def in_flight(num_subjects: int, batching: str) -> int:
    """Subjects whose working memory is live at once: all of them vmapped, one in turn."""
    return num_subjects if batching == "vmap" else 1


def step_words(static) -> float:
    """Words per pair of a batch at the peak of the algorithm's step: the larger of its
    [`WorkingSet`][pgdiag.algorithms.base.WorkingSet]'s backward pass (3 words per policy hidden unit of the share it
    differentiates at once: PPO's minibatch) and its forward passes over the whole batch (2 words per unit
    of the widest layer, its input and output, each: TRPO's line search tries its scales together; the
    value network's pass over the batch for GAE is one)."""
    ws = algorithms.get(static.algorithm).working_set_of(static)
    widest = max(tuple(static.policy_hidden) + tuple(static.value_hidden), default=0)
    return max(3 * sum(static.policy_hidden) * ws.differentiated, 2 * widest * ws.forward_passes)


def num_params(static, obs_size: int, action_size: int) -> int:
    """The policy's parameter count (the gradients' length): its MLP and the log-std vector."""
    sizes = (obs_size,) + tuple(static.policy_hidden) + (action_size,)
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:])) + action_size


def device_limit():
    """(device, its memory limit in bytes or None): memory_stats answers for this process's devices only."""
    dev = jax.local_devices()[0]
    stats = dev.memory_stats() if hasattr(dev, "memory_stats") else None
    return dev, (stats or {}).get("bytes_limit")


def _device_limit() -> tuple[str, int | None]:
    """(the default device's kind, its memory limit or None): a declared host's where a plan is made for one
    ([`pgdiag.envs.hosts`][pgdiag.envs.hosts])."""
    declared = hosts.declared()
    if declared:
        return declared.device_kind, declared.device_memory if declared.accelerator else None
    dev, limit = device_limit()
    return dev.device_kind, limit


def memory_source(host: bool = False) -> str:
    """What [`available_memory`][pgdiag.diagnostics.memory.available_memory] reads, in words."""
    kind, limit = _device_limit()
    where = f", declared by {hosts.declared().source}" if hosts.declared() and hosts.declared().source else ""
    return (f"80% of the {kind}'s memory" if limit and not host else "half the host's RAM") + where


def available_memory(host: bool = False) -> int:
    """Bytes the program may use: 80% of the accelerator's limit, or half the host's RAM (on a host without one,
    or with ``host``: a program placed on the host's CPU, `pgdiag.diagnostics.placement`)."""
    _, limit = _device_limit()
    if limit and not host:
        return int(0.8 * limit)
    return int(0.5 * hosts.host_memory())


def fmt_bytes(n: int) -> str:
    return f"{n / 2 ** 30:.1f} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:.0f} MiB"


def require_memory(need: int, what: str, shape: str, advice: str, have: int | None = None) -> None:
    """Refuse, before compiling, a program estimated to need more than ``have`` (default:
    [`available_memory`][pgdiag.diagnostics.memory.available_memory])."""
    have = available_memory() if have is None else have
    if need > have:
        raise DiagnosticError(refusal_text(need, what, shape, advice, have))


def refusal_text(need: int, what: str, shape: str, advice: str, have: int) -> str:
    """The line a program that does not fit is refused with (and its plan prints)."""
    return f"{what} needs about {fmt_bytes(need)} but {fmt_bytes(have)} is available: {shape}; {advice}"


__all__ = ["PAIR_SCALARS", "WORD", "available_memory", "device_limit", "fmt_bytes", "in_flight", "memory_source",
           "num_params", "pair_words", "refusal_text", "require_memory", "step_words", "stored_words"]
