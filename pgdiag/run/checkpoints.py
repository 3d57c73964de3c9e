"""The run directory's checkpoints: every agent's state after an iteration (orbax), saved, listed, dropped,
and read back as stacked states or one agent's frozen policy.

    RUN_DIR/checkpoints/<k>/     every agent's full state after iteration k
"""

from __future__ import annotations

import contextlib
import errno
import gc
import logging
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np

from pgdiag.config import Config, stack_knobs
from pgdiag.run.store import (CHECKPOINTS, RunDirError, RunResult, _first_line, covered_iterations, load_run,
                              read_metrics, saved_iterations)
from pgdiag.trainer import make_train, seed_key


def checkpoint_dir(path: str, iteration: int) -> str:
    return os.path.abspath(os.path.join(path, CHECKPOINTS, str(int(iteration))))


def save_states(path: str, iteration: int, states, num_agents: int) -> None:
    """Save the stacked agent states (padding agents dropped) after ``iteration``."""
    import orbax.checkpoint as ocp

    if jax.process_count() > 1:  # every process holds every agent's state; orbax writes it once
        from pgdiag.run.shard import gather

        states = gather(states)
    if jax.tree.leaves(states)[0].shape[0] != num_agents:   # on the host: for the disk, without a compile per leaf
        states = jax.tree.map(lambda x: x[:num_agents], jax.device_get(states))
    target = checkpoint_dir(path, iteration)
    # orbax's synchronous checkpointer (the same files as its StandardCheckpointer): when an asynchronous save
    # fails, its commit threads wait on a signal that never comes, and the interpreter never exits
    checkpointer = _checkpointer()
    failed = None
    with _orbax_quiet():
        try:
            checkpointer.save(target, args=ocp.args.StandardSave(_storable(states)), force=True)
        except Exception as err:
            failed = "no space left on the device" if _disk_full(err) else _first_line(err)
        finally:
            checkpointer.close()
        if failed:
            gc.collect()   # its failed writer tasks, reported (quietly) now rather than at exit
    if failed:
        raise RunDirError(f"cannot write the checkpoint {target}: {failed}")


def _disk_full(err: BaseException) -> bool:
    """Whether ``err`` (or what it wraps: orbax re-raises its threads' errors, tensorstore's as text) is a full
    disk."""
    while err is not None:
        if (isinstance(err, OSError) and err.errno == errno.ENOSPC) or "RESOURCE_EXHAUSTED" in str(err) \
                or "No space left" in str(err):
            return True
        err = err.__cause__ or err.__context__
    return False


@contextlib.contextmanager
def _orbax_quiet():
    """Orbax logs each failed write of its threads with a traceback (dozens on a full disk); the save's own
    exception, turned into one line, says it once."""
    loggers = [logging.getLogger(name) for name in ("absl", "asyncio")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _storable(tree):
    """``tree`` with each empty array (an MJX state's unused fields: no actuator activations, no contacts) as a
    scalar zero, which orbax stores (it refuses arrays of size 0); restored as the empty arrays they were."""
    def one(x):
        if x.size:
            return x
        if isinstance(x, jax.ShapeDtypeStruct):
            return jax.ShapeDtypeStruct((), x.dtype, sharding=x.sharding)
        return np.zeros((), x.dtype)
    return jax.tree.map(one, tree)


def _checkpointer():
    import orbax.checkpoint as ocp

    return ocp.Checkpointer(ocp.StandardCheckpointHandler())


def drop_checkpoint(path: str, iteration: int) -> None:
    shutil.rmtree(checkpoint_dir(path, iteration), ignore_errors=True)


def abstract_states(base: Config, num_agents: int):
    """Shapes and dtypes of the stacked states of ``num_agents`` agents of ``base``."""
    trainer = make_train(base.static)
    knobs = stack_knobs([base.knobs] * num_agents)
    keys = jnp.stack([seed_key(0)] * num_agents)
    return jax.eval_shape(jax.vmap(trainer.init), keys, knobs)


def restore_states(path: str, iteration: int, base: Config, num_agents: int):
    import orbax.checkpoint as ocp

    # every process reads the whole state onto its first device, whatever topology saved it (one
    # process or several); callers shard it over the agents themselves
    here = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    abstract = abstract_states(base, num_agents)
    target = _storable(jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=here), abstract))
    where = checkpoint_dir(path, iteration)
    checkpointer = _checkpointer()
    try:
        restored = checkpointer.restore(where, args=ocp.args.StandardRestore(target))
        return jax.tree.map(lambda a, r: jnp.zeros(a.shape, a.dtype) if a.size == 0 else r, abstract, restored)
    except Exception as err:  # orbax/TensorStore raise many kinds; each means this checkpoint is unusable
        others = [i for i in saved_iterations(path) if i != iteration]
        alt = (f"load an earlier one (saved after iterations {others})" if others else "no other checkpoint is saved")
        raise RunDirError(f"the checkpoint {where} cannot be read ({_first_line(err)}): it is damaged; {alt}, or "
                          f"`pgdiag rerun {path} --out NEW` trains the run again to the same numbers") from None
    finally:
        checkpointer.close()


