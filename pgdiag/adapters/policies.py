"""Policies trained elsewhere, read into pgdiag's networks: Brax PPO, CleanRL and Stable-Baselines3.

``read_policy(kind, path, ...)`` returns an [`ExternalPolicy`][pgdiag.adapters.policies.ExternalPolicy]: the
policy's and value function's parameters in one of pgdiag's networks ([`pgdiag.networks`][pgdiag.networks]),
the observation filter the agent saw, and the few settings its file states. Nothing is imported from the
framework that wrote the file and no code in it runs ([`pgdiag.adapters.archives`][pgdiag.adapters.archives]).

* ``"brax"``: the (normalizer, policy, value) parameters Brax PPO's trainer returns, saved by
  `brax.io.model.save_params`, for `make_ppo_networks`' default networks (swish MLPs, tanh-squashed Gaussian):
  the "brax" network. The normalizer is applied where it has counted observations (Brax's
  ``normalize_observations=True``), as (x − mean)/std, unclipped.
* ``"cleanrl"``: the state dict `ppo_continuous_action.py --save-model` writes (its ``Agent``: tanh MLPs, a
  state-independent log σ): the "mlp" network. The file holds no observation statistics (they live in the
  `NormalizeObservation` wrapper): pass ``obs_stats=(mean, var)`` (or a ``.npz``/``.json`` with ``mean`` and
  ``var``); without them the policy sees raw observations, and a warning says so.
* ``"sb3"``: a Stable-Baselines3 PPO zip (``MlpPolicy``, tanh by default; ``activation="relu"`` for a ReLU one),
  with ``vecnormalize=PATH`` the `VecNormalize.save` file whose observation statistics the policy saw.

Observations are normalized as pgdiag's filter does, (x − μ)/(σ + 1e-8) then clipped (ref §2.2); each
framework's σ is stored so that this equals its own (x − μ)/σ' to float32 rounding.
"""

from __future__ import annotations

import os

import numpy as np

from pgdiag.adapters.archives import ArchiveError
from pgdiag.adapters.policy_formats import KINDS, ExternalPolicy, read_brax, read_cleanrl, read_sb3


def read_policy(kind: str, path: str, *, obs_stats=None, vecnormalize: str | None = None,
                activation: str = "tanh") -> ExternalPolicy:
    """Read the policy ``kind`` (one of ``KINDS``) saved at ``path``; see the module's note for each kind."""
    if kind not in KINDS:
        raise ArchiveError(f"unknown policy kind {kind!r}; kinds are {', '.join(KINDS)}")
    if activation not in ("tanh", "relu"):
        raise ArchiveError(f"activation must be 'tanh' or 'relu', got {activation!r}")
    if kind != "cleanrl" and obs_stats is not None:
        raise ArchiveError(f"obs_stats is for CleanRL files (which lack them); a {kind} file states its own")
    if kind != "sb3" and vecnormalize is not None:
        raise ArchiveError("vecnormalize is for Stable-Baselines3 zips")
    path = os.fspath(path)
    if kind == "brax":
        return read_brax(path)
    if kind == "cleanrl":
        return read_cleanrl(path, obs_stats, activation)
    return read_sb3(path, vecnormalize, activation)


# --- in pgdiag's terms ------------------------------------------------------------------

def knob_values(ext: ExternalPolicy) -> dict:
    """The knobs that make pgdiag's filter and networks compute what the source framework did."""
    values = {**ext.knobs, "obs_normalization": ext.obs_mean is not None, "obs_clipping": ext.obs_clip is not None}
    if ext.obs_clip is not None:
        values["obs_clip"] = float(ext.obs_clip)
    return values


def obs_stat(ext: ExternalPolicy):
    """The observation filter's statistics (a [`RunningStat`][pgdiag.normalize.RunningStat]) whose σ is
    ``ext.obs_std``; zeros where the policy sees raw observations."""
    from pgdiag.normalize import RunningStat

    if ext.obs_mean is None:
        return RunningStat.zeros((ext.obs_size,))
    n = ext.obs_count
    return RunningStat.from_moments(n, ext.obs_mean, np.square(ext.obs_std.astype(np.float64)) * (n - 1))


def frozen(ext: ExternalPolicy):
    """``ext`` as a [`FrozenPolicy`][pgdiag.policy.FrozenPolicy] (its value function beside it)."""
    import jax
    import jax.numpy as jnp

    from pgdiag.config import Config
    from pgdiag.policy import FrozenPolicy

    knobs = Config().replace(**knob_values(ext)).knobs.as_arrays()
    return FrozenPolicy(params=jax.tree.map(jnp.asarray, ext.policy), obs_stat=obs_stat(ext), knobs=knobs,
                        iteration=jnp.int32(0), value=jax.tree.map(jnp.asarray, ext.value))


__all__ = ["KINDS", "ExternalPolicy", "frozen", "knob_values", "obs_stat", "read_policy"]
