"""A policy trained elsewhere as a run directory, so that every diagnostic measures it as it measures a sweep's.

    run = pgdiag.import_policy("sb3", "model.zip", task="hopper", model="gym", out="runs/sb3-hopper",
                                vecnormalize="vec_normalize.pkl")
    pgdiag.experiments.targets.get("fig-grad-variance").train("smoke", runs=[run.path])

The directory holds one agent with one checkpoint, after "iteration 0": the loaded policy and value function
in pgdiag's networks ([`pgdiag.adapters.policies`][pgdiag.adapters.policies]), the observation filter the
agent saw, fresh optimizer states, and a configuration of ``algorithm``'s preset for the task with the
network's shapes and the settings the file states (γ and λ of a Stable-Baselines3 zip). The diagnostics that
take an update from the agent (steps, landscapes) take that preset's update, with ``settings`` overriding it.
The manifest's ``imported`` entry names the file, its SHA-256 and what was assumed.
"""

from __future__ import annotations

import hashlib
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from pgdiag import stages
from pgdiag.adapters.archives import ArchiveError
from pgdiag.adapters.policy_loaders import loader_options
from pgdiag.adapters.policies import DEFAULT_ALGORITHM, ExternalPolicy, knob_values, obs_stat, read_policy
from pgdiag.config import Config, ConfigError, preset
from pgdiag.optim import adam
from pgdiag.run import checkpoints, store
from pgdiag.run.claim import claim
from pgdiag.run.execute import new_manifest
from pgdiag.run.rosters import roster
from pgdiag.trainer import make_train


def import_policy(source: str | ExternalPolicy, path: str | None = None, *, task: str, out: str,
                  model: str | None = None, algorithm: str = DEFAULT_ALGORITHM, settings: dict | None = None,
                  overwrite: bool = False, **read_options) -> store.RunResult:
    """Write the policy ``source`` (a registered kind, [`loaders`][pgdiag.adapters.policy_loaders.loaders], with
    its ``path``, or one already read) as a run directory ``out`` on ``task``.

    Args:
        source: "brax", "cleanrl", "sb3" or a kind registered with
            [`register_loader`][pgdiag.adapters.policy_loaders.register_loader] (then ``path`` is the file), or an
            ExternalPolicy.
        task: the pgdiag task the policy acts in (its observation and action sizes must match the policy's).
        out: the new run directory (refused where a run exists, unless ``overwrite``).
        model: the task's MuJoCo model ("gym" for a policy trained on Gymnasium's Hopper-v4/v5, ...).
        algorithm: the preset whose update and settings the diagnostics use for this agent (default: the static
            settings' default algorithm, ppo).
        settings: static settings or knobs overriding the preset's (and the file's).
        read_options: the options the kind's loader declares (``obs_stats``, ``vecnormalize``, ``activation``
            for pgdiag's own; see [`read_policy`][pgdiag.adapters.policies.read_policy]).

    Returns:
        The run, as [`load_run`][pgdiag.run.store.load_run] reads it.
    """
    ext = source if isinstance(source, ExternalPolicy) else read_policy(source, path, **read_options)
    options = canonical_options(task=task, model=model, algorithm=algorithm, **read_options)
    config = _config(ext, task, model, algorithm, settings or {})
    trainer = make_train(config.static)
    _check_sizes(ext, trainer.env, task)
    states = _states(ext, config, trainer)
    p = roster(config, None, [0], [ext.kind])
    lock = claim(out, overwrite=overwrite)
    try:
        checkpoints.save_states(out, 0, states, 1)
        store.write_metrics(out, store.metrics_frame(p, {}))
        manifest = new_manifest(p, f"{ext.kind}:{os.path.basename(ext.path)}", chunk_iterations=1,
                                batching="vmap", save_checkpoint=False, imported=_provenance(ext, options))
        manifest.update(status="complete", checkpoints={"kept": [0], "saved": [0]}, diverged_agents=[])
        store.write_manifest(out, manifest)
    finally:
        lock.release()
    return store.load_run(out)


def _config(ext: ExternalPolicy, task: str, model, algorithm: str, settings: dict) -> Config:
    try:
        base = preset(algorithm, task)
    except ConfigError:   # a task the user registered: the papers' MuJoCo hyperparameters
        base = preset(algorithm, "hopper").replace(task=task)
    changes = dict(network=ext.network, policy_hidden=ext.policy_hidden, value_hidden=ext.value_hidden,
                   checkpoint_at=(0,), **knob_values(ext))
    if model is not None:
        changes["model"] = model
    changes.update(settings)
    return base.replace(name=f"{algorithm}/{task} ({ext.kind})", **changes)


