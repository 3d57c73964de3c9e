"""A user's algorithm through pgdiag's studies: PPO that stops its epochs early on the KL.

Spinning Up's PPO variant: PPO's clipped-surrogate epochs, but once a
minibatch step leaves the policy with mean KL(π_old ‖ π) > 1.5·d_targ on that
minibatch, the remaining minibatch steps are skipped (kept out of the
parameters, since a compiled loop has a fixed length). It declares its own
knobs: PPO's ε and PPO-KL's d_targ (their declarations reused) and a new one,
the stop factor 1.5; its objective and optimizer state are PPO's, and its
constraint line is d_targ. It declares its own metric too, the share of the minibatch steps applied before the
stop, which joins the run's metrics table, the loggers and `pgdiag plot`. Registered, it trains in a sweep and
goes through fig-step-variance and the landscape like the built-in algorithms.

    python examples/ppo_early_stop.py [OUT]
"""

import os
import sys

import jax
import jax.numpy as jnp

import pgdiag
from pgdiag import algorithms, networks
from pgdiag.algorithms import ppo, ppo_kl
from pgdiag.algorithms.epochs import epochs


def step(static, params, opt_state, batch, lr, knobs, key):
    old_mean, old_log_std = jax.lax.stop_gradient(networks.policy_apply(params, batch.obs, knobs))
    ppo_minibatch = ppo.policy_minibatch(batch, lr, knobs)

    def minibatch(carry, idx):
        learner, stopped = carry
        new, info = ppo_minibatch(learner, idx)
        mean, log_std = networks.policy_apply(new[0], batch.obs[idx], knobs)
        kl = jnp.mean(networks.gaussian_kl(old_mean[idx], old_log_std[idx], mean, log_std))
        learner = jax.tree.map(lambda old, upd: jnp.where(stopped, old, upd), learner, new)
        return (learner, stopped | (kl > knobs["stop_factor"] * knobs["kl_target"])), (info, ~stopped)

    ((new, state), _), (info, applied) = epochs(minibatch, ((params, opt_state), jnp.bool_(False)), key,
                                                batch.obs.shape[0], static.ppo_epochs, static.num_minibatches)
    out = ppo.as_step(new, state, info)
    # its own metric (declared below): the share of the minibatch steps applied before the stop
    return out.replace(info=out.info.replace(extra={"applied_fraction": jnp.mean(applied.astype(jnp.float32))}))


EARLY_STOP = pgdiag.Algorithm(
    name="ppo-early-stop", summary="PPO's epochs, stopped once a minibatch's mean KL exceeds 1.5·d_targ",
    init_state=ppo.init_state, step=step, objective=ppo.objective,
    constraint=algorithms.Constraint(kind="kl", knob="kl_target", label="d_targ"),
    knobs={"clip_eps": ppo.KNOBS["clip_eps"], "kl_target": ppo_kl.KNOBS["kl_target"],
           "stop_factor": pgdiag.Option(1.5, "Stop once the mean KL exceeds this × d_targ.",
                                         pgdiag.config.Range(0, low_open=True))},
    static=ppo.STATIC,
    metrics={"applied_fraction": "share of the epochs' minibatch steps applied before the KL stop"})


def main(out="results/examples/ppo-early-stop", seeds=2, **overrides):
    from pgdiag.experiments import targets

    if EARLY_STOP.name not in algorithms.names():
        pgdiag.register_algorithm(EARLY_STOP)
    cfg = pgdiag.preset("ppo", "lqr").replace(**{"algorithm": EARLY_STOP.name, "kl_target": 0.005,
                                                  "num_iterations": 6, "checkpoint_at": (0, 5), **overrides})
    path = f"{out}/runs/lqr-{EARLY_STOP.name}"
    # run again, the example continues (or loads) its saved run; other settings are refused, naming the difference
    saved = os.path.exists(os.path.join(path, "manifest.json"))
    run = pgdiag.sweep(cfg, seeds=seeds, **({"resume": path} if saved else {"out": path}))
    print(run.metrics.groupby("iteration")[["mean_return", "mean_kl"]].mean())
    steps = targets.get("fig-step-variance").train("smoke", out=f"{out}/steps", runs=[run.path],
                                                   diag=dict(batches=4), progress=False)
    land = targets.get("fig-landscape-surrogate").train("smoke", out=f"{out}/landscape", runs=[run.path],
                                                        diag=dict(points=3, sizes=(1024,), envs=4), progress=False)
    print("drawn:", steps["figure"], land["figure"])
    return run, steps, land


if __name__ == "__main__":
    main(*sys.argv[1:])
