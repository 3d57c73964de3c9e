"""One compiled sweep: compile count, member-equals-alone, determinism, isolation, run directories."""

import jax
import numpy as np
import pandas as pd
import pytest
from compare import assert_frames_close

from pgdiag import load_checkpoint, load_run, make_train, preset, seed_key, sweep, train
from pgdiag.config import KNOB_NAMES
from pgdiag.studies.ablation import TOGGLES
from pgdiag.run import CompileCounter, clear_compiled
from pgdiag.metrics import METRICS

SMALL = dict(num_envs=2, steps_per_env=32, num_iterations=3, num_minibatches=4, ppo_epochs=2, value_epochs=2)


@pytest.fixture(scope="module")
def base():
    return preset("ppo", "point_mass", **SMALL)


@pytest.fixture(scope="module")
def toggle_sweep(base):
    sweep(base, None, seeds=[0], chunk_iterations=1)  # warm up one-time compiles of small helper ops
    grid = {t: [False, True] for t in TOGGLES}
    clear_compiled()
    with CompileCounter() as counter:
        run = sweep(base, grid, seeds=[0, 1], chunk_iterations=SMALL["num_iterations"])
    return run, counter.count


def curves(run, agent):
    m = run.metrics[run.metrics.agent == agent].sort_values("iteration")
    return {k: m[k].to_numpy() for k in METRICS}


def test_toggle_sweep_is_one_program(toggle_sweep, base):
    run, compiles = toggle_sweep
    assert run.num_agents == 32
    # the whole call compiles two programs: initialization and the chunk of iterations
    assert compiles == 2
    assert run.manifest["timings"]["compiles"] == 2
    # exactly as many as a sweep of two agents over one knob
    clear_compiled()
    with CompileCounter() as counter:
        sweep(base, {"value_clipping": [False, True]}, seeds=[0], chunk_iterations=SMALL["num_iterations"])
    assert counter.count == 2


def test_a_run_cut_unevenly_by_its_checkpoints_compiles_one_chunk_program(toggle_sweep, base, tmp_path):
    """Checkpoints after iterations 1 and 4 with chunks of 3 cut 5 iterations into 1, 2, 1, 1: still one
    chunk program (it takes a count of iterations), and the curves are those of a run in chunks of 1."""
    cfg = base.replace(num_iterations=5, checkpoint_at=(1, 4))
    clear_compiled()
    with CompileCounter() as counter:
        run = sweep(cfg, None, seeds=[0], chunk_iterations=3, out=str(tmp_path / "cut"))
    assert counter.count == 2 and run.manifest["timings"]["compiles"] == 2
    assert run.manifest["checkpoints"]["saved"] == [1, 4]
    one_by_one = sweep(cfg.replace(checkpoint_at=()), None, seeds=[0], chunk_iterations=1)
    a, b = curves(run, 0), curves(one_by_one, 0)
    assert len(a["mean_return"]) == 5 and np.all(a["policy_loss"] != 0)
    assert_frames_close(pd.DataFrame(a), pd.DataFrame(b))


def test_sweep_member_equals_the_same_config_run_alone(toggle_sweep, base):
    run, _ = toggle_sweep
    for agent in (5, 22):
        cfg, seed = run.config(agent), int(run.agents.seed[agent])
        alone = train(cfg, seed=seed, chunk_iterations=1)  # also a different chunking
        a, b = curves(run, agent), curves(alone, 0)
        assert_frames_close(pd.DataFrame(a), pd.DataFrame(b))


def test_looped_agents_equal_runs_alone(base):
    """With looped agents every agent runs the arithmetic of a run alone; the loop over 4 agents and the
    run alone are still two compiled programs (XLA may simplify a loop of one), so they agree to float32
    rounding (tests/compare.py), episode counts exactly; on the CPUs measured they are bitwise equal."""
    run = sweep(base, {"value_clipping": [False, True], "orthogonal_init": [False, True]}, seeds=[7],
                batching="map")
    for agent in (0, 3):
        alone = train(run.config(agent), seed=7, batching="map")
        a, b = curves(run, agent), curves(alone, 0)
        assert_frames_close(pd.DataFrame(a), pd.DataFrame(b))


