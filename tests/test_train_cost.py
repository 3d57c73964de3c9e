"""A MuJoCo training planned on a CPU from what its step does (pgdiag.experiments.train_cost): the numbers below
are worked out by hand from the layer shapes and the constants' definitions."""

import pytest

from pgdiag import preset
from pgdiag.experiments import costs, dry_run, train_cost


def test_the_updates_flops_are_counted_from_the_layer_shapes():
    # Hopper (11 → 64 → 64 → 3 and → 1): forward + weight gradients 2 × (704 + 4,096 + 192), input gradients of
    # the two upper layers 4,096 + 192: 14,272 multiply-adds a policy step, 13,888 a value step; × 10 epochs each
    assert train_cost.mlp_macs((11, 64, 64, 3)) == 14_272 and train_cost.mlp_macs((11, 64, 64, 1)) == 13_888
    assert train_cost.HOPPER_FLOPS == 2 * 10 * (14_272 + 13_888) == 563_200
    # Gym's Humanoid (376 observations, 17 actions): 3 × (24,064 + 4,096 + 1,088) − 24,064 = 63,680 and
    # 3 × (24,064 + 4,096 + 64) − 24,064 = 60,608
    humanoid = preset("ppo", "humanoid", model="gym").static
    assert train_cost.update_flops(humanoid, "humanoid") == 2 * 10 * (63_680 + 60_608)
    # TRPO has no epochs of minibatches: charged its value update's 10 again, as PPO's policy epochs
    assert train_cost.update_flops(preset("trpo", "hopper").static, "hopper") == 563_200


def test_a_humanoid_training_is_its_physics_plus_kernels_and_update_in_hopper_steps():
    cfg = preset("ppo", "humanoid", model="gym", heldout_every=10)
    program = dry_run.training_program("humanoid", "ppo", cfg.static, 16, 1 << 40, spec=(cfg, None, list(range(16))))
    asked = []

    def step_ms(task, width, model, solver, physics):
        asked.append((task, width, model, physics))
        return 3.0 if task == "humanoid" else 1.0

    # 3.0 ms × (1 + 1/10 held out) + 1.0 ms × (0.9 + 1.9 × 2,485,760 / 563,200)
    expected = 3.3 + 0.9 + 1.9 * 2_485_760 / 563_200
    assert train_cost.step_ms(program, 3.0, step_ms) == pytest.approx(expected)
    assert asked == [("hopper", 16, "brax", "native")]
    asked.clear()
    seconds = costs.run_seconds(program, step_ms, recorded=False)   # this CPU host: the same model
    assert seconds == pytest.approx(program.sequential_steps * expected / 1e3)
    assert ("hopper", 16, "brax", "native") in asked


def test_without_the_gauges_cost_or_the_programs_settings_the_multiple_stands():
    cfg = preset("ppo", "hopper")
    bare = dry_run.training_program("hopper", "ppo", cfg.static, 4, 1 << 40)   # no sweep behind it
    assert train_cost.step_ms(bare, 2.0, lambda *a: 1.0) is None
    gaugeless = dry_run.training_program("hopper", "ppo", cfg.static, 4, 1 << 40, spec=(cfg, None, [0, 1, 2, 3]))
    assert train_cost.step_ms(gaugeless, 2.0, lambda *a: None) is None
    assert costs.run_seconds(bare, lambda *a: 2.0, recorded=False) == pytest.approx(
        bare.sequential_steps * 2.0 * costs.OVERHEAD["train"] / 1e3)
