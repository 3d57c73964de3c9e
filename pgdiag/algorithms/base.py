"""The algorithm protocol and its registry.

An algorithm is one record ([`Algorithm`][pgdiag.algorithms.base.Algorithm]) of pure functions, registered
under its name. Training, the step study, the trust-region metrics and the surrogate landscape call the registry;
no code outside an algorithm's module compares algorithm names. Each function's signature is a typed protocol
here ([`Step`][pgdiag.algorithms.base.Step], [`Objective`][pgdiag.algorithms.base.Objective], ...), and its own
knobs and static settings are declared as [`pgdiag.config.Option`][pgdiag.config.knobs.Option] records (default,
doc, allowed values) kept in a configuration under its name; the shared ones (learning rates, γ, λ, the
code-level optimizations, batch shape, ...) are every algorithm's, and another algorithm's settings are refused
for it unless left at their defaults.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Protocol

import jax
from flax import struct

from pgdiag.config import registry
from pgdiag.config.knobs import KNOB_FIELDS, Option
from pgdiag.config.registry import AlgorithmError, declared_static, get, names, owners
from pgdiag.config.static import STATIC_FIELDS


@struct.dataclass
class StepInfo:
    """What every step reports (a training metric each); NaN where it has no meaning for the algorithm."""

    policy_loss: jax.Array    # minus the objective the step optimized (PPO: mean over its last epoch)
    clip_fraction: jax.Array  # fraction of samples with |r − 1| > ε (ratio-clipping algorithms)
    grad_norm: jax.Array      # the policy gradient's norm (before any clipping)
    step_scale: jax.Array     # a line search's accepted scale 2^-i, 0 if none
    penalty: jax.Array = float("nan")  # the penalty coefficient the step optimized with (PPO-KL's β)
    #: the algorithm's own statistics (name -> scalar), the ones it declares in `Algorithm.metrics`
    extra: dict = struct.field(default_factory=dict)


@struct.dataclass
class ValueStep:
    params: dict
    opt_state: object
    losses: jax.Array  # [epochs, minibatches]


@struct.dataclass
class PolicyStep:
    params: dict        # the policy after the step
    opt_state: object   # the algorithm's state after it (Adam's moments, a penalty coefficient, ...)
    info: StepInfo


@struct.dataclass
class Terms:
    """The per-sample quantities every objective is written in, at parameters θ on a batch from θ_old."""

    ratio: jax.Array    # [B] π_θ(a|s) / π_old(a|s)
    adv: jax.Array      # [B] advantages, normalized over the batch
    log_std: jax.Array  # the policy's log standard deviation at θ
    kl: jax.Array       # [B] KL(π_old ‖ π_θ) per state


@dataclasses.dataclass(frozen=True)
class Constraint:
    """What a figure draws as the algorithm's trust region."""

    kind: str   # "ratio": the band 1 ± knob around the probability ratio; "kl": a bound knob on the mean KL
    knob: str   # the knob that sets it
    label: str  # how a figure names it

    def __post_init__(self):
        if self.kind not in ("ratio", "kl"):
            raise AlgorithmError(f"constraint kind must be 'ratio' or 'kl', got {self.kind!r}")


@dataclasses.dataclass(frozen=True)
class WorkingSet:
    """What an algorithm's step holds at once over its batch, for the memory model (diagnostics/memory.py):
    a backward pass keeps every hidden activation of the pairs it differentiates, a forward pass two layers'
    (a layer's input and output) of the pairs it evaluates."""

    differentiated: float = 1.0   # the batch's share one backward pass differentiates (PPO: one minibatch)
    forward_passes: int = 1       # policy forward passes over the whole batch live at once (TRPO: its
    #                               line search's scales, tried together)

    def __post_init__(self):
        if not 0 < self.differentiated <= 1 or self.forward_passes < 1:
            raise AlgorithmError(f"a working set differentiates a share in (0, 1] of the batch and holds ≥ 1 "
                                 f"forward pass, got {self.differentiated!r}, {self.forward_passes!r}")


