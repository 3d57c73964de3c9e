"""Presets: the papers' hyperparameters per algorithm × task (reference/original-code.md §3), as data."""

from __future__ import annotations

from pgdiag.config import registry
from pgdiag.config.knobs import ConfigError
from pgdiag.config.schema import Config
from pgdiag.config.static import check_static

# --------------------------------------------------------------------------
# Presets: the papers' hyperparameters (reference/original-code.md §3).
# --------------------------------------------------------------------------

_PAPER_COMMON = dict(num_envs=1, steps_per_env=2048, num_iterations=488, ppo_epochs=10,
                     value_epochs=10, num_minibatches=32, reset_every_iteration=True,
                     gamma=0.99, gae_lambda=0.95, clip_eps=0.2, value_clip_eps=0.2,
                     entropy_coef=0.0, adam_eps=1e-5, obs_normalization=True,
                     tanh_activations=True, grad_clipping=False)

# PPO with its code-level optimizations: reward scaling ±10, obs clip ±10,
# orthogonal init, LR annealing (ref §3 "What each variant means").
_PPO = dict(algorithm="ppo", reward_scaling=True, reward_clipping=True, reward_clip=10.0,
            obs_clipping=True, obs_clip=10.0, orthogonal_init=True, lr_annealing=True)
# PPO-M: the same core without the optimizations; observation normalization
# stays on, as in the original code.
_PPO_M = dict(algorithm="ppo", reward_scaling=False, reward_clipping=False, obs_clipping=False,
              orthogonal_init=False, lr_annealing=False, value_clipping=False)
# PPO-NoClip: PPO with ε = 1e32 and per-task grid-searched settings.
_NOCLIP = dict(algorithm="ppo", clip_eps=1e32, reward_scaling=True, reward_clipping=True, obs_clipping=True,
               obs_clip=10.0, grad_clipping=True)
# TRPO as in the TRPO paper / baselines: no reward scaling or clipping, xavier
# init, observation normalization on (unclipped).
_TRPO = dict(algorithm="trpo", reward_scaling=False, reward_clipping=False, obs_clipping=False,
             orthogonal_init=False, lr_annealing=False, value_clipping=False)
# TRPO+: TRPO with PPO's optimizations. The original configs also set a
# gradient-norm clip and a KL schedule that its code never applied (ref §8
# B1, B2); the presets keep what the published numbers were produced with:
# a constant δ and no gradient clipping.
_TRPO_PLUS = dict(algorithm="trpo", reward_scaling=True, reward_clipping=True, reward_clip=10.0,
                  obs_clipping=True, obs_clip=10.0, lr_annealing=False, grad_clipping=False)
_TRPO_PLUS_NOTE = (" The original config also sets clip_grad_norm {clip} and max_kl_final {final}, which its code "
                   "never applied (ref §8 B1, B2): the preset uses the constant δ and no gradient clipping, as the "
                   "published numbers were produced. (Rescaling g leaves the natural-gradient step unchanged, so "
                   "in TRPO a gradient clip could only alter the line search's acceptance test.)")

