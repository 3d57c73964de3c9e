"""Agents, environments and parameters from other frameworks: policies saved by Brax, CleanRL and
Stable-Baselines3 ([`pgdiag.adapters.policies`][pgdiag.adapters.policies]) or read by a loader of one's own
([`pgdiag.adapters.policy_loaders`][pgdiag.adapters.policy_loaders]), Brax and MuJoCo Playground environments as
tasks ([`pgdiag.adapters.brax_envs`][pgdiag.adapters.brax_envs],
[`pgdiag.adapters.playground_envs`][pgdiag.adapters.playground_envs]), and the restricted reading of their files
([`pgdiag.adapters.archives`][pgdiag.adapters.archives], [`pgdiag.adapters.torch_zip`][pgdiag.adapters.torch_zip])."""

from pgdiag.adapters.archives import ArchiveError, Fields, load_pickle, load_pickle_file
from pgdiag.adapters.brax_envs import register_brax_env
from pgdiag.adapters.policy_loaders import PolicyLoader, loaders, register_loader, unregister_loader
from pgdiag.adapters.playground_envs import register_playground_env
from pgdiag.adapters.policies import KINDS, ExternalPolicy, read_policy
from pgdiag.adapters.torch_zip import load_torch

__all__ = ["ArchiveError", "ExternalPolicy", "Fields", "KINDS", "PolicyLoader", "load_pickle", "load_pickle_file",
           "load_torch", "loaders", "read_policy", "register_brax_env", "register_loader", "register_playground_env",
           "unregister_loader"]
