"""The formats of policies trained elsewhere — Brax PPO's parameters, CleanRL's state dict, a Stable-Baselines3
zip with its VecNormalize file — each read into an [`ExternalPolicy`][pgdiag.adapters.policies.ExternalPolicy]
in pgdiag's networks ([`read_policy`][pgdiag.adapters.policies.read_policy] chooses the reader; what each kind
holds is said there). Nothing is imported from the framework that wrote the file and no code in it runs."""

from __future__ import annotations

import dataclasses
import os
import re
import warnings

import numpy as np

from pgdiag.adapters.archives import ArchiveError, Fields, load_pickle
from pgdiag.adapters.files import load_json, load_npz, open_zip, read_bytes, read_member
from pgdiag.adapters.pickles import CAPS
from pgdiag.adapters.torch_zip import load_torch
from pgdiag.errors import Notice
from pgdiag.normalize import NORM_EPS

_INT32_MAX = 2 ** 31 - 1


@dataclasses.dataclass(frozen=True)
class ExternalPolicy:
    """A policy read from another framework's file, in pgdiag's terms."""

    kind: str
    path: str
    network: str            # "mlp" or "brax" (pgdiag.networks.NETWORKS)
    policy: dict            # parameters of the network's policy
    value: dict | None      # parameters of its value function (every supported file holds one)
    obs_mean: np.ndarray | None   # the observation filter (None: raw observations)
    obs_std: np.ndarray | None    # σ such that (x − mean)/(σ + 1e-8) is what the agent saw
    obs_count: int
    obs_clip: float | None  # clip bound after normalizing (None: unclipped)
    knobs: dict             # knob values the file states (activation, γ, λ, …)
    notes: tuple = ()       # what was assumed, said plainly
    action_bounds: tuple | None = None   # (low, high) of the actions it was trained to emit, where the file says

    @property
    def obs_size(self) -> int:
        return int(_layers(self.policy)[0]["w"].shape[0])

    @property
    def action_size(self) -> int:
        out = int(_layers(self.policy)[-1]["b"].shape[-1])
        return out // 2 if self.network == "brax" else out

    @property
    def policy_hidden(self) -> tuple:
        return tuple(int(layer["b"].shape[-1]) for layer in _layers(self.policy)[:-1])

    @property
    def value_hidden(self) -> tuple:
        return tuple(int(layer["b"].shape[-1]) for layer in _layers(self.value)[:-1])


def _layers(params: dict) -> list:
    return params["swish_layers"] if "swish_layers" in params else params["layers"]


# --- shared mapping -------------------------------------------------------------------

def _torch_layers(state: dict, prefixes: list, what: str) -> list:
    """torch Linear layers (weight [out, in], bias) under ``prefixes``, as pgdiag's {"w": [in, out], "b"}."""
    layers = []
    for prefix in prefixes:
        w, b = state.pop(f"{prefix}.weight", None), state.pop(f"{prefix}.bias", None)
        if w is None or b is None or w.ndim != 2 or b.shape != (w.shape[0],):
            raise ArchiveError(f"{what}: expected a linear layer {prefix}.weight/.bias, found "
                               f"{None if w is None else w.shape} / {None if b is None else b.shape}")
        layers.append({"w": np.asarray(w.T, np.float32), "b": np.asarray(b, np.float32)})
    _check_chain(layers, what)
    return layers


def _check_chain(layers: list, what: str) -> None:
    for i, (a, b) in enumerate(zip(layers[:-1], layers[1:])):
        if a["w"].shape[1] != b["w"].shape[0]:
            raise ArchiveError(f"{what}: layer {i} gives {a['w'].shape[1]} outputs but layer {i + 1} takes "
                               f"{b['w'].shape[0]}")


def _sequential(state: dict, name: str) -> list:
    """The Linear indices of a torch ``nn.Sequential`` named ``name`` (0, 2, 4 with activations between)."""
    found = sorted({int(m.group(1)) for k in state for m in [re.fullmatch(rf"{re.escape(name)}\.(\d+)\.weight", k)]
                    if m})
    return [f"{name}.{i}" for i in found]


