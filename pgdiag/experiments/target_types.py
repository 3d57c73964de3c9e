"""What a figure or table target is: its record and the behaviour it carries
([`Target`][pgdiag.experiments.target_types.Target]).

A target names its study, its scales and four functions with one signature each:

* ``run(target, scale, **kw) -> dict`` trains (or reuses) and measures at a scale, then draws;
* ``draw(target, from_dir, **kw) -> dict`` draws from a saved study without training (``--from``);
* ``plan(target, scale, tasks=, seeds=, diag=, memory=, **overrides) -> [Program]`` lists the programs ``run``
  would compile, without compiling (``--dry-run``, the notebooks' choice of scale);
* ``evidence(target, from_dir, notes) -> [row]`` reads the claims' evidence from a saved study (the reports);
  ``None`` for a target whose study's evidence another target reads.

Each study module in [`pgdiag.studies`][pgdiag.studies] declares its targets;
[`targets`][pgdiag.experiments.targets] collects them into the one table every entry point (make, the CLI,
``--dry-run``, the notebooks, the reports) iterates. A diagnostic target also carries its
[`Measurement`][pgdiag.experiments.target_types.Measurement]: the diagnostics study it runs on checkpoints.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Callable, Mapping

from pgdiag.config import Choices, ConfigError, Setting
from pgdiag.diagnostics import engine
from pgdiag.diagnostics.protocol import Diagnostic
from pgdiag.envs.hosts import declare as declare_host
from pgdiag.experiments import study_dir
from pgdiag.run import distributed

#: what a target does: trains and draws the training metrics; measures trained checkpoints; optimizes one batch
KINDS = ("training", "diagnostic", "optimize")
#: the reports that read targets' evidence and figures (``pgdiag report --paper``)
PAPERS = ("cl", "im")
#: the paper a report checks, where none is named (the reports' and plans' functions, ``pgdiag report --paper``)
PAPER = Setting("cl", "The paper whose claims to check: cl (A Closer Look: the diagnostic studies, trust regions, "
                      "Theorem 5.1) or im (Implementation Matters: the ablation, Tables 2/3, trust regions, "
                      "Theorem 5.1).", Choices(PAPERS, noun="paper", intro="choose from"))
#: the scale a target trains at where none is named (``train``, ``dry_run``, ``pgdiag TARGET --scale``); each
#: target offers its own scales
SCALE = Setting("smoke", "The scale a target trains and plans at where none is named.")
#: where targets write their studies by default (``default_out``), so where a report looks for them
#: (``pgdiag report --from``)
RESULTS = Setting("results", "A directory holding the studies' output directories.")


@dataclasses.dataclass(frozen=True)
class Measurement:
    """What a diagnostic target measures on its study's checkpoints: a measurement (its
    [`Diagnostic`][pgdiag.diagnostics.protocol.Diagnostic]), saved under ``name``."""

    name: str                 # its settings' key in a Scale, and its directory in each run's diagnostics/
    study: Diagnostic         # the measurement: gradients, steps, baselines or landscape (or one of your own)
    labels: tuple = ()        # the presets measured (default: every preset the target trains)
    tiny: Mapping = dataclasses.field(default_factory=dict)   # settings at the notebooks' tiny scale

    @property
    def kind(self) -> str:
        return self.study.kind

    @property
    def settings(self) -> type:
        """Its settings class (checks ``--diag``)."""
        return self.study.settings

    def measure(self, run_dirs, verbose: bool = False, **kwargs):
        """Measure ``run_dirs`` (``labels``, ``iterations``, ``reader`` and settings as
        [`engine.run`][pgdiag.diagnostics.engine.run] takes them) and save it in each run."""
        return engine.run(self.study, run_dirs, name=self.name, verbose=verbose, **kwargs)

    def load(self, run_dirs):
        """The measurement saved in ``run_dirs`` (no recomputation)."""
        return engine.load(self.study, run_dirs, self.name)


@dataclasses.dataclass(frozen=True)
class Target:
    name: str                 # the sub-command and make target
    study: str                # the study it draws from (shared by targets that share training)
    kind: str                 # one of KINDS
    paper: str                # the figure or table it reproduces
    help: str
    scales: Mapping           # scale name -> pgdiag.experiments.scales.Scale
    run: Callable
    draw: Callable
    plan: Callable
    evidence: Callable | None = None
    papers: tuple = ()        # the reports that read it (PAPERS)
    provides: tuple = ()      # the evidence series it provides (prefixes), named when a claim lacks evidence
    presets: tuple = ()       # the presets it trains
    measurement: Measurement | None = None   # diagnostic targets
    options: tuple = ()       # extra command-line options: "algorithm", "statistic", "reporting"
    notebook: str = ""        # the notebook that runs it (notebooks/<notebook>.ipynb)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConfigError(f"target {self.name!r}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if (self.kind == "diagnostic") != (self.measurement is not None):
            raise ConfigError(f"target {self.name!r}: a diagnostic target, and only one, carries a Measurement")
        unknown = set(self.papers) - set(PAPERS)
        if unknown:
            raise ConfigError(f"target {self.name!r}: papers {sorted(unknown)} are not among {', '.join(PAPERS)}")

    def train(self, scale: str = SCALE.default, **kwargs) -> dict:
        """Train (or reuse), measure and draw at ``scale``: the outputs' paths and tables."""
        self._check_counts(kwargs)
        distributed.agree(self.name, {"--scale": scale, **{f"--{k}": v for k, v in kwargs.items() if k != "progress"}})
        if kwargs.get("out") is not None:   # by process 0 alone (its probe would race the others'), told to all
            distributed.lead_first(f"{self.name} --out", lambda: study_dir.prepare(kwargs["out"], self.study,
                                                                                     self.name))
        return self.run(self, scale, **kwargs)

    def _check_counts(self, kwargs: dict) -> None:
        """``seeds`` and ``steps``, where given, are positive integers (None takes the scale's)."""
        for name in ("seeds", "steps"):
            value = kwargs.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"{self.name}: {name} must be a positive integer (or omitted for the scale's), "
                                  f"got {value!r}")

    def redraw(self, from_dir: str, **kwargs) -> dict:
        """Draw from the study saved in ``from_dir`` without training or measuring."""
        return self.draw(self, from_dir, **kwargs)

    def dry_run(self, scale: str = SCALE.default, memory: int | None = None, diag: dict | None = None, host=None,
                **kwargs) -> list:
        """The programs [`train`][pgdiag.experiments.target_types.Target.train] would compile at ``scale`` (nothing
        compiled); ``memory``: the bytes available to every program (default: what each is checked against where it
        runs); ``host``: plan for the host a profile declares ([`pgdiag.envs.hosts`][pgdiag.envs.hosts]: a path or
        a `Host`; default this one)."""
        if diag and self.measurement is None:
            raise ConfigError(f"{self.name} only trains: it has no measurement settings, got {sorted(diag)}")
        self._check_counts(kwargs)
        with declare_host(host):
            return self.plan(self, scale, memory=memory, **({"diag": diag} if diag else {}), **kwargs)

    def read_evidence(self, from_dir: str, notes: list) -> list:
        """Its evidence rows from the study saved in ``from_dir`` ([] where it provides none)."""
        return self.evidence(self, from_dir, notes) if self.evidence else []

    @property
    def measured_presets(self) -> tuple:
        """The presets its measurement reads."""
        return tuple(self.measurement.labels or self.presets) if self.measurement else ()

    @property
    def redraws_by_task(self) -> bool:
        """Whether its ``draw`` can redraw a subset of the study's tasks."""
        return "tasks" in inspect.signature(self.draw).parameters

    @property
    def default_out(self) -> str:
        return f"{RESULTS.default}/{self.study}"


__all__ = ["KINDS", "Measurement", "PAPER", "PAPERS", "RESULTS", "SCALE", "Target"]
