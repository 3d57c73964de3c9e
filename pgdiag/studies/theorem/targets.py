"""fig-theorem — a numerical illustration of CL Theorem 5.1 (and IM §4).

On ONE fixed batch, maximize PPO's clipped surrogate
L^C(θ) = mean(min(r_θ·Â, clip(r_θ, 1−ε, 1+ε)·Â)) from the same starting
policy with several optimizers and learning rates, full batch, many steps.

What the theorem and the gradient formula that follows it predict:

* at θ_old every ratio is 1, inside the clip range, so the first gradient of
  L^C equals the gradient of the unclipped surrogate L — the first step is an
  unclipped step;
* once a sample's ratio leaves [1−ε, 1+ε] in its advantage's direction it
  stops contributing gradient, so L^C flattens out, yet the parameters keep
  moving (other samples, momentum) and the max ratio drifts arbitrarily far
  past 1 + ε: the clipped objective has many optima outside the trust region,
  and which one is reached depends on the optimizer, not on the objective.

[`run`][pgdiag.studies.theorem.targets.run] writes the traces (``fig-theorem.csv``) and what the figure
needs besides them (``study.json``: first-step check, ceiling, ε, batch size);
[`draw`][pgdiag.studies.theorem.targets.draw] makes the figure and ``summary.csv`` from those two files
alone.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

from pgdiag import networks, stages
from pgdiag.config import ConfigError, preset
from pgdiag.diagnostics.memory import WORD, pair_words
from pgdiag.envs import sizes as task_sizes
from pgdiag.experiments import dry_run, figures, study_dir
from pgdiag.studies.theorem import evidence as ev
from pgdiag.experiments.scales import Scale, pick
from pgdiag.experiments.target_types import Target
from pgdiag.objectives import clipped_surrogate, kl_stats, normalize_advantages, probability_ratio, surrogate
from pgdiag.trainer import make_train, seed_key

OPTIMIZERS = (("SGD", "sgd", 0.03), ("SGD", "sgd", 0.3), ("Adam", "adam", 3e-4), ("Adam", "adam", 3e-3),
              ("Adam", "adam", 3e-2), ("SGD+momentum", "momentum", 0.1))
SCALES = {
    "smoke": Scale(tasks=("hopper",), seeds=1, settings={"optimize": {"steps": 600}},
                   description="One batch of the PPO preset on Hopper, 600 full-batch steps per optimizer."),
    # Hopper's batch (the papers' 1 × 2,048 samples) with the paper scale's step count: seconds on a CPU
    "mid": Scale(tasks=("hopper",), seeds=1, settings={"optimize": {"steps": 2000}},
                 description="One batch of the PPO preset on Hopper, 2,000 full-batch steps per optimizer."),
    "paper": Scale(tasks=("humanoid",), seeds=1, settings={"optimize": {"steps": 2000}},
                   description="One batch of the PPO preset on Humanoid, 2,000 full-batch steps per optimizer."),
}


def surrogates(params, batch, knobs, eps):
    """Clipped and unclipped surrogates on the whole batch (advantages normalized over it),
    with the ratios."""
    mean, log_std = networks.policy_apply(params, batch.obs, knobs)
    ratio = probability_ratio(networks.gaussian_log_prob(mean, log_std, batch.action), batch.old_log_prob)
    adv = normalize_advantages(batch.advantages)
    return clipped_surrogate(ratio, adv, eps)[0], surrogate(ratio, adv), ratio


def fixed_batch(task: str, seed: int = 0):
    """The PPO preset's initial agent on ``task`` and one training batch from it."""
    cfg = preset("ppo", task)
    trainer = make_train(cfg.static)
    knobs = cfg.knobs.as_arrays()
    # one compiled program, not the initialization's operations one by one (each its own small compile)
    state = jax.jit(trainer.init)(seed_key(seed), knobs)
    data = jax.jit(lambda s, k, key: stages.collect_batch(trainer.env, s.policy, s.value, s.envs, s.filters, k, key,
                                                          cfg.steps_per_env))(state, knobs, seed_key(seed + 1))
    return cfg, state.policy, data.batch, knobs


def _optimizer(kind: str, lr):
    return {"sgd": optax.sgd(lr), "adam": optax.adam(lr, eps=1e-5), "momentum": optax.sgd(lr, momentum=0.9)}[kind]


