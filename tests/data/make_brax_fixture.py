"""Make tests/data/brax_params.pkl: Brax PPO's (normalizer, policy, value) parameters for an 11-d observation and
3-d action (hidden layers of 8), made by Brax's own constructors and saved by `brax.io.model.save_params`, as its
trainer saves them. The loader fuzzer (benchmarks/fuzz_loaders.py) mutates these bytes.

    python tests/data/make_brax_fixture.py tests/data
"""

import os
import sys

import jax
import jax.numpy as jnp
from brax.io import model
from brax.training.acme import running_statistics, specs
from brax.training.agents.ppo import networks as ppo_networks


def main(out: str) -> None:
    net = ppo_networks.make_ppo_networks(11, 3, policy_hidden_layer_sizes=(8, 8), value_hidden_layer_sizes=(8, 8))
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    norm = running_statistics.init_state(specs.Array((11,), jnp.float32))
    norm = running_statistics.update(norm, jax.random.normal(k1, (32, 11)))
    model.save_params(os.path.join(out, "brax_params.pkl"),
                      (norm, net.policy_network.init(k1), net.value_network.init(k2)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
