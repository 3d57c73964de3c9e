"""The policy-update algorithms, one module each behind one protocol ([`base`][pg_diag.algorithms.base]), and their
registry.

Built in: ``ppo`` and ``trpo`` (the papers'), ``ppo-kl`` (PPO's adaptive KL
penalty), ``npg`` (the natural policy gradient) and ``vpg`` (vanilla policy
gradient). A user's algorithm is an [`Algorithm`][pg_diag.algorithms.base.Algorithm] passed to
[`register_algorithm`][pg_diag.algorithms.base.register_algorithm] (``examples/`` shows one).
"""

from pg_diag.algorithms.base import (Algorithm, AlgorithmError, Constraint, PolicyStep, StepInfo, Terms, ValueStep,
                                     WorkingSet, declared_static, get, names, owners, register_algorithm,
                                     unregister_algorithm)
from pg_diag.algorithms.npg import NPG
from pg_diag.algorithms.ppo import PPO
from pg_diag.algorithms.ppo_kl import PPO_KL
from pg_diag.algorithms.trpo import TRPO
from pg_diag.algorithms.vpg import VPG

for _algorithm in (PPO, TRPO, PPO_KL, NPG, VPG):
    register_algorithm(_algorithm)

__all__ = ["Algorithm", "AlgorithmError", "Constraint", "PolicyStep", "StepInfo", "Terms", "ValueStep",
           "WorkingSet", "declared_static", "get", "names", "owners", "register_algorithm", "unregister_algorithm"]
