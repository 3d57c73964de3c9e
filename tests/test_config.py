"""Bad input fails with a clear message naming the value and what is allowed, before any compile."""

import numpy as np
import pytest

from pgdiag import Config, ConfigError, preset, roster, sweep
from pgdiag.cli import main as cli_main
from pgdiag.run import CompileCounter


@pytest.fixture
def no_compiles():
    with CompileCounter() as counter:
        yield
    assert counter.count == 0, "validation must fail before anything is compiled"


BASE = dict(num_envs=2, steps_per_env=32, num_iterations=2, num_minibatches=4)


@pytest.mark.parametrize("call, message", [
    (lambda: preset("ppo", "cheetah"), "unknown task 'cheetah'"),
    (lambda: Config().replace(task="cheetah"), "tasks are: "),
    (lambda: preset("a2c", "hopper"), "unknown preset algorithm 'a2c'"),
    (lambda: Config().replace(lr_polcy=1e-3), "unknown setting 'lr_polcy'"),
    (lambda: Config().replace(lr_policy="fast"), "knob 'lr_policy' must be a number > 0, got 'fast'"),
    (lambda: Config().replace(value_clipping=1), "knob 'value_clipping' must be True or False, got 1"),
    (lambda: Config().replace(lr_policy=0.0), "knob 'lr_policy' must be a number > 0, got 0.0"),
    (lambda: Config().replace(lr_value=-1e-4), "knob 'lr_value' must be a number > 0, got -0.0001"),
    (lambda: Config().replace(gamma=1.5), "knob 'gamma' must be a number in (0, 1], got 1.5"),
    (lambda: Config().replace(lr_policy=float("nan")), "knob 'lr_policy' must be a number > 0, got nan"),
    (lambda: Config().replace(num_envs=0), "num_envs must be a positive int, got 0"),
    (lambda: Config().replace(steps_per_env=2.5), "steps_per_env must be a positive int, got 2.5"),
    (lambda: Config().replace(task="point_mass", num_envs=3, steps_per_env=100, num_minibatches=32),
     "batch of num_envs × steps_per_env = 3 × 100 = 300 samples does not divide into num_minibatches = 32"),
    (lambda: Config().replace(task="point_mass", num_envs=1, steps_per_env=32, num_minibatches=32),
     "minibatches of 1 sample(s) are too small"),
])
def test_bad_config_values(call, message, no_compiles):
    with pytest.raises(ConfigError) as err:
        call()
    assert message in str(err.value)


@pytest.mark.parametrize("grid, seeds, message", [
    ({"lr_policy": []}, 1, "grid axis 'lr_policy' needs a non-empty list of values"),
    ([], 1, "grid is an empty list of points"),
    ({"lr_polcy": [1e-4]}, 1, "unknown knob 'lr_polcy' in grid"),
    ({"num_envs": [1, 2]}, 1, "'num_envs' is a static setting"),
    ({"lr_policy": [1e-4, 0.0]}, 1, "knob 'lr_policy' must be a number > 0, got 0.0"),
    ({"value_clipping": ["yes"]}, 1, "knob 'value_clipping' must be True or False, got 'yes'"),
    ({}, 0, "seeds must be a positive count"),
    ({}, [1, 1], "seeds contain duplicates"),
    ({}, [-1], "seeds must be a positive count or a non-empty list of ints in 0 … 2^32 − 1, got (-1,)"),
    ({}, [0, 2 ** 32], "list of ints in 0 … 2^32 − 1"),   # PRNGKey keeps 32 bits: 2^32 would be agent 0 again
    ({"lr_policy": [1e-4, 1e-4]}, 1, "grid axis 'lr_policy' repeats 0.0001; give each value once"),
    (42, 1, "grid must be a mapping knob -> values or a list of points"),
    ([{"lr_policy": 1e-4}, {"lr_policy": 1e-4}], 1, "grid point {'lr_policy': 0.0001} repeats an earlier"),
    ([{}, {"lr_policy": 3e-4}], 1, "grid point {'lr_policy': 0.0003} repeats"),   # the base's value, omitted
])
def test_bad_sweeps(grid, seeds, message, no_compiles):
    base = preset("ppo", "point_mass", **BASE)
    with pytest.raises(ConfigError) as err:
        sweep(base, grid, seeds=seeds)
    assert message in str(err.value)


def test_plan_takes_numpy_seeds_and_refuses_repeated_labels(no_compiles):
    base = preset("ppo", "point_mass", **BASE)
    assert roster(base, None, np.arange(3)).seeds == (0, 1, 2) and roster(base, None, np.int64(2)).seeds == (0, 1)
    with pytest.raises(ConfigError, match="labels name the grid points, each its own: 'a' given twice"):
        roster(base, {"lr_policy": [1e-4, 3e-4]}, 1, labels=["a", "a"])


def test_plan_lists_the_product_seed_fastest():
    p = roster(preset("ppo", "point_mass", **BASE), {"value_clipping": [False, True], "lr_policy": [1e-4, 3e-4]},
             seeds=3)
    assert p.num_agents == 12
    assert p.points[1] == {"value_clipping": False, "lr_policy": 3e-4}
    assert list(p.agents())[:4] == [(0, 0, 0), (1, 0, 1), (2, 0, 2), (3, 1, 0)]


def test_cli_reports_bad_input_without_traceback(capsys, no_compiles):
    assert cli_main(["train", "--task", "cheetah"]) == 2
    assert "unknown task 'cheetah'" in capsys.readouterr().err
    assert cli_main(["sweep", "--task", "point_mass", "--grid", "num_envs=1,2"]) == 2
    assert "static setting" in capsys.readouterr().err
    assert cli_main(["train", "--task", "point_mass", "--set", "value_clipping=maybe"]) == 2
    assert "value_clipping takes true/false" in capsys.readouterr().err
    assert cli_main(["train", "--task", "hopper", "--set", "model=mujoco"]) == 2
    assert "unknown MuJoCo model 'mujoco'; choose one of: brax, gym" in capsys.readouterr().err


def test_text_settings_parse_as_text():
    from pgdiag.config.parse import parse_assignments

    parsed = parse_assignments(["solver=fast", "model=gym", "physics=native", "num_envs=4"], "--set")
    assert parsed == {"solver": "fast", "model": "gym", "physics": "native", "num_envs": 4}


def test_config_round_trips_through_dict():
    cfg = preset("ppo-m", "walker2d", lr_policy=2e-4)
    again = Config.from_dict(cfg.to_dict())
    assert again == cfg
    assert again.lr_policy == 2e-4 and again.static.task == "walker2d"


def test_the_former_name_of_roster_still_answers_with_a_deprecation_warning():
    import pgdiag

    base = preset("ppo", "point_mass", **BASE)
    with pytest.warns(DeprecationWarning, match="pgdiag.plan is now pgdiag.roster"):
        p = pgdiag.plan(base, {"lr_policy": [1e-4, 3e-4]}, seeds=2)
    assert p == roster(base, {"lr_policy": [1e-4, 3e-4]}, seeds=2) and p.num_agents == 4