#: (algorithm, task) -> (overrides, description). Values from the released
#: code [M] `configs/*.py` (ref §3); where the Closer Look table differs, the
#: description says so.
PRESETS: dict[tuple[str, str], tuple[dict, str]] = {
    ("ppo", "hopper"): (
        dict(_PPO, value_clipping=False, lr_policy=3e-4, lr_value=2.5e-4),
        "PPO on Hopper, [M] hopper_ppo. Value clipping off as in the released config. "
        "CL Table 1 lists policy LR 4.5e-4 and value LR 2e-4."),
    ("ppo-m", "hopper"): (
        dict(_PPO_M, lr_policy=1.7e-4, lr_value=4e-4),
        "PPO-M on Hopper, [M] hopper_ppom (observation normalization on, as in the original)."),
    ("ppo-noclip", "hopper"): (
        dict(_NOCLIP, reward_scaling_uses_rewards=True, reward_clip=2.5, orthogonal_init=True, lr_annealing=True,
             value_clipping=False, lr_policy=6e-5, lr_value=4e-4, gae_lambda=0.925, entropy_coef=-0.005,
             max_grad_norm=4.0),
        "PPO-NoClip on Hopper, [M] hopper_ppo_noclip: ε = 1e32, the 'rewards' reward filter clipped at 2.5, "
        "λ 0.925, entropy coefficient −0.005 (an entropy penalty), gradient clip 4."),
    ("trpo", "hopper"): (
        dict(_TRPO, lr_value=2e-4, kl_bound=0.13),
        "TRPO on Hopper, [M] hopper_trpo (CL Table 1 agrees): δ = 0.13."),
    ("trpo+", "hopper"): (
        dict(_TRPO_PLUS, orthogonal_init=True, value_clipping=False, lr_value=2e-4, kl_bound=0.04),
        "TRPO+ on Hopper, [M] hopper_trpo_plus: δ = 0.04." + _TRPO_PLUS_NOTE.format(clip=1.0, final=0.07)),

    ("ppo", "walker2d"): (
        dict(_PPO, value_clipping=True, lr_policy=4e-4, lr_value=3e-4),
        "PPO on Walker2d, [M] walker_ppo (CL Table 1 agrees)."),
    ("ppo-m", "walker2d"): (
        dict(_PPO_M, lr_policy=1e-4, lr_value=2e-4),
        "PPO-M on Walker2d, [M] walker_ppom."),
    ("ppo-noclip", "walker2d"): (
        dict(_NOCLIP, reward_scaling_uses_rewards=True, reward_clip=30.0, obs_clipping=False, orthogonal_init=True,
             lr_annealing=True, value_clipping=False, lr_policy=7.25e-5, lr_value=6e-4, gae_lambda=0.85,
             entropy_coef=-0.01, max_grad_norm=0.1),
        "PPO-NoClip on Walker2d, [M] walker_ppo_noclip: ε = 1e32, the 'rewards' reward filter clipped at 30, "
        "no observation clipping, λ 0.85, entropy coefficient −0.01, gradient clip 0.1."),
    ("trpo", "walker2d"): (
        dict(_TRPO, lr_value=3e-4, kl_bound=0.04),
        "TRPO on Walker2d, [M] walker_trpo (CL Table 1 agrees): δ = 0.04."),
    ("trpo+", "walker2d"): (
        dict(_TRPO_PLUS, orthogonal_init=True, value_clipping=False, lr_value=1e-4, kl_bound=0.07),
        "TRPO+ on Walker2d, [M] walker_trpo_plus: δ = 0.07." + _TRPO_PLUS_NOTE.format(clip=1.0, final=0.04)),

    ("ppo", "humanoid"): (
        dict(_PPO, value_clipping=True, lr_policy=1.5e-4, lr_value=1e-4),
        "PPO on Humanoid, [M] humanoid_ppo. CL Table 1 lists policy LR 2.5e-4."),
    ("ppo-m", "humanoid"): (
        dict(_PPO_M, lr_policy=9e-5, lr_value=4e-4),
        "PPO-M on Humanoid, [M] humanoid_ppom."),
    ("ppo-noclip", "humanoid"): (
        dict(_NOCLIP, reward_clip=10.0, orthogonal_init=False, lr_annealing=False, value_clipping=True,
             lr_policy=2e-5, lr_value=5e-5, gae_lambda=0.85, entropy_coef=0.005, max_grad_norm=0.5),
        "PPO-NoClip on Humanoid, [M] humanoid_ppo_noclip: ε = 1e32, return-based reward scaling, xavier init, "
        "no LR annealing, value clipping, λ 0.85, entropy bonus 0.005, gradient clip 0.5."),
    ("trpo", "humanoid"): (
        dict(_TRPO, lr_value=3e-4, kl_bound=0.07),
        "TRPO on Humanoid, [M] humanoid_trpo (CL Table 1 agrees): δ = 0.07."),
    ("trpo+", "humanoid"): (
        dict(_TRPO_PLUS, orthogonal_init=False, value_clipping=True, lr_value=5e-5, gae_lambda=0.85, kl_bound=0.1),
        "TRPO+ on Humanoid, [M] humanoid_trpo_plus: δ = 0.1, xavier init, value clipping, λ 0.85."
        + _TRPO_PLUS_NOTE.format(clip=0.5, final=0.05)),
}
PAPER_TASKS = ("hopper", "walker2d", "humanoid")
ALGORITHM_PRESETS = ("ppo", "ppo-m", "ppo-noclip", "trpo", "trpo+")
for _key in list(PRESETS):
    _over, _desc = PRESETS[_key]
    PRESETS[_key] = (dict(_PAPER_COMMON, **_over), _desc)