def optimize(params, batch, knobs, eps, optimizer, steps: int):
    """Gradient ascent on L^C; per step: L^C, L, max and min ratio, mean KL to the
    start, and the fraction of samples whose ratio is outside [1−ε, 1+ε]."""
    old_mean, old_log_std = networks.policy_apply(params, batch.obs, knobs)

    def record(p):
        lc, lu, ratio = surrogates(p, batch, knobs, eps)
        kl = kl_stats(old_mean, old_log_std, *networks.policy_apply(p, batch.obs, knobs)).mean_kl
        outside = jnp.mean((ratio < 1 - eps) | (ratio > 1 + eps))
        return jnp.stack([lc, lu, jnp.max(ratio), jnp.min(ratio), kl, outside])

    def step(carry, _):
        p, s = carry
        grads = jax.grad(lambda q: -surrogates(q, batch, knobs, eps)[0])(p)
        updates, s = optimizer.update(grads, s, p)
        p = optax.apply_updates(p, updates)
        return (p, s), record(p)

    _, trace = jax.lax.scan(step, (params, optimizer.init(params)), None, length=steps)
    return jnp.concatenate([record(params)[None], trace])  # row 0 = the start


@functools.partial(jax.jit, static_argnames=("kind", "steps"))
def _optimize_at(params, batch, knobs, eps, lr, kind: str, steps: int):
    """[`optimize`][pgdiag.studies.theorem.targets.optimize] with optimizer ``kind`` at learning rate ``lr``, an
    argument of the compiled program: one compile per kind, whatever its rates."""
    return optimize(params, batch, knobs, eps, _optimizer(kind, lr), steps)


@jax.jit
def _ceiling(batch, eps):
    adv = normalize_advantages(batch.advantages)
    return jnp.mean(jnp.where(adv > 0, (1 + eps) * adv, (1 - eps) * adv))


def clipped_ceiling(batch, eps) -> float:
    """The supremum of L^C over all ratios: every sample at the clip boundary in its
    advantage's direction, mean(where(Â > 0, (1+ε)Â, (1−ε)Â))."""
    return float(_ceiling(batch, eps))


@jax.jit
def _first_step(params, batch, knobs, eps):
    g_clip = jax.grad(lambda p: surrogates(p, batch, knobs, eps)[0])(params)
    g_plain = jax.grad(lambda p: surrogates(p, batch, knobs, eps)[1])(params)
    a = jnp.concatenate([x.ravel() for x in jax.tree.leaves(g_clip)])
    b = jnp.concatenate([x.ravel() for x in jax.tree.leaves(g_plain)])
    return jnp.linalg.norm(a - b) / jnp.linalg.norm(b)


def first_step_check(params, batch, knobs, eps):
    """Relative difference between the gradients of L^C and L at θ_old (0 by the theorem)."""
    return float(_first_step(params, batch, knobs, eps))


COLUMNS = ("clipped_objective", "unclipped_objective", "max_ratio", "min_ratio", "mean_kl", "fraction_outside")


STUDY = "theorem"


def run(target, scale="smoke", out=None, tasks=None, seeds=None, progress=None, steps=None, seed=0):
    """Optimize L^C on one batch with every optimizer, save the traces and `draw` them: the shared ``run``
    signature, with ``tasks`` the one task whose batch is optimized, ``steps`` the optimizer steps (default:
    the scale's) and ``seed`` the batch's seed."""
    import pandas as pd

    sc = pick(target.scales, scale)
    if tasks is not None and len(tuple(tasks)) != 1 or seeds not in (None, 1):
        raise ConfigError(f"{target.name} optimizes one batch of one task: give one task and one seed, got "
                          f"tasks={tasks!r}, seeds={seeds!r}")
    task, steps = (tuple(tasks) if tasks else sc.tasks_of())[0], steps or sc.settings["optimize"]["steps"]
    out = out or target.default_out
    cfg, params, batch, knobs = fixed_batch(task, seed)
    eps = cfg.clip_eps
    rel = first_step_check(params, batch, knobs, eps)
    ceiling = clipped_ceiling(batch, eps)
    frames = []
    for name, kind, lr in OPTIMIZERS:
        trace = np.asarray(_optimize_at(params, batch, knobs, eps, jnp.float32(lr), kind=kind, steps=steps))
        frame = pd.DataFrame(trace, columns=COLUMNS).assign(optimizer=f"{name} lr={lr:g}", step=np.arange(len(trace)))
        frames.append(frame)
    # the study record's write waits for this one, so every process then reads the traces
    figures.write_csv(pd.concat(frames, ignore_index=True), os.path.join(out, f"{target.name}.csv"), index=False)
    study_dir.write(out, target.study, scale, [task], seed=seed, steps=steps, clip_eps=float(eps),
                    batch_size=int(batch.obs.shape[0]), first_step_relative_difference=rel, ceiling=ceiling)
    return target.redraw(out)


