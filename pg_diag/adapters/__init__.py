"""Agents, environments and parameters from other frameworks: policies saved by Brax, CleanRL and
Stable-Baselines3 ([`pg_diag.adapters.policies`][pg_diag.adapters.policies]), Brax and MuJoCo Playground
environments as tasks ([`pg_diag.adapters.brax_envs`][pg_diag.adapters.brax_envs],
[`pg_diag.adapters.playground_envs`][pg_diag.adapters.playground_envs]), and the restricted reading of their files
([`pg_diag.adapters.archives`][pg_diag.adapters.archives])."""

from pg_diag.adapters.archives import ArchiveError, Fields, load_pickle, load_pickle_file, load_torch
from pg_diag.adapters.brax_envs import register_brax_env
from pg_diag.adapters.playground_envs import register_playground_env
from pg_diag.adapters.policies import KINDS, ExternalPolicy, read_policy

__all__ = ["ArchiveError", "ExternalPolicy", "Fields", "KINDS", "load_pickle", "load_pickle_file", "load_torch",
           "read_policy", "register_brax_env", "register_playground_env"]
