"""The memory model of the diagnostic studies: what a program is estimated to need and what the host has.

Every study is refused before it compiles when its estimated peak exceeds :func:`available_memory`, and
chooses how to batch its subjects (together, "vmap", or in turn, "map") by the same estimate. The estimates
are sums of a few named terms in 4-byte words (float32 everywhere): the state–action pairs a program holds
at once, each costing :func:`pair_words`, and the gradient-sized vectors it keeps. ``benchmarks/
bench_memory.py`` compares them with XLA's own peak of the compiled programs.
"""

from __future__ import annotations

import os

import jax

from pg_diag import algorithms
from pg_diag.diagnostics.subjects import DiagnosticError

#: bytes per word: every array the studies hold is float32 or int32
WORD = 4

#: scalars per pair a chunk of transitions keeps: reward, done, truncation, log-probability, value, next value,
#: advantage, return, the GAE carry, the episode return and length, the size masks' weight
PAIR_SCALARS = 12


def stored_words(obs_size: int, action_size: int) -> int:
    """Words one sampled pair costs while it is kept (a chunk's transitions, a fit segment, a return stream's
    chunk): ``2 × obs`` (the observation and the next one, for the value after the step), ``2 × action`` (the
    action and the policy's mean) and :data:`PAIR_SCALARS` scalars."""
    return 2 * obs_size + 2 * action_size + PAIR_SCALARS


def pair_words(obs_size: int, action_size: int, static, value_passes: int = 3, heads: int = 0) -> int:
    """Words one state–action pair costs while it is differentiated (ref §4.2: sampling, GAE and the VJP): its
    :func:`stored_words`, and its activations

    * ``3`` words per policy hidden unit: pre-activation, activation and its cotangent in the backward pass;
    * ``value_passes`` per value hidden unit: 2 for a forward pass whose activations are kept (the gradient
      study differentiates the policy only), 3 where the value network is also trained or evaluated twice;
    * ``heads``: one advantage per extra head (the baseline study's baselines on the same pairs)."""
    return (stored_words(obs_size, action_size) + heads + 3 * sum(static.policy_hidden)
            + value_passes * sum(static.value_hidden))


def in_flight(num_subjects: int, batching: str) -> int:
    """Subjects whose working memory is live at once: all of them vmapped, one in turn."""
    return num_subjects if batching == "vmap" else 1


def gradient_bytes(static, r, num_subjects: int, obs_size: int, action_size: int, num_params: int,
                   batching: str) -> int:
    """The gradient study (:mod:`.gradients`): a chunk of every stream in flight with its activations, each
    stream's sums (one gradient per size of the grid plus four: the running sums and the pool's), and the
    K × G × G pairwise cosines of every subject."""
    streams = (r.estimates + r.truth_streams) * in_flight(num_subjects, batching)
    per_stream = r.sampling.chunk * pair_words(obs_size, action_size, static, value_passes=2) \
        + (len(r.grid.sizes) + 4) * num_params
    return WORD * streams * per_stream + WORD * num_subjects * r.estimates * len(r.grid.sizes) ** 2


def step_words(static) -> float:
    """Words per pair of a batch at the peak of the algorithm's step: the larger of its
    :class:`~pg_diag.algorithms.WorkingSet`'s backward pass (3 words per policy hidden unit of the share it
    differentiates at once: PPO's minibatch) and its forward passes over the whole batch (2 words per unit
    of the widest layer, its input and output, each: TRPO's line search tries its scales together; the
    value network's pass over the batch for GAE is one)."""
    ws = algorithms.get(static.algorithm).working_set_of(static)
    widest = max(tuple(static.policy_hidden) + tuple(static.value_hidden), default=0)
    return max(3 * sum(static.policy_hidden) * ws.differentiated, 2 * widest * ws.forward_passes)


def step_bytes(static, settings, num_subjects: int, obs_size: int, action_size: int, batching: str) -> int:
    """The step study (:mod:`.steps`): every subject's M + 1 batches (the steps' and the held-out one) kept,
    and the steps, computed side by side, at their peak (:func:`step_words`)."""
    held = (settings.heldout_envs or static.num_envs) * static.steps_per_env
    pairs = settings.batches * static.num_envs * static.steps_per_env + held
    words = stored_words(obs_size, action_size) + step_words(static)
    return int(WORD * pairs * words * in_flight(num_subjects, batching))