def test_agents_differ_by_their_knobs(toggle_sweep):
    run, _ = toggle_sweep
    finals = run.metrics[run.metrics.iteration == 2].set_index("agent")
    # same seed, different toggles -> different training; same toggles, different seed -> different
    assert finals.loc[0, "value_loss"] != finals.loc[2, "value_loss"]
    assert finals.loc[0, "value_loss"] != finals.loc[1, "value_loss"]


def test_same_seed_same_result(base):
    grid = {"lr_policy": [1e-4, 1e-3]}
    a = sweep(base, grid, seeds=[3])
    b = sweep(base, grid, seeds=[3])
    for k in METRICS:
        np.testing.assert_array_equal(a.metrics[k].to_numpy(), b.metrics[k].to_numpy())


def test_the_initialization_compiles_unoptimized_on_a_cpu_and_agrees_with_an_optimized_build(base):
    """The initialization runs once per run, so on a CPU its program is compiled without LLVM's optimizations
    (optimized, it took as long to compile as a chunk of training: benchmarks/bench_compile.py). Its values are
    an optimized build's up to float32 rounding (tests/compare.py's bound), and its hidden layers are still
    orthogonal with gain √2: WᵀW = 2·I up to float32 rounding of a 64-column QR (~64 · 2⁻²⁴ ≈ 4e-6; 1e-4 held)."""
    import jax.numpy as jnp
    from compare import assert_trees_close

    from pgdiag.run import programs

    assert programs.init_compiler_options() == {"xla_backend_optimization_level": 0}
    keys = jnp.stack([seed_key(0), seed_key(1)])
    knobs = jax.tree.map(lambda x: jnp.stack([x, x]), base.knobs.as_arrays())
    unoptimized = programs.init_program(base.static, 2)(keys, knobs)
    init = jax.jit(jax.vmap(make_train(base.static).init))
    optimized = init.lower(keys, knobs).compile({"xla_backend_optimization_level": 3})(keys, knobs)
    assert_trees_close(unoptimized, optimized)
    w = np.asarray(unoptimized.policy["layers"][1]["w"][0], np.float64)
    assert w.shape == (64, 64)
    np.testing.assert_allclose(w.T @ w, 2.0 * np.eye(64), atol=1e-4)


def test_train_function_equals_chunked_sweep(base):
    trainer = make_train(base.static)
    _, metrics = jax.jit(trainer.train)(seed_key(4), base.knobs.as_arrays())
    run = train(base, seed=4, chunk_iterations=1)
    eager = pd.DataFrame({k: np.asarray(metrics[k]) for k in METRICS})
    assert_frames_close(eager, pd.DataFrame(curves(run, 0)))


def test_diverging_agent_is_flagged_and_does_not_poison_others(base):
    run = sweep(base, {"lr_policy": [3e-4, 1e38, 1e3]}, seeds=[2])
    assert run.diverged_agents == [1, 2]
    assert run.metrics[run.metrics.agent == 1].diverged.iloc[-1]
    # lr 1e3: log σ grows past float32's exp range (σ = inf) while every parameter stays finite (at this seed; at
    # others the parameters overflow as lr 1e38's do); the flag is raised from the first iteration whose σ or KL is
    # not finite, and never before
    third = run.metrics[run.metrics.agent == 2]
    bad = ~np.isfinite(third.policy_std.to_numpy()) | ~np.isfinite(third.mean_kl.to_numpy())
    unusable = np.logical_or.accumulate(bad)
    assert unusable.any() and (third.diverged.to_numpy() == unusable).all()
    # from the iteration after the flag the rollout's actions are frozen at zero: no return is the policy's
    for agent in (1, 2):
        m = run.metrics[run.metrics.agent == agent]
        frozen = np.concatenate([[False], m.diverged.to_numpy()[:-1]])
        assert frozen.any() and m.mean_return[frozen].isna().all() and m.mean_length[frozen].isna().all()
        assert m.mean_return_reference[frozen].isna().all()
    assert all(np.isfinite(np.asarray(x)[2]).all() for x in jax.tree.leaves(run.final_state.policy))
    # the same compiled program (knobs are arrays) with a healthy neighbour: agent 0 bitwise unchanged
    healthy = sweep(base, {"lr_policy": [3e-4, 1e-3, 2e-3]}, seeds=[2])
    a, twin = curves(run, 0), curves(healthy, 0)
    for k in METRICS:
        np.testing.assert_array_equal(a[k], twin[k], err_msg=k)
    # and the run alone (another program: one agent) to float32 rounding
    alone = train(base.replace(lr_policy=3e-4), seed=2)
    assert_frames_close(pd.DataFrame(a), pd.DataFrame(curves(alone, 0)))
    assert not a["diverged"].any()


