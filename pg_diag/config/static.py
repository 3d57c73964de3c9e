"""Static settings: what fixes array shapes or program structure (task, physics, batch sizes, epochs,
iterations, network widths, checkpoints). They are part of the compile key: changing one recompiles."""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

from pg_diag.config import registry
from pg_diag.config.knobs import KNOB_NAMES, ConfigError, _is_bool


def _static(default, doc: str):
    return dataclasses.field(default=default, metadata={"doc": doc})


@dataclasses.dataclass(frozen=True)
class Static:
    """Settings that shape the compiled program (part of the compile key)."""

    task: str = _static("hopper", "Task name (see `pg-diag tasks`).")
    physics: str = _static("auto", "Physics backend of MuJoCo tasks: 'native' (MuJoCo's C library, multithreaded, "
                                   "called from the compiled program), 'mjx' (pure JAX), 'warp' (MuJoCo Warp "
                                   "through MJX's Warp implementation; needs pg_diag[warp], for NVIDIA GPUs) or "
                                   "'auto' (in a sweep, the backend measured faster on this host for the batch each "
                                   "device steps, Warp among them on an accelerator where it is installed; "
                                   "elsewhere native on a CPU, MJX on an accelerator). "
                                   "Pure-JAX tasks take only 'auto'.")
    physics_threads: int = _static(0, "Threads of the native backend; 0 = the cores, shared among the CPU devices.")
    placement: str = _static("auto", "Where training runs: 'device' (each iteration one program on the default "
                                     "device(s)), 'split' (the rollout with native physics compiled for the host's "
                                     "CPU, the update for the accelerator; one transfer of the batch per iteration) "
                                     "or 'auto' (split on a one-accelerator host with native physics, else device).")
    solver: str = _static("converged", "MuJoCo solver setting: 'converged' (the task's own, the same on every "
                                       "backend: native, MJX and MuJoCo Warp) or 'fast' (Brax's: 1 Newton "
                                       "iteration, 4 line-search steps; what makes MJX fast; contacts unconverged). "
                                       "MuJoCo tasks only.")
    model: str = _static("brax", "MuJoCo model: 'brax' (Brax's MJCF, Euler; the default) or 'gym' (Gym-v2's MJCF "
                                 "as the papers trained on, RK4, read from Gymnasium; Humanoid: PGS, 376-d obs, "
                                 "native MuJoCo only). MuJoCo tasks only.")
    algorithm: str = _static("ppo", "Update rule, a registered algorithm (see `pg-diag algorithms`): 'ppo' "
                                    "(clipped surrogate, minibatch Adam), 'trpo' (natural gradient + line search, "
                                    "ref §2.7), 'ppo-kl', 'npg', 'vpg' or one registered by the user.")
    num_envs: int = _static(1, "Parallel environments per agent (the original used 1).")
    steps_per_env: int = _static(2048, "Steps collected per environment per iteration; batch = num_envs × steps_per_env.")
    num_iterations: int = _static(488, "Training iterations (488 × 2048 ≈ 1M steps, ref §1).")
    value_epochs: int = _static(10, "Passes over the batch in the value update.")
    num_minibatches: int = _static(32, "Minibatches per epoch, for both updates.")
    policy_hidden: tuple = _static((64, 64), "Hidden layer widths of the policy MLP; () = a linear-Gaussian policy.")
    value_hidden: tuple = _static((64, 64), "Hidden layer widths of the value MLP.")
    reset_every_iteration: bool = _static(
        True, "Reset every environment at the start of each iteration, dropping partial episodes (ref §2.1).")
    heldout_every: int = _static(
        0, "Every this many iterations (0 = never), also collect a held-out batch with the pre-update policy "
           "and report the trust-region metrics on it (ref §4.1).")
    checkpoint_at: tuple = _static(
        (), "Save every agent's full state after these iterations (0 = before training; e.g. 0,150,300,450), "
            "kept in the run directory's checkpoints/. Needs an output directory; does not change the program.")
    checkpoint_every: int = _static(
        0, "Also save a checkpoint every this many iterations (0 = never). Does not change the program.")

    # the running algorithm's own static settings (declared in its module: PPO's ppo_epochs, TRPO's
    # cg_iterations, ...) as sorted (name, value) pairs; a Config keeps them complete
    own: tuple = _static((), "The algorithm's own static settings, (name, value) pairs.")

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


def check_static(name: str, value) -> Any:
    """Validate one static setting; return it normalized."""
    from pg_diag.envs import REGISTRY  # late import: envs import config-free modules only

    if name not in STATIC_FIELDS:
        raise ConfigError(f"unknown setting {name!r}; static settings are: {', '.join(STATIC_NAMES)}; "
                          f"knobs are: {', '.join(KNOB_NAMES)}")
    if name == "task":
        if not isinstance(value, str) or value not in REGISTRY:
            raise ConfigError(f"unknown task {value!r}; tasks are: {', '.join(sorted(REGISTRY))}")
        return value
    if name == "algorithm":
        if not isinstance(value, str) or value not in registry.names():
            raise ConfigError(f"unknown algorithm {value!r}; registered algorithms: {', '.join(registry.names())}")
        return value
    if name in ("policy_hidden", "value_hidden"):
        # () is a linear network: a linear-Gaussian policy (the LQR task's closed forms need one)
        if (not isinstance(value, (tuple, list))
                or not all(isinstance(h, numbers.Integral) and not _is_bool(h) and h > 0 for h in value)):
            raise ConfigError(f"{name} must be a tuple of positive ints (() for a linear network), got {value!r}")
        return tuple(int(h) for h in value)
    if name == "physics":
        from pg_diag.envs import PHYSICS
        if value not in PHYSICS:
            raise ConfigError(f"unknown physics backend {value!r}; choose one of: {', '.join(PHYSICS)}")
        return value
    if name == "solver":
        from pg_diag.envs import SOLVERS
        if value not in SOLVERS:
            raise ConfigError(f"unknown solver setting {value!r}; choose one of: {', '.join(SOLVERS)}")
        return value
    if name == "model":
        from pg_diag.envs import MODELS
        if value not in MODELS:
            raise ConfigError(f"unknown MuJoCo model {value!r}; choose one of: {', '.join(MODELS)}")
        return value
    if name == "placement":
        if value not in ("auto", "device", "split"):
            raise ConfigError(f"unknown placement {value!r}; choose one of: auto, device, split")
        return value
    if name == "physics_threads":
        if not isinstance(value, numbers.Integral) or _is_bool(value) or value < 0:
            raise ConfigError(f"physics_threads must be an int >= 0 (0 = every core), got {value!r}")
        return int(value)
    if name == "checkpoint_at":
        items = value if isinstance(value, (tuple, list)) else None
        if items is None or not all(isinstance(i, numbers.Integral) and not _is_bool(i) and i >= 0 for i in items):
            raise ConfigError(f"checkpoint_at must be a list of iterations (ints >= 0; 0 = before training), "
                              f"got {value!r}")
        return tuple(sorted({int(i) for i in items}))
    if name in ("heldout_every", "checkpoint_every"):
        if not isinstance(value, numbers.Integral) or _is_bool(value) or value < 0:
            raise ConfigError(f"{name} must be an int >= 0 (0 = never), got {value!r}")
        return int(value)
    if name == "reset_every_iteration":
        if not _is_bool(value):
            raise ConfigError(f"{name} must be True or False, got {value!r}")
        return bool(value)
    if not isinstance(value, numbers.Integral) or _is_bool(value) or value < 1:
        raise ConfigError(f"{name} must be a positive int, got {value!r} ({type(value).__name__})")
    return int(value)