def baseline_bytes(static, r, num_subjects: int, obs_size: int, action_size: int, num_params: int,
                   batching: str) -> int:
    """The baseline study (:mod:`.baselines`), the larger of its two phases, which run one after the other:
    the value fit's data (observation, complete return, return cut at the batch end, completion, non-terminal
    flag and exact value per pair, and a word of slack; the held-out batches, the t-test's and the floor's,
    included: ``r.fit_pairs`` counts every one) and the fit segments sampled side by side (each
    ``steps + tail`` long; kept, never differentiated: the training chains, and where the held-out batches are
    streams of their own, every held-out batch at once); then the K streams' chunks with one advantage head
    per baseline and their sums per head and size."""
    heads = len(r.baselines)
    per_pair = pair_words(obs_size, action_size, static, heads=heads)
    streams = r.estimates * r.own.chunk * per_pair + r.estimates * heads * (len(r.grid.sizes) + 4) * num_params
    lanes = r.fit_lanes + (r.kept_out if r.heldout_apart else 0)   # segments sampled side by side
    fit = r.fit_pairs * (obs_size + 6) + lanes * r.own.envs * (r.own.steps + r.tail) * stored_words(obs_size,
                                                                                                      action_size)
    return WORD * max(streams, fit) * in_flight(num_subjects, batching)


def landscape_bytes(static, r, num_subjects: int, obs_size: int, action_size: int, num_params: int,
                    batching: str) -> int:
    """The landscape (:mod:`.landscape`): the plane's parameter sets, held throughout, and the larger of its
    two phases, which run one after the other: every grid point's return stream with a chunk of transitions
    in flight (or the length stream's, before them, where it is wider), each pair's :data:`PAIR_SCALARS`
    and one mark per size (a return stream reads no observation or action after the step that uses it);
    the largest step batch kept with the algorithm's step at its peak (:func:`step_words`; the surface then
    evaluates the grid points on it in turn, one forward pass each)."""
    streams = len(r.step_envs) * r.grid_points
    sampling = max(streams * r.envs, r.length_episodes) * r.chunk_steps * (PAIR_SCALARS + len(r.sizes))
    stepping = max(r.step_envs) * r.own.steps * (stored_words(obs_size, action_size) + step_words(static))
    per_subject = streams * 2 * num_params + max(sampling, stepping)
    return WORD * per_subject * in_flight(num_subjects, batching)


def num_params(static, obs_size: int, action_size: int) -> int:
    """The policy's parameter count (the gradients' length): its MLP and the log-std vector."""
    sizes = (obs_size,) + tuple(static.policy_hidden) + (action_size,)
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:])) + action_size


def device_limit():
    """(device, its memory limit in bytes or None): memory_stats answers for this process's devices only."""
    dev = jax.local_devices()[0]
    stats = dev.memory_stats() if hasattr(dev, "memory_stats") else None
    return dev, (stats or {}).get("bytes_limit")


def memory_source() -> str:
    """What :func:`available_memory` reads, in words."""
    dev, limit = device_limit()
    return f"80% of the {dev.device_kind}'s memory" if limit else "half this host's RAM"


def available_memory() -> int:
    """Bytes the program may use: 80% of the accelerator's limit, or half the host's RAM."""
    _, limit = device_limit()
    if limit:
        return int(0.8 * limit)
    try:
        return int(0.5 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2 ** 30


def fmt_bytes(n: int) -> str:
    return f"{n / 2 ** 30:.1f} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:.0f} MiB"


def require_memory(need: int, what: str, shape: str, advice: str, have: int | None = None) -> None:
    """Refuse, before compiling, a program estimated to need more than ``have`` (default:
    :func:`available_memory`)."""
    have = available_memory() if have is None else have
    if need > have:
        raise DiagnosticError(f"{what} needs about {fmt_bytes(need)} but {fmt_bytes(have)} is available: {shape}; "
                              f"{advice}")


__all__ = ["PAIR_SCALARS", "WORD", "available_memory", "baseline_bytes", "device_limit", "fmt_bytes",
           "gradient_bytes", "in_flight", "landscape_bytes", "memory_source", "num_params", "pair_words",
           "require_memory", "step_bytes", "step_words", "stored_words"]
