"""Every refusal of a user's file, path or option reaches the command line as one line (exit code 2): no traceback,
no terminal escape codes from the file's bytes, at most a few hundred characters, hints naming flags that exist."""

import json
import os
import pathlib

from pgdiag.cli import main, one_line

DATA = pathlib.Path(__file__).parent / "data"


def refused(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pgdiag: error: ") and "Traceback" not in err, err
    assert lines[0].isprintable() and len(lines[0]) <= 420, lines[0]
    return lines[0]


def test_one_line_escapes_control_characters_and_caps_the_length():
    assert one_line("a\nb\tc\x1b[31mred") == "a b c\\x1b[31mred"
    assert len(one_line("x" * 10_000)) == 400 and one_line("x" * 10_000).endswith("…")


def test_an_import_of_a_missing_or_hostile_file_is_one_line(tmp_path, capsys):
    line = refused(capsys, ["import", "cleanrl", str(tmp_path / "missing"), "--task", "hopper", "--out",
                            str(tmp_path / "run")])
    assert "cannot read the CleanRL checkpoint" in line and "No such file" in line
    hostile = tmp_path / "escape.pkl"   # a global whose name carries terminal escape codes
    hostile.write_bytes(b"\x80\x02c\x1b[2J\x1b[31mos\nsystem\n.")
    line = refused(capsys, ["import", "brax", str(hostile), "--task", "hopper", "--out", str(tmp_path / "run")])
    assert "refusing to load \\x1b[2J\\x1b[31mos.system" in line
    assert not (tmp_path / "run").exists()


def test_an_import_into_a_taken_directory_names_the_flag_that_replaces_it(tmp_path, capsys):
    args = ["import", "cleanrl", str(DATA / "cleanrl_hopper.cleanrl_model"), "--task", "hopper", "--model", "gym",
            "--out", str(tmp_path / "run")]
    assert main(args) == 0
    capsys.readouterr()
    assert "--overwrite" in refused(capsys, args)
    assert main(args + ["--overwrite"]) == 0


def test_a_host_profile_with_a_bad_key_or_deep_nesting_is_one_line(tmp_path, capsys):
    from pgdiag.envs import hosts

    path = tmp_path / "host.json"
    profile = hosts.to_json(hosts.this_host())
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    line = refused(capsys, ["fig-grad-variance", "--dry-run", "--scale", "smoke", "--host", str(deep)])
    assert "cannot be read as JSON" in line
    profile["physics"] = {"²": []}   # a digit to str.isdigit, not to int()
    path.write_text(json.dumps(profile))
    assert "\"physics\" must map physics threads" in refused(
        capsys, ["fig-grad-variance", "--dry-run", "--scale", "smoke", "--host", str(path)])


def test_a_manifest_nested_too_deep_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    os.makedirs(run)
    (run / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    assert "cannot be read" in refused(capsys, ["show", str(run)])


def test_a_run_whose_agents_finish_no_episode_says_why_their_returns_are_nan(tmp_path, capsys):
    """Pendulum's episodes last 200 steps without termination; 2 iterations of 16 steps finish none."""
    from pgdiag.envs.registry import episode_limit

    assert main(["train", "--preset", "ppo", "--task", "pendulum", "--set", "num_envs=2", "--set",
                 "steps_per_env=16", "--set", "num_iterations=2", "--set", "num_minibatches=2", "--no-progress",
                 "--out", str(tmp_path / "run")]) == 0
    assert episode_limit("pendulum") == 200
    assert ("1 of 1 agents finished no episode in their 32 steps per environment (episodes of pendulum last up "
            "to 200)") in capsys.readouterr().err