class InitState(Protocol):
    def __call__(self, policy: dict, knobs: Mapping) -> Any:
        """The algorithm's optimizer state for fresh policy parameters (any pytree; ``None`` for none), carried by
        the agent from iteration to iteration."""


class Step(Protocol):
    def __call__(self, static, params: dict, state: Any, batch, lr: jax.Array, knobs: Mapping,
                 key: jax.Array) -> PolicyStep:
        """The policy step on one [`UpdateBatch`][pgdiag.rollout.UpdateBatch] from ``params`` (θ_old): the new
        parameters, state and [`StepInfo`][pgdiag.algorithms.base.StepInfo], returned and never applied."""


class Objective(Protocol):
    def __call__(self, terms: Terms, knobs: Mapping, state: Any) -> jax.Array:
        """The scalar the step maximizes, written on [`Terms`][pgdiag.algorithms.base.Terms] at the batch's
        θ_old (advantages normalized over the batch): the landscape draws it, the gradient study can
        differentiate it."""


class FusedUpdate(Protocol):
    def __call__(self, static, policy: dict, policy_state: Any, value: dict, value_opt: Any, batch,
                 lr_policy: jax.Array, lr_value: jax.Array, knobs: Mapping, key_value: jax.Array,
                 key_policy: jax.Array) -> Optional[tuple]:
        """``(ValueStep, PolicyStep)``, the same numbers as [`pgdiag.stages.value_step`][pgdiag.stages.value_step]
        followed by the step, in one program; ``None`` to decline for these settings."""


class WorkingSetOf(Protocol):
    def __call__(self, static) -> WorkingSet:
        """What the step holds at once over a batch of ``static``'s shape (the memory model's input)."""


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """A policy-gradient algorithm: its policy step, objective, optional trust-region constraint and its own
    knobs and static settings; added to the registry by
    [`register_algorithm`][pgdiag.algorithms.base.register_algorithm].

    Attributes:
        name: what a configuration calls it (``algorithm="..."``): letters, digits, '-' or '_'.
        summary: one line for `pgdiag algorithms`.
        init_state: its optimizer state for a fresh policy ([`InitState`][pgdiag.algorithms.base.InitState]).
        step: the policy step on one batch ([`Step`][pgdiag.algorithms.base.Step]).
        objective: what the step maximizes ([`Objective`][pgdiag.algorithms.base.Objective]).
        constraint: what the figures draw as its trust region (``1 ± ε`` for a ratio clip, ``δ`` for a KL bound);
            ``None`` for none.
        knobs: its own traced settings, name → `Option`.
        static: its own static settings (part of the compile key), name → `Option`.
        update: the value and policy updates fused into one program
            ([`FusedUpdate`][pgdiag.algorithms.base.FusedUpdate]); ``None``: the two run one after the other.
        working_set: what its step holds at once ([`WorkingSetOf`][pgdiag.algorithms.base.WorkingSetOf]);
            ``None``: the whole batch, once.
        metrics: its own training metrics (name → what it means), each a scalar of its step's ``info.extra``:
            they join the run's metrics table, the loggers and `pgdiag plot`.
    """

    name: str
    summary: str
    init_state: InitState
    step: Step
    objective: Objective
    constraint: Optional[Constraint] = None
    knobs: Mapping = dataclasses.field(default_factory=dict)
    static: Mapping = dataclasses.field(default_factory=dict)
    update: Optional[FusedUpdate] = None
    working_set: Optional[WorkingSetOf] = None
    metrics: Mapping = dataclasses.field(default_factory=dict)

    def working_set_of(self, static) -> WorkingSet:
        """What its step holds at once over a batch of ``static``'s shape."""
        return WorkingSet() if self.working_set is None else self.working_set(static)


    def setting(self, name: str):
        """The declaration (an Option) of its own knob or static setting ``name``; None if it has none."""
        return self.knobs.get(name, self.static.get(name))


