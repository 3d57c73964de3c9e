"""The pgdiag command line, in process."""

import json

import pytest

from pgdiag import load_run
from pgdiag.cli import main

SHAPE = ["--task", "point_mass", "--set", "num_envs=2", "--set", "steps_per_env=32", "--set", "num_iterations=3",
         "--set", "num_minibatches=4", "--set", "value_epochs=2"]
SMALL = SHAPE + ["--set", "ppo_epochs=2"]  # PPO's own setting


def test_help_and_listings(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    for sub in ("train", "sweep", "fig-ablation"):
        with pytest.raises(SystemExit):
            main([sub, "--help"])
    out = capsys.readouterr().out
    assert "--grid" in out and "--set" in out and "--scale" in out

    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    assert "hopper" in out and "model=gym: 376-d obs" in out and "model=brax: 276-d obs" in out
    assert main(["knobs"]) == 0
    out = capsys.readouterr().out
    assert "value_clipping" in out and "num_envs" in out
    assert main(["presets", "--task", "humanoid", "--full"]) == 0
    out = capsys.readouterr().out
    assert "ppo / humanoid" in out and "ppo-m / humanoid" in out and "lr_policy" in out
    for algo in ("ppo-noclip", "trpo", "trpo+"):
        assert f"{algo} / humanoid" in out
    assert "kl_bound" in out and "never applied" in out  # TRPO+ says what it does with B1/B2
    # each preset lists the settings its own algorithm takes: PPO's epochs and clipping only for PPO's
    assert main(["presets", "--task", "hopper"]) == 0
    blocks = dict(b.split("\n", 1) for b in capsys.readouterr().out.split("== ")[1:])
    own = {name.split(":")[0]: body for name, body in blocks.items()}
    for algo in ("trpo / hopper", "npg / hopper", "vpg / hopper"):
        assert "ppo_epochs" not in own[algo] and ", clip_eps=" not in own[algo] and "value_epochs=10" in own[algo]
    assert "ppo_epochs=10" in own["ppo / hopper"] and ", clip_eps=0.2" in own["ppo / hopper"]


def test_train_and_sweep_write_run_directories(tmp_path, capsys):
    one = tmp_path / "one"
    assert main(["train", *SMALL, "--set", "lr_policy=1e-4", "--seed", "3", "--out", str(one)]) == 0
    run = load_run(str(one))
    assert run.manifest["seeds"] == [3] and run.config(0).lr_policy == 1e-4
    assert run.manifest["status"] == "complete"

    many = tmp_path / "many"
    assert main(["sweep", *SMALL, "--grid", "value_clipping=off,on", "--grid", "lr_policy=1e-4,3e-4",
                 "--seeds", "2", "--out", str(many), "--no-progress"]) == 0
    run = load_run(str(many))
    assert run.num_agents == 8
    assert run.manifest["grid_axes"] == ["value_clipping", "lr_policy"]
    assert sorted(run.metrics.lr_policy.unique()) == [1e-4, 3e-4]
    capsys.readouterr()
    assert main(["show", str(many)]) == 0
    out = capsys.readouterr().out
    assert "agents: 8" in out and "final_return" in out
    manifest = (many / "manifest.json").read_text()
    json.loads(manifest)
    # a figure goes to an image file, never over the run's own files; a file where a directory goes is one line
    assert main(["plot", str(many), "--metric", "mean_return", "--out", str(many / "manifest.json")]) == 2
    assert "give a figure file ending in one of" in capsys.readouterr().err
    assert (many / "manifest.json").read_text() == manifest
    (tmp_path / "afile").write_text("")
    assert main(["plot", str(many), "--metric", "mean_return", "--out", str(tmp_path / "afile" / "x.png")]) == 2
    assert capsys.readouterr().err.startswith("pgdiag: error: [Errno")


def test_train_every_algorithm_preset_from_the_cli(tmp_path, capsys):
    for algo in ("trpo", "trpo+", "ppo-noclip"):
        out = tmp_path / algo
        assert main(["train", "--preset", algo, *(SMALL if algo.startswith("ppo") else SHAPE), "--out", str(out)]) == 0
        run = load_run(str(out))
        assert run.config(0).static.algorithm == ("trpo" if algo.startswith("trpo") else "ppo")
        assert not run.metrics.diverged.any()
    # PPO's own setting given to TRPO is refused, before compiling, naming whose it is
    assert main(["train", "--preset", "trpo", *SMALL, "--out", str(tmp_path / "bad")]) == 2
    assert "static setting ppo_epochs=2 belongs to ppo, ppo-kl; algorithm 'trpo'" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["train", "--preset", "ppo", "--task", "point_mass", "--set", "algorithm=trpo"],
     "preset('ppo', 'point_mass'): algorithm='trpo' cannot be an override"),
    (["sweep", "--preset", "ppo", "--task", "point_mass", "--grid", "algorithm=ppo,trpo"],
     "'algorithm' cannot be a grid axis of one compiled sweep"),
    (["sweep", "--preset", "ppo", "--task", "point_mass", "--grid", "lr_policy=1e-4", "--grid", "lr_policy=3e-4"],
     "--grid lr_policy is given twice; give all of its values in one: --grid lr_policy=v1,v2,..."),
    (["fig-grad-variance", "--dry-run", "--set", "task=lqr"], "task='lqr' cannot be an override"),
    (["fig-ablation", "--dry-run", "--set", "task=point_mass"], "fig-ablation sets task itself"),
    (["fig-ablation", "--dry-run", "--set", "value_clipping=true"], "fig-ablation sets value_clipping itself"),
    (["fig-ablation", "--dry-run", "--set", "lr_policy=1e-3"], "fig-ablation sets lr_policy itself"),
])
def test_what_a_preset_or_a_study_sets_itself_is_refused_as_an_override(args, message, capsys):
    """A preset is its algorithm on its task, and fig-ablation sweeps its toggles and learning rates: --set
    naming one of them would train something else under the same name (or be silently overridden)."""
    from pgdiag.run import CompileCounter

    with CompileCounter() as counter:
        assert main(args) == 2
    assert counter.count == 0
    err = capsys.readouterr().err
    assert err.startswith("pgdiag: error: ") and message in err


