"""The landscape's term of the memory model (the shared words per pair: [`pgdiag.diagnostics.memory`][])."""

from __future__ import annotations

from pgdiag.diagnostics.memory import WORD, PAIR_SCALARS, stored_words, in_flight, step_words


def landscape_bytes(static, r, num_subjects: int, obs_size: int, action_size: int, num_params: int,
                    batching: str) -> int:
    """The landscape: the plane's parameter sets, held throughout, and the larger of its
    two phases, which run one after the other: every grid point's return stream with a chunk of transitions
    in flight (or the length stream's, before them, where it is wider), each pair's `PAIR_SCALARS`
    and one mark per size (a return stream reads no observation or action after the step that uses it);
    the largest step batch kept with the algorithm's step at its peak (`step_words`; the surface then
    evaluates the grid points on it in turn, one forward pass each)."""
    streams = len(r.step_envs) * r.grid_points
    sampling = max(streams * r.envs, r.length_episodes) * r.chunk_steps * (PAIR_SCALARS + len(r.sizes))
    stepping = max(r.step_envs) * r.own.steps * (stored_words(obs_size, action_size) + step_words(static))
    per_subject = streams * 2 * num_params + max(sampling, stepping)
    return WORD * per_subject * in_flight(num_subjects, batching)