def register_algorithm(algorithm: Algorithm) -> Algorithm:
    """Add ``algorithm`` to the registry under its name; returns it. Its own knobs and static settings are declared
    as [`pgdiag.config.Option`][pgdiag.config.knobs.Option] records; their names must not be shared settings, and
    a name that several algorithms declare must be of the same kind (knob or static) and type in each."""
    if not isinstance(algorithm, Algorithm):
        raise AlgorithmError(f"register_algorithm takes an Algorithm, got {type(algorithm).__name__}")
    name = algorithm.name
    if not isinstance(name, str) or not name or not name.replace("-", "").replace("_", "").isalnum():
        raise AlgorithmError(f"an algorithm's name must be letters, digits, '-' or '_', got {name!r}")
    if name in names():
        raise AlgorithmError(f"algorithm {name!r} is already registered; registered algorithms: "
                             f"{', '.join(names())}")
    for field in ("init_state", "step", "objective", "update", "working_set"):
        fn = getattr(algorithm, field)
        if not callable(fn) and (fn is not None or field in ("init_state", "step", "objective")):
            raise AlgorithmError(f"algorithm {name!r}: {field} must be a function, got {type(fn).__name__}")
    for field, kind in (("knobs", "knob"), ("static", "static setting")):
        declared = getattr(algorithm, field)
        if not isinstance(declared, Mapping):
            raise AlgorithmError(f"algorithm {name!r}: {field} must map each of its own {kind}s' names to an "
                                 f"Option (default, doc), got {type(declared).__name__}")
        for key, option in declared.items():
            if not isinstance(option, Option):
                raise AlgorithmError(f"algorithm {name!r}: its {kind} {key!r} must be declared as an Option, got "
                                     f"{type(option).__name__}")
            if key in KNOB_FIELDS or key in STATIC_FIELDS or key in ("name", "own", "algorithm"):
                raise AlgorithmError(f"algorithm {name!r} declares {key!r}, a setting every algorithm shares; "
                                     f"its own settings need names of their own")
            if field == "knobs" and isinstance(option.default, str):
                raise AlgorithmError(f"algorithm {name!r}: knob {key!r} is traced, so it must be a bool or a "
                                     f"number, got the default {option.default!r}")
            option.normalize(key, option.default, kind)  # the default satisfies its own declaration
            for other in registry.registered():
                theirs = other.setting(key)
                if theirs is not None and ((key in other.knobs) != (field == "knobs")
                                           or type(theirs.default) is not type(option.default)):
                    raise AlgorithmError(f"algorithm {name!r} declares {key!r} as a {type(option.default).__name__} "
                                         f"{kind}; {other.name!r} declares it otherwise: a setting's name has one "
                                         f"kind and type")
    if set(algorithm.knobs) & set(algorithm.static):
        raise AlgorithmError(f"algorithm {name!r} declares {sorted(set(algorithm.knobs) & set(algorithm.static))} "
                             f"as both knobs and static settings")
    for key, doc in dict(algorithm.metrics).items():
        if not (isinstance(key, str) and key.isidentifier() and isinstance(doc, str) and doc):
            raise AlgorithmError(f"algorithm {name!r}: metrics must map names (identifiers) to what they mean, got "
                                 f"{key!r}: {doc!r}")
    if algorithm.constraint is not None and algorithm.constraint.knob not in algorithm.knobs:
        raise AlgorithmError(f"algorithm {name!r}: its constraint's knob {algorithm.constraint.knob!r} must be "
                             f"among its knobs {list(algorithm.knobs)}")
    registry.add(algorithm)
    return algorithm


def unregister_algorithm(name: str) -> None:
    """Remove a registered algorithm (a user's, e.g. between tests)."""
    registry.remove(name)


__all__ = ["Algorithm", "AlgorithmError", "Constraint", "FusedUpdate", "InitState", "Objective", "PolicyStep", "Step",
           "StepInfo", "Terms", "ValueStep", "WorkingSet", "WorkingSetOf", "declared_static", "get", "names", "owners",
           "register_algorithm", "unregister_algorithm"]
