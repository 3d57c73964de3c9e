"""A gradient study's streams widened on MJX or Warp, whose batched step costs about the same at a few
environments as at thousands: the same pairs' distribution, stepped wide enough to keep the device busy."""

from __future__ import annotations

import dataclasses

from pgdiag import envs
from pgdiag.studies.gradients.measure import GradientSettings, Resolved, resolve


#: On MJX a batched step costs about as much for a few hundred environments as for a few thousand (an H100: Hopper
#: 1.6 ms per step at 320 environments, 1.4 ms at 4,096, with the fast solver; Warp on an H200: Walker2d 1.5 ms at
#: 320, 1.9 at 4,096), so a study whose streams are one environment wide leaves it idle. With ``envs`` left at 0, an
#: MJX or Warp study widens its streams until all of them together step about this many environments, or the batch
#: this host's recorded measurements find fullest where they reach it
#: ([`wide_batch`][pgdiag.studies.gradients.widening.wide_batch],
#: [`widen`][pgdiag.studies.gradients.widening.widen]).
MJX_WIDE_BATCH = 2048


def wide_batch(static, backend: str) -> int:
    """The environments a widened study's streams step together: the batch at which this host's recorded
    measurements of ``backend`` step the most environments per millisecond, where they reach
    [`MJX_WIDE_BATCH`][pgdiag.studies.gradients.widening.MJX_WIDE_BATCH] (an accelerator whose step is still flat
    at 4,096 gets 4,096), else that constant."""
    from pgdiag.envs import crossover

    rows = crossover.rows_here(static.physics_threads or envs.default_threads())
    return crossover.fullest_batch(rows, static.task, static.solver, backend, static.model,
                                   reaching=MJX_WIDE_BATCH) or MJX_WIDE_BATCH


def widen(settings: GradientSettings, statics: list, num_subjects: int, fits=lambda r: True) -> Resolved:
    """[`resolve`][pgdiag.studies.gradients.measure.resolve], with the streams widened on MJX or Warp.

    When ``envs`` is 0 and the runs step MJX or Warp, each stream gets ``w`` × the run's ``num_envs`` environments,
    ``w`` the smallest width at which the study's streams (``num_subjects`` × (K + R)) step
    [`wide_batch`][pgdiag.studies.gradients.widening.wide_batch] environments together, no more than the
    narrow stream's chunk count (wider would only lengthen the streams) and halved until ``fits(resolved)`` (the
    memory check) holds. A segment is still ``steps`` steps from the same start, so the pairs' distribution, and
    each estimate's, is the narrow study's; the sizes snap to the wider chunk (the tables record the N used). The
    width depends on how many subjects the study measures together, so a subject's estimates here equal its
    estimates alone in distribution, not in value (``envs`` set fixes the width). Native physics and the pure-JAX
    tasks keep the run's own width."""
    narrow = resolve(settings, statics)
    first = statics[0]
    backend, _ = envs.resolve_physics(first.task, first.physics, first.physics_threads)
    if settings.envs or backend not in ("mjx", "warp"):
        return narrow
    streams = num_subjects * (narrow.estimates + narrow.truth_streams)
    width = min(-(-wide_batch(first, backend) // (streams * narrow.sampling.envs)), narrow.grid.num_chunks)
    while width > 1:
        wide = resolve(dataclasses.replace(settings, envs=width * narrow.sampling.envs), statics)
        if fits(wide):
            return wide
        width //= 2
    return narrow
