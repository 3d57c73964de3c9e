"""pgdiag's own measurements, one folder each: what it measures (``measure``, and for a diagnostic its
``diagnostic`` protocol and ``memory`` term), the figures and tables it serves (``targets``) and the claims'
evidence it gives (``evidence``). They build on the diagnostics engine ([`pgdiag.diagnostics`][pgdiag.diagnostics])
and the target machinery ([`pgdiag.experiments`][pgdiag.experiments]) as a user's own measurement does, and
register their targets the way a user's do ([`register`][pgdiag.experiments.targets.register]): `BUILT_IN` below is
the one list naming them, in the order their targets are listed (make help, the CLI, the README's table).
"""

from pgdiag.experiments import targets as _targets
from pgdiag.studies import (ablation, baselines, gradients, landscape, no_baseline, presets, solver_compare, steps,
                            theorem, trust_region, value)

#: the built-in measurements, in the order their targets are listed
BUILT_IN = (ablation, trust_region, value, presets, theorem, gradients, steps, baselines, no_baseline, landscape,
            solver_compare)

for _module in BUILT_IN:
    for _target in _module.TARGETS:
        _targets.register(_target, built_in=True)

__all__ = ["BUILT_IN", "ablation", "baselines", "gradients", "landscape", "no_baseline", "presets", "solver_compare",
           "steps", "theorem", "trust_region", "value"]
