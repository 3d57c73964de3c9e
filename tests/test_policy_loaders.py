"""Policies of other frameworks read into pgdiag (pgdiag.adapters.policies), checked against the numbers the
source framework computed on fixed observations: CleanRL's and Stable-Baselines3's from files those libraries
wrote (tests/data/make_torch_fixtures.py; read here without torch), Brax's from files Brax writes in the test.
"Within float32 rounding": a relative error of a few float32 ulps (2⁻²³ ≈ 1.2e-7) per operation of a 3-layer
network, bounded here by 2e-5 of the quantity's scale."""

import json
import os
import pathlib
import pickle
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pgdiag
from pgdiag.adapters import ArchiveError
from pgdiag.adapters.policies import read_policy

DATA = pathlib.Path(__file__).parent / "data"
SB3 = dict(path=str(DATA / "sb3_hopper.zip"), vecnormalize=str(DATA / "sb3_hopper_vecnormalize.pkl"))


def close(got, want, scale=None):
    want = np.asarray(want, np.float64)
    scale = np.max(np.abs(want)) if scale is None else scale
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=0, atol=2e-5 * max(scale, 1.0))


def fixture(kind):
    with open(DATA / f"{kind}_hopper.json") as f:
        return json.load(f)


def check_against(policy, fx):
    raw = jnp.asarray(fx["raw_obs"], jnp.float32)
    close(policy.observe(raw), fx["seen_obs"])
    close(policy.distribution(raw)[0], fx["mean"])
    close(policy.log_prob(raw, jnp.asarray(fx["actions"], jnp.float32)), fx["log_prob"])
    close(policy.entropy(raw), fx["entropy"])
    close(policy.values(raw), fx["value"])


def test_cleanrl_agent_matches_what_cleanrl_computed():
    fx = fixture("cleanrl")
    check_against(pgdiag.load_policy("cleanrl", str(DATA / "cleanrl_hopper.cleanrl_model"),
                                      obs_stats=(fx["obs_mean"], fx["obs_var"])), fx)


def test_cleanrl_without_statistics_says_what_it_assumes():
    with pytest.warns(UserWarning, match="holds no observation statistics: the policy sees raw observations"):
        ext = read_policy("cleanrl", str(DATA / "cleanrl_hopper.cleanrl_model"))
    assert ext.obs_mean is None and ext.notes


def test_sb3_policy_matches_what_sb3_computed():
    fx = fixture("sb3")
    policy = pgdiag.load_policy("sb3", SB3["path"], vecnormalize=SB3["vecnormalize"])
    check_against(policy, fx)
    ext = read_policy("sb3", SB3["path"], vecnormalize=SB3["vecnormalize"])
    assert ext.knobs["gamma"] == fx["gamma"] and ext.knobs["gae_lambda"] == fx["gae_lambda"]
    assert ext.obs_clip == 10.0 and ext.policy_hidden == (64, 64) and ext.action_size == 3


@pytest.fixture(scope="module")
def brax_policy(tmp_path_factory):
    """Brax PPO's default networks (tanh-normal, swish) with a normalizer that has counted observations, saved by
    Brax's `save_params`, and Brax's own policy and value on fixed observations."""
    from brax.io import model
    from brax.training.acme import running_statistics, specs
    from brax.training.agents.ppo import networks as ppo_networks

    net = ppo_networks.make_ppo_networks(4, 1, preprocess_observations_fn=running_statistics.normalize,
                                         policy_hidden_layer_sizes=(16, 16), value_hidden_layer_sizes=(16, 16))
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    norm = running_statistics.init_state(specs.Array((4,), jnp.float32))
    norm = running_statistics.update(norm, 0.3 * jax.random.normal(k1, (64, 4)) + 0.1)
    params = (norm, net.policy_network.init(k1), net.value_network.init(k2))
    path = tmp_path_factory.mktemp("brax") / "params.pkl"
    model.save_params(str(path), params)
    obs = 0.5 * jax.random.normal(k3, (16, 4))
    action, extra = ppo_networks.make_inference_fn(net, compute_value=True)(params)(obs, jax.random.PRNGKey(5))
    mode = net.parametric_action_distribution.mode(net.policy_network.apply(params[0], params[1], obs))
    return str(path), obs, action, extra, mode


