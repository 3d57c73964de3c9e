"""Iteration stages: the episode statistics under both reporting rules, worked by hand."""

import math

import jax.numpy as jnp
import numpy as np

from pgdiag.rollout import Transitions
from pgdiag.stages import episode_stats


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


def test_training_update_in_one_loop_equals_the_value_and_policy_steps_taken_apart():
    """stages.update runs PPO's value and policy epochs in one loop; each network must come out as
    value_step and policy_step give it alone with the same key (a swapped or shared key, or a
    minibatch of the wrong network, changes the parameters at order 1e-4, far above float rounding)."""
    import jax

    from pgdiag import networks, preset, stages
    from pgdiag.config import stack_knobs
    from pgdiag.optim import adam
    from pgdiag.rollout import UpdateBatch

    cfg = preset("ppo", "point_mass", num_envs=4, steps_per_env=32, num_minibatches=4, ppo_epochs=3,
                 value_epochs=3)
    knobs = {k: v[0] for k, v in stack_knobs([cfg.knobs]).items()}
    ks = jax.random.split(jax.random.PRNGKey(0), 8)
    n = 128
    batch = UpdateBatch(obs=jax.random.normal(ks[0], (n, 4)), action=jax.random.normal(ks[1], (n, 2)),
                        old_log_prob=-2.0 + jax.random.normal(ks[2], (n,)), advantages=jax.random.normal(ks[3], (n,)),
                        old_values=jax.random.normal(ks[4], (n,)), value_targets=jax.random.normal(ks[5], (n,)),
                        value_mask=jax.random.uniform(ks[6], (n,)) > 0.1)
    policy = networks.init_policy(ks[7], 4, 2, (16, 16), knobs)
    value = networks.init_value(ks[6], 4, (16, 16), knobs)
    eps = knobs["adam_eps"]
    k_val, k_pol = jax.random.PRNGKey(1), jax.random.PRNGKey(2)

    def update(k_first, k_second):
        return stages.update(cfg.static, policy, adam(eps).init(policy), value, adam(eps).init(value), batch,
                             1e-3, 2e-3, knobs, k_first, k_second)

    def programs():  # one compile for the three
        apart = (stages.value_step(cfg.static, value, adam(eps).init(value), batch, 2e-3, knobs, k_val),
                 stages.policy_step(cfg.static, policy, adam(eps).init(policy), batch, 1e-3, knobs, k_pol))
        return update(k_val, k_pol), apart, update(k_pol, k_val)[0]

    (v1, p1), (v2, p2), v3 = jax.jit(programs)()
    for a, b in zip(jax.tree.leaves((v1, p1)), jax.tree.leaves((v2, p2))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    moved = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(p1.params), jax.tree.leaves(policy)))
    assert moved > 1e-4  # the steps did move the policy, so equality is not vacuous
    # with the keys swapped the minibatches differ: the same check would fail
    assert max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(v3.params),
                                                                 jax.tree.leaves(v2.params))) > 1e-5
