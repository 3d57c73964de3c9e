"""Networks of a user's own (examples/own_network.py: a value head on the policy's trunk, a state-dependent σ),
registered without editing pgdiag, trained in a sweep, saved, loaded and measured by a study; the registry's
refusals named at registration and before any compile."""

import importlib.util
import math
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pgdiag import ConfigError, FrozenPolicy, load_checkpoint, networks, preset, stages, sweep
from pgdiag.config import Knobs
from pgdiag.diagnostics import run
from pgdiag.networks import Network, NetworkError, register_network, unregister_network
from pgdiag.rollout import UpdateBatch

EXAMPLES = pathlib.Path(__file__).parent.parent / "examples"
HIDDEN = (8,)


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def own():
    module = _load("own_network")
    yield module
    for name in ("shared-trunk", "state-sigma"):
        unregister_network(name)


@pytest.fixture(scope="module")
def entropy():
    return _load("policy_entropy").ENTROPY


def _train(own, tmp_path_factory, network):
    out = str(tmp_path_factory.mktemp(network) / "lqr")
    cfg = preset("ppo", "lqr", num_envs=4, steps_per_env=32, num_iterations=3, checkpoint_at=(0, 3),
                 network=network, policy_hidden=HIDDEN, value_hidden=HIDDEN)
    return sweep(cfg, None, seeds=2, out=out)


@pytest.fixture(scope="module")
def trunk_run(own, tmp_path_factory):
    return _train(own, tmp_path_factory, "shared-trunk")


@pytest.fixture(scope="module")
def sigma_run(own, tmp_path_factory):
    return _train(own, tmp_path_factory, "state-sigma")


def _np_trunk(layers, x):
    for layer in layers:
        x = np.tanh(x @ np.asarray(layer["w"], np.float64) + np.asarray(layer["b"], np.float64))
    return x


def _agent(tree, i):
    return jax.tree.map(lambda x: np.asarray(x)[i], tree)


def test_the_value_reads_the_policys_trunk_in_every_checkpoint(trunk_run):
    """The trunk the value holds is the policy's (tied at initialization and after every update), and the
    policy's objective moved it."""
    first, last = (load_checkpoint(trunk_run, i) for i in (0, 3))
    for state in (first, last):
        for a, b in zip(jax.tree.leaves(state.policy["trunk"]), jax.tree.leaves(state.value["trunk"])):
            np.testing.assert_array_equal(a, b)
    moved = [np.abs(np.asarray(a) - np.asarray(b)).max()
             for a, b in zip(jax.tree.leaves(first.policy["trunk"]), jax.tree.leaves(last.policy["trunk"]))]
    assert max(moved) > 0 and np.isfinite(np.asarray(trunk_run.metrics["mean_return"])).all()


def test_the_value_loss_trains_the_head_and_leaves_the_trunk(own, trunk_run):
    """stop_gradient in the value: Adam's step on a zero gradient is exactly zero, so the trunk stays bitwise."""
    state = _agent(load_checkpoint(trunk_run, 3), 0)
    static, knobs = trunk_run.config(0).static, trunk_run.config(0).knobs.as_arrays()
    obs = jax.random.normal(jax.random.PRNGKey(1), (128, 2))
    batch = UpdateBatch(obs=obs, action=jnp.zeros((128, 1)), old_log_prob=jnp.zeros(128),
                               advantages=jnp.zeros(128), old_values=jnp.zeros(128),
                               value_targets=obs[:, 0] ** 2, value_mask=jnp.ones(128, bool))
    out = stages.value_step(static, state.value, state.value_opt, batch, 1e-3, knobs, jax.random.PRNGKey(2))
    for a, b in zip(jax.tree.leaves(state.value["trunk"]), jax.tree.leaves(out.params["trunk"])):
        np.testing.assert_array_equal(a, b)
    assert np.abs(np.asarray(out.params["head"]["w"]) - state.value["head"]["w"]).max() > 0


def test_a_shared_trunk_agent_is_measured_by_a_study(entropy, trunk_run):
    """The entropy study (examples/policy_entropy.py) on the trunk network: its σ is state-independent, so the
    closed form is Σ log σ + (d/2)·log(2πe) from the saved log σ; the estimate within 5 of its exact standard
    errors √(d/2)/√n (false-failure probability 6e-7 per row, fixed seed)."""
    study = run(entropy, [trunk_run.path], draws=256, save=False)
    assert len(study.entropy) == 4
    for r in study.entropy.itertuples():
        log_std = np.asarray(load_checkpoint(trunk_run, int(r.iteration)).policy["log_std"], np.float64)[r.agent]
        exact = log_std.sum() + log_std.size / 2 * math.log(2 * math.pi * math.e)
        assert r.exact == pytest.approx(exact, rel=1e-5, abs=1e-5)
        assert abs(r.estimate - exact) <= 5 * math.sqrt(log_std.size / 2 / r.n)


def _np_log_std(own, params, x):
    h = _np_trunk(params["body"], x)
    z = h @ np.asarray(params["std"]["w"], np.float64) + np.asarray(params["std"]["b"], np.float64)
    return own.LOG_STD_MIN + (own.LOG_STD_MAX - own.LOG_STD_MIN) / (1 + np.exp(-z))