def _filter_from(mean, var, eps, count, clip, what: str):
    """σ stored for pgdiag's (x − μ)/(σ + 1e-8) to equal the framework's (x − μ)/√(var + eps), from statistics
    checked first (finite, var ≥ 0, eps ≥ 0, var + eps > 0, clip > 0): one line names the field that is not."""
    try:
        mean, var = (np.asarray(x, np.float64).reshape(-1) for x in (mean, var))
        eps, count = float(eps), float(count)
        clip = None if clip is None else float(clip)
    except (TypeError, ValueError):
        raise ArchiveError(f"{what}: observation statistics must be numbers (mean, var, epsilon, count, clip)") \
            from None
    for name, bad in (("mean", mean.shape != var.shape or not np.all(np.isfinite(mean))),
                      ("var", not np.all(np.isfinite(var)) or np.any(var < 0)),
                      ("epsilon", not np.isfinite(eps) or eps < 0),
                      ("var + epsilon", np.any(var + eps <= 0)),
                      ("count", not np.isfinite(count) or count < 0),
                      ("clip", clip is not None and not (np.isfinite(clip) and clip > 0))):
        if bad:
            raise ArchiveError(f"{what}: its observation statistics' {name} is not usable (mean and var: finite, "
                               f"one shape, var ≥ 0; epsilon ≥ 0 with var + epsilon > 0; count ≥ 0; clip > 0)")
    std = np.maximum(np.sqrt(var + eps) - NORM_EPS, 0.0)
    return mean.astype(np.float32), std.astype(np.float32), int(min(max(count, 2), _INT32_MAX)), clip


def _leftover(state: dict, what: str) -> None:
    if state:
        raise ArchiveError(f"{what}: unexpected parameters {sorted(state)[:4]} — not the network this loader "
                           f"maps (a customized agent?)")


# --- Brax -----------------------------------------------------------------------------

