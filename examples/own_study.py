"""A measurement pgdiag does not have, written outside the package: the policy gradient's signal and noise
against N.

From K independent estimates ĝ_1 … ĝ_K of g at N pairs each, the mean of ĝ_i·ĝ_j over pairs i ≠ j is an
unbiased estimate of the signal energy ‖g‖², and the mean of ‖ĝ_i‖² minus it of the noise energy
E‖ĝ − g‖² = tr Σ / N (CL §5.1's ρ = noise over signal; the pairwise cosine is about 1 / (1 + ρ)). The study
reuses the gradient study's compiled program (its K estimates at every N) and tabulates what it returns
differently. Registered as the target `fig-grad-snr`, it runs through the CLI, `--dry-run`, `--from` and the
report like pgdiag's own:

    pgdiag --load examples/own_study.py fig-grad-snr --out results/grad-snr
    pgdiag --load examples/own_study.py fig-grad-snr --dry-run --scale mid
"""

import dataclasses
import os

import numpy as np

from pgdiag.diagnostics import Diagnostic, Group, Measured, Record, Shape
from pgdiag.studies.gradients import GRADIENTS, GradientSettings
from pgdiag.studies.gradients import measure as gradients
from pgdiag.experiments import diagnostic_targets, dry_run, figures, targets
from pgdiag.experiments.scales import MID_CHECKPOINTS, MID_TRAINING, Scale
from pgdiag.experiments.targets import Measurement, Target


@dataclasses.dataclass(frozen=True)
class SNRSettings:
    sizes: tuple = (128, 512, 2048)   # the N of the estimates (state–action pairs)
    estimates: int = 8                # K independent estimates at every N
    seed: int = 0
    batching: str = "vmap"

    def check(self) -> None:          # the gradient study's checks name the bad value and what is allowed
        as_gradients(self).check()


def as_gradients(s: SNRSettings) -> GradientSettings:
    """The gradient study's settings that sample the same estimates (no true gradient)."""
    return GradientSettings(sizes=tuple(s.sizes), estimates=s.estimates, seed=s.seed, batching=s.batching)


def energies(cosines, norms):
    """(signal, noise) energies from K estimates' K × K cosines and K norms: the mean off-diagonal and the mean
    diagonal of their Gram matrix, less the former."""
    norms = np.asarray(norms, np.float64)
    gram = np.asarray(cosines, np.float64) * np.outer(norms, norms)
    k = len(norms)
    signal = (gram.sum() - np.trace(gram)) / (k * (k - 1))
    return signal, np.mean(norms ** 2) - signal


@dataclasses.dataclass
class SNRStudy:
    manifest: dict
    snr: object   # DataFrame: KEYS, n, signal, noise, snr

    def summary(self):
        """Per label, iteration and N: the median agent's signal, noise and their ratio."""
        return self.snr.groupby(["label", "iteration", "n"])[["signal", "noise", "snr"]].median().reset_index()


class GradientSNR(Diagnostic[gradients.Resolved]):
    kind, title, settings, tables, result = "grad-snr", "gradient-snr", SNRSettings, ("snr",), SNRStudy

    def resolve(self, settings, statics):
        return gradients.resolve(as_gradients(settings), statics)

    def reads_optimizer(self, settings) -> bool:   # the surrogate's gradient reads no optimizer state
        return False

    def shape(self, group: Group) -> Shape:          # the gradient study's program, shaped as it shapes it
        return GRADIENTS.shape(dataclasses.replace(group, settings=as_gradients(group.settings)))

    def program(self, shape: Shape):
        return gradients.program(shape.static, shape.resolved, shape.batching)

    def frames(self, measured: Measured) -> dict:
        import pandas as pd

        out, rows = measured.outputs, []
        for s, row in enumerate(measured.subjects.rows):
            for g, n in enumerate(measured.resolved.grid.sizes):
                signal, noise = energies(out["pairwise"][s, g], out["norm"][s, g])
                rows.append({**row, "n": n, "signal": signal, "noise": noise, "snr": signal / noise})
        return {"snr": pd.DataFrame(rows)}

    def record(self, shapes) -> Record:
        return Record({"sizes": list(shapes[-1].resolved.grid.sizes), "batch_size": shapes[-1].resolved.batch_size})


def draw(target, from_dir, out=None):
    """The signal, the noise and their ratio against N, median agent per algorithm and checkpoint."""
    import pandas as pd

    record, studies = diagnostic_targets.load_measured(target, from_dir)
    out = out or from_dir
    summary = pd.concat([s.summary().assign(task=t) for t, s in studies.items()], ignore_index=True)
    plt = figures.pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for (task, label, it), part in summary.groupby(["task", "label", "iteration"]):
        for ax, column in zip(axes, ("signal", "noise", "snr")):
            ax.loglog(part.n, part[column].abs(), marker="o", label=f"{task} {label} it {it}")
            ax.set(xlabel="N (state–action pairs)", title=column)
    axes[0].legend(fontsize=7)
    path = figures.save(fig, os.path.join(out, f"{target.name}.png"), f"gradient signal and noise ({record['scale']})")
    md, csv = figures.write_table(summary, os.path.join(out, f"{target.name}-summary"), "gradient signal and noise",
                                  "signal: mean ĝ_i·ĝ_j (i ≠ j); noise: mean ‖ĝ_i‖² − signal; snr = signal / noise")
    return {"figure": path, "summary": summary, "markdown": md, "csv": csv}


SCALES = {
    "smoke": Scale(tasks=("lqr",), seeds=2, overrides={"num_envs": 4, "steps_per_env": 64, "num_iterations": 4,
                                                        "checkpoint_at": (0, 3)},
                   settings={"grad-snr": dict(sizes=(64, 256, 1024), estimates=4)},
                   description="The LQR task, 2 agents per algorithm, 4 iterations; K = 4 estimates at N ≤ 1,024."),
    "mid": Scale(**MID_TRAINING, measured_at={"grad-snr": MID_CHECKPOINTS},
                 settings={"grad-snr": dict(sizes=(128, 512, 2048, 8192), estimates=10)},
                 description="The mid scale's shared Hopper runs (PPO and TRPO, 7 agents each), checkpoints "
                             "0/31/61/92; K = 10 estimates at N ≤ 8,192."),
}

TARGET = targets.register(Target(
    "fig-grad-snr", "grad-snr", "diagnostic", "extension of CL §5.1", "gradient signal and noise energy vs N",
    scales=SCALES, run=diagnostic_targets.run, draw=draw, plan=dry_run.measurement_plan, papers=("cl",),
    presets=("ppo", "trpo"), measurement=Measurement("grad-snr", GradientSNR(), tiny=dict(sizes=(64, 256)))))