def test_a_state_dependent_sigma_is_applied_where_it_is_loaded(own, sigma_run):
    """A loaded agent's entropy at a state equals Σ log σ(s) + (d/2)·log(2πe) with σ(s) worked out in NumPy from
    its saved parameters, and σ differs between states; training reports no state-independent σ for it."""
    state = load_checkpoint(sigma_run, 3)
    params, knobs = _agent(state.policy, 1), sigma_run.config(0).knobs.as_arrays()
    pi = FrozenPolicy(params=params, obs_stat=_agent(state.filters.obs, 1), knobs=knobs, iteration=state.iteration)
    raw = np.array([[0.5, -1.0], [2.0, 0.3], [-1.5, 1.5]], np.float32)
    log_std = _np_log_std(own, params, np.asarray(pi.observe(raw), np.float64))
    exact = log_std.sum(-1) + log_std.shape[-1] / 2 * math.log(2 * math.pi * math.e)
    np.testing.assert_allclose(np.asarray(pi.entropy(raw)), exact, rtol=1e-5, atol=1e-5)
    assert np.ptp(log_std) > 0
    assert np.isnan(np.asarray(sigma_run.metrics["policy_std"])).all()


def test_a_state_dependent_sigma_agent_is_measured_by_a_study(own, entropy, sigma_run):
    """The study's closed form is the mean over its states of H(s); with σ(s) from NumPy at the same states it
    agrees, and the estimate lies within 5 standard errors √(d/2)/√n of it (−log π(u|s) is H(s)'s constant plus
    ½‖ε‖² at every state; false-failure probability 6e-7 per row, fixed seed)."""
    study = run(entropy, [sigma_run.path], draws=256, save=False)
    for r in study.entropy.itertuples():
        state = _agent(load_checkpoint(sigma_run, int(r.iteration)), r.agent)
        pi = FrozenPolicy(params=state.policy, obs_stat=state.filters.obs,
                          knobs=sigma_run.config(0).knobs.as_arrays(), iteration=state.iteration)
        log_std = _np_log_std(own, state.policy, np.asarray(pi.observe(state.envs.state.obs), np.float64))
        exact = log_std.sum(-1).mean() + log_std.shape[-1] / 2 * math.log(2 * math.pi * math.e)
        assert r.exact == pytest.approx(exact, rel=1e-4, abs=1e-4)
        assert abs(r.estimate - exact) <= 5 * math.sqrt(log_std.shape[-1] / 2 / r.n)


def test_the_configuration_names_the_registered_networks(own):
    with pytest.raises(ConfigError, match="unknown network 'nope'.*shared-trunk, state-sigma"):
        preset("ppo", "lqr", network="nope")
    assert preset("ppo", "lqr", network="state-sigma").static.network == "state-sigma"


def _network(name, key, **fns):
    base = dict(init_policy=lambda k, o, a, h, kn: {key: jnp.zeros((o, a)), "log_std": jnp.zeros(a)},
                init_value=lambda k, o, h, kn: {key: jnp.zeros((o,))},
                policy=lambda p, x, kn: (x @ p[key], jnp.broadcast_to(p["log_std"], (x.shape[0], 2))),
                value=lambda p, x, kn: x @ p[key])
    return Network(name=name, key=key, **{**base, **fns})


def test_registration_checks_the_protocol_before_anything_compiles():
    register_network(_network("linear-own", "own_w"))
    try:
        key = Knobs().as_arrays()
        params = networks.init_policy(jax.random.PRNGKey(0), 3, 2, (), key, "linear-own")
        assert networks.network_of(params).name == "linear-own" and networks.action_size(params, 3) == 2
        with pytest.raises(NetworkError, match="already registered"):
            register_network(_network("linear-own", "other_w"))
        with pytest.raises(NetworkError, match="key 'own_w' is already network 'linear-own'"):
            register_network(_network("another", "own_w"))
    finally:
        unregister_network("linear-own")
    with pytest.raises(NetworkError, match="'bad-mean'.*policy must return \\(mean, log_std\\)"):
        register_network(_network("bad-mean", "bm", policy=lambda p, x, kn: x @ p["bm"]))
    with pytest.raises(NetworkError, match="'bad-value'.*value must return V"):
        register_network(_network("bad-value", "bv", value=lambda p, x, kn: x))
    with pytest.raises(NetworkError, match="'bad-init'.*init_policy must return a dict holding its key 'bi'"):
        register_network(_network("bad-init", "bi", init_policy=lambda k, o, a, h, kn: {"w": jnp.zeros(1)}))
    assert "bad-mean" not in networks.names() and "linear-own" not in networks.names()
    with pytest.raises(NetworkError, match="not one registered network's"):
        networks.policy_apply({"w": jnp.zeros(2)}, jnp.zeros(2), Knobs().as_arrays())


def test_registering_and_building_compile_nothing():
    """The protocol's and the task registry's checks trace shapes only: a run's compile count (its init and chunk
    programs) is then the same whatever ran before it in the process."""
    from pgdiag.envs.registry import _check_shapes, build
    from pgdiag.run.progress import CompileCounter

    env = build("lqr", "auto", 0, "converged", "brax")
    with CompileCounter() as counter:
        register_network(_network("counted", "counted_w"))
        _check_shapes("lqr", env)
    unregister_network("counted")
    assert counter.count == 0


@pytest.mark.parametrize("network", [networks.MLP, networks.BRAX])
def test_the_built_in_networks_keep_the_protocol(network):
    """Registered without the traced check (it would cost every import): it is run here."""
    from pgdiag.networks.protocol import _check_shapes

    _check_shapes(network)


def test_the_command_line_lists_a_users_network(tmp_path):
    """`pgdiag --load FILE networks`: the built-in networks and the file's, each with its key."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "pgdiag.cli", "--load", str(EXAMPLES / "own_network.py"), "networks"],
                         capture_output=True, text=True, check=True).stdout
    names = [line.split()[0] for line in out.splitlines() if line and not line.startswith(" ")]
    assert names == ["mlp", "brax", "shared-trunk", "state-sigma"]
    assert "parameters' key 'trunk'" in out and "tie" in out
