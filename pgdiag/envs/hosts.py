"""The host a plan is made for: this one, or one declared by a profile saved on another.

A plan ([`pgdiag.experiments.dry_run`][pgdiag.experiments.dry_run]) reads what the host has — its accelerator,
devices, cores and memory — and what it has measured: the physics' cost per batched step at recorded widths
([`pgdiag.envs.crossover`][pgdiag.envs.crossover]) and its programs' own cost per step
([`pgdiag.run.timings`][pgdiag.run.timings]). A researcher with a GPU box and a laptop saves that box's profile
once (``pgdiag host save gpu.json`` there, or the accelerator report's ``host-profile.json``) and plans on the
laptop as if there: ``pgdiag report --dry-run --scale paper --host gpu.json``. Under a declared host
([`declare`][pgdiag.envs.hosts.declare]) every decision a plan makes — the physics ``auto`` picks at a width,
where a study runs, the memory it is shaped against, each step's cost — reads the profile, and nothing is timed:
a width the profile has no measurement for is costed from its nearest rows, or left without an estimate.

Only plans consult the declared host; a run always runs on the host it is on.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import os

from pgdiag.errors import ConfigError

#: what a profile file says it is
FORMAT = "pgdiag host profile"
#: the version of its layout (a profile of another version is refused, not misread)
VERSION = 1


@dataclasses.dataclass(frozen=True)
class Host:
    """A host as plans see it. ``physics``: physics threads -> the crossover rows recorded with that many
    ([`pgdiag.envs.crossover.measure`][pgdiag.envs.crossover.measure]); ``costs``: the programs' recorded costs per
    step ([`pgdiag.run.timings`][pgdiag.run.timings])."""

    platform: str                 # "cpu", "gpu" or "tpu": the default device's platform
    device_kind: str              # e.g. "NVIDIA H100 80GB HBM3"
    devices: int                  # default devices of all processes
    cpu_devices: int              # the CPU devices of one process (a split run's and a host study's blocks)
    cores: int
    processes: int = 1
    device_memory: int | None = None   # bytes one accelerator device allows a program (None: a CPU host, or unknown)
    host_memory: int = 0               # the host's RAM in bytes
    physics: dict = dataclasses.field(default_factory=dict)
    costs: list = dataclasses.field(default_factory=list)
    source: str = ""

    @property
    def accelerator(self) -> bool:
        return self.platform != "cpu"

    def describe(self) -> str:
        what = f"{self.platform}:{self.device_kind} x {self.devices}" if self.accelerator else "CPU"
        return f"{what}, {self.cores} cores" + (f" ({self.source})" if self.source else "")


_DECLARED: contextvars.ContextVar = contextvars.ContextVar("pgdiag_declared_host", default=None)


def declared() -> Host | None:
    """The host plans are made for where it is not this one (inside [`declare`][pgdiag.envs.hosts.declare])."""
    return _DECLARED.get()


@contextlib.contextmanager
def declare(host):
    """Plan for ``host`` (a `Host` or a profile's path) inside the block; None leaves the host as it is (this one,
    or one declared around the block)."""
    if host is None:
        yield declared()
        return
    token = _DECLARED.set(load(host) if isinstance(host, (str, os.PathLike)) else host)
    try:
        yield declared()
    finally:
        _DECLARED.reset(token)


# What plans ask of a host: the declared one's values, else this process's (read each time, never cached).

def backend() -> str:
    """The default devices' platform: ``"cpu"``, ``"gpu"`` or ``"tpu"``."""
    import jax

    return declared().platform if declared() else jax.default_backend()


def device_count() -> int:
    """The default devices over all processes."""
    import jax

    return declared().devices if declared() else jax.device_count()


def process_count() -> int:
    """The processes a program runs on."""
    import jax

    return declared().processes if declared() else jax.process_count()


def cpu_device_count() -> int:
    """The CPU devices of one process (a split run's and a host study's blocks)."""
    import jax

    return declared().cpu_devices if declared() else len(jax.local_devices(backend="cpu"))


def cores() -> int:
    """The host's cores."""
    return declared().cores if declared() else (os.cpu_count() or 1)


def host_memory() -> int:
    """The host's RAM in bytes (16 GiB where the system does not say)."""
    if declared():
        return declared().host_memory
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 16 * 2 ** 30


def this_host(physics: dict | None = None, costs: list | None = None) -> Host:
    """This process's host, with the recorded measurements given."""
    import jax

    d = jax.local_devices()[0]
    stats = d.memory_stats() if d.platform != "cpu" and hasattr(d, "memory_stats") else None
    return Host(d.platform, d.device_kind, jax.device_count(), cpu_device_count(), os.cpu_count() or 1,
                jax.process_count(), (stats or {}).get("bytes_limit"), host_memory(), dict(physics or {}),
                list(costs or []), "this host")


_ABOUT = tuple(f.name for f in dataclasses.fields(Host) if f.name not in ("physics", "costs", "source"))
_COUNTS = ("devices", "cpu_devices", "cores", "processes", "host_memory")
#: the platforms a profile may declare (JAX's names for its backends)
PLATFORMS = ("cpu", "gpu", "tpu")


