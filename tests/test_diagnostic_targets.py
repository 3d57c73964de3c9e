"""The gradient-diagnostic targets: measuring given run directories, redrawing from disk with zero compiles,
reusing saved measurements, and the CLI's refusals."""

import os
import shutil

import numpy as np
import pytest

from pgdiag import preset, sweep
from pgdiag.cli import main
from pgdiag.config import ConfigError
from pgdiag.experiments import targets
from pgdiag.studies.gradients import targets as gradients
from pgdiag.run import CompileCounter

DIAG = dict(sizes=(100, 1000), estimates=3, true_pairs=4096)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("figs")
    out = []
    for algo in ("ppo", "trpo"):
        path = str(root / algo)
        sweep(preset(algo, "point_mass").replace(num_iterations=2, checkpoint_at=(1,)), out=path)
        out.append(path)
    return out


def test_targets_measure_given_runs_then_redraw_and_reuse_without_compiling(runs, tmp_path, monkeypatch):
    out = str(tmp_path / "study")
    first = targets.get("fig-grad-variance").train(out=out, runs=runs, diag=DIAG)
    assert os.path.isfile(first["figure"]) and set(first["summary"].label) == {"ppo", "trpo"}
    assert set(first["summary"].task) == {"point_mass"}      # the runs' own task, not "runs"
    assert set(first["summary"].columns) >= {"n_at_0.5", "n_at_0.9", "at_batch_size"}
    drawn = []  # every figure's lines (label, y) as it is saved
    save = gradients.figures.save
    monkeypatch.setattr(gradients.figures, "save", lambda fig, *a, **k: drawn.append(
        [(line.get_label(), list(line.get_ydata())) for ax in fig.axes for line in ax.get_lines()]) or save(
        fig, *a, **k))
    with CompileCounter() as cc:
        true = targets.get("fig-grad-true").train(out=out, runs=runs, diag=DIAG)  # the saved measurement
        redrawn = targets.get("fig-grad-variance").redraw(out)
    assert cc.count == 0
    assert redrawn["summary"].equals(first["summary"]) and os.path.isfile(true["figure"])
    # the truth's own convergence: 4,096 pairs = R = 4 streams of the largest N (the batch, 1,024), split 2 + 2
    # (k = 2), so each subject's ceiling is √(2ρ/(1 + ρ)) of its split-half cosine ρ; the figure draws, per
    # algorithm and checkpoint, the mean over its agents as a horizontal line, and only fig-grad-true does
    (study,) = true["studies"].values()
    subjects = study.subjects
    rho = subjects.truth_split_half.to_numpy()
    assert np.all(subjects.true_ratio == 4.0) and np.all(np.abs(rho) <= 1 + 1e-6)
    np.testing.assert_allclose(subjects.truth_ceiling, np.sqrt(np.clip(2 * rho / (1 + rho), 0, 1)), rtol=1e-6)
    summary = true["summary"]
    assert set(summary.columns) >= {"true_ratio", "truth_split_half", "truth_ceiling"}
    assert "truth_ceiling" not in redrawn["summary"]
    ceilings = {(lab.split(":")[0], y[0]) for lab, y in drawn[0] if "(the curves' ceiling)" in lab}
    expected = subjects.groupby("label").truth_ceiling.mean()   # one checkpoint (iteration 1)
    assert {lab for lab, _ in ceilings} == set(expected.index)
    for lab, y in ceilings:
        assert y == pytest.approx(expected[lab], abs=1e-9)
    assert not any("truth's ceiling" in lab for lab, _ in drawn[1])
    steps = targets.get("fig-step-variance").train(out=out, runs=runs, diag=dict(batches=2))
    assert set(steps["summary"].columns) >= {"step_cosine", "pairwise_kl", "step_norm"}


def test_cli_measures_a_run_and_refuses_mixed_options(runs, tmp_path, capsys):
    out, run = str(tmp_path / "cli"), str(tmp_path / "ppo")
    shutil.copytree(runs[0], run, ignore=shutil.ignore_patterns("diagnostics"))  # a run never measured
    assert main(["fig-grad-variance", "--run", run, "--out", out, "--diag", "sizes=100,1e3",
                 "--diag", "estimates=2", "--no-progress"]) == 0
    assert "n_at_0.5" in capsys.readouterr().out
    # a study elsewhere measuring the same run otherwise would change what the first one draws: refused,
    # naming it (the run records its readers); with the same settings it reads the saved measurement
    elsewhere = str(tmp_path / "elsewhere" / "g2")
    assert main(["fig-grad-variance", "--run", run, "--out", elsewhere, "--diag", "sizes=100",
                 "--diag", "estimates=2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"holds the 'gradients' measurement that {os.path.abspath(out)} reads" in err
    assert "sizes: [100, 1000] saved, [100] asked" in err and not os.path.exists(elsewhere)
    assert main(["fig-grad-variance", "--run", run, "--out", elsewhere, "--diag", "sizes=100,1e3",
                 "--diag", "estimates=2", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["fig-grad-variance", "--from", out, "--run", runs[0]]) == 2
    assert "--run and --diag choose what to measure" in capsys.readouterr().err
    assert main(["fig-step-variance", "--from", out]) == 2
    assert "the study there has no 'steps' measurement; run fig-step-variance --out" in capsys.readouterr().err
    assert main(["fig-grad-true", "--run", runs[0], "--diag", "estimates=ten"]) == 2
    assert "--diag estimates takes an integer" in capsys.readouterr().err
    assert main(["fig-grad-true", "--run", runs[0], "--diag", "K=3"]) == 2
    assert "name one of sizes, estimates" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="holds no study"):
        targets.get("fig-grad-true").redraw(str(tmp_path))
