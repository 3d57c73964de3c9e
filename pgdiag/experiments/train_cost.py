"""A MuJoCo training step's cost on a CPU from what the step does: its own physics, and the rollout's kernels and
the update's arithmetic, each measured in units of the host's Hopper step.

A multiple of the task's physics does not carry from one task to another: the update's arithmetic grows with the
networks' input, the physics with the model. On native Hopper (11 observations) the update costs more than the
physics; on Gym's Humanoid (376 observations, a step ten times Hopper's) less, and a multiple fitted on Hopper
planned a Humanoid training at 1.8× what it ran. Here the rollout's fixed kernels and the update are charged in
units of what Brax's Hopper costs this host per step at the same width (its speed on this kind of work), the update
scaled by its matmul FLOPs against the Hopper preset's (benchmarks/results/mid-report-cpu-2026-12-07.md).
"""

from __future__ import annotations

from pgdiag.envs import sizes

#: the rollout's cost per batched step beyond the physics of random-action trajectories, in Hopper steps of the same
#: width: 0.17 ms against 0.21 for 14 agents on a 2-core CPU (benchmarks/bench_stages.py), with the margin the whole
#: iterations need (their metrics, chunks). Mostly physics: a training's own states (robots falling and reset) step
#: dearer than those trajectories; the policy, filters and draws cost 0.04 ms
#: (benchmarks/results/native-pool-cpu-2026-12-07.md)
ROLLOUT_FIXED = 0.9
#: the Hopper preset's update (10 policy and 10 value epochs of 32 minibatches, 64 × 64 networks) per batched step,
#: in Hopper steps of the same width: 0.35 ms against 0.21 for 14 agents, with the same margin
UPDATE = 1.9
#: the gauge: the task, model and solver whose step prices the kernels and the update
GAUGE = ("hopper", "brax", "converged", "native")


def mlp_macs(layers) -> int:
    """Multiply-adds per sample of one minibatch step of an MLP with widths ``layers`` (input first): the forward
    pass, the weights' gradients (as many) and the inputs' gradients of every layer but the first."""
    products = [a * b for a, b in zip(layers[:-1], layers[1:])]
    return 3 * sum(products) - products[0]


def update_flops(static, task: str) -> float:
    """FLOPs of the matmuls of one sample's share of the update: both networks, every epoch. An algorithm without
    epochs of minibatches (TRPO: a gradient, its conjugate gradient's Fisher-vector products and a line search over
    the whole batch) is charged the value update's epochs again: its policy step costs about what PPO's 10 epochs do
    (a mid Hopper training: 0.48 ms a batched step of 7 TRPO agents, 0.60 of 7 PPO agents without a baseline)."""
    obs, act = sizes(task, static.model)
    policy_epochs = getattr(static, "ppo_epochs", static.value_epochs)
    policy = mlp_macs((obs, *static.policy_hidden, act)) * policy_epochs
    value = mlp_macs((obs, *static.value_hidden, 1)) * static.value_epochs
    return 2.0 * (policy + value)


#: the Hopper preset's update FLOPs per sample (10 + 10 epochs, 64 × 64 networks, 11 observations, 3 actions)
HOPPER_FLOPS = 2.0 * 10 * (mlp_macs((11, 64, 64, 3)) + mlp_macs((11, 64, 64, 1)))


def step_ms(program, physics_ms: float, step_ms) -> float | None:
    """A MuJoCo training program's ms per batched step on a CPU: its physics (``physics_ms``) with its held-out
    batches' share, plus [`ROLLOUT_FIXED`][pgdiag.experiments.train_cost.ROLLOUT_FIXED] and
    [`UPDATE`][pgdiag.experiments.train_cost.UPDATE] × its update's FLOPs over the Hopper preset's, both in the
    [`GAUGE`][pgdiag.experiments.train_cost.GAUGE]'s step at the program's width (``step_ms``, the plan's physics
    costs), the update shared by its [`learners`][pgdiag.experiments.train_cost.learners]; None without the program's
    settings or the gauge's cost."""
    if program.spec is None:
        return None
    static = program.spec[0].static
    task, model, solver, physics = GAUGE
    gauge = step_ms(task, program.width, model, solver, physics)
    if gauge is None:
        return None
    heldout = 1.0 + (1.0 / static.heldout_every if static.heldout_every else 0.0)
    update = UPDATE * update_flops(static, program.task) / HOPPER_FLOPS
    return physics_ms * heldout + gauge * (ROLLOUT_FIXED + update / learners(program.units))


def learners(agents: int) -> int:
    """The cores an update of ``agents`` agents runs on, on a CPU: one per CPU device holding agents, at most one
    per core. One device runs its small kernels on one core while the physics (costed apart, over every core)
    uses them all; sharded over two, a mid training of 14 Hopper agents ran 1.56× faster on 2 cores, 55 s against
    86 (benchmarks/results/mid-report-cpu-2026-12-07-night.md)."""
    from pgdiag.envs import hosts

    return max(1, min(hosts.cpu_device_count(), hosts.cores(), agents))


__all__ = ["GAUGE", "HOPPER_FLOPS", "ROLLOUT_FIXED", "UPDATE", "learners", "mlp_macs", "step_ms", "update_flops"]
