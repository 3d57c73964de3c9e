"""A target of one's own, declared here and registered, runs through the CLI, the dry run and the report like
pgdiag's own: the table is the only place that knows a target."""

import os

import pandas as pd
import pytest

from pgdiag.cli import main
from pgdiag.config import preset
from pgdiag.experiments import dry_run, study_dir, targets
from pgdiag.experiments.scales import Scale, pick
from pgdiag.experiments.targets import Target

# Six agents' step cosines, all below the 0.5 of CL's "steps-vary" claim: the median agent's exact interval at 6
# agents is [min, max] = [0.05, 0.3] (coverage 1 − 2/64 ≈ 0.97), wholly below 0.5, so the claim holds.
COSINES = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3)
SCALES = {"smoke": Scale(tasks=("point_mass",), seeds=6, description="six agents' numbers, nothing trained"),
          "paper": Scale(tasks=("point_mass",), seeds=6, description="the same")}


def run(target, scale, out=None, tasks=None, seeds=None, progress=None, **overrides):
    sc = pick(target.scales, scale)
    tasks = tuple(tasks or sc.tasks_of())
    os.makedirs(out, exist_ok=True)
    pd.DataFrame({"agent": range(len(COSINES)), "cosine": COSINES}).to_csv(os.path.join(out, "cosines.csv"))
    study_dir.write(out, target.study, scale, tasks)
    return target.redraw(out)


def draw(target, from_dir, out=None):
    record = study_dir.read(from_dir, target.study, target.name)
    frame = pd.read_csv(os.path.join(from_dir, "cosines.csv"))
    out = out or from_dir
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{target.name}.md")
    with open(path, "w") as f:
        f.write(f"{record['scale']}: median cosine {frame.cosine.median():.3f}\n")
    return {"markdown": path, "summary": frame}


def plan(target, scale, tasks=None, seeds=None, memory=1 << 62, **overrides):
    sc = pick(target.scales, scale)
    static = preset("ppo", "point_mass", **overrides).static
    return [dry_run.training_program(t, "ppo", static, seeds or sc.seeds, memory) for t in tasks or sc.tasks_of()]


def evidence(target, from_dir, notes):
    record = study_dir.read(from_dir, target.study, target.name)
    frame = pd.read_csv(os.path.join(from_dir, "cosines.csv"))
    return [{"evidence": "step_pairwise", "task": record["tasks"][0], "label": "ppo", "agent": str(r.agent),
             "value": r.cosine} for r in frame.itertuples()]


OWN = Target("fig-own-steps", "own-steps", "training", "CL Fig 13 (numbers of one's own)",
             "six agents' step cosines from a file", scales=SCALES, run=run, draw=draw, plan=plan, evidence=evidence,
             papers=("cl",), provides=("step_",))


@pytest.fixture
def registered():
    targets.register(OWN)
    try:
        yield OWN
    finally:
        targets.unregister(OWN.name)
    assert OWN.name not in targets.TARGETS


def test_a_registered_target_runs_through_the_cli_the_dry_run_and_the_report(registered, tmp_path, capsys):
    root = tmp_path / "results"
    out = root / "own"
    assert main([OWN.name, "--out", str(out)]) == 0
    assert "median cosine 0.175" in capsys.readouterr().out          # (0.15 + 0.2) / 2
    assert (out / "study.json").exists()

    assert main([OWN.name, "--dry-run", "--seeds", "3"]) == 0
    shown = capsys.readouterr().out
    assert "point_mass" in shown and "1 programs" in shown
    assert plan(OWN, "smoke", seeds=3)[0].units == 3

    assert main([OWN.name, "--from", str(out), "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / f"{OWN.name}.md").exists()

    assert main(["report", "--from", str(root), "--out", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "report.md").read_text()
    claims = pd.read_csv(tmp_path / "report" / "claims.csv")
    vary = claims[claims.claim == "steps-vary"].iloc[0]
    # read on point_mass, not CL Fig 13's MuJoCo tasks: an exploratory reading of the same numbers, no verdict
    assert vary.verdict == "not measured where the paper made it" and vary.scope == "exploratory"
    assert vary.agents == len(COSINES) and (vary.low, vary.high) == (min(COSINES), max(COSINES))
    assert f"### {OWN.name}" in page and "`own-steps`" in page
    # a claim it does not provide names no target of its own; one pgdiag's targets provide names them
    assert "run fig-grad-variance" in page


def test_an_unregistered_target_is_unknown_again(tmp_path):
    targets.register(OWN)
    targets.unregister(OWN.name)
    with pytest.raises(SystemExit):
        main([OWN.name, "--out", str(tmp_path)])
