"""A sweep's roster: a base config × a knob grid × seeds -> the validated list of its agents.

All validation of a sweep happens here, before anything is compiled. (A *plan*, in pgdiag's words, is what a
command would compile and cost: [`pgdiag.plan_sweep`][pgdiag.experiments.planner.plan_sweep] and the dry runs.)
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Mapping, Sequence

import numpy as np

from pgdiag import algorithms
from pgdiag.config import KNOB_FIELDS, STATIC_FIELDS, Config, ConfigError, Setting, check_knob
from pgdiag.metrics import METRICS

#: the metrics table's own columns ([`pgdiag.run.store.metrics_frame`][pgdiag.run.store.metrics_frame]): a grid
#: axis is a column too
TABLE_COLUMNS = ("agent", "point", "seed", "label", "iteration", "env_steps", *METRICS)


@dataclasses.dataclass(frozen=True)
class Roster:
    """A sweep's validated agents: every grid point × seed, with its configuration."""

    base: Config
    grid_axes: tuple            # knob names that vary, in order
    points: tuple               # tuple of dicts: knob overrides per grid point
    seeds: tuple                # seeds, each run at every grid point
    configs: tuple              # Config per grid point
    labels: tuple = ()          # optional name per grid point (e.g. the algorithm preset)

    @property
    def num_agents(self) -> int:
        return len(self.points) * len(self.seeds)

    def agents(self):
        """(agent index, point index, seed) in the order of the stacked axis (seed fastest)."""
        for p in range(len(self.points)):
            for s, seed in enumerate(self.seeds):
                yield p * len(self.seeds) + s, p, seed


def _grid_name(base: Config, name) -> None:
    """A grid axis must be a knob of the base's algorithm (a shared knob or its own)."""
    knobs = base.knob_names()
    if name in STATIC_FIELDS or (name not in knobs and algorithms.declared_static(name)):
        raise ConfigError(
            f"{name!r} is a static setting (it changes array shapes or program structure), so it cannot be "
            f"a grid axis of one compiled sweep; set it on the base config. Sweepable knobs: {', '.join(knobs)}")
    if name in TABLE_COLUMNS:   # only an algorithm's own knob can be so named
        raise ConfigError(f"knob {name!r} of {base.static.algorithm!r} cannot be a grid axis: the metrics table "
                          f"has a column {name!r} of its own, which the axis's column would replace; register the "
                          f"knob under another name")
    if name not in knobs:
        owners = algorithms.owners(name)
        raise ConfigError(f"unknown knob {name!r} in grid" + (
            f" (it belongs to {', '.join(owners)}, not to the base's algorithm {base.static.algorithm!r})"
            if owners else "") + f"; sweepable knobs: {', '.join(knobs)}")


def _grid_value(base: Config, name, value):
    _grid_name(base, name)
    value = value.item() if hasattr(value, "item") else value
    if name in KNOB_FIELDS:
        return check_knob(name, value)
    return algorithms.get(base.static.algorithm).knobs[name].normalize(name, value, "knob")


#: seeds are below 2^32: jax.random.PRNGKey keeps 32 bits of a seed (without 64-bit mode), so larger seeds
#: would alias smaller ones
SEED_LIMIT = 2 ** 32
#: ``roster``'s seeds per grid point (``pgdiag sweep --seeds``)
SEEDS = Setting(1, "Seeds per grid point (0 … n − 1).")


def roster(base: Config, grid: Mapping[str, Sequence] | Sequence[Mapping] | None = None,
           seeds: int | Sequence[int] = SEEDS.default, labels: Sequence[str] | None = None) -> Roster:
    """Validate a sweep and list its agents.

    ``grid`` is either a mapping knob -> values (the Cartesian product is
    swept) or a sequence of mappings knob -> value (exactly those points).
    ``seeds`` is a count (seeds 0..n-1) or an explicit sequence of ints.
    ``labels`` optionally names each grid point (a ``label`` column in the metrics).

    Args:
        base: the configuration every agent starts from.
        grid: knob -> values, or a sequence of knob -> value mappings; None: ``base`` alone.
        seeds: a count or a sequence of seeds.
        labels: a name per grid point.

    Returns:
        The sweep's roster: its configurations, seeds and agents, nothing compiled.
    """
    if not isinstance(base, Config):
        raise ConfigError(f"base must be a pgdiag Config, got {type(base).__name__}")
    if grid is None:
        grid = {}
    if not isinstance(grid, (Mapping, Sequence)) or isinstance(grid, (str, bytes)):
        raise ConfigError(f"grid must be a mapping knob -> values or a list of points (mappings knob -> value), "
                          f"got {grid!r}")
    names, points = (_axes_points if isinstance(grid, Mapping) else _listed_points)(base, grid)
    seeds = _seeds(seeds)
    configs = tuple(base.replace(**p) for p in points)
    labels = _labels(labels, points)
    return Roster(base=base, grid_axes=names, points=points, seeds=seeds, configs=configs, labels=labels or ())