def to_json(host: Host) -> dict:
    """A profile's contents (what [`save`][pgdiag.envs.hosts.save] writes and [`from_json`][pgdiag.envs.hosts.from_json]
    reads)."""
    about = {k: getattr(host, k) for k in _ABOUT}
    return {"format": FORMAT, "version": VERSION, "host": about,
            "physics": {str(k): v for k, v in host.physics.items()}, "costs": host.costs}


def _whole(v, least: int = 1) -> bool:
    return type(v) is int and v >= least


def _number(v) -> bool:
    return type(v) in (int, float) and v >= 0


def _check_about(about, where: str) -> None:
    if not isinstance(about, dict):
        raise ConfigError(f"{where}: \"host\" must be an object with {', '.join(_ABOUT)}")
    unknown = sorted(set(about) - set(_ABOUT))
    if unknown:
        raise ConfigError(f"{where}: unknown host field(s) {', '.join(unknown)}; fields are {', '.join(_ABOUT)}")
    for k in ("platform", "device_kind", "devices", "cpu_devices", "cores", "host_memory"):
        if k not in about:
            raise ConfigError(f"{where}: \"host\" lacks {k!r}")
    if about["platform"] not in PLATFORMS or not isinstance(about["device_kind"], str):
        raise ConfigError(f"{where}: host platform must be one of {', '.join(PLATFORMS)} and device_kind a name, got "
                          f"{about['platform']!r} and {about['device_kind']!r}")
    for k in _COUNTS:
        if not _whole(about.get(k, 1)):
            raise ConfigError(f"{where}: host {k} must be a positive whole number, got {about.get(k)!r}")
    mem = about.get("device_memory")
    if mem is not None and not _whole(mem):
        raise ConfigError(f"{where}: device_memory must be the bytes a program may use on one device (or null: "
                          f"unknown), got {mem!r}")


def _check_rows(physics, costs, where: str) -> None:
    def physics_row(r):
        return (isinstance(r, dict) and isinstance(r.get("task"), str) and isinstance(r.get("solver"), str)
                and _whole(r.get("batch")) and all(_number(v) for k, v in r.items() if k.endswith("_ms")))

    def threads(k) -> bool:   # ASCII digits only: "²" is a digit to str.isdigit, not to int()
        return str(k).isascii() and str(k).isdigit()

    if not isinstance(physics, dict) or not all(threads(k) and isinstance(v, list) and all(map(physics_row, v))
                                                for k, v in physics.items()):
        raise ConfigError(f"{where}: \"physics\" must map physics threads (\"16\") to lists of crossover rows "
                          f"({{task, solver, batch, native_ms, ...}}, as crossover.json holds them)")
    if not isinstance(costs, list) or not all(isinstance(r, dict) and _whole(r.get("width")) and
                                              _number(r.get("ms_per_step")) for r in costs):
        raise ConfigError(f"{where}: \"costs\" must be a list of recorded rows, each with a width and ms_per_step "
                          f"(as training.json holds them)")


def from_json(data, source: str = "") -> Host:
    """A `Host` from a profile's contents; a malformed one is refused naming what is wrong and what is expected."""
    where = f"host profile {source}" if source else "host profile"
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"{where}: not a pgdiag host profile (expected a JSON object with \"format\": "
                          f"{FORMAT!r}, as `pgdiag host save` writes)")
    if type(data.get("version")) is not int or data["version"] != VERSION:
        raise ConfigError(f"{where}: layout version {data.get('version')!r}; this pgdiag reads version {VERSION}")
    about, physics, costs = data.get("host"), data.get("physics", {}), data.get("costs", [])
    _check_about(about, where)
    _check_rows(physics, costs, where)
    return Host(**about, physics={int(k): v for k, v in physics.items()}, costs=costs, source=source)


def load(path) -> Host:
    """The host a profile file declares (``pgdiag host save``)."""
    path = os.fspath(path)
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ConfigError(f"host profile {path!r}: no such file (save one on the host with `pgdiag host save "
                         f"FILE`)") from None
    except (OSError, ValueError, RecursionError) as e:   # RecursionError: JSON nested deeper than Python recurses
        raise ConfigError(f"host profile {path!r}: cannot be read as JSON ({str(e)[:120]})") from None
    return from_json(data, path)


def taken(path) -> str:
    """Why ``path`` cannot receive a new profile ("" where it can): a profile is someone's record."""
    return (f"{os.fspath(path)!r} exists; a host profile is saved to a new file (choose another name, or remove that "
            f"one first)") if os.path.exists(path) else ""


def save(host: Host, path, replace: bool = False) -> str:
    """Write ``host`` as a profile, checked as a later read will check it first: to a new file (one already there,
    however recently made, is never replaced), or with ``replace`` over the profile a report keeps up to date."""
    path = os.fspath(path)
    from_json(to_json(host), path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(to_json(host), f, indent=1)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)      # whole, and only where nothing is
    except FileExistsError:
        raise FileExistsError(taken(path)) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


__all__ = ["FORMAT", "Host", "PLATFORMS", "VERSION", "backend", "cores", "cpu_device_count", "declare", "declared",
           "device_count", "from_json", "host_memory", "load", "process_count", "save", "taken", "this_host", "to_json"]
