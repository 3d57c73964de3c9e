"""The network protocol: what a policy and value network provide, and the registry that holds them.

A [`Network`][pgdiag.networks.protocol.Network] is a record of pure functions. Its parameters are a dict that
holds the network's own ``key`` at its top: that is how every stage, saved checkpoint and diagnostic tells which
network to apply (a structure fixed at trace time, so no name travels beside the parameters).
[`register_network`][pgdiag.networks.protocol.register_network] checks a network on small shapes (one trace, no
compile) before adding it, so a mistake is named when it is registered rather than deep inside a training
program.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Protocol

import jax
import jax.numpy as jnp

from pgdiag.config import Knobs


class NetworkError(ValueError):
    """A network is unknown, registered twice, or does not keep the protocol."""


class InitPolicy(Protocol):
    def __call__(self, key: jax.Array, obs_size: int, action_size: int, hidden: tuple, knobs: Mapping) -> dict:
        """Fresh policy parameters: a dict holding the network's ``key`` at its top."""


class InitValue(Protocol):
    def __call__(self, key: jax.Array, obs_size: int, hidden: tuple, knobs: Mapping) -> dict:
        """Fresh value-function parameters: a dict holding the network's ``key`` at its top."""


class PolicyApply(Protocol):
    def __call__(self, params: dict, obs: jax.Array, knobs: Mapping) -> tuple:
        """Mean and log σ of the Gaussian over the policy's draw u at observations ``[..., obs]``: two arrays
        ``[..., action]``."""


class ValueApply(Protocol):
    def __call__(self, params: dict, obs: jax.Array, knobs: Mapping) -> jax.Array:
        """V(s) at observations ``[..., obs]``: an array ``[...]``."""


class Tie(Protocol):
    def __call__(self, policy: dict, value: dict) -> dict:
        """The value function's parameters with its copy of the policy's own (a shared trunk) brought up to
        date."""


@dataclasses.dataclass(frozen=True)
class Network:
    """A policy network and a value network, added to the registry by
    [`register_network`][pgdiag.networks.protocol.register_network] and chosen by the static setting
    ``network``.

    Attributes:
        name: what a configuration calls it (``network="..."``).
        key: the top-level key of its parameters (policy's and value's), unique among registered networks.
        init_policy: ``(key, obs_size, action_size, hidden, knobs) -> params``; ``hidden`` is ``policy_hidden``.
        init_value: ``(key, obs_size, hidden, knobs) -> params``; ``hidden`` is ``value_hidden``.
        policy: ``(params, obs, knobs) -> (mean, log_std)``, a diagonal Gaussian over the draw u. A policy
            whose σ does not depend on the state keeps it as a top-level ``"log_std"`` array ``[action]``:
            training then reports σ's statistics each iteration and flags a non-finite σ.
        value: ``(params, obs, knobs) -> V``.
        squashes: the task receives ``tanh(u)`` rather than u (Brax's ``NormalTanhDistribution``).
        tie: for a value function that reads parameters the policy trains (a shared trunk):
            ``(policy, value) -> value`` with the value's copy of them replaced by the policy's. Training calls
            it at initialization and after every update; the value's loss should not move that copy
            (``jax.lax.stop_gradient`` in ``value``), so the shared part is trained by the policy's objective.
        summary: one line for listings.
    """

    name: str
    key: str
    init_policy: InitPolicy
    init_value: InitValue
    policy: PolicyApply
    value: ValueApply
    squashes: bool = False
    tie: Optional[Tie] = None
    summary: str = ""


_REGISTRY: dict = {}


def names() -> tuple:
    """The registered networks' names, in registration order."""
    return tuple(_REGISTRY)