#: Algorithms beyond the papers' (pgdiag.algorithms), each on the papers' tasks from the nearest paper
#: preset: PPO-KL from PPO's (its optimizations and learning rates; d_targ 0.01 and β₀ 1, PPO paper §4 and
#: Table 1's best setting), NPG from TRPO's (its δ), VPG from TRPO's minimal settings with one Adam step
#: of learning rate 3e-4 per batch (Spinning Up's VPG). Not tuned: starting points for a comparison.
MORE_PRESETS = ("ppo-kl", "npg", "vpg")
for _task in PAPER_TASKS:
    _ppo, _ = PRESETS[("ppo", _task)]
    _trpo, _ = PRESETS[("trpo", _task)]
    _minimal = {k: v for k, v in _trpo.items() if k != "kl_bound"}
    PRESETS[("ppo-kl", _task)] = (
        dict(_ppo, algorithm="ppo-kl", kl_target=0.01, kl_beta_init=1.0),
        f"PPO with an adaptive KL penalty (PPO paper §4: d_targ 0.01, β₀ 1) on {_task}, with the PPO preset's "
        f"optimizations and learning rates; not tuned.")
    PRESETS[("npg", _task)] = (
        dict(_trpo, algorithm="npg"),
        f"The natural policy gradient on {_task}: TRPO's preset (δ = {_trpo['kl_bound']}) without the line search; "
        f"not tuned.")
    PRESETS[("vpg", _task)] = (
        dict(_minimal, algorithm="vpg", lr_policy=3e-4),
        f"Vanilla policy gradient on {_task}: one Adam step (learning rate 3e-4, as Spinning Up's VPG) per batch "
        f"with TRPO's minimal settings and value network; not tuned.")

#: The papers' own variants of a preset: PPO trained without a baseline (CL §5.2, "agents trained without a
#: baseline function attain almost an order of magnitude worse final reward"): PPO's preset with the value
#: network left out of the policy's advantages (the ``value_baseline`` knob).
VARIANT_PRESETS = ("ppo-nobaseline",)
for _task in PAPER_TASKS:
    _ppo, _ = PRESETS[("ppo", _task)]
    PRESETS[("ppo-nobaseline", _task)] = (
        dict(_ppo, value_baseline=False),
        f"PPO on {_task} without a baseline (CL §5.2): the PPO preset, its policy's advantages the discounted "
        f"returns instead of GAE; the value network is still trained.")

#: Static settings that make a study fit a 2-core CPU: 4 environments × 256 steps
#: per iteration (1,024 samples, minibatches of 64 as in the papers), episodes
#: continuing across iterations. The smoke scale of every figure uses them.
CPU_SCALE = dict(num_envs=4, steps_per_env=256, num_minibatches=16, reset_every_iteration=False)

#: The task whose preset (the papers' MuJoCo hyperparameters) a task without presets of its own starts from: the
#: pure-JAX and linear-quadratic tasks here, a task a user registers on the command line (``pgdiag train``).
BASE_TASK = "hopper"

