"""Policies trained elsewhere, read into pgdiag's networks: Brax PPO, CleanRL and Stable-Baselines3.

``read_policy(kind, path, ...)`` returns an [`ExternalPolicy`][pgdiag.adapters.policies.ExternalPolicy]: the
policy's and value function's parameters in one of pgdiag's networks ([`pgdiag.networks`][pgdiag.networks]),
the observation filter the agent saw, and the few settings its file states. Nothing is imported from the
framework that wrote the file and no code in it runs ([`pgdiag.adapters.archives`][pgdiag.adapters.archives]).
Each kind is a [`PolicyLoader`][pgdiag.adapters.policy_loaders.PolicyLoader] registered in
[`pgdiag.adapters.policy_loaders`][pgdiag.adapters.policy_loaders], its options declared once; a user's own kind
of file is registered the same way.

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
from pgdiag.adapters.policy_loaders import PolicyLoader, checked_options, get_loader, register_loader
from pgdiag.adapters.policy_formats import ExternalPolicy, read_brax, read_cleanrl, read_sb3
from pgdiag.config import STATIC_SETTINGS, Choices, Option

#: the preset whose update an imported agent takes unless told: the static settings' default algorithm
DEFAULT_ALGORITHM = STATIC_SETTINGS["algorithm"].default


def _obs_stats_form(value):
    """obs_stats' forms (the arrays themselves are checked when they are read); a type named, not a repr: a
    dict of arrays would fill the screen."""
    if isinstance(value, (str, os.PathLike)) or isinstance(value, (tuple, list)) and len(value) == 2:
        return True
    if isinstance(value, dict):
        return {"mean", "var"} <= set(value) or f"obs_stats needs 'mean' and 'var', got {sorted(map(str, value))}"
    return f"obs_stats must be (mean, var), a dict or a .npz/.json file, got {type(value).__name__}"


# The options of pgdiag's own loaders, each declared once: read_policy checks and fills them, `pgdiag import`
# makes its flags, defaults and choices from them.
#: CleanRL's observation statistics, which its checkpoint lacks
OBS_STATS = Option(None, "the observation statistics the policy saw, which the file lacks (the "
                         "NormalizeObservation wrapper's): (mean, var), a dict or a .npz/.json file holding 'mean' "
                         "and 'var'; without them the policy sees raw observations",
                   "(mean, var), a dict or a .npz/.json file with 'mean' and 'var'", check=_obs_stats_form)
#: Stable-Baselines3's VecNormalize file
VECNORMALIZE = Option(None, "the VecNormalize.save file whose observation statistics the policy saw; without it "
                            "the policy sees raw observations", "the path of a file",
                      check=lambda v: isinstance(v, (str, os.PathLike)), convert=os.fspath)
#: the hidden units of CleanRL's and SB3's MLPs (a loader of one's own that takes them declares this one)
ACTIVATION = Option("tanh", "the MLP's hidden units, which the file does not state", Choices(("tanh", "relu")))

#: pgdiag's own loaders, registered as a user's loader is
BUILT_IN = (
    PolicyLoader("brax", "Brax PPO parameters as brax.io.model.save_params writes them", read_brax),
    PolicyLoader("cleanrl", "CleanRL checkpoints of ppo_continuous_action.py's Agent", read_cleanrl,
                 {"obs_stats": OBS_STATS, "activation": ACTIVATION}),
    PolicyLoader("sb3", "Stable-Baselines3 zips of a PPO MlpPolicy", read_sb3,
                 {"vecnormalize": VECNORMALIZE, "activation": ACTIVATION}),
)
for _loader in BUILT_IN:
    register_loader(_loader, built_in=True)
#: the kinds pgdiag reads itself (every registered kind: [`kinds`][pgdiag.adapters.policy_loaders.kinds])
KINDS = tuple(loader.kind for loader in BUILT_IN)


def read_policy(kind: str, path: str, **options) -> ExternalPolicy:
    """Read the policy ``kind`` saved at ``path``; see the module's note for pgdiag's own kinds.

    Args:
        kind: a registered kind ([`loaders`][pgdiag.adapters.policy_loaders.loaders]): "brax", "cleanrl", "sb3"
            or one added with [`register_loader`][pgdiag.adapters.policy_loaders.register_loader].
        path: the file.
        **options: the options ``kind``'s loader declares (``obs_stats`` for "cleanrl", ``vecnormalize`` for
            "sb3", ``activation`` for both); one not given takes its declared default.

    Raises:
        ArchiveError: an unknown kind, an option the kind does not take or a value its declaration does not
            allow (each before any file is opened), or a file that cannot be read safely.
    """
    read = get_loader(kind).read
    given = checked_options(kind, options)
    ext = read(os.fspath(path), **given)
    if not isinstance(ext, ExternalPolicy):
        raise ArchiveError(f"the {kind!r} loader returned a {type(ext).__name__}, not an ExternalPolicy")
    return ext


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


__all__ = ["ACTIVATION", "BUILT_IN", "DEFAULT_ALGORITHM", "KINDS", "OBS_STATS", "VECNORMALIZE", "ExternalPolicy",
           "frozen", "knob_values", "obs_stat", "read_policy"]
