"""One module per study: the targets it serves, declared in its `TARGETS`, with their scales, training or
measuring, figures and tables, dry-run plans and the claims' evidence. `pgdiag.experiments.targets` lists the
modules (`STUDY_MODULES`) and collects their targets into the one table of targets.
"""