def test_run_directory_round_trip(base, tmp_path):
    out = tmp_path / "run"
    run = sweep(base, {"value_clipping": [False, True]}, seeds=[0], out=str(out), save_checkpoint=True)
    loaded = load_run(str(out))
    assert loaded.manifest["status"] == "complete"
    assert loaded.manifest["grid_axes"] == ["value_clipping"]
    assert loaded.manifest["seeds"] == [0]
    assert loaded.manifest["base_config"]["static"]["task"] == "point_mass"
    assert {"jax", "mujoco", "flax"} <= set(loaded.manifest["versions"])
    assert {"compile_s", "run_s", "compiles"} <= set(loaded.manifest["timings"])
    assert loaded.manifest["device"]["backend"] == jax.default_backend()
    for k in ["agent", "seed", "iteration", "value_clipping", *METRICS]:
        np.testing.assert_array_equal(loaded.metrics[k].to_numpy(), run.metrics[k].to_numpy())
    assert loaded.config(1).value_clipping is True and loaded.config(0).value_clipping is False
    restored = load_checkpoint(loaded)
    for x, y in zip(jax.tree.leaves(restored), jax.tree.leaves(run.final_state)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert loaded.curve("mean_return").shape == (2, SMALL["num_iterations"])


def test_knob_names_do_not_collide_with_metric_columns():
    reserved = {"agent", "point", "seed", "iteration", "env_steps", "label", "algorithm", "task"}
    assert not (set(KNOB_NAMES) & (set(METRICS) | reserved))


def test_a_long_run_estimates_its_duration_after_the_first_chunk():
    from pgdiag.run.progress import duration, estimate

    assert [duration(s) for s in (45, 89.4, 720, 5399, 8640)] == ["45 s", "89 s", "12 min", "90 min", "2.4 h"]
    # 3 iterations took 30 s: 97 more take 97 × 10 s = 970 s ≈ 16 min; under a minute says nothing
    line = estimate("ppo/hopper", 3, 30.0, 97, now=0.0)
    assert line.startswith("ppo/hopper: 3 iterations in 30 s; about 16 min for the remaining 97 (until about ")
    assert estimate("ppo/hopper", 3, 30.0, 5) is None


def test_default_chunks_need_not_divide_the_run():
    """At least 20 chunks, of equal length but the last: a prime count of iterations is not cut one by one,
    and checkpoints add cuts without changing the other chunks."""
    from pgdiag.run.progress import chunk_lengths, default_chunk

    assert [default_chunk(n) for n in (5, 20, 487, 488, 976)] == [1, 1, 24, 24, 48]
    # at most 2,048 agent-iterations: the replication's 480-agent ablation 4 (⌊2048/480⌋), 80 agents still 24
    assert [default_chunk(488, agents=a) for a in (16, 80, 85, 480, 4096)] == [24, 24, 24, 4, 1]
    assert chunk_lengths(0, 487, 24) == [24] * 20 + [7]
    assert chunk_lengths(0, 487, 24, stops=(0, 30, 487)) == [24, 6, 18] + [24] * 18 + [7]
    assert chunk_lengths(30, 487, 24, stops=(30,)) == [18] + [24] * 18 + [7]   # resumed from iteration 30