def get(name: str) -> Network:
    """The registered network ``name``; one line naming the registered ones otherwise."""
    if name not in _REGISTRY:
        raise NetworkError(f"unknown network {name!r}; networks are {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def network_of(params) -> Network:
    """The registered network whose parameters ``params`` are (read from their top-level keys)."""
    found = [n for n in _REGISTRY.values() if n.key in params] if isinstance(params, Mapping) else []
    if len(found) == 1:
        return found[0]
    keys = sorted(params) if isinstance(params, Mapping) else type(params).__name__
    raise NetworkError(f"parameters with keys {keys} are not one registered network's; networks and their keys: "
                       + ", ".join(f"{n.name} ({n.key!r})" for n in _REGISTRY.values()))


def register_network(network: Network, *, trace: bool = True) -> Network:
    """Add ``network`` to the registry under its name, after checking it on small shapes; returns it. ``trace=False``
    skips the traced shape check (pgdiag's own networks, whose tests run it: it costs a tenth of a second each
    at every import)."""
    if not isinstance(network, Network):
        raise NetworkError(f"register_network takes a Network, got {type(network).__name__}")
    name, key = network.name, network.key
    if not isinstance(name, str) or not name or not name.replace("-", "").replace("_", "").isalnum():
        raise NetworkError(f"a network's name must be letters, digits, '-' or '_', got {name!r}")
    if name in _REGISTRY:
        raise NetworkError(f"network {name!r} is already registered; networks are {', '.join(_REGISTRY)}")
    if not isinstance(key, str) or not key or key == "log_std":
        raise NetworkError(f"network {name!r}: its key must name the top-level entry of its parameters (not "
                           f"'log_std', which every network may hold), got {key!r}")
    clash = [n.name for n in _REGISTRY.values() if n.key == key]
    if clash:
        raise NetworkError(f"network {name!r}: key {key!r} is already network {clash[0]!r}'s; a key tells the "
                           f"networks' parameters apart, so it must be its own")
    for field in ("init_policy", "init_value", "policy", "value") + (("tie",) if network.tie else ()):
        if not callable(getattr(network, field)):
            raise NetworkError(f"network {name!r}: {field} must be a function, got "
                               f"{type(getattr(network, field)).__name__}")
    if trace:
        _check_shapes(network)
    _REGISTRY[name] = network
    return network


def unregister_network(name: str) -> None:
    """Remove a registered network (a user's, e.g. between tests)."""
    get(name)
    del _REGISTRY[name]


def abstract_knobs() -> dict:
    """The default knobs as shapes and dtypes: what a check traces with, so that it runs (and compiles) nothing."""
    return {k: jax.ShapeDtypeStruct((), jnp.bool_ if isinstance(v, bool) else jnp.float32)
            for k, v in Knobs().values().items()}


def _check_shapes(network: Network, obs: int = 3, act: int = 2, hidden: tuple = (4,)) -> None:
    """Trace the network's functions once on small shapes (nothing runs) and name what breaks the protocol."""
    knobs, key, name = abstract_knobs(), jax.ShapeDtypeStruct((2,), jnp.uint32), network.name
    try:
        pi = jax.eval_shape(lambda k, kn: network.init_policy(k, obs, act, hidden, kn), key, knobs)
        v = jax.eval_shape(lambda k, kn: network.init_value(k, obs, hidden, kn), key, knobs)
        for what, params in (("init_policy", pi), ("init_value", v)):
            if not isinstance(params, Mapping) or network.key not in params:
                raise NetworkError(f"network {name!r}: {what} must return a dict holding its key "
                                   f"{network.key!r} at the top")
        x = jax.ShapeDtypeStruct((5, obs), jnp.float32)
        out = jax.eval_shape(network.policy, pi, x, knobs)
        if not (isinstance(out, tuple) and len(out) == 2 and all(a.shape == (5, act) for a in out)):
            raise NetworkError(f"network {name!r}: policy must return (mean, log_std), each [..., action]; for "
                               f"observations [5, {obs}] and {act} actions it returned {out}")
        values = jax.eval_shape(network.value, v, x, knobs)
        if getattr(values, "shape", None) != (5,):
            raise NetworkError(f"network {name!r}: value must return V [...] for observations [..., obs]; for "
                               f"[5, {obs}] it returned {values}")
        if network.tie is not None:
            tied = jax.eval_shape(network.tie, pi, v)
            if jax.tree.structure(tied) != jax.tree.structure(v):
                raise NetworkError(f"network {name!r}: tie must return value parameters of the same structure")
    except NetworkError:
        raise
    except Exception as e:  # a user's function failing on the protocol's arguments: say which network
        raise NetworkError(f"network {name!r} fails the protocol on observations of size {obs}, {act} actions, "
                           f"hidden {hidden}: {type(e).__name__}: {e}") from e


__all__ = ["InitPolicy", "InitValue", "Network", "NetworkError", "PolicyApply", "Tie", "ValueApply", "get",
           "names", "network_of", "register_network", "unregister_network"]
