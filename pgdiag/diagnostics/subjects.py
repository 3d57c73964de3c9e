"""The subjects of a diagnostic: agents of one or more run directories at checkpointed iterations.

``load_subjects(runs, iterations, agents)`` validates the request against
what the run directories hold (before anything is compiled) and stacks the
checkpointed [`AgentState`][pgdiag.trainer.AgentState] of every (run, agent,
iteration) along one leading axis, with their knobs and a table row each.
Runs can be measured together when their sampling programs agree: same task,
physics, solver setting and network shapes (PPO and TRPO runs of one task do).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from pgdiag import networks
from pgdiag.config import ConfigError, Range, Static, stack_knobs
from pgdiag.run import checkpoints, store
from pgdiag.run.shard import AXIS, gather, over_devices, pad_and_shard

#: Static settings that must agree for runs to share one sampling program.
SHARED_STATIC = ("task", "physics", "physics_threads", "solver", "network", "policy_hidden", "value_hidden")


#: What the studies' settings allow of the fields they share: subjects' batching, a seed (32 bits), and the
#: bootstrap resamples of the landscape's sign-agreement intervals.
BATCHING = ("vmap", "map")
SEED_RANGE = Range(0, 2 ** 32 - 1)
RESAMPLES = Range(10)


class DiagnosticError(ConfigError):
    """A diagnostic was asked for something the runs or the settings do not allow."""


def require(ok: bool, message: str) -> None:
    """A settings check: raise [`DiagnosticError`][pgdiag.diagnostics.subjects.DiagnosticError] with ``message``
    (naming the value and what is allowed) unless ``ok``."""
    if not ok:
        raise DiagnosticError(message)


def over_subjects(subject, batching: str = "vmap"):
    """A study's jitted program over stacked subjects, ``(states, knobs, keys) -> outputs [S, ...]``: ``subject``
    vmapped over them (or, with "map", run in turn), on each device's block of subjects
    ([`pgdiag.run.shard`][pgdiag.run.shard]: on several devices or processes, each steps its own subjects'
    physics)."""
    if batching == "vmap":
        fn = jax.vmap(subject)
    else:
        def fn(states, knobs, keys):
            return jax.lax.map(lambda a: subject(*a), (states, knobs, keys))
    return jax.jit(over_devices(fn, jax.sharding.PartitionSpec(AXIS)))


def compile_and_run(prog, subjects: "Subjects", keys, pairs: int, phase=lambda name: None) -> tuple:
    """Compile ``prog`` ([`over_subjects`][pgdiag.diagnostics.subjects.over_subjects]) for the stacked subjects,
    run it and fetch its outputs (every subject's, on every process). Returns the outputs and the timing record a
    study's manifest keeps (compile and run seconds, pairs sampled per second). ``phase`` is told "compiling" and
    then "running" (a progress bar's)."""
    import time

    n = len(subjects)
    args, padded = pad_and_shard((subjects.states, subjects.knobs, keys), n)
    t0 = time.perf_counter()
    phase("compiling")
    compiled = prog.lower(*args).compile()
    t1 = time.perf_counter()
    phase("running")
    out = gather(compiled(*args))
    if padded != n:
        out = jax.tree.map(lambda x: x[:n], out)
    t2 = time.perf_counter()
    algorithms = "+".join(dict.fromkeys(row["algorithm"] for row in subjects.rows))  # one program may hold both
    return out, {"algorithm": algorithms, "compile_s": t1 - t0, "run_s": t2 - t1, "pairs": pairs,
                 "pairs_per_s": pairs / max(t2 - t1, 1e-9)}


def subject_keys(seed: int, rows: list) -> jax.Array:
    """A subject's key depends on the study seed, the agent's seed and the iteration only: a subject measured alone
    or beside others gets the same estimates, wherever its streams' width is its own (native physics, the pure-JAX
    tasks, or ``envs`` set; on MJX or Warp with ``envs=0`` the width follows the number of subjects measured together:
    [`pgdiag.studies.gradients.widening.widen`][pgdiag.studies.gradients.widening.widen])."""
    base = jax.random.PRNGKey(seed)
    return jnp.stack([jax.random.fold_in(jax.random.fold_in(base, row["seed"]), row["iteration"]) for row in rows])


@dataclasses.dataclass
class Subjects:
    states: Any             # stacked AgentState [S]
    knobs: dict             # stacked knobs [S]
    rows: list              # per subject: run, label, agent, seed, iteration
    statics: list           # per subject: the run's Static
    runs: list              # the RunResults, in order

    @property
    def static(self) -> Static:
        return self.statics[0]

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def shapes(self) -> tuple:
        """(observation size, action size, policy parameter count), read from array shapes (no compile)."""
        params = sum(int(np.prod(x.shape[1:])) for x in jax.tree.leaves(self.states.policy))
        obs = self.states.envs.obs.shape[-1]
        return obs, networks.action_size(jax.tree.map(lambda x: x[0], self.states.policy), obs), params


def label_of(run: store.RunResult, agent: int) -> str:
    """An agent's label: its sweep's grid-point label (a study's 'ppo-m'), else the algorithm it ran — the name
    it was registered under, not the preset's name the configuration started from — with its grid point's
    values where the sweep swept any ("ppo value_clipping=True lr_policy=0.0003"), so that a study's tables
    keep the swept settings apart."""
    row = run.manifest["agents"][agent]
    if row.get("label"):
        return str(row["label"])
    point = row.get("knobs") or {}
    return " ".join([str(run.config(agent).algorithm)] + [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                                         for k, v in point.items()])


def grid_point(run: store.RunResult, agent: int) -> dict:
    """The agent's grid point (swept setting -> value), as columns of a study's tables."""
    return dict(run.manifest["agents"][agent].get("knobs") or {})


def resolve_runs(runs) -> list:
    """Run directories or [`RunResult`][pgdiag.run.store.RunResult] objects -> loaded runs with directories."""
    if isinstance(runs, (str, os.PathLike, store.RunResult)) or not isinstance(runs, Sequence):
        runs = [runs]
    if not runs:
        raise DiagnosticError("no run given: pass one or more run directories with checkpoints")
    out, seen = [], {}
    for r in runs:
        if not isinstance(r, (str, os.PathLike, store.RunResult)):
            raise DiagnosticError(f"a run is a run directory (a path) or a RunResult, got {r!r}")
        try:
            run = store.load_run(os.fspath(r)) if isinstance(r, (str, os.PathLike)) else r
        except FileNotFoundError as e:
            raise DiagnosticError(f"{r!r} is not a run directory (no manifest.json): {e}") from None
        if run.path is None:
            raise DiagnosticError("a run without a directory has no checkpoints; run it with out=DIR")
        where = os.path.realpath(run.path)
        if where in seen:   # its subjects would be measured, and saved, twice
            raise DiagnosticError(f"the run {run.path!r} is given twice (as {seen[where]!r} too); give each run once")
        seen[where] = run.path
        out.append(run)
    return out


def _indices(what: str, values, run_path: str) -> list | None:
    """``values`` (None, an int or a list of ints) as a list, each once; a clear error otherwise."""
    if values is None:
        return None
    items = [values] if isinstance(values, (int, np.integer)) and not isinstance(values, bool) else values
    if not isinstance(items, (list, tuple, range, np.ndarray)) or not len(items) or any(
            isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in items):
        raise DiagnosticError(f"{what} must be an int or a non-empty list of ints (of run {run_path!r}), got "
                              f"{values!r}")
    if len(set(int(v) for v in items)) != len(items):
        raise DiagnosticError(f"{what} {list(items)!r} repeat a value; give each once")
    return [int(v) for v in items]


def check_iterations(run: store.RunResult, iterations) -> list:
    saved = run.checkpoints
    if not saved:
        raise DiagnosticError(f"run {run.path!r} has no checkpoints; train with checkpoint_at=(…) or "
                              f"checkpoint_every=K (CLI: --set checkpoint_every=K) to save the policies to measure")
    its = _indices("iterations", iterations, run.path)
    if its is None:
        return saved
    missing = [i for i in its if i not in saved]
    if missing:
        raise DiagnosticError(f"no checkpoint after iteration(s) {missing} in {run.path!r}; saved iterations: {saved}")
    return sorted(int(i) for i in its)


def check_agents(run: store.RunResult, agents) -> list:
    n = run.num_agents
    agents = _indices("agents", agents, run.path)
    if agents is None:
        return list(range(n))
    bad = [a for a in agents if not 0 <= a < n]
    if bad:
        raise DiagnosticError(f"agents must be indices in 0 … {n - 1} of run {run.path!r}, got {agents!r}")
    return [int(a) for a in agents]


def check_compatible(runs: list) -> None:
    first = runs[0].config(0).static
    for run in runs[1:]:
        s = run.config(0).static
        for name in SHARED_STATIC:
            if getattr(s, name) != getattr(first, name):
                raise DiagnosticError(
                    f"runs {runs[0].path!r} and {run.path!r} differ in {name} ({getattr(first, name)!r} vs "
                    f"{getattr(s, name)!r}); runs measured together must share {', '.join(SHARED_STATIC)}")


def plan_subjects(runs, iterations=None, agents=None, labels=None) -> list:
    """(run, agent, iteration) of every subject, validated; nothing loaded yet. ``labels`` keeps only the
    agents with those labels (a sweep's grid-point labels, e.g. 'ppo' and 'trpo' of a study's runs)."""
    runs = resolve_runs(runs)
    check_compatible(runs)
    out = []
    for run in runs:
        its = check_iterations(run, iterations)
        for agent in check_agents(run, agents):
            if labels is None or label_of(run, agent) in labels:
                out.extend((run, agent, it) for it in its)
    if not out:
        have = sorted({label_of(run, a) for run in runs for a in range(run.num_agents)})
        raise DiagnosticError(f"no agent with label in {list(labels)!r}; the runs' labels: {have}")
    return out


def load_subjects(planned: list, optimizer: bool = True) -> Subjects:
    """Load the checkpointed states of the planned subjects and stack them. Without ``optimizer``
    the policy's optimizer state is dropped (PPO's Adam and TRPO's none then stack together)."""
    states, knobs, rows, statics, runs, cache = [], [], [], [], [], {}
    for run, agent, it in planned:
        if (run.path, it) not in cache:
            cache[(run.path, it)] = checkpoints.load_checkpoint(run, it)
        if not any(r is run for r in runs):   # (identity: a RunResult holds DataFrames, which == cannot compare)
            runs.append(run)
        state = jax.tree.map(lambda x: np.asarray(x)[agent], cache[(run.path, it)])
        if not optimizer:
            state = state.replace(policy_opt=None)
        cfg = run.config(agent)
        states.append(state)
        knobs.append(cfg.knobs)
        statics.append(cfg.static)
        rows.append(dict(run=run.path, label=label_of(run, agent), algorithm=cfg.algorithm, agent=agent,
                         seed=int(run.manifest["agents"][agent]["seed"]), iteration=it, **grid_point(run, agent)))
    # sliced and stacked in numpy, then transferred: indexing and stacking device arrays would compile a small
    # program for every leaf's shape, seconds of a study's start
    stacked = jax.tree.map(lambda *x: jax.device_put(np.stack(x)), *states)
    return Subjects(states=stacked, knobs=stack_knobs(knobs), rows=rows, statics=statics, runs=runs)


def parse_settings(settings_cls, items) -> dict:
    """``["name=value", …]`` (the CLI's ``--diag``) -> {name: value}, each parsed by the type of the
    field's default in ``settings_cls``: integers accept 1e6, lists are comma-separated."""
    fields = {f.name: f.default for f in dataclasses.fields(settings_cls)}
    out = {}
    for item in items or []:
        name, eq, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not eq or name not in fields:
            raise DiagnosticError(f"--diag expects name=value with name one of {', '.join(fields)}; got {item!r}")
        default = fields[name]
        try:
            if isinstance(default, bool):
                if text.lower() not in ("1", "0", "true", "false", "on", "off", "yes", "no"):
                    raise ValueError
                out[name] = text.lower() in ("1", "true", "on", "yes")
            elif isinstance(default, tuple) and default and isinstance(default[0], str):
                out[name] = tuple(x.strip() for x in text.split(",") if x.strip())
            elif isinstance(default, tuple):
                out[name] = tuple(_integer(x) for x in text.split(",") if x.strip())
            elif isinstance(default, int):
                out[name] = _integer(text)
            elif isinstance(default, float):
                out[name] = float(text)
            else:
                out[name] = text
        except ValueError:
            kind = ("true/false" if isinstance(default, bool) else "integers like 100,1000,1e4"
                    if isinstance(default, tuple) else "an integer" if isinstance(default, int) else "a number"
                    if isinstance(default, float) else "a string")
            raise DiagnosticError(f"--diag {name} takes {kind}, got {text!r}") from None
    return out


def _integer(text: str) -> int:
    value = float(text)
    if not value.is_integer():
        raise ValueError(text)
    return int(value)