def test_brax_policy_matches_what_brax_computed(brax_policy):
    path, obs, action, extra, mode = brax_policy
    policy = pgdiag.load_policy("brax", path)
    close(policy.log_prob(obs, extra["raw_action"]), extra["log_prob"])   # the squashed action's density
    close(policy.values(obs), extra["value"])
    close(policy.act(obs), mode)
    close(jnp.tanh(extra["raw_action"]), action)


def test_hostile_files_are_refused_before_anything_runs(tmp_path):
    marker = tmp_path / "ran"

    class Command:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    hostile = tmp_path / "agent.cleanrl_model"   # a torch-style zip whose pickle would run a command
    with zipfile.ZipFile(hostile, "w") as z:
        z.writestr("agent/data.pkl", pickle.dumps({"actor_logstd": Command()}))
        z.writestr("agent/byteorder", "little")
    with pytest.raises(ArchiveError, match=r"refusing to load (posix|os)\.system"):
        read_policy("cleanrl", str(hostile))
    assert not marker.exists()


def test_bad_input_is_named_in_one_line(tmp_path):
    with pytest.raises(ArchiveError, match="unknown policy kind 'rllib'; kinds are brax, cleanrl, sb3"):
        read_policy("rllib", "x")
    with pytest.raises(ArchiveError, match="cannot read the CleanRL checkpoint"):
        read_policy("cleanrl", str(tmp_path / "missing"))
    with pytest.raises(ArchiveError, match="not a torch.save archive"):
        read_policy("cleanrl", SB3["vecnormalize"])
    with pytest.raises(ArchiveError, match="vecnormalize is for Stable-Baselines3 zips"):
        read_policy("cleanrl", "x", vecnormalize="y")
    with pytest.raises(ArchiveError, match="obs_stats must be"):
        read_policy("cleanrl", str(DATA / "cleanrl_hopper.cleanrl_model"), obs_stats=3)
    with pytest.raises(pgdiag.ConfigError, match=r"sb3 policy .* has 11-d observations; task 'point_mass' has 4-d"):
        pgdiag.import_policy("sb3", SB3["path"], task="point_mass", out=str(tmp_path / "run"),
                              vecnormalize=SB3["vecnormalize"])
    assert not (tmp_path / "run").exists()   # refused before the directory is taken


