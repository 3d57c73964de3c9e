"""Iteration stages: the episode statistics under both reporting rules, worked by hand."""

import math

import jax.numpy as jnp
import numpy as np

from pg_diag.rollout import Transitions
from pg_diag.stages import episode_stats


def transitions(done, finished_return, finished_length):
    z = jnp.zeros(done.shape)
    return Transitions(obs=z[..., None], action=z[..., None], log_prob=z, reward=z, raw_reward=z, done=done,
                       terminated=done, truncated=jnp.zeros(done.shape, bool), finished_return=finished_return,
                       finished_length=finished_length)


def test_every_ended_episode_counts_but_the_reference_rule_drops_one_ending_on_the_last_step():
    """T = 4, two environments: env 0 ends an episode at t = 1 (return 10, length 2),
    env 1 at t = 3, the last step (return 30, length 4). All episodes: mean 20, length 3.
    The original's rule leaves out the last-step episode because another ended: 10."""
    done = jnp.array([[False, False], [True, False], [False, False], [False, True]])
    ret = jnp.where(done, jnp.array([[0.0, 0.0], [10.0, 0.0], [0.0, 0.0], [0.0, 30.0]]), 0.0)
    length = jnp.where(done, jnp.array([[0, 0], [2, 0], [0, 0], [0, 4]]), 0)
    s = episode_stats(transitions(done, ret, length))
    assert float(s.mean_return) == 20.0 and int(s.episodes) == 2 and float(s.mean_length) == 3.0
    assert float(s.mean_return_reference) == 10.0


def test_a_last_step_episode_counts_when_it_is_the_only_one_and_no_episode_gives_nan():
    done = jnp.array([[False], [False], [True]])
    s = episode_stats(transitions(done, jnp.where(done, 7.0, 0.0), jnp.where(done, 3, 0)))
    assert float(s.mean_return) == 7.0 and float(s.mean_return_reference) == 7.0
    none = episode_stats(transitions(jnp.zeros((3, 2), bool), jnp.zeros((3, 2)), jnp.zeros((3, 2), jnp.int32)))
    assert int(none.episodes) == 0
    assert math.isnan(float(none.mean_return)) and math.isnan(float(none.mean_return_reference))
    assert np.isnan(float(none.mean_length))
