"""The step study's term of the memory model (the shared words per pair: [`pgdiag.diagnostics.memory`][])."""

from __future__ import annotations

from pgdiag.diagnostics.memory import WORD, stored_words, in_flight, step_words


def step_bytes(static, settings, num_subjects: int, obs_size: int, action_size: int, batching: str) -> int:
    """The step study: every subject's M + 1 batches (the steps' and the held-out one) kept,
    and the steps, computed side by side, at their peak (`step_words`)."""
    held = (settings.heldout_envs or static.num_envs) * static.steps_per_env
    pairs = settings.batches * static.num_envs * static.steps_per_env + held
    words = stored_words(obs_size, action_size) + step_words(static)
    return int(WORD * pairs * words * in_flight(num_subjects, batching))