@pytest.mark.parametrize("args, message", [
    (["fig-grad-variance", "--task", "lqr", "--seeds", "0", "--dry-run"],
     "fig-grad-variance: seeds must be a positive integer (or omitted for the scale's), got 0"),
    (["fig-ablation", "--seeds", "-1", "--dry-run"], "fig-ablation: seeds must be a positive integer"),
    (["fig-theorem", "--task", "lqr", "--steps", "-5"], "fig-theorem: steps must be a positive integer"),
    (["fig-theorem", "--task", "lqr", "--steps", "0", "--dry-run"], "fig-theorem: steps must be a positive integer"),
    (["fig-grad-variance", "--run", "nothere"], "--run 'nothere': 'nothere' is not a pgdiag run directory"),
    (["presets", "--task", "hoper"], "presets --task 'hoper': no preset has it; presets exist for: "),
])
def test_counts_and_paths_are_checked_before_anything_runs(args, message, capsys):
    """0 is not "the scale's default" (omitting the option is), a negative count is no plan, a missing run
    directory is named."""
    from pgdiag.run import CompileCounter

    with CompileCounter() as counter:
        assert main(args) == 2
    assert counter.count == 0
    assert message in capsys.readouterr().err


def test_a_diagnostic_studys_directory_is_named_as_no_run(tmp_path, capsys):
    """A diagnostic study's directory is not a run."""
    study = tmp_path / "run" / "diagnostics" / "gradients"
    study.mkdir(parents=True)
    (study / "manifest.json").write_text(json.dumps({"kind": "gradients", "study": "gradients"}))
    assert main(["show", str(study)]) == 2
    assert "is not a training run directory: its manifest.json is a 'gradients' diagnostic study's" in \
        capsys.readouterr().err


def test_a_target_offers_only_its_own_scales(capsys, monkeypatch):
    """A target without a mid scale (every target has one now: fig-ablation's taken away here) is refused
    --scale mid by the parser, naming the scales it has; fig-value offers all three."""
    from pgdiag.studies import ablation

    monkeypatch.delitem(ablation.SCALES, "mid")
    with pytest.raises(SystemExit) as exit_:
        main(["fig-ablation", "--scale", "mid", "--dry-run"])
    assert exit_.value.code == 2
    assert ("invalid choice: 'mid' (choose from 'smoke', 'paper', 'replication', 'replication-walker2d')"
            in capsys.readouterr().err)
    with pytest.raises(SystemExit):
        main(["fig-value", "--help"])
    assert "--scale {smoke,mid,paper,replication,replication-humanoid,tasks}" in capsys.readouterr().out


@pytest.mark.parametrize("target", ["fig-ablation", "fig-trust-region", "fig-rewards", "table-2", "table-3",
                                    "fig-theorem"])
def test_from_refuses_a_directory_without_the_right_study(target, tmp_path, capsys):
    """Before anything is loaded or compiled: the error names the directory, what it holds and what is needed."""
    from pgdiag.experiments import study_dir
    from pgdiag.run import CompileCounter

    missing, empty, run_dir, other = (tmp_path / n for n in ("missing", "empty", "run", "other"))
    empty.mkdir()
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text("{}")
    wrong = "theorem" if target != "fig-theorem" else "algorithms"
    study_dir.write(str(other), wrong, "smoke", ["point_mass"])
    capsys.readouterr()
    with CompileCounter() as counter:
        for path, holds in ((missing, "no such directory"), (empty, "empty"), (run_dir, "single run directory"),
                            (other, f"the {wrong!r} study")):
            assert main([target, "--from", str(path)]) == 2
            err = capsys.readouterr().err
            assert err.startswith("pgdiag: error: ") and str(path) in err and holds in err
            assert f"`pgdiag {target} --out DIR`" in err or "they share one study" in err
        # options that only choose what to train are refused with --from
        assert main([target, "--from", str(other), "--scale", "paper"]) == 2
        assert "--scale" in capsys.readouterr().err
    assert counter.count == 0


@pytest.mark.parametrize("target, flags", [("fig-grad-variance", ["--task", "hopper"]),
                                           ("solver-compare", ["--task", "hopper"]),
                                           ("fig-value", ["--algorithm", "npg"]),
                                           ("fig-trust-region", ["--algorithm", "npg", "--algorithm", "ppo"])])
def test_from_refuses_what_chooses_what_to_train_where_it_redraws_every_task(target, flags, tmp_path, capsys):
    """Where --from draws the study's tasks as saved, --task and --algorithm (what to train) are refused
    rather than ignored, before the directory is read."""
    assert main([target, "--from", str(tmp_path), *flags]) == 2
    err = capsys.readouterr().err
    given = list(dict.fromkeys(f for f in flags if f.startswith("--")))
    assert f"{', '.join(given)} choose{'s' if len(given) == 1 else ''} what to train and cannot be combined" in err