def read_brax(path: str) -> ExternalPolicy:
    """Brax PPO's (normalizer, policy, value) parameters as `brax.io.model.save_params` wrote them."""
    what = f"Brax parameters {path!r}"
    loaded = load_pickle(read_bytes(path, "the Brax parameter file"))
    if not (isinstance(loaded, (tuple, list)) and len(loaded) >= 3):
        raise ArchiveError(f"{what}: expected the (normalizer, policy, value) tuple Brax PPO saves, got "
                           f"{type(loaded).__name__}")
    norm, policy, value = loaded[:3]
    policy, value = (_flax_mlp(p, f"{what} ({name})") for p, name in ((policy, "policy"), (value, "value")))
    if policy[-1]["b"].shape[-1] % 2:
        raise ArchiveError(f"{what}: the policy's output has {policy[-1]['b'].shape[-1]} units; a tanh-normal "
                           f"policy has 2 per action dimension (loc, scale)")
    count = _brax_count(getattr(norm, "count", 0))
    mean = std = None
    if count > 0:   # a normalizer that never counted was not used (normalize_observations=False)
        mean = np.asarray(norm.mean, np.float32)
        std = np.maximum(np.asarray(norm.std, np.float64) - NORM_EPS, 0.0).astype(np.float32)
    return ExternalPolicy(kind="brax", path=path, network="brax", policy={"swish_layers": policy},
                          value={"swish_layers": value}, obs_mean=mean, obs_std=std,
                          obs_count=int(min(max(count, 2), _INT32_MAX)), obs_clip=None, knobs={},
                          notes=() if count else ("the normalizer counted no observations: raw observations",),
                          action_bounds=_unit_box(policy[-1]["b"].shape[-1] // 2))   # tanh's range


def _unit_box(n: int) -> tuple:
    return (-1.0,) * n, (1.0,) * n


def _brax_count(count) -> int:
    if hasattr(count, "hi") and hasattr(count, "lo"):
        return (int(count.hi) << 32) + int(count.lo)
    return int(np.asarray(count))


def _flax_mlp(params, what: str) -> list:
    layers = params.get("params", params) if isinstance(params, dict) else None
    names = sorted(layers or {}, key=lambda k: int(k.split("_")[-1]) if k.split("_")[-1].isdigit() else -1)
    if not names or any(not re.fullmatch(r"hidden_\d+", k) for k in names):
        raise ArchiveError(f"{what}: expected Brax MLP layers hidden_0, hidden_1, …, found {names[:4] or 'none'}")
    out = [{"w": np.asarray(layers[k]["kernel"], np.float32), "b": np.asarray(layers[k]["bias"], np.float32)}
           for k in names]
    _check_chain(out, what)
    return out


# --- CleanRL --------------------------------------------------------------------------

def read_cleanrl(path: str, obs_stats, activation: str) -> ExternalPolicy:
    """CleanRL's ``ppo_continuous_action.py`` state dict, with the observation statistics given beside it."""
    what = f"CleanRL checkpoint {path!r}"
    state = dict(load_torch(read_bytes(path, "the CleanRL checkpoint")))
    log_std = state.pop("actor_logstd", None)
    if log_std is None:
        raise ArchiveError(f"{what}: no actor_logstd — not ppo_continuous_action's Agent")
    policy = _torch_layers(state, _sequential(state, "actor_mean"), what)
    value = _torch_layers(state, _sequential(state, "critic"), what)
    _leftover(state, what)
    notes, mean = [], None
    if obs_stats is None:
        notes.append("CleanRL's checkpoint holds no observation statistics: the policy sees raw observations "
                     "(pass obs_stats=(mean, var) from the run's NormalizeObservation wrapper)")
        warnings.warn(f"{path}: {notes[-1]}", Notice, stacklevel=3)
        std, count, clip = None, 0, None
    else:
        mean, std, count, clip = _filter_from(*_stats(obs_stats, what), 1e-8, 1e8, 10.0, what)
    knobs = {"tanh_activations": activation == "tanh"}
    return ExternalPolicy(kind="cleanrl", path=path, network="mlp",
                          policy={"layers": policy, "log_std": np.asarray(log_std, np.float32).reshape(-1)},
                          value={"layers": value}, obs_mean=mean, obs_std=std, obs_count=count, obs_clip=clip,
                          knobs=knobs, notes=tuple(notes))


def _stats(obs_stats, what: str):
    """(mean, var) from a pair, a dict or a .npz/.json file with 'mean' and 'var'."""
    if isinstance(obs_stats, (str, os.PathLike)):
        source = os.fspath(obs_stats)
        raw = read_bytes(source, "the observation statistics")
        what_file = f"observation statistics {source!r}"
        obs_stats = load_json(raw, what_file) if source.endswith(".json") else load_npz(raw, what_file)
    if isinstance(obs_stats, dict):
        if not {"mean", "var"} <= set(obs_stats):
            raise ArchiveError(f"{what}: observation statistics need 'mean' and 'var', got {sorted(obs_stats)}")
        return obs_stats["mean"], obs_stats["var"]
    if isinstance(obs_stats, (tuple, list)) and len(obs_stats) == 2:
        return obs_stats
    raise ArchiveError(f"{what}: obs_stats must be (mean, var), a dict or a .npz/.json file, got "
                       f"{type(obs_stats).__name__}")


# --- Stable-Baselines3 ----------------------------------------------------------------

def read_sb3(path: str, vecnormalize: str | None, activation: str) -> ExternalPolicy:
    """A Stable-Baselines3 PPO zip (``MlpPolicy``), with its `VecNormalize.save` file where given."""
    what = f"Stable-Baselines3 zip {path!r}"
    archive = open_zip(read_bytes(path, "the Stable-Baselines3 zip"), f"a Stable-Baselines3 zip ({path!r})")
    names = set(archive.namelist())
    if not {"data", "policy.pth"} <= names:
        raise ArchiveError(f"{what}: not a model.save zip (it lacks {sorted({'data', 'policy.pth'} - names)})")
    data = load_json(read_member(archive, "data", CAPS.pickle_bytes), f"{what}: its 'data'")
    if not isinstance(data, dict):
        raise ArchiveError(f"{what}: its 'data' is a JSON {type(data).__name__}, not the object model.save writes")
    state = dict(load_torch(read_member(archive, "policy.pth", CAPS.member_bytes)))
    if data.get("use_sde"):
        raise ArchiveError(f"{what}: a gSDE policy (use_sde=True); only the diagonal Gaussian MlpPolicy is read")
    notes = []
    if data.get("policy_kwargs") not in ({}, None):
        notes.append(f"policy_kwargs were set (stored as a pickle, not read): activation taken as {activation!r}")
    log_std = state.pop("log_std", None)
    if log_std is None:
        raise ArchiveError(f"{what}: no log_std — not a continuous-action ActorCriticPolicy")
    policy = _torch_layers(state, _sequential(state, "mlp_extractor.policy_net") + ["action_net"], what)
    value = _torch_layers(state, _sequential(state, "mlp_extractor.value_net") + ["value_net"], what)
    _leftover(state, what)
    knobs = {"tanh_activations": activation == "tanh"}
    knobs.update({k: float(data[src]) for k, src in (("gamma", "gamma"), ("gae_lambda", "gae_lambda"))
                  if isinstance(data.get(src), (int, float))})
    mean = std = clip = None
    count = 0
    if vecnormalize is not None:
        mean, std, count, clip = _vecnormalize(vecnormalize, notes)
    return ExternalPolicy(kind="sb3", path=path, network="mlp",
                          policy={"layers": policy, "log_std": np.asarray(log_std, np.float32).reshape(-1)},
                          value={"layers": value}, obs_mean=mean, obs_std=std, obs_count=count, obs_clip=clip,
                          knobs=knobs, notes=tuple(notes), action_bounds=_box_bounds(data.get("action_space")))


def _vecnormalize(path: str, notes: list) -> tuple:
    """(mean, σ, count, clip) of a `VecNormalize.save` file's observation filter, every field checked."""
    what = f"VecNormalize file {path!r}"
    wrapper = load_pickle(read_bytes(path, "the VecNormalize file"))
    if not isinstance(wrapper, Fields) or not hasattr(wrapper, "norm_obs"):
        raise ArchiveError(f"{what}: not a VecNormalize.save file (it holds a {type(wrapper).__name__} without "
                           f"norm_obs)")
    if not wrapper.norm_obs:
        notes.append("the VecNormalize file normalizes no observations: raw observations")
        return None, None, 0, None
    rms = getattr(wrapper, "obs_rms", None)
    missing = [n for n, present in (("obs_rms", isinstance(rms, Fields)), ("epsilon", hasattr(wrapper, "epsilon")),
                                    ("clip_obs", hasattr(wrapper, "clip_obs"))) if not present]
    missing += [f"obs_rms.{n}" for n in ("mean", "var", "count") if not missing and not hasattr(rms, n)]
    if missing:
        raise ArchiveError(f"{what}: it lacks {', '.join(missing)}")
    return _filter_from(rms.mean, rms.var, wrapper.epsilon, rms.count, wrapper.clip_obs, what)


def _box_bounds(space) -> tuple | None:
    """(low, high) of the Box space SB3's ``data`` describes in text ("[-1. -1. -1.]"); None where it does not."""
    try:
        low, high = (np.array(space[k].strip("[]").split(), np.float64) for k in ("low", "high"))
    except (TypeError, KeyError, AttributeError, ValueError):
        return None
    return tuple(low.tolist()), tuple(high.tolist())


__all__ = ["ExternalPolicy", "read_brax", "read_cleanrl", "read_sb3"]
