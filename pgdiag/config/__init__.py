"""Configuration: every setting declared once as a `Setting` (`.setting`: default, doc, allowed values, checks),
the static settings (`.static`), traced knobs (`.knobs`), the run description that joins them (`.schema`),
the papers' presets (`.presets`) and command-line value parsing (`.parse`)."""

from pgdiag.config.parse import parse_assignments, parse_grid, parse_value
from pgdiag.config.presets import (ALGORITHM_PRESETS, CPU_SCALE, MORE_PRESETS, PAPER_TASKS, PRESETS, VARIANT_PRESETS,
                                   preset, preset_names, study_preset)
from pgdiag.config.schema import (BOOL_KNOBS, KNOB_FIELDS, KNOB_NAMES, OPTIMIZATIONS, STATIC_FIELDS, Option,
                                  STATIC_NAMES, Config, ConfigError, Knobs, Static, check_knob, check_static,
                                  stack_knobs, task_kind, validate)
from pgdiag.config.knobs import KNOB_SETTINGS
from pgdiag.config.setting import Choices, Range, Setting, check_record, declared, setting
from pgdiag.config.static import STATIC_SETTINGS

__all__ = ["ALGORITHM_PRESETS", "BOOL_KNOBS", "CPU_SCALE", "Choices", "MORE_PRESETS", "Config", "ConfigError",
           "KNOB_FIELDS", "KNOB_NAMES", "KNOB_SETTINGS", "Knobs", "OPTIMIZATIONS", "Option", "PAPER_TASKS", "PRESETS",
           "Range", "STATIC_FIELDS", "STATIC_NAMES", "STATIC_SETTINGS", "Setting", "Static", "VARIANT_PRESETS",
           "check_knob",
           "check_record", "check_static", "declared", "parse_assignments", "parse_grid", "parse_value", "preset",
           "preset_names", "setting", "stack_knobs", "study_preset", "task_kind", "validate"]
