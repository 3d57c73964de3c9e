"""The agent axis is sharded across devices (padded to a multiple of the device count).

Runs in a subprocess with two virtual CPU devices, so it checks the multi-device
path on any machine. The subprocesses keep this process's XLA flags (an instruction-set cap changes float
results). With looped agents each agent's arithmetic is that of the one-device run, but the per-device loops
have other lengths (2 against 3), so the programs differ and results agree to float32 rounding
(tests/compare.py), not bitwise."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd

from compare import assert_frames_close


def _flags(extra: str) -> str:
    kept = [f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f]
    return " ".join(kept + ([extra] if extra else []))


def test_sweep_on_two_devices_matches_one_device(tmp_path):
    script = textwrap.dedent("""
        import json, sys, jax, numpy as np
        from pgdiag import preset, sweep
        cfg = preset("ppo", "point_mass", num_envs=2, steps_per_env=32, num_iterations=2, num_minibatches=4,
                     ppo_epochs=2, value_epochs=2)
        from pgdiag.run import CompileCounter
        with CompileCounter() as compiled:
            run = sweep(cfg, {"lr_policy": [1e-4, 3e-4, 1e-3]}, seeds=[0], batching=sys.argv[1])
        print(json.dumps({"devices": jax.device_count(), "agents": run.num_agents, "compiles": compiled.count,
                          "final": [x.shape[0] for x in jax.tree.leaves(run.final_state)],
                          "returns": run.metrics.value_loss.tolist()}))
    """)
    path = tmp_path / "two_devices.py"
    path.write_text(script)

    def run(flags, batching):
        env = {**os.environ, "XLA_FLAGS": _flags(flags), "PGDIAG_COMPILATION_CACHE": "0"}   # every program compiled
        out = subprocess.run([sys.executable, str(path), batching], capture_output=True, text=True, env=env,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    two = run("--xla_force_host_platform_device_count=2", "map")
    one = run("", "map")
    assert two["devices"] == 2 and one["devices"] == 1
    assert two["agents"] == one["agents"] == 3  # the padding agent is dropped
    assert set(two["final"]) == {3}
    # the same programs: dropping the padding agent compiles nothing (sliced on the devices, it compiled a gather
    # per leaf)
    assert two["compiles"] == one["compiles"]
    assert_frames_close(pd.DataFrame({"value_loss": two["returns"]}), pd.DataFrame({"value_loss": one["returns"]}))


def test_diagnostic_study_on_two_devices_matches_one_device(tmp_path):
    """A study's subjects are split over the devices (3 subjects: padded to 4, the copy dropped), or placed on
    one device that is not the default ([`pgdiag.diagnostics.placement`][pgdiag.diagnostics.placement]); each
    subject's numbers are those of the study on one device. Subjects are looped (batching="map") so the
    arithmetic is the same on any layout."""
    script = textwrap.dedent("""
        import json, sys, jax, numpy as np
        from pgdiag import preset, sweep
        from pgdiag.diagnostics import gradient_study, landscape_study
        out = sys.argv[2]
        sweep(preset("ppo", "lqr", num_iterations=2, checkpoint_at=(0, 1)), seeds=[0], out=out, batching="map")
        g = gradient_study([out], save=False, sizes=(64, 256), estimates=3, batching="map", iterations=[0, 1],
                           with_batch_size=False)
        l = landscape_study([out], save=False, points=2, sizes=(64,), envs=4, batching="map", iterations=[0, 1])
        placed = []
        if jax.device_count() == 2:   # placed on the second device alone (as native runs beside an accelerator
            from pgdiag.diagnostics import placement   # go on the host's CPU): compiled for it, the same numbers
            placement.devices_for = lambda shape: (jax.devices()[1],)
            placed = gradient_study([out], save=False, sizes=(64, 256), estimates=3, batching="map",
                                    iterations=[0, 1], with_batch_size=False).pairs.cosine.tolist()
        print(json.dumps({"devices": jax.device_count(), "cosine": g.pairs.cosine.tolist(),
                          "returns": l.returns["mean"].tolist(), "surrogate": l.surface.surrogate.tolist(),
                          "placed": placed}))
    """)
    path = tmp_path / "study.py"
    path.write_text(script)

    def run(flags, name):
        env = {**os.environ, "XLA_FLAGS": _flags(flags)}
        out = subprocess.run([sys.executable, str(path), "map", str(tmp_path / name)], capture_output=True,
                             text=True, env=env, timeout=400)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    two = run("--xla_force_host_platform_device_count=2", "two")
    one = run("", "one")
    assert two["devices"] == 2 and one["devices"] == 1
    assert len(one["cosine"]) > 0 and len(one["returns"]) > 0
    for k in ("cosine", "returns", "surrogate"):
        assert_frames_close(pd.DataFrame({k: np.array(two[k], float)}), pd.DataFrame({k: np.array(one[k], float)}))
    assert_frames_close(pd.DataFrame({"cosine": np.array(two["placed"], float)}),
                        pd.DataFrame({"cosine": np.array(one["cosine"], float)}))