def test_a_policy_whose_action_bounds_differ_from_the_tasks_is_refused(tmp_path):
    """SB3's zip records its action space ([-1, 1]^3 for Hopper-v5); Gym's Humanoid takes [-0.4, 0.4]."""
    import dataclasses

    ext = read_policy("sb3", SB3["path"], vecnormalize=SB3["vecnormalize"])
    assert ext.action_bounds == ((-1.0,) * 3, (1.0,) * 3)
    wide = dataclasses.replace(ext, action_bounds=((-2.0,) * 3, (2.0,) * 3))
    with pytest.raises(pgdiag.ConfigError, match=r"acts in \[-2, 2\] per dimension; task 'hopper' takes actions "
                                                  r"in \[-1, 1\] per dimension"):
        pgdiag.import_policy(wide, task="hopper", model="gym", out=str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()
    # what the tasks declare: Gym's Humanoid maps actions to its ±0.4 ctrlrange as given, Brax's rescales [-1, 1]
    from pgdiag import envs
    assert envs.make("humanoid", "native", 1, "converged", "gym").action_bounds == ((-0.4,) * 17, (0.4,) * 17)
    assert envs.make("humanoid", "native", 1, "converged", "brax").action_bounds == ((-1.0,) * 17, (1.0,) * 17)


def _vecnormalize_file(tmp_path, monkeypatch, name="vec.pkl", drop=(), **fields):
    """A VecNormalize.save file as SB3 writes it (its classes named by their SB3 modules), with ``fields``
    replacing the wrapper's or its obs_rms's values and ``drop`` removing some."""
    import sys
    import types

    classes = {}
    for module, cls in (("stable_baselines3.common.vec_env.vec_normalize", "VecNormalize"),
                        ("stable_baselines3.common.running_mean_std", "RunningMeanStd")):
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            monkeypatch.setitem(sys.modules, ".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
        classes[cls] = type(cls, (), {"__module__": module})
        setattr(sys.modules[module], cls, classes[cls])
    rms = classes["RunningMeanStd"]()
    rms.__dict__.update(mean=np.zeros(11), var=np.ones(11), count=100.0)
    wrapper = classes["VecNormalize"]()
    wrapper.__dict__.update(norm_obs=True, obs_rms=rms, epsilon=1e-8, clip_obs=10.0)
    for key, value in fields.items():
        (rms if key in ("mean", "var", "count") else wrapper).__dict__[key] = value
    for key in drop:
        (rms if key in ("mean", "var", "count") else wrapper).__dict__.pop(key)
    path = tmp_path / name
    path.write_bytes(pickle.dumps(wrapper))
    return str(path)


@pytest.mark.parametrize("fields, drop, says", [
    ({"clip_obs": -1.0}, (), "clip is not usable"),
    ({"epsilon": -1e-8, "var": np.zeros(11)}, (), "epsilon is not usable"),
    ({"var": np.full(11, np.inf)}, (), "var is not usable"),
    ({"mean": np.full(11, np.nan)}, (), "mean is not usable"),
    ({"count": float("nan")}, (), "count is not usable"),
    ({}, ("clip_obs",), "it lacks clip_obs"),
    ({}, ("var",), "it lacks obs_rms.var"),
])
def test_a_vecnormalize_file_that_would_give_a_nan_policy_is_refused_naming_the_field(tmp_path, monkeypatch, fields,
                                                                                      drop, says):
    good = _vecnormalize_file(tmp_path, monkeypatch, "good.pkl")
    assert read_policy("sb3", SB3["path"], vecnormalize=good).obs_clip == 10.0   # the hand-made file reads
    bad = _vecnormalize_file(tmp_path, monkeypatch, drop=drop, **fields)
    with pytest.raises(ArchiveError, match=f"VecNormalize file .*{says}"):
        read_policy("sb3", SB3["path"], vecnormalize=bad)


def test_observation_statistics_files_are_read_as_data(tmp_path):
    """A .npz is read member by member without unpickling (an object array is refused), a .json within a
    nesting cap; each failure is one line."""
    np.savez(tmp_path / "ok.npz", mean=np.zeros(11), var=np.ones(11))
    ext = read_policy("cleanrl", str(DATA / "cleanrl_hopper.cleanrl_model"), obs_stats=str(tmp_path / "ok.npz"))
    assert ext.obs_mean.shape == (11,)
    np.savez(tmp_path / "objects.npz", mean=np.array([{"a": 1}], dtype=object), var=np.ones(11))
    with pytest.raises(ArchiveError, match="member 'mean.npy' is not a readable array"):
        read_policy("cleanrl", str(DATA / "cleanrl_hopper.cleanrl_model"), obs_stats=str(tmp_path / "objects.npz"))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ArchiveError, match="nests JSON 100000 deep; at most 64 is read"):
        read_policy("cleanrl", str(DATA / "cleanrl_hopper.cleanrl_model"), obs_stats=str(tmp_path / "deep.json"))


def test_a_notice_is_one_line_without_a_source_line():
    """What pgdiag assumed (raw observations) is printed as "pgdiag: …", not with the line of pgdiag that warned."""
    import subprocess
    import sys

    code = ("from pgdiag.adapters.policies import read_policy; "
            f"read_policy('cleanrl', {str(DATA / 'cleanrl_hopper.cleanrl_model')!r})")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert err.startswith("pgdiag: ") and err.count("\n") == 1 and "warnings.warn" not in err, err
