"""The gradient study's term of the memory model (the shared words per pair: [`pgdiag.diagnostics.memory`][])."""

from __future__ import annotations

from pgdiag.diagnostics.memory import WORD, pair_words, in_flight


def gradient_bytes(static, r, num_subjects: int, obs_size: int, action_size: int, num_params: int,
                   batching: str) -> int:
    """The gradient study: a chunk of every stream in flight with its activations, each
    stream's sums (one gradient per size of the grid plus four: the running sums and the pool's), and the
    K × G × G pairwise cosines of every subject."""
    streams = (r.estimates + r.truth_streams) * in_flight(num_subjects, batching)
    per_stream = r.sampling.chunk * pair_words(obs_size, action_size, static, value_passes=2) \
        + (len(r.grid.sizes) + 4) * num_params
    return WORD * streams * per_stream + WORD * num_subjects * r.estimates * len(r.grid.sizes) ** 2