def _axes_points(base: Config, grid: Mapping) -> tuple[tuple, tuple]:
    """A grid given as knob -> values: its axes' names and the points of their Cartesian product."""
    axes = []
    for name, values in grid.items():
        _grid_name(base, name)
        iterable = hasattr(values, "__iter__") and not isinstance(values, (str, bytes, Mapping))
        values = list(values) if iterable else []  # lists, tuples, numpy arrays, ranges
        if not values:
            raise ConfigError(f"grid axis {name!r} needs a non-empty list of values, got {grid[name]!r}")
        checked = [_grid_value(base, name, v) for v in values]
        repeated = sorted({repr(v) for v in checked if checked.count(v) > 1})
        if repeated:  # two points with the same knobs and seeds would be the same agents twice
            raise ConfigError(f"grid axis {name!r} repeats {', '.join(repeated)}; give each value once "
                              f"(more agents of one configuration are more seeds)")
        axes.append((name, checked))
    names = tuple(n for n, _ in axes)
    points = tuple(dict(zip(names, combo)) for combo in itertools.product(*[v for _, v in axes]))
    return names, points


def _listed_points(base: Config, grid: Sequence) -> tuple[tuple, tuple]:
    """A grid given as a list of points: the knobs named anywhere (in order) and the points, checked."""
    points_list = list(grid)
    if not points_list:
        raise ConfigError("grid is an empty list of points; give at least one mapping of knob -> value")
    names_seen: list[str] = []
    checked = []
    for point in points_list:
        if not isinstance(point, Mapping):
            raise ConfigError(f"grid points must be mappings knob -> value, got {point!r}")
        for name, value in point.items():
            if name not in names_seen:
                names_seen.append(name)
        checked.append({n: _grid_value(base, n, v) for n, v in point.items()})
    names = tuple(names_seen)
    points = tuple(checked)
    full = [repr([p.get(n, getattr(base, n)) for n in names]) for p in points]   # omitted: the base's
    twice = [dict(points[i]) for i, f in enumerate(full) if full.index(f) < i]
    if twice:
        raise ConfigError(f"grid point {twice[0]!r} repeats an earlier point's configuration; give each "
                          f"point once (more agents of one configuration are more seeds)")
    return names, points


def _seeds(seeds) -> tuple[int, ...]:
    """A count or a list of seeds as the tuple of seeds, checked (each below ``SEED_LIMIT``, none twice)."""
    if isinstance(seeds, np.ndarray):
        seeds = seeds.item() if seeds.ndim == 0 else seeds.tolist()
    elif isinstance(seeds, np.integer):
        seeds = int(seeds)
    if isinstance(seeds, bool) or not isinstance(seeds, (int, Sequence)):
        raise ConfigError(f"seeds must be a positive count or a list of ints, got {seeds!r}")
    if isinstance(seeds, int):
        if seeds < 1:
            raise ConfigError(f"seeds must be a positive count or a list of ints, got {seeds!r}")
        seeds = tuple(range(seeds))
    else:
        seeds = tuple(seeds)
        if not seeds or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= s < SEED_LIMIT
                                for s in seeds):
            # a PRNG key is made from 32 bits of the seed: 2^32 and 0 would be the same agent
            raise ConfigError(f"seeds must be a positive count or a non-empty list of ints in 0 … 2^32 − 1, got "
                              f"{seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"seeds contain duplicates: {seeds!r}")
        seeds = tuple(int(s) for s in seeds)
    return seeds


def _labels(labels, points) -> tuple[str, ...] | None:
    """One distinct name per grid point, or None."""
    if labels is not None:
        labels = tuple(str(x) for x in labels)
        if len(labels) != len(points):
            raise ConfigError(f"labels name the grid points: got {len(labels)} labels for {len(points)} points")
        repeated = sorted({x for x in labels if labels.count(x) > 1})
        if repeated:
            raise ConfigError(f"labels name the grid points, each its own: {', '.join(map(repr, repeated))} "
                              f"given twice")
    return labels
