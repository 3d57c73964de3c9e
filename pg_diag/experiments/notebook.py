"""The notebooks' choice of scale: what a notebook in ``notebooks/`` trains and measures where it runs.

``choose("auto")`` picks the papers' scale on a GPU or TPU and the smoke scale on a CPU; ``"paper"`` and
``"smoke"`` force one; ``"tiny"`` is seconds per target on a CPU (the test suite runs every notebook at it:
the cheap ``point_mass`` task for training studies, the linear-quadratic task for diagnostics, a few
iterations, small measurements). A notebook passes ``choice.train()`` or ``choice.diagnostic(target)`` to a
target's ``run`` function, so a notebook runs exactly what the matching make target runs.
"""

from __future__ import annotations

import dataclasses

import jax

from pg_diag.config import CPU_SCALE, ConfigError

NAMES = ("auto", "paper", "smoke", "tiny")

#: a few iterations of a small batch (what the suite's experiment tests train)
TINY_TRAINING = dict(num_envs=2, steps_per_env=32, num_iterations=6, num_minibatches=4, ppo_epochs=2, value_epochs=2)

#: the diagnostic targets' measurement settings at the tiny scale
TINY_DIAG = {
    "fig-grad-variance": dict(sizes=(100, 1000), estimates=3, true_pairs=4096),
    "fig-grad-true": dict(sizes=(100, 1000), estimates=3, true_pairs=4096),
    "fig-step-variance": dict(batches=2),
    "fig-baselines": dict(sizes=(100, 1000), estimates=3, fit_pairs=2048, fit_epochs=2),
    "fig-landscape-concentration": dict(points=3, sizes=(512, 1024), envs=4),
    "fig-landscape-surrogate": dict(points=3, sizes=(1024,), envs=4, step_pairs=(0, 2048)),
}


@dataclasses.dataclass(frozen=True)
class Choice:
    name: str                 # what the notebook asked for (auto resolved)
    backend: str              # jax's default backend here: cpu, gpu or tpu
    scale: str                # the targets' scale: paper or smoke
    tiny: bool                # the tiny overrides on top of the smoke scale

    def sweep(self) -> dict:
        """The quickstart's sweep: ``task``, preset ``overrides`` and ``seeds`` (Hopper at the paper's or the
        CPU's scale; ``point_mass`` at the tiny one)."""
        if self.tiny:
            return dict(task="point_mass", overrides=dict(TINY_TRAINING), seeds=2)
        if self.scale == "smoke":
            return dict(task="hopper", overrides={**CPU_SCALE, "num_iterations": 30}, seeds=3)
        return dict(task="hopper", overrides={}, seeds=5)

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
        return f"backend {self.backend}: {picked}" + (" (auto)" if self.name == "auto" else "")


def choose(name: str = "auto", backend: str | None = None) -> Choice:
    """The scale for ``name`` (one of :data:`NAMES`) on ``backend`` (default: jax's default backend)."""
    if name not in NAMES:
        raise ConfigError(f"unknown notebook scale {name!r}; choose one of: {', '.join(NAMES)} (auto: paper on a "
                          f"GPU or TPU, smoke on a CPU)")
    backend = backend or jax.default_backend()
    if name == "auto":
        scale = "paper" if backend in ("gpu", "tpu", "cuda", "rocm") else "smoke"
    else:
        scale = "smoke" if name == "tiny" else name
    return Choice(name=name, backend=backend, scale=scale, tiny=name == "tiny")


__all__ = ["NAMES", "TINY_DIAG", "TINY_TRAINING", "Choice", "choose"]
