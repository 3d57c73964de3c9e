"""One module per study: the targets it serves, declared in its ``TARGETS``, with their scales, training or
measuring, figures and tables, dry-run plans and the claims' evidence.

========================  ==========================================================================
module                    targets
========================  ==========================================================================
``ablation``              fig-ablation
``trust_region``          fig-trust-region
``value``                 fig-value
``presets``               fig-rewards, table-2, table-3 (the ``algorithms`` study: every preset)
``theorem``               fig-theorem
``gradients``             fig-grad-variance, fig-grad-true, fig-step-variance
``baselines``             fig-baselines
``landscape``             fig-landscape-concentration, fig-landscape-surrogate
``solver_compare``        solver-compare (fig-ablation and table-2 under both solver settings)
========================  ==========================================================================

:mod:`pg_diag.experiments.targets` collects them into the one table of targets.
"""
