"""The studies' memory estimates against XLA's own peak of the programs they compile.

For every study (gradients, steps, baselines, and the landscape at both its targets' settings) at the smoke
and the mid scale, on the scale's first task, the engine shapes each program as the study would
(:func:`pgdiag.diagnostics.engine.plan_shapes`, against this host's memory), the benchmark builds that
program over freshly initialised agents of the same configurations (an untrained agent has a trained one's
shapes) and compiles it without running it. The measured peak is XLA's buffer assignment of the compiled
program (``compiled.memory_analysis()``):

    argument + output + temp − alias bytes

the inputs (the stacked agents, knobs and keys) and outputs live with the program's temporaries while it
runs; an output that reuses an input's buffer (alias) is counted once. Generated code is left out: it is not
memory the estimate models (and is the same for any number of subjects).

    python benchmarks/bench_memory.py [--studies gradients,steps] [--scales smoke] [--groups all]

Prints: study, scale, the programs' labels, subjects, batching, estimate, measured, ratio (estimate /
measured) and compile seconds.
"""

from __future__ import annotations

import argparse
import time

SCALES = ("smoke", "mid")


def measurements() -> dict:
    """measurement name -> the first diagnostic target that measures it (whose scales it is measured at)."""
    from pgdiag.experiments import targets

    out = {}
    for t in targets.TARGETS.values():
        if t.measurement is not None:
            out.setdefault(t.measurement.name, t)
    return out


def configurations(study: str, scale: str):
    """(the measurement's Diagnostic, task, {label: Config}, subjects per label, settings) as the target's plan resolves
    them."""
    from pgdiag.config import study_preset
    from pgdiag.experiments.scales import pick

    t = measurements()[study]
    m = t.measurement
    sc = pick(t.scales, scale)
    task = sc.tasks_of(t.name)[0]
    over = sc.training(task, {})
    configs = {a: study_preset(a, task, **over) for a in t.measured_presets}
    first = next(iter(configs.values())).static
    checkpoints = len(sc.checkpoints(m.name) or first.checkpoint_at) or 1
    return m.study, task, configs, sc.seeds * checkpoints, sc.measuring(m.name, task)


def subjects(study, settings, configs: dict, labels: tuple, per_label: int):
    """Freshly initialised agents of ``labels`` (``per_label`` each) stacked as the study stacks checkpoints:
    (states, knobs, keys, the group's first Static)."""
    import jax
    import jax.numpy as jnp

    from pgdiag import make_train, seed_key
    from pgdiag.config import stack_knobs
    from pgdiag.diagnostics.subjects import subject_keys

    states, knobs, rows = [], [], []
    for label in labels:
        cfg = configs[label]
        trainer = make_train(cfg.static)
        keys = jnp.stack([seed_key(i) for i in range(per_label)])
        init = jax.jit(jax.vmap(trainer.init))(keys, stack_knobs([cfg.knobs] * per_label))
        if not study.reads_optimizer(settings):
            init = init.replace(policy_opt=None)
        for i in range(per_label):
            states.append(jax.tree.map(lambda x: x[i], init))
            knobs.append(cfg.knobs)
            rows.append({"seed": i, "iteration": i})
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *states)
    return stacked, stack_knobs(knobs), subject_keys(settings.seed, rows), configs[labels[0]].static


def measured_peak(compiled) -> int:
    m = compiled.memory_analysis()
    return (m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
            - m.alias_size_in_bytes)


def measure(study: str, scale: str, groups: str = "all") -> list:
    from pgdiag.diagnostics import engine
    from pgdiag.diagnostics.memory import available_memory
    from pgdiag.run.shard import pad_and_shard

    diagnostic, task, configs, per_label, changes = configurations(study, scale)
    settings = engine.settings_of(diagnostic, None, changes)
    shapes = engine.plan_shapes(diagnostic, task, {a: c.static for a, c in configs.items()}, per_label, changes,
                                available_memory())
    rows = []
    for shape in shapes[:1] if groups == "first" else shapes:
        states, knobs, keys, _ = subjects(diagnostic, settings, configs, shape.labels, per_label)
        args, _ = pad_and_shard((states, knobs, keys), shape.units)
        t0 = time.perf_counter()
        compiled = diagnostic.program(shape).lower(*args).compile()
        seconds = time.perf_counter() - t0
        peak = measured_peak(compiled)
        rows.append({"study": study, "scale": scale, "task": task, "labels": "+".join(shape.labels),
                     "subjects": shape.units, "batching": shape.batching, "estimate": shape.bytes,
                     "measured": peak, "ratio": shape.bytes / peak, "compile_s": seconds})
        print(_line(rows[-1]), flush=True)
    return rows


def _mib(n: int) -> str:
    return f"{n / 2 ** 20:,.1f} MiB"


def _line(r: dict) -> str:
    return (f"{r['study']:<24} {r['scale']:<6} {r['task']:<7} {r['labels']:<14} {r['subjects']:>8} "
            f"{r['batching']:<8} {_mib(r['estimate']):>14} {_mib(r['measured']):>14} {r['ratio']:>6.2f} "
            f"{r['compile_s']:>7.1f}")


def main(argv=None) -> list:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    known = tuple(measurements())
    p.add_argument("--studies", default=",".join(known), help=f"comma-separated, of {', '.join(known)}")
    p.add_argument("--scales", default=",".join(SCALES), help=f"comma-separated, of {', '.join(SCALES)}")
    p.add_argument("--groups", default="all", choices=("all", "first"),
                   help="every program of a study, or only its first (quicker)")
    args = p.parse_args(argv)
    studies, scales = args.studies.split(","), args.scales.split(",")
    for name, given, allowed in (("--studies", studies, known), ("--scales", scales, SCALES)):
        bad = [x for x in given if x not in allowed]
        if bad:
            p.error(f"{name}: unknown {', '.join(bad)}; allowed: {', '.join(allowed)}")
    print(f"{'study':<24} {'scale':<6} {'task':<7} {'labels':<14} {'subjects':>8} {'batching':<8} "
          f"{'estimate':>14} {'measured':>14} {'ratio':>6} {'compile':>7}", flush=True)
    rows = [r for scale in scales for study in studies for r in measure(study, scale, args.groups)]
    off = [r for r in rows if not 1 / 1.5 <= r["ratio"] <= 1.5]
    print(f"{len(rows) - len(off)} of {len(rows)} programs estimated within 1.5× of XLA's peak", flush=True)
    return rows


if __name__ == "__main__":
    main()
