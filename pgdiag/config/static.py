"""Static settings: what fixes array shapes or program structure (task, physics, batch sizes, epochs,
iterations, network widths, checkpoints). They are part of the compile key: changing one recompiles."""

from __future__ import annotations

import dataclasses
from typing import Any

from pgdiag.config import registry
from pgdiag.config.knobs import KNOB_NAMES, ConfigError
from pgdiag.config.setting import Choices, Range, declared, setting


def _registered(table: str, sort: bool = False):
    """The names in ``pgdiag.envs``'s ``table`` (tasks, physics backends, ...), read when a value is checked:
    envs import config-free modules only, so the configuration reads them late."""
    def names() -> tuple:
        from pgdiag import envs
        values = getattr(envs, table)
        return tuple(sorted(values)) if sort else tuple(values)
    return names


def _networks() -> tuple:
    """The registered networks' names, read when a value is checked (networks sit above the configuration)."""
    from pgdiag import networks
    return networks.names()


_POSITIVE_INT = Range(1)
_COUNT = Range(0)
_ITERATIONS = dict(allowed="a list of iterations (ints >= 0; 0 = before training)", items=Range(0),
                   convert=lambda v: tuple(sorted({int(i) for i in v})))


@dataclasses.dataclass(frozen=True)
class Static:
    """Settings that shape the compiled program (part of the compile key)."""

    task: str = setting("hopper", "Task name (see `pgdiag tasks`).",
                         Choices(_registered("REGISTRY", sort=True), noun="task", intro="tasks are"))
    physics: str = setting("auto", "Physics backend of MuJoCo tasks: 'native' (MuJoCo's C library, multithreaded, "
                                   "called from the compiled program), 'mjx' (pure JAX), 'warp' (MuJoCo Warp "
                                   "through MJX's Warp implementation; needs pgdiag-rl[warp], for NVIDIA GPUs) or "
                                   "'auto' (in a sweep, the backend measured faster on this host for the batch each "
                                   "device steps, Warp among them on an accelerator where it is installed; "
                                   "elsewhere native on a CPU, MJX on an accelerator). "
                                   "Pure-JAX tasks take only 'auto'.",
                                   Choices(_registered("PHYSICS"), noun="physics backend"))
    physics_threads: int = setting(0, "Threads of the native backend; 0 = the cores, shared among the CPU devices.",
                                   _COUNT, why="0 = every core")
    placement: str = setting("auto", "Where training runs: 'device' (each iteration one program on the default "
                                     "device(s)), 'split' (the rollout with native physics compiled for the host's "
                                     "CPU, the update for the accelerator; one transfer of the batch per iteration) "
                                     "or 'auto' (split on a one-accelerator host with native physics, else device). "
                                     "Its studies: on the host's CPU with 'split' (and 'auto' there), else on the "
                                     "default device(s).",
                                     Choices(("auto", "device", "split"), noun="placement"))
    solver: str = setting("converged", "MuJoCo solver setting: 'converged' (the task's own, the same on every "
                                       "backend: native, MJX and MuJoCo Warp) or 'fast' (Brax's: 1 Newton "
                                       "iteration, 4 line-search steps; what makes MJX fast; contacts unconverged). "
                                       "MuJoCo tasks only.", Choices(_registered("SOLVERS"), noun="solver setting"))
    model: str = setting("brax", "MuJoCo model: 'brax' (Brax's MJCF, Euler; the default) or 'gym' (Gym-v2's MJCF "
                                 "as the papers trained on, RK4, read from Gymnasium; Humanoid: PGS, 376-d obs, "
                                 "native MuJoCo only). MuJoCo tasks only.",
                                 Choices(_registered("MODELS"), noun="MuJoCo model"))
    algorithm: str = setting("ppo", "Update rule, a registered algorithm (see `pgdiag algorithms`): 'ppo' "
                                    "(clipped surrogate, minibatch Adam), 'trpo' (natural gradient + line search, "
                                    "ref §2.7), 'ppo-kl', 'npg', 'vpg' or one registered by the user.",
                                    Choices(registry.names, noun="algorithm", intro="registered algorithms"))
    num_envs: int = setting(1, "Parallel environments per agent (the original used 1).", _POSITIVE_INT)
    steps_per_env: int = setting(2048, "Steps collected per environment per iteration; batch = num_envs × "
                                       "steps_per_env.",
                                 _POSITIVE_INT)
    num_iterations: int = setting(488, "Training iterations (488 × 2048 ≈ 1M steps, ref §1).", _POSITIVE_INT)
    value_epochs: int = setting(10, "Passes over the batch in the value update.", _POSITIVE_INT)
    num_minibatches: int = setting(32, "Minibatches per epoch, for both updates.", _POSITIVE_INT)
    network: str = setting("mlp", "Policy and value networks, a registered network (see "
                                  "`pgdiag.networks.register_network`): 'mlp' (the papers': a Gaussian MLP with a "
                                  "state-independent σ, tanh or ReLU units by knob; also CleanRL's and "
                                  "Stable-Baselines3's default), 'brax' (Brax PPO's default: swish units, a "
                                  "state-dependent σ, actions squashed by tanh) or one registered by the user.",
                           Choices(_networks, noun="network", intro="registered networks"))
    policy_hidden: tuple = setting((64, 64), "Hidden layer widths of the policy MLP; () = a linear-Gaussian policy.",
                                   items=_POSITIVE_INT, why="() for a linear network")
    value_hidden: tuple = setting((64, 64), "Hidden layer widths of the value MLP.", items=_POSITIVE_INT,
                                  why="() for a linear network")
    reset_every_iteration: bool = setting(
        True, "Reset every environment at the start of each iteration, dropping partial episodes (ref §2.1).")
    heldout_every: int = setting(
        0, "Every this many iterations (0 = never), also collect a held-out batch with the pre-update policy "
           "and report the trust-region metrics on it (ref §4.1).", _COUNT, why="0 = never")
    checkpoint_at: tuple = setting(
        (), "Save every agent's full state after these iterations (0 = before training; e.g. 0,150,300,450), "
            "kept in the run directory's checkpoints/. Needs an output directory; does not change the program.",
        **_ITERATIONS)
    checkpoint_every: int = setting(
        0, "Also save a checkpoint every this many iterations (0 = never). Does not change the program.", _COUNT,
        why="0 = never")

    # the running algorithm's own static settings (declared in its module: PPO's ppo_epochs, TRPO's
    # cg_iterations, ...) as sorted (name, value) pairs; a Config keeps them complete
    own: tuple = dataclasses.field(default=(), metadata={"doc": "The algorithm's own static settings, (name, value) "
                                                                "pairs."})

    def __getattr__(self, item):
        # only reached when normal lookup fails: an own setting by name, else the algorithm's declared default
        # (a Static built directly, outside a Config)
        if item != "own" and "own" in self.__dict__:
            for name, value in self.own:
                if name == item:
                    return value
            option = registry.get(self.algorithm).static.get(item)
            if option is not None:
                return option.default
        raise AttributeError(f"{type(self).__name__} has no setting {item!r}")

    def values(self) -> dict:
        """Every setting by name: the shared ones, then the algorithm's own."""
        return {**{name: getattr(self, name) for name in STATIC_NAMES}, **dict(self.own)}

    def checkpoint_iterations(self) -> tuple:
        """The iterations after which a checkpoint is kept, sorted (0 = the initial state)."""
        every = range(self.checkpoint_every, self.num_iterations + 1, self.checkpoint_every) \
            if self.checkpoint_every else ()
        return tuple(sorted(set(self.checkpoint_at) | set(every)))

    def program(self) -> "Static":
        """These settings less those that do not shape the compiled program (the compile key)."""
        return dataclasses.replace(self, checkpoint_at=(), checkpoint_every=0)

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.steps_per_env

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches


STATIC_FIELDS = {f.name: f for f in dataclasses.fields(Static) if f.name != "own"}
STATIC_NAMES = tuple(STATIC_FIELDS)


#: name -> the `Setting` declaring each shared static setting
STATIC_SETTINGS = declared(Static)


def check_static(name: str, value) -> Any:
    """Validate one static setting against its declaration; return it normalized."""
    if name not in STATIC_SETTINGS:
        raise ConfigError(f"unknown setting {name!r}; static settings are: {', '.join(STATIC_NAMES)}; "
                          f"knobs are: {', '.join(KNOB_NAMES)}")
    return STATIC_SETTINGS[name].normalize(name, value, "")