def resume_point(path: str, base: Config, num_agents: int):
    """Where the interrupted run in ``path`` continues: ``(iteration, states, table)`` — the newest checkpoint
    whose iterations its metrics table covers for every agent, restored, and that table (None, None, None
    where there is none: the run starts again from its initial state; the same seeds give the same numbers).

    A run writes a chunk's checkpoint, then its metrics, then its manifest, so a process killed between the
    two leaves a checkpoint ahead of the table: that one is passed over (it is written again when the run
    gets there). A checkpoint that cannot be read is passed over too, saying so; a damaged metrics table is
    an error (it holds the only record of the iterations before the checkpoint)."""
    import sys

    table = read_metrics(path)
    covered = covered_iterations(table, num_agents)
    for iteration in reversed([i for i in saved_iterations(path) if i <= covered]):
        try:
            return iteration, restore_states(path, iteration, base, num_agents), table
        except RunDirError as err:
            sys.stderr.write(f"{err}\n(resuming from an earlier state)\n")
    return None, None, None


def load_checkpoint(run: RunResult | str, iteration: int | None = None):
    """The stacked [`AgentState`][pgdiag.trainer.AgentState] of every agent saved after
    ``iteration`` (default: the last checkpoint of the run).

    Args:
        run: a run directory or a loaded run.
        iteration: a checkpointed iteration; None: the last.

    Returns:
        The agents' states, stacked along a leading agent axis.
    """
    run = load_run(os.fspath(run)) if isinstance(run, (str, os.PathLike)) else run
    if run.path is None:
        raise ValueError("this run has no directory")
    saved = saved_iterations(run.path)
    if not saved:
        raise FileNotFoundError(f"no checkpoint in {run.path!r}: run with checkpoint_at/checkpoint_every or "
                                f"--checkpoint (an interrupted run keeps its latest state)")
    if iteration is None:
        iteration = saved[-1]
    if iteration not in saved:
        raise ValueError(f"no checkpoint after iteration {iteration!r} in {run.path!r}; saved iterations: {saved}")
    return restore_states(run.path, iteration, Config.from_dict(run.manifest["base_config"]), run.num_agents)


def load_policy(run: RunResult | str, iteration: int | str | None = None, agent: int = 0, **read_options):
    """Agent ``agent``'s policy after ``iteration`` as a [`FrozenPolicy`][pgdiag.policy.FrozenPolicy]:
    its parameters with its observation normalizer frozen, ready to evaluate or sample. Also a policy another
    framework saved: ``load_policy("sb3", "model.zip", vecnormalize="vec_normalize.pkl")``, ``("cleanrl",
    PATH, obs_stats=(mean, var))``, ``("brax", PATH)`` or a kind of one's own
    ([`register_loader`][pgdiag.adapters.policy_loaders.register_loader];
    [`read_policy`][pgdiag.adapters.policies.read_policy]), with its value function beside it.

    Args:
        run: a run directory or a loaded run; or a registered policy kind
            ([`loaders`][pgdiag.adapters.policy_loaders.loaders]: "brax", "cleanrl", "sb3", or one's own).
        iteration: a checkpointed iteration; None: the last. With a policy kind: the file.
        agent: the agent's index in the run.
        read_options: with a policy kind, the options its loader declares (``obs_stats``, ``vecnormalize``,
            ``activation`` for pgdiag's own).

    Returns:
        The agent's frozen policy.
    """
    from pgdiag.adapters import policies, policy_loaders
    from pgdiag.policy import FrozenPolicy

    if isinstance(run, str) and run in policy_loaders.loaders() and not os.path.isdir(run):
        if not isinstance(iteration, (str, os.PathLike)):
            raise ValueError(f"load_policy({run!r}, PATH): give the file the {run} policy was saved to")
        return policies.frozen(policies.read_policy(run, iteration, **read_options))
    if read_options:
        raise ValueError(f"{sorted(read_options)} apply to policies of other frameworks, not to a run directory")

    run = load_run(os.fspath(run)) if isinstance(run, (str, os.PathLike)) else run
    if isinstance(agent, bool) or not isinstance(agent, (int, np.integer)) or not 0 <= agent < run.num_agents:
        raise ValueError(f"agent must be an index in 0 … {run.num_agents - 1}, got {agent!r}")
    states = load_checkpoint(run, iteration)
    state = jax.tree.map(lambda x: jax.device_put(np.asarray(x)[int(agent)]), states)  # no program per leaf
    cfg = run.config(int(agent))
    return FrozenPolicy(params=state.policy, obs_stat=state.filters.obs, knobs=cfg.knobs.as_arrays(),
                        iteration=state.iteration)