# Cheap pure-JAX tasks: each algorithm with its Hopper knobs at CPU scale.
_SMOKE = dict(CPU_SCALE, num_iterations=60)
for _task in ("pendulum", "point_mass"):
    for _algo in ALGORITHM_PRESETS + MORE_PRESETS + VARIANT_PRESETS:
        _over, _ = PRESETS[(_algo, BASE_TASK)]
        PRESETS[(_algo, _task)] = (
            dict(_over, **_SMOKE),
            f"{_algo.upper()} on the pure-JAX {_task} task: the Hopper preset's knobs at CPU scale "
            f"(4 envs × 256 steps per iteration, 16 minibatches, environments not reset between iterations).")

# The linear-quadratic task: a linear-Gaussian policy, and observation clipping off, so the
# policy stays affine in the state and the closed forms of pgdiag.envs.lqr apply to it.
for _algo in ALGORITHM_PRESETS + MORE_PRESETS + VARIANT_PRESETS:
    _over, _ = PRESETS[(_algo, BASE_TASK)]
    PRESETS[(_algo, "lqr")] = (
        dict(_over, **_SMOKE, policy_hidden=(), obs_clipping=False),
        f"{_algo.upper()} on the linear-quadratic task: the Hopper preset's knobs at CPU scale with a linear-Gaussian "
        f"policy and no observation clipping (the policy is affine in the state: J, ∇J and V^π are exact).")


def preset_names() -> list[str]:
    """The algorithms that have presets (``preset``'s first argument), sorted."""
    return sorted({a for a, _ in PRESETS})


def preset(algorithm: str, task: str, /, **overrides) -> Config:
    """The papers' configuration of ``algorithm`` on ``task``, with overrides.

    Args:
        algorithm: a preset's algorithm, e.g. ``"ppo"``, ``"trpo"``, ``"ppo-m"`` (case-insensitive; see
            [`preset_names`][pgdiag.config.presets.preset_names]).
        task: the task, e.g. ``"hopper"`` (case-insensitive).
        **overrides: knobs and static settings to change, e.g. ``lr_policy=1e-4, num_iterations=50``
            (not ``algorithm`` or ``task``: another pair is another preset).

    Returns:
        The configuration, named ``"<algorithm>/<task>"``.

    Raises:
        ConfigError: no preset for that pair, or an override that is not a setting or not allowed.
    """
    chosen = sorted(set(overrides) & {"algorithm", "task"})
    if chosen:  # a preset is its algorithm on its task: another one is another preset
        raise ConfigError(f"preset({algorithm!r}, {task!r}): {', '.join(f'{k}={overrides[k]!r}' for k in chosen)} "
                          f"cannot be an override; choose the preset's algorithm and task themselves (--preset and "
                          f"--task on the command line)")
    key = (str(algorithm).lower(), str(task).lower())
    if key not in PRESETS:
        check_static("task", task)  # an unknown task is named as such
        algos = sorted({a for a, _ in PRESETS})
        tasks = sorted({t for a, t in PRESETS if a == key[0]}) or sorted({t for _, t in PRESETS})
        if key[0] not in algos:
            raise ConfigError(f"unknown preset algorithm {algorithm!r}; presets exist for: {', '.join(algos)}")
        raise ConfigError(f"no preset for {algorithm!r} on task {task!r}; tasks with that preset: {', '.join(tasks)}")
    values, _ = PRESETS[key]
    return Config(name=f"{key[0]}/{key[1]}").replace(task=key[1], **{**values, **overrides})


def study_preset(algorithm: str, task: str, /, **overrides) -> Config:
    """[`preset`][pgdiag.config.presets.preset] for one of several presets that a study trains with one set of
    ``overrides``: a knob that registered algorithms declare as their own (clip_eps, kl_bound, ...) goes to the
    presets of those algorithms only, so fig-trust-region's ``--set clip_eps=0.3`` sets PPO's ε and leaves TRPO's
    runs as they are. [`preset`][pgdiag.config.presets.preset] itself refuses such a knob for another algorithm."""
    values, _ = PRESETS.get((str(algorithm).lower(), str(task).lower()), ({}, ""))
    algo = values.get("algorithm")
    kept = {k: v for k, v in overrides.items() if not registry.owners(k) or algo in registry.owners(k)}
    return preset(algorithm, task, **kept)
