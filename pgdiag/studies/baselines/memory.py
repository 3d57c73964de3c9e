"""The baseline study's term of the memory model (the shared words per pair: [`pgdiag.diagnostics.memory`][])."""

from __future__ import annotations

from pgdiag.diagnostics.memory import WORD, pair_words, stored_words, in_flight


def baseline_bytes(static, r, num_subjects: int, obs_size: int, action_size: int, num_params: int,
                   batching: str) -> int:
    """The baseline study, the larger of its two phases, which run one after the other:
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
