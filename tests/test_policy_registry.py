"""The policy loaders' registry (pgdiag.adapters.policy_loaders): a user's own kind of file read through
read_policy, pgdiag.load_policy and `pgdiag import` and checked against the closed form of a linear-Gaussian
policy; an unknown kind, an option the kind does not take and a value its declaration refuses each refused in
one line before any file is opened; and the registrations refused."""

import os

import jax.numpy as jnp
import numpy as np
import pytest

import pgdiag
from pgdiag.adapters import ArchiveError, ExternalPolicy, PolicyLoader, loaders, register_loader, unregister_loader
from pgdiag.adapters.policies import ACTIVATION, read_policy
from pgdiag.adapters.policy_loaders import kinds
from pgdiag.config import Choices, ConfigError, Option, Range

SCALE = Option(1.0, "multiplies the policy's weights", Range(0, low_open=True))
SUMMARY = "linear policies' weights in an .npz"


def read_linear(path, scale):
    """A linear-Gaussian policy (and linear value function) for pgdiag's "mlp" network with no hidden layers."""
    read_linear.calls.append((path, scale))
    with np.load(path, allow_pickle=False) as f:   # data only: no pickle is unpickled
        w, b, log_std, vw, vb = (np.asarray(f[k], np.float32) for k in ("w", "b", "log_std", "vw", "vb"))
    return ExternalPolicy(kind="linear", path=path, network="mlp",
                          policy={"layers": [{"w": np.float32(scale) * w, "b": b}], "log_std": log_std},
                          value={"layers": [{"w": vw, "b": vb}]}, obs_mean=None, obs_std=None, obs_count=0,
                          obs_clip=None, knobs={})


@pytest.fixture
def linear(tmp_path):
    """The loader registered, and a file of weights for the lqr task (2-d observations, 1-d actions)."""
    read_linear.calls = []
    register_loader(PolicyLoader("linear", SUMMARY, read_linear, options={"scale": SCALE}))
    rng = np.random.default_rng(0)
    weights = dict(w=rng.normal(size=(2, 1)), b=rng.normal(size=1), log_std=np.array([-0.3]),
                   vw=rng.normal(size=(2, 1)), vb=rng.normal(size=1))
    np.savez(tmp_path / "linear.npz", **weights)
    yield str(tmp_path / "linear.npz"), {k: v.astype(np.float32) for k, v in weights.items()}
    unregister_loader("linear")


def closed_form(weights, scale, x, u):
    """μ = x·(scale W) + b, σ = exp(log σ), log π(u|x) = Σ −½((u − μ)/σ)² − log σ − ½ log 2π, V = x·v + c."""
    x, u = np.asarray(x, np.float64), np.asarray(u, np.float64)
    mean = x @ (scale * weights["w"].astype(np.float64)) + weights["b"]
    log_std = weights["log_std"].astype(np.float64)
    log_prob = np.sum(-0.5 * ((u - mean) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi), axis=-1)
    value = (x @ weights["vw"].astype(np.float64) + weights["vb"])[:, 0]
    return mean, log_prob, value


def check(policy, weights, scale, value_function=True):
    x = np.random.default_rng(1).normal(size=(6, 2)).astype(np.float32)
    u = np.random.default_rng(2).normal(size=(6, 1)).astype(np.float32)
    mean, log_prob, value = closed_form(weights, scale, x, u)
    np.testing.assert_allclose(policy.act(jnp.asarray(x)), mean, rtol=0, atol=1e-5)
    np.testing.assert_allclose(policy.log_prob(jnp.asarray(x), jnp.asarray(u)), log_prob, rtol=0, atol=1e-5)
    if value_function:
        np.testing.assert_allclose(policy.values(jnp.asarray(x)), value, rtol=0, atol=1e-5)


def test_a_users_loader_reads_through_read_policy_and_load_policy(linear):
    path, weights = linear
    assert "linear" in loaders() and kinds("scale") == ("linear",)
    ext = read_policy("linear", path)   # the declared default filled in
    assert read_linear.calls == [(path, 1.0)] and ext.policy_hidden == () and ext.action_size == 1
    check(pgdiag.adapters.policies.frozen(ext), weights, 1.0)
    check(pgdiag.load_policy("linear", path, scale=2.5), weights, 2.5)
    assert read_linear.calls[-1] == (path, 2.5)


def test_a_users_kind_is_imported_from_the_command_line(linear, tmp_path):
    from pgdiag.cli import build_parser, main
    from pgdiag.cli.imports import policy_option_help

    path, weights = linear
    args = build_parser().parse_args(["import", "linear", path, "--task", "lqr", "--out", "x", "--scale", "2"])
    assert args.kind == "linear" and args.scale == 2.0 and args.algorithm == "ppo"
    assert "scale=" in policy_option_help()
    assert main(["import", "linear", path, "--task", "lqr", "--out", str(tmp_path / "run"), "--scale", "2"]) == 0
    run = pgdiag.load_run(tmp_path / "run")
    assert run.manifest["imported"]["kind"] == "linear" and run.manifest["imported"]["options"] == {
        "scale": "2.0", "task": "lqr"}   # the defaults (algorithm, none given for the rest) left out of its key
    check(pgdiag.load_policy(run.path), weights, 2.0, value_function=False)   # a run's policy, as trained


