"""Reading another framework's saved parameters without running its code (pgdiag.adapters.archives): Brax's
own `save_params` file read back array for array, and pickles that would run a command refused before they can."""

import pickle

import numpy as np
import pytest

from pgdiag.adapters import ArchiveError, Fields, load_pickle, load_pickle_file


@pytest.fixture(scope="module")
def brax_params(tmp_path_factory):
    """Brax PPO's (normalizer, policy, value) parameters, made by Brax's network constructors and saved by
    `brax.io.model.save_params`, as its trainer returns and saves them."""
    import jax
    import jax.numpy as jnp
    from brax.io import model
    from brax.training.acme import running_statistics, specs
    from brax.training.agents.ppo import networks as ppo_networks

    net = ppo_networks.make_ppo_networks(11, 3, policy_hidden_layer_sizes=(8, 8), value_hidden_layer_sizes=(8, 8))
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    norm = running_statistics.init_state(specs.Array((11,), jnp.float32))
    norm = running_statistics.update(norm, jax.random.normal(k1, (32, 11)))
    params = (norm, net.policy_network.init(k1), net.value_network.init(k2))
    path = tmp_path_factory.mktemp("brax") / "params.pkl"
    model.save_params(str(path), params)
    return path, params


def test_brax_parameters_are_read_back_array_for_array(brax_params):
    path, (norm, policy, value) = brax_params
    loaded_norm, loaded_policy, loaded_value = load_pickle_file(str(path))
    for original, loaded in ((policy, loaded_policy), (value, loaded_value)):
        for layer, leaves in original["params"].items():
            for name, array in leaves.items():
                got = loaded["params"][layer][name]
                assert isinstance(got, np.ndarray) and got.dtype == np.asarray(array).dtype
                np.testing.assert_array_equal(got, np.asarray(array))
    assert isinstance(loaded_norm, Fields)
    np.testing.assert_array_equal(loaded_norm.mean, np.asarray(norm.mean))
    np.testing.assert_array_equal(loaded_norm.std, np.asarray(norm.std))
    assert loaded_norm.count.hi == int(norm.count.hi) and loaded_norm.count.lo == int(norm.count.lo)


class _Command:
    """Pickles as a call of os.system, as a hostile file would."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os
        return os.system, (f"touch {self.marker}",)


class _Eval:
    def __reduce__(self):
        return eval, ("__import__('os').getcwd()",)


def test_a_pickle_that_would_run_a_command_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "ran"
    hostile = pickle.dumps({"params": {"w": np.zeros(3, np.float32)}, "x": _Command(marker)})
    with pytest.raises(ArchiveError, match=r"refusing to load (posix|os)\.system: a parameter file holds arrays"):
        load_pickle(hostile)
    assert not marker.exists()
    with pytest.raises(ArchiveError, match=r"refusing to load builtins\.eval"):
        load_pickle(pickle.dumps(_Eval()))
    # protocol 0's GLOBAL opcode, written by hand, is refused the same way
    with pytest.raises(ArchiveError, match=r"refusing to load os\.system"):
        load_pickle(b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR.")
    assert not marker.exists()


def test_a_file_that_is_not_a_pickle_is_named(tmp_path):
    with pytest.raises(ArchiveError, match="not a readable parameter pickle"):
        load_pickle(b"PK\x03\x04 not a pickle")
    assert load_pickle(pickle.dumps({"a": np.arange(3.0)}))["a"].tolist() == [0.0, 1.0, 2.0]