def _traces(target, from_dir: str):
    """The study record and the optimizers' traces saved in ``from_dir``."""
    import pandas as pd

    record = study_dir.read(from_dir, target.study, target.name)
    trace_path = os.path.join(from_dir, f"{target.name}.csv")
    if not os.path.isfile(trace_path):
        raise ConfigError(f"{target.name} --from {from_dir!r}: the study has no {target.name}.csv (its traces)")
    return record, pd.read_csv(trace_path)


def draw(target, from_dir: str, out: str | None = None) -> dict:
    """The figure and ``summary.csv`` from ``fig-theorem.csv`` and ``study.json`` in ``from_dir``
    (written to ``out``, default ``from_dir``)."""
    import pandas as pd

    record, data = _traces(target, from_dir)
    out = out or from_dir
    task, eps, steps, ceiling = record["tasks"][0], record["clip_eps"], record["steps"], record["ceiling"]
    rel = record["first_step_relative_difference"]

    fig, axes = figures.panels(1, 4, 5, 4.2)
    axes = axes[0]
    for opt, d in data.groupby("optimizer", sort=False):
        axes[0].plot(d.step, d.clipped_objective / ceiling, label=opt)
        axes[1].plot(d.step, d.max_ratio, label=opt)
        axes[2].plot(d.step, d.mean_kl + 1e-12, label=opt)
        axes[3].plot(d.step, d.fraction_outside, label=opt)
    axes[0].axhline(1.0, color="k", ls=":", label="ceiling: every ratio at its clip")
    axes[0].set_title("clipped surrogate L^C / its supremum")
    axes[1].axhline(1 + eps, color="k", ls=":", label=f"1 + ε = {1 + eps:g}")
    axes[1].set_yscale("log")
    axes[1].set_title("max ratio π_θ/π_old on the batch")
    axes[2].set_yscale("log")
    axes[2].set_title("mean KL(π_old ‖ π_θ)")
    axes[3].set_title("fraction of samples outside [1−ε, 1+ε]")
    for ax in axes:
        ax.set_xlabel("optimizer step on the same batch")
    path = figures.save(fig, os.path.join(out, f"{target.name}.png"),
                        f"CL Theorem 5.1 on one {task} batch of {record['batch_size']} samples: the objective "
                        f"flattens while the ratios leave the trust region; "
                        f"first step: |∇L^C − ∇L|/|∇L| = {rel:.1e}",
                        dpi=100, title_size=10, legend=True)

    final = data[data.step == steps].set_index("optimizer")
    half = data[data.step == steps // 2].set_index("optimizer")
    summary = pd.DataFrame({
        "L^C / supremum at half": half.clipped_objective / ceiling,
        "L^C / supremum at end": final.clipped_objective / ceiling,
        "max ratio at half": half.max_ratio, "max ratio at end": final.max_ratio,
        "mean KL at end": final.mean_kl})
    figures.write_csv(summary, os.path.join(out, "summary.csv"))
    return {"figure": path, "first_step_relative_difference": rel, "ceiling": ceiling, "trace": data,
            "summary": summary, "text": f"first step: |grad L^C - grad L| / |grad L| = {rel:.2e}"}


def plan(target, scale="smoke", tasks=None, seeds=None, memory: int | None = 1 << 62, steps=None,
         **overrides) -> list:
    """One batch of the PPO preset, then every optimizer on it in turn."""
    sc = pick(target.scales, scale)
    task, steps = (tasks or sc.tasks_of())[0], steps or sc.settings["optimize"]["steps"]
    s = preset("ppo", task, **overrides).static
    obs, act = task_sizes(task, s.model)
    pairs = s.num_envs * s.steps_per_env
    need = WORD * pairs * pair_words(obs, act, s, value_passes=0)   # the batch and the policy's activations
    return [dry_run.Program("optimize", task, "ppo", len(OPTIMIZERS), pairs, s.steps_per_env + len(OPTIMIZERS) * steps,
                            s.num_envs, need, need <= dry_run.budget(memory), f"{steps} full-batch steps per optimizer",
                            model=s.model, solver=s.solver, physics=s.physics,
                            available=dry_run.budget(memory))]


def evidence(target, from_dir: str, notes: list) -> list:
    return ev.theorem_evidence(*_traces(target, from_dir))


TARGETS = (
    Target("fig-theorem", STUDY, "optimize", "CL Theorem 5.1", "CL Theorem 5.1: optimizing the clipped objective on "
           "one batch", scales=SCALES, run=run, draw=draw, plan=plan, evidence=evidence, papers=("cl", "im"),
           provides=("theorem_",), presets=("ppo",)),
)