def _check_sizes(ext: ExternalPolicy, env, task: str) -> None:
    for what, theirs, ours in (("observations", ext.obs_size, env.obs_size),
                               ("actions", ext.action_size, env.action_size)):
        if theirs != ours:
            raise ConfigError(f"{ext.kind} policy {ext.path!r} has {theirs}-d {what}; task {task!r} has {ours}-d "
                              f"(was it trained on another task or model?)")
    theirs, ours = ext.action_bounds, env.action_bounds
    if theirs is not None and ours is not None and not np.allclose(theirs, ours, rtol=0, atol=1e-6):
        raise ConfigError(f"{ext.kind} policy {ext.path!r} acts in {_span(theirs)}; task {task!r} takes actions in "
                          f"{_span(ours)} (another model of the task? model='gym' is Gymnasium's)")
    for name, arr in (("obs_mean", ext.obs_mean), ("obs_std", ext.obs_std)):
        if arr is not None and arr.shape != (env.obs_size,):
            raise ArchiveError(f"{ext.kind} policy {ext.path!r}: {name} has shape {arr.shape}, expected "
                               f"({env.obs_size},)")


def _span(bounds) -> str:
    low, high = (np.asarray(b, np.float64) for b in bounds)
    if np.ptp(low) == 0 and np.ptp(high) == 0:
        return f"[{low[0]:g}, {high[0]:g}] per dimension"
    return f"[{low.tolist()}, {high.tolist()}]"


def _states(ext: ExternalPolicy, config: Config, trainer):
    """One agent's state: the task's initial state with the loaded networks, filter and fresh optimizers."""
    knobs = config.knobs.as_arrays()
    state = jax.jit(trainer.init)(jax.random.PRNGKey(0), knobs)
    policy, value = (jax.tree.map(jnp.asarray, p) for p in (ext.policy, ext.value))
    for name, ours, theirs in (("policy", state.policy, policy), ("value function", state.value, value)):
        if jax.tree.structure(ours) != jax.tree.structure(theirs) or any(
                a.shape != b.shape for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs))):
            raise ArchiveError(f"{ext.kind} policy {ext.path!r}: its {name}'s layers do not match the "
                               f"{config.static.network!r} network of these sizes")
    filters = state.filters.replace(obs=obs_stat(ext))
    state = state.replace(policy=policy, value=value, filters=filters,
                          policy_opt=stages.policy_init(config.static, policy, knobs),
                          value_opt=adam(knobs["adam_eps"]).init(value))
    return jax.tree.map(lambda x: np.asarray(x)[None], state)


def file_digest(path: str) -> str:
    """The SHA-256 of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as err:
        raise ArchiveError(f"cannot read the policy file {path!r}: {err.strerror or err}") from None
    return h.hexdigest()


def canonical_options(**options) -> dict:
    """The options an import was made with, defaults left out (the default algorithm, each loader option's
    declared default, None)."""
    defaults = {"algorithm": DEFAULT_ALGORITHM, **{k: o.default for k, o in loader_options().items()}}
    return {k: v for k, v in sorted(options.items()) if v is not None and defaults.get(k) != v}


def import_key(path: str, options: dict) -> str:
    """What an import is of: the file's SHA-256 and the options it was read with (side files by their digests)."""
    described = {k: (file_digest(v) if k in ("obs_stats", "vecnormalize") and isinstance(v, str) else v)
                 for k, v in sorted(options.items())}
    return hashlib.sha256(json.dumps([file_digest(path), described], default=str).encode()).hexdigest()


def _provenance(ext: ExternalPolicy, options: dict) -> dict:
    return {"kind": ext.kind, "path": os.path.abspath(ext.path), "sha256": file_digest(ext.path),
            "options": {k: str(v) for k, v in options.items()}, "key": import_key(ext.path, options),
            "network": ext.network,
            "observation_filter": "none" if ext.obs_mean is None else
            f"normalized{'' if ext.obs_clip is None else f', clipped at ±{ext.obs_clip:g}'}",
            "notes": list(ext.notes)}


__all__ = ["canonical_options", "file_digest", "import_key", "import_policy"]