@pytest.mark.parametrize("call, says", [
    (lambda p: read_policy("rllib", p), "unknown policy kind 'rllib'; kinds are brax, cleanrl, sb3, linear"),
    (lambda p: read_policy("linear", p, activation="relu"),
     "activation is for CleanRL checkpoints of ppo_continuous_action.py's Agent (kind cleanrl) and Stable-Baselines3 "
     "zips of a PPO MlpPolicy (kind sb3); kind 'linear' takes scale"),
    (lambda p: read_policy("sb3", p, scale=2.0), f"scale is for {SUMMARY} (kind linear); kind 'sb3' takes "
                                                 f"vecnormalize, activation"),
    (lambda p: read_policy("brax", p, vecnormalize="v.pkl"), "vecnormalize is for Stable-Baselines3 zips"),
    (lambda p: read_policy("linear", p, gain=2.0), "no policy kind takes an option 'gain'; kind 'linear' takes scale"),
    (lambda p: read_policy("linear", p, scale=-1.0), "scale must be a number > 0, got -1.0"),
    (lambda p: read_policy("linear", p, scale="big"), "scale must be a number > 0, got 'big' (str)"),
    (lambda p: read_policy("sb3", p, activation="gelu"), "activation must be one of tanh, relu, got 'gelu'"),
    (lambda p: read_policy("sb3", p, vecnormalize=3), "vecnormalize must be the path of a file, got 3"),
    (lambda p: read_policy("cleanrl", p, obs_stats={"mean": 0}), "obs_stats needs 'mean' and 'var'"),
    (lambda p: pgdiag.load_policy("linear", p, scale=0.0), "scale must be a number > 0, got 0.0"),
])
def test_a_kind_an_option_or_a_value_is_refused_before_any_file_is_opened(linear, tmp_path, call, says):
    missing = str(tmp_path / "missing.npz")   # never opened: opening it would fail with "cannot read"
    with pytest.raises(ArchiveError) as err:
        call(missing)
    assert says in str(err.value) and "\n" not in str(err.value)
    assert read_linear.calls == [] and not os.path.exists(missing)


def test_the_command_line_refuses_an_option_no_given_kind_takes_before_reading(linear, tmp_path):
    from pgdiag.cli.imports import policy_runs

    missing = str(tmp_path / "missing.zip")
    with pytest.raises(ArchiveError, match=r"scale is for .* \(kind linear\); kind 'sb3' takes vecnormalize"):
        policy_runs([f"sb3:{missing}"], ["task=hopper", "scale=2"], str(tmp_path / "out"))
    with pytest.raises(ArchiveError, match="scale must be a number > 0, got 'big'"):
        policy_runs([f"linear:{missing}"], ["task=lqr", "scale=big"], str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_reader_that_returns_something_else_is_refused(tmp_path):
    register_loader(PolicyLoader("dict", "dicts", lambda path: {"w": 1}))
    try:
        with pytest.raises(ArchiveError, match="the 'dict' loader returned a dict, not an ExternalPolicy"):
            read_policy("dict", str(tmp_path / "x"))
    finally:
        unregister_loader("dict")


@pytest.mark.parametrize("loader, says", [
    (PolicyLoader("linear", SUMMARY, read_linear), "policy kind 'linear' is already registered"),
    (PolicyLoader("sb3", SUMMARY, read_linear), "policy kind 'sb3' is already registered; registered kinds: brax"),
    ("linear", "register_loader takes a PolicyLoader, got str"),
    (PolicyLoader("a:b", SUMMARY, read_linear), "a policy kind must be letters, digits, '-' or '_', got 'a:b'"),
    (PolicyLoader("other", SUMMARY, None), "read must be a function of (path, **options)"),
    (PolicyLoader("other", SUMMARY, read_linear, {"scale": 1.0}), "option 'scale' must be declared as an Option"),
    (PolicyLoader("other", SUMMARY, read_linear, {"task": SCALE}), "an option's name must be an identifier other"),
    (PolicyLoader("other", SUMMARY, read_linear, {"gain": Option(-1.0, "d", Range(0))}),
     "gain must be a number >= 0, got -1.0"),
    (PolicyLoader("other", SUMMARY, read_linear, {"activation": Option("relu", "d", Choices(("tanh", "relu")))}),
     "policy kind 'other' declares option 'activation' otherwise than cleanrl, sb3 do"),
])
def test_a_registration_is_refused_in_one_line(linear, loader, says):
    before = loaders()
    with pytest.raises(ConfigError) as err:
        register_loader(loader)
    assert says in str(err.value)
    assert loaders() == before


def test_an_option_several_kinds_take_is_shared_and_the_builtins_stay(linear):
    register_loader(PolicyLoader("other", SUMMARY, read_linear, {"activation": ACTIVATION}))
    try:
        assert kinds("activation") == ("cleanrl", "sb3", "other")
    finally:
        unregister_loader("other")
    with pytest.raises(ConfigError, match="'sb3' is one of pgdiag's own policy kinds"):
        unregister_loader("sb3")
    with pytest.raises(ConfigError, match="no policy kind 'nowhere'; registered kinds: brax, cleanrl, sb3, linear"):
        unregister_loader("nowhere")


def test_an_imports_key_leaves_the_declared_defaults_out():
    from pgdiag.run.imported import canonical_options

    assert canonical_options(task="hopper", algorithm="ppo", activation="tanh", obs_stats=None) == {"task": "hopper"}
    assert canonical_options(task="hopper", activation="relu") == {"activation": "relu", "task": "hopper"}
