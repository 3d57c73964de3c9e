"""The notebooks' choice of scale: what a notebook in ``notebooks/`` trains and measures where it runs.

``choose("auto", budget_minutes, notebook)`` picks the largest scale (paper, then mid where every target of the
notebook has it, then smoke) whose estimated duration on this device fits the time budget (the tiny settings where
none does): each target's plan ([`pgdiag.experiments.dry_run`][pgdiag.experiments.dry_run], nothing compiled)
costed with this host's recorded physics step costs or a short timed batch of steps now; it prints the choice and
the estimates. ``"paper"``, ``"mid"`` and ``"smoke"`` force one; ``"tiny"`` is seconds per target on a CPU (the test
suite runs every notebook at it: the cheap ``point_mass`` task for training studies, the linear-quadratic task for
diagnostics, a few iterations, small measurements). A notebook passes ``choice.train()`` or
``choice.diagnostic(target)`` to a target's ``train`` (``pgdiag.experiments.targets.get(name).train(scale,
**kwargs)``), so a notebook runs exactly what the matching make target runs.
"""

from __future__ import annotations

import dataclasses

import jax

from pgdiag.config import CPU_SCALE, ConfigError, preset
from pgdiag.experiments import costs, dry_run, targets

NAMES = ("auto", "paper", "mid", "smoke", "tiny")
#: what each notebook runs (targets sharing a study are costed once); the quickstart runs one sweep of its own
NOTEBOOKS = {"quickstart": (), **{n: targets.of_notebook(n) for n in ("implementation-matters", "closer-look")}}
#: the scales ``auto`` considers, largest first
AUTO_ORDER = ("paper", "mid", "smoke")

#: a few iterations of a small batch (what the suite's experiment tests train)
TINY_TRAINING = dict(num_envs=2, steps_per_env=32, num_iterations=6, num_minibatches=4, ppo_epochs=2, value_epochs=2)

#: the diagnostic targets' measurement settings at the tiny scale
TINY_DIAG = {n: dict(targets.get(n).measurement.tiny) for n in targets.of_kind("diagnostic")}


@dataclasses.dataclass(frozen=True)
class Choice:
    name: str                 # what the notebook asked for (auto resolved)
    backend: str              # jax's default backend here: cpu, gpu or tpu
    scale: str                # the targets' scale: paper, mid or smoke
    tiny: bool                # the tiny overrides on top of the smoke scale
    estimates: tuple = ()     # auto: (scale, estimated seconds or None, whether only a lower bound) per scale
    budget_s: float = 0.0     # auto: the time budget

    def sweep(self) -> dict:
        """The quickstart's sweep: ``task``, preset ``overrides`` and ``seeds`` (Hopper at the paper's or the
        CPU's scale; ``point_mass`` at the tiny one)."""
        if self.tiny:
            return dict(task="point_mass", overrides=dict(TINY_TRAINING), seeds=2)
        return quickstart_sweep(self.scale)

    def train(self, task: str = "point_mass") -> dict:
        """Keyword arguments of a training study's ``run`` (fig-ablation, table-2, …): the scale's own tasks and
        seeds, or at the tiny scale ``task`` with two seeds and a few iterations."""
        if not self.tiny:
            return {}
        return dict(tasks=(task,), seeds=2, **TINY_TRAINING)

    def diagnostic(self, target: str) -> dict:
        """Keyword arguments of a diagnostic target's ``run``: at the tiny scale the LQR task (its exact answers)
        with its CPU-scale batch, one seed, 6 iterations with checkpoints after 0 and 5, small measurements.
        (A smaller batch would freeze observation statistics of a few dozen samples, and the linear policy
        they define in raw coordinates may then destabilize the system: no exact V^π exists.)"""
        if target not in TINY_DIAG:
            raise ConfigError(f"unknown diagnostic target {target!r}; targets: {', '.join(TINY_DIAG)}")
        if not self.tiny:
            return {}
        return dict(tasks=("lqr",), seeds=1, diag=dict(TINY_DIAG[target]), num_iterations=6, checkpoint_at=(0, 5))

    def __str__(self) -> str:
        picked = f"{self.scale} scale" + (", tiny settings" if self.tiny else "")
        if self.name != "auto":
            return f"backend {self.backend}: {picked}"
        costs = ", ".join(f"{s} {'> ' if bound else ''}{_minutes(t)}" for s, t, bound in self.estimates)
        fallback = "; no scale fits, so the tiny settings" if self.tiny else ""
        return (f"backend {self.backend}: {picked} (auto, budget {self.budget_s / 60:g} min; estimated {costs}"
                f"{fallback})")


