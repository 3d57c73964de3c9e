"""The policy-update algorithms, one module each behind one protocol ([`base`][pgdiag.algorithms.base]), and their
registry.

Built in: ``ppo`` and ``trpo`` (the papers'), ``ppo-kl`` (PPO's adaptive KL
penalty), ``npg`` (the natural policy gradient) and ``vpg`` (vanilla policy
gradient). A user's algorithm is an [`Algorithm`][pgdiag.algorithms.base.Algorithm] passed to
[`register_algorithm`][pgdiag.algorithms.base.register_algorithm] (``examples/`` shows one).
"""

from pgdiag.algorithms.base import (Algorithm, AlgorithmError, Constraint, FusedUpdate, InitState, Objective,
                                    PolicyStep, Step, StepInfo, Terms, ValueStep, WorkingSet, WorkingSetOf,
                                    declared_static, get, names, owners, register_algorithm, unregister_algorithm)
from pgdiag.algorithms.npg import NPG
from pgdiag.algorithms.ppo import PPO
from pgdiag.algorithms.ppo_kl import PPO_KL
from pgdiag.algorithms.trpo import TRPO
from pgdiag.algorithms.vpg import VPG

for _algorithm in (PPO, TRPO, PPO_KL, NPG, VPG):
    register_algorithm(_algorithm)

__all__ = ["Algorithm", "AlgorithmError", "Constraint", "FusedUpdate", "InitState", "Objective", "PolicyStep", "Step",
           "StepInfo", "Terms", "ValueStep", "WorkingSet", "WorkingSetOf", "declared_static", "get", "names", "owners",
           "register_algorithm", "unregister_algorithm"]
