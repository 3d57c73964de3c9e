"""placement='split': the collection on the host's CPU, the update on the learner device, one transfer of the
batch per iteration (pgdiag/run/split.py).

Runs in a subprocess with three virtual CPU devices: the learner is the third and the other two collect, each
a block of two of the four agents — the code path of a GPU host whose CPU is one device per core, on any
machine. The two halves are other compiled programs than the one-program iteration, so
results agree to float32 rounding (tests/compare.py), not bitwise."""

import json
import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from compare import assert_frames_close
from pgdiag import ConfigError, preset


def _flags(extra: str) -> str:
    kept = [f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f]
    return " ".join(kept + [extra])


SCRIPT = textwrap.dedent("""
    import json, sys, jax, numpy as np
    from pgdiag import preset, resume, sweep
    from pgdiag.run import split
    from pgdiag.stages import Collected

    puts = []                      # every explicit transfer the split loop makes: (what, devices)
    put = split._put
    def counted(tree, where):
        devices = sorted(str(d) for d in getattr(where, "device_set", [where]))
        puts.append(("batch" if isinstance(tree, tuple) and isinstance(tree[0], Collected) else
                     "networks" if isinstance(tree, dict) and "policy" in tree else "other", devices))
        return put(tree, where)
    split._put = counted
    chunk = split.chunk
    def guarded(*a, **k):          # no transfer but the explicit ones inside a chunk
        run = chunk(*a, **k)
        def g(*x):
            with jax.transfer_guard("disallow"):
                return run(*x)
        return g
    split.chunk = guarded

    base = preset("ppo", "hopper", physics="native", num_envs=2, steps_per_env=32, num_iterations=3,
                  num_minibatches=4, ppo_epochs=2, value_epochs=2, heldout_every=2)
    one = sweep(base.replace(placement="device"), seeds=[0, 1, 2, 3], progress=False)
    del puts[:]
    out = sys.argv[1]
    two = sweep(base.replace(placement="split", checkpoint_every=2), seeds=[0, 1, 2, 3], progress=False, out=out,
                chunk_iterations=2)
    leaves = {f: sorted({str(d) for x in jax.tree.leaves(getattr(two.final_state, f)) for d in x.devices()})
              for f in ("envs", "filters", "key", "policy", "value", "policy_opt", "value_opt")}
    again = resume(out, progress=False)
    print(json.dumps({"placement": two.manifest["placement"], "one_placement": one.manifest["placement"],
                      "puts": puts, "leaves": leaves, "devices": [str(d) for d in jax.devices()],
                      "one": one.metrics.to_dict("list"), "two": two.metrics.to_dict("list"),
                      "resumed": again.manifest["status"]}))
""")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    path = tmp_path_factory.mktemp("split")
    (path / "split.py").write_text(SCRIPT)
    env = {**os.environ, "XLA_FLAGS": _flags("--xla_force_host_platform_device_count=3")}
    done = subprocess.run([sys.executable, str(path / "split.py"), str(path / "run")], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_split_training_matches_one_program(result):
    assert result["placement"] == {"mode": "split", "why": "asked for"}
    assert result["one_placement"]["mode"] == "device"
    one, two = pd.DataFrame(result["one"]), pd.DataFrame(result["two"])
    assert len(two) == 12 and two["heldout_max_kl"].notna().sum() == 8   # iterations 0 and 2 of 4 agents
    assert_frames_close(two, one)


def test_the_environments_stay_on_the_collecting_devices_and_the_learner_on_its_device(result):
    *host, learner = result["devices"]
    for name in ("envs", "filters", "key"):
        assert result["leaves"][name] == host, name
    for name in ("policy", "value", "policy_opt", "value_opt"):
        assert result["leaves"][name] == [learner], name


def test_one_transfer_of_the_batch_per_iteration(result):
    """Per iteration, inside a chunk run under jax.transfer_guard('disallow'): the networks to the host, the
    batch to the learner, and the held-out flag to each; at each chunk's start the state and knobs are placed
    once (3 iterations in chunks of 2 and 1)."""
    *host, learner = result["devices"]
    puts = [(what, tuple(where)) for what, where in result["puts"]]
    assert puts.count(("batch", (learner,))) == 3
    assert puts.count(("networks", tuple(host))) == 3          # each block's networks to its device
    assert not [p for p in puts if p[0] == "batch" and p[1] != (learner,)]
    assert len(puts) == 2 * 4 + 3 * 4    # per chunk: state halves and knobs twice; per iteration: four
    assert result["resumed"] == "complete"


def test_split_refuses_several_processes():
    from pgdiag.run import split

    with pytest.raises(ConfigError, match="placement='split' runs on one process"):
        split.check(preset("ppo", "hopper", placement="split").static, n_processes=2)
    with pytest.raises(ConfigError, match="unknown placement 'gpu'; choose one of: auto, device, split"):
        preset("ppo", "hopper", placement="gpu")


@pytest.mark.parametrize("agents, envs, blocks", [
    (320, 1, 16), (240, 1, 16), (48, 1, 16), (5, 1, 5), (3, 1, 3), (1, 1, 1),  # blocks of equal size
    (17, 1, 1),                        # prime: no equal blocks
    (100, 1, 1), (36, 1, 1),           # 10 or 12 one-thread blocks would step fewer environments at once than 16
    (3, 16, 1), (5, 2, 1),             # one device's pool steps 16 of 48 or all 10 at once, the blocks 3 or 5
])
def test_the_collection_takes_equal_blocks_that_keep_the_cores_stepping(agents, envs, blocks, monkeypatch):
    """On 16 collecting devices against one device's 16 physics threads, worked out by hand: the largest
    divisor d of the agent count up to 16, taken where d >= min(16, agents × environments)."""
    from pgdiag.run import split

    monkeypatch.setattr(split, "devices", lambda: (tuple(range(16)), "learner"))
    static = preset("ppo", "hopper", num_envs=envs, physics_threads=16).static
    assert split.collectors(static, agents) == tuple(range(blocks))