def _minutes(seconds) -> str:
    if seconds is None:
        return "unknown"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def quickstart_sweep(scale: str) -> dict:
    """The quickstart's sweep at ``scale``: Hopper at the CPU's scale (smoke) or the paper's (mid: the papers'
    shape for 100 iterations)."""
    if scale == "smoke":
        return dict(task="hopper", overrides={**CPU_SCALE, "num_iterations": 30}, seeds=3)
    if scale == "mid":
        return dict(task="hopper", overrides={"num_iterations": 100}, seeds=3)
    return dict(task="hopper", overrides={}, seeds=5)


def programs(notebook: str, scale: str) -> list:
    """What ``notebook`` (one of [`NOTEBOOKS`][pgdiag.experiments.notebook.NOTEBOOKS]) runs at ``scale``: its
    targets' plans (nothing compiled), or the quickstart's two-point sweep (value clipping off and on) × seeds;
    ConfigError where a target has no such scale."""
    if not NOTEBOOKS[notebook]:
        s = quickstart_sweep(scale)
        static = preset("ppo", s["task"], **s["overrides"]).static
        return [dry_run.training_program(s["task"], "ppo", static, 2 * s["seeds"], 1 << 62)]
    return [p for name in NOTEBOOKS[notebook] for p in targets.get(name).dry_run(scale, memory=1 << 62)]


def estimate(notebook: str, scale: str, step_ms) -> float | None:
    """Estimated seconds for ``notebook`` at ``scale``
    ([`pgdiag.experiments.costs.duration`][pgdiag.experiments.costs.duration]); ConfigError where one of its
    targets has no such scale."""
    return costs.duration(programs(notebook, scale), step_ms)


def choose(name: str = "auto", budget_minutes: float = 20.0, notebook: str | None = None,
           backend: str | None = None, step_ms=None) -> Choice:
    """The scale for ``name`` (one of [`NAMES`][pgdiag.experiments.notebook.NAMES]) on ``backend`` (default: jax's
    default backend). With ``auto``: the largest of [`AUTO_ORDER`][pgdiag.experiments.notebook.AUTO_ORDER] whose
    estimate for ``notebook`` fits ``budget_minutes`` (the tiny settings when none does; without a notebook: paper
    on a GPU or TPU, smoke on a CPU). ``step_ms(task, width, model, solver)``: the per-step cost (default:
    [`pgdiag.experiments.costs.measured_step_ms`][pgdiag.experiments.costs.measured_step_ms])."""
    if name not in NAMES:
        raise ConfigError(f"unknown notebook scale {name!r}; choose one of: {', '.join(NAMES)} (auto: the largest "
                          f"scale whose estimated duration here fits the time budget)")
    if isinstance(budget_minutes, bool) or not isinstance(budget_minutes, (int, float)) or not budget_minutes > 0:
        raise ConfigError(f"the time budget must be a number of minutes > 0, got {budget_minutes!r}")
    if notebook is not None and notebook not in NOTEBOOKS:
        raise ConfigError(f"unknown notebook {notebook!r}; notebooks: {', '.join(NOTEBOOKS)}")
    backend = backend or jax.default_backend()
    if name != "auto":
        return Choice(name=name, backend=backend, scale="smoke" if name == "tiny" else name, tiny=name == "tiny")
    if notebook is None:
        scale = "paper" if backend in ("gpu", "tpu", "cuda", "rocm") else "smoke"
        return Choice(name=name, backend=backend, scale=scale, tiny=False)
    step_ms = step_ms or costs.measured_step_ms()
    budget, estimates, scale = budget_minutes * 60.0, [], None
    def floor(task, width, *physics):  # a batched step costs at least one environment's: one timing per task
        return step_ms(task, 1, *physics)

    for candidate in AUTO_ORDER:
        try:
            seconds, bound = estimate(notebook, candidate, floor), True
        except ConfigError:   # a target without this scale (the training targets have no mid)
            continue
        if scale is None and seconds is not None and seconds <= budget:
            seconds, bound = estimate(notebook, candidate, step_ms), False   # time the widths it needs
            scale = candidate if seconds is not None and seconds <= budget else None
        estimates.append((candidate, seconds, bound))
    # nothing fits: the tiny settings (seconds per target), never a scale estimated over the budget
    return Choice(name=name, backend=backend, scale=scale or AUTO_ORDER[-1], tiny=scale is None,
                  estimates=tuple(estimates), budget_s=budget)


__all__ = ["AUTO_ORDER", "NAMES", "NOTEBOOKS", "TINY_DIAG", "TINY_TRAINING", "Choice", "choose", "estimate",
           "programs", "quickstart_sweep"]
