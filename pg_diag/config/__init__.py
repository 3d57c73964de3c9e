"""Configuration: static settings (:mod:`.static`), traced knobs (:mod:`.knobs`), the run description that
joins them (:mod:`.schema`), the papers' presets (:mod:`.presets`) and command-line value parsing
(:mod:`.parse`)."""

from pg_diag.config.parse import parse_assignments, parse_grid, parse_value
from pg_diag.config.presets import (ALGORITHM_PRESETS, CPU_SCALE, MORE_PRESETS, PAPER_TASKS, PRESETS, preset,
                                    preset_names, study_preset)
from pg_diag.config.schema import (BOOL_KNOBS, KNOB_FIELDS, KNOB_NAMES, OPTIMIZATIONS, STATIC_FIELDS, Option,
                                   STATIC_NAMES, Config, ConfigError, Knobs, Static, check_knob, check_static,
                                   stack_knobs, task_kind, validate)

__all__ = ["ALGORITHM_PRESETS", "BOOL_KNOBS", "CPU_SCALE", "MORE_PRESETS", "Config", "ConfigError", "KNOB_FIELDS",
           "KNOB_NAMES", "Knobs", "OPTIMIZATIONS", "Option", "PAPER_TASKS", "PRESETS", "STATIC_FIELDS", "STATIC_NAMES",
           "Static", "check_knob", "check_static", "parse_assignments", "parse_grid", "parse_value", "preset",
           "preset_names", "stack_knobs", "study_preset", "task_kind", "validate"]
