"""A policy trained elsewhere measured by pgdiag's diagnostics (pgdiag.run.imported): a Brax PPO policy on a
Brax environment through the gradient and step studies from Python, a Stable-Baselines3 Hopper policy through
the gradient study from the command line (--policy KIND:PATH)."""

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import pgdiag
from pgdiag.adapters import ArchiveError
from pgdiag.envs import unregister_task

DATA = pathlib.Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def brax_run(tmp_path_factory):
    from brax import envs
    from brax.io import model
    from brax.training.acme import running_statistics, specs
    from brax.training.agents.ppo import networks as ppo_networks

    from pgdiag.adapters.brax_envs import register_brax_env

    env = envs.get_environment("inverted_pendulum", backend="positional")
    name = register_brax_env(env, name="brax-pendulum-import", episode_limit=40)
    net = ppo_networks.make_ppo_networks(env.observation_size, env.action_size,
                                         preprocess_observations_fn=running_statistics.normalize,
                                         policy_hidden_layer_sizes=(16, 16), value_hidden_layer_sizes=(16, 16))
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    norm = running_statistics.init_state(specs.Array((env.observation_size,), jnp.float32))
    norm = running_statistics.update(norm, 0.3 * jax.random.normal(k1, (64, env.observation_size)))
    tmp = tmp_path_factory.mktemp("brax-import")
    model.save_params(str(tmp / "params.pkl"), (norm, net.policy_network.init(k1), net.value_network.init(k2)))
    run = pgdiag.import_policy("brax", str(tmp / "params.pkl"), task=name, out=str(tmp / "run"),
                                settings=dict(num_envs=2, steps_per_env=32, num_minibatches=2))
    yield run, str(tmp / "params.pkl")
    unregister_task(name)


def test_the_run_directory_holds_the_policy_as_read(brax_run):
    run, path = brax_run
    assert run.manifest["imported"]["kind"] == "brax" and run.manifest["imported"]["network"] == "brax"
    direct, saved = pgdiag.load_policy("brax", path), pgdiag.load_policy(run.path)
    obs = jax.random.normal(jax.random.PRNGKey(1), (8, 4))
    u = jax.random.normal(jax.random.PRNGKey(2), (8, 1))
    np.testing.assert_array_equal(direct.log_prob(obs, u), saved.log_prob(obs, u))   # same arrays, same program
    np.testing.assert_array_equal(direct.observe(obs), saved.observe(obs))


def test_a_brax_policy_goes_through_the_gradient_and_step_studies(brax_run, capfd):
    from pgdiag.diagnostics import gradient_study, step_study

    run, _ = brax_run
    grads = gradient_study([run.path], sizes=(16, 64), estimates=3, save=False)
    steps = step_study([run.path], batches=3, save=False, progress=True)   # its bar drawn, then closed
    assert "step-study 1/1: done in" in capfd.readouterr().err
    assert set(grads.pairs.label) == {"brax"} and np.isfinite(grads.pairs.cosine).all()
    assert np.isfinite(steps.steps.kl_from_old).all() and (steps.steps.kl_from_old > 0).all()


def test_an_sb3_policy_from_the_command_line(tmp_path):
    from pgdiag.cli import main

    args = ["fig-grad-variance", "--policy", f"sb3:{DATA / 'sb3_hopper.zip'}", "--policy-option", "task=hopper",
            "--policy-option", "model=gym", "--policy-option",
            f"vecnormalize={DATA / 'sb3_hopper_vecnormalize.pkl'}", "--diag", "estimates=2", "--diag",
            "sizes=32,64", "--diag", "with_batch_size=false", "--out", str(tmp_path)]
    assert main(args) == 0
    summary = pd.read_csv(tmp_path / "fig-grad-variance-summary.csv")
    assert list(summary.label) == ["sb3"] and list(summary.task) == ["hopper"]
    (where,) = (tmp_path / "imported").glob("sb3-sb3_hopper-*")
    imported = pgdiag.load_run(where)
    assert imported.config(0).static.model == "gym" and imported.config(0).knobs.gamma == 0.99
    assert main(args) == 0   # measured again: the imported directory is reused, not written over
    assert list((tmp_path / "imported").iterdir()) == [where]


def test_an_import_is_reused_only_for_the_same_file_and_options(tmp_path):
    """--policy's import is keyed by the file's SHA-256 and the read options: the same pair reuses it, a file
    replaced at the same path or another activation makes a new one (and a replaced file that is not a policy is
    refused, never read from the old import)."""
    from pgdiag.cli.imports import policy_runs

    path = tmp_path / "model.zip"
    path.write_bytes((DATA / "sb3_hopper.zip").read_bytes())
    options = ["task=hopper", "model=gym"]
    first = policy_runs([f"sb3:{path}"], options, str(tmp_path / "out"))
    assert policy_runs([f"sb3:{path}"], options, str(tmp_path / "out")) == first
    relu = policy_runs([f"sb3:{path}"], options + ["activation=relu"], str(tmp_path / "out"))
    assert relu != first and not pgdiag.load_run(relu[0]).config(0).knobs.tanh_activations
    path.write_bytes(b"garbage")
    with pytest.raises(ArchiveError, match="not a Stable-Baselines3 zip"):
        policy_runs([f"sb3:{path}"], options, str(tmp_path / "out"))


def test_a_cleanrl_agent_is_written_as_a_run_with_its_filter(tmp_path):
    fx = json.loads((DATA / "cleanrl_hopper.json").read_text())
    run = pgdiag.import_policy("cleanrl", str(DATA / "cleanrl_hopper.cleanrl_model"), task="hopper", model="gym",
                                out=str(tmp_path / "run"), obs_stats={"mean": fx["obs_mean"], "var": fx["obs_var"]})
    cfg = run.config(0)
    assert cfg.knobs.obs_normalization and cfg.knobs.obs_clipping and cfg.knobs.obs_clip == 10.0
    saved = pgdiag.load_policy(run.path)
    raw = jnp.asarray(fx["raw_obs"], jnp.float32)
    np.testing.assert_allclose(saved.distribution(raw)[0], fx["mean"], rtol=0, atol=2e-5)


def test_a_dry_run_with_a_policy_plans_that_policy(tmp_path, capsys):
    """--dry-run --policy plans the imported agent's programs (not the scale's own trainings)."""
    from pgdiag.cli import main

    assert main(["fig-grad-variance", "--dry-run", "--policy", f"sb3:{DATA / 'sb3_hopper.zip'}", "--policy-option",
                 "task=hopper", "--policy-option", "model=gym", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.lstrip().startswith("gradients")]
    assert rows and all(r[1] == "hopper" and r[2] == "sb3" for r in rows), out
    assert "1 programs" in out
