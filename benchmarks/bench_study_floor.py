"""Every diagnostic program against its physics floor: the first chunks of each study at a scale, timed.

For each diagnostic target's measurement at ``--scale`` (its settings on Hopper, the papers' shape), the study runs
on a few trained agents (PPO and TRPO, ``--agents`` each, one checkpoint) with its sample sizes cut to at most
``--max-n`` pairs (true gradient, V*'s fit data and landscape batches likewise; the estimates, widths and
structure as the scale has them): "the first chunks" of each program. Per compiled program it prints the pairs
sampled, the run time (compiling apart), µs per pair, the floor of the same pairs — the physics, MuJoCo's own C
``rollout`` on one thread at the program's width (``benchmarks/bench_floor.py``) spread ideally over the host's
cores, plus the network arithmetic, one policy forward pass per pair at the rate this host attains at that width
(``network_floor_us``), and for the step study its batches' policy steps at that rate (``update_floor_us``) — and
the ratio floor / time (1 = the program costs what its physics and its arithmetic do; the goal is ≥ 0.5). The
full scale's pairs (its plan, `--dry-run`'s) times the µs per pair measured gives the extrapolated time.

    python benchmarks/bench_study_floor.py [--scale mid|paper] [--max-n 20000] [--agents 2] [--out DIR]
                                           [--markdown FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TARGETS = ("fig-grad-true", "fig-step-variance", "fig-baselines", "fig-landscape-surrogate",
           "fig-landscape-concentration")


def capped(settings: dict, max_n: int) -> dict:
    """The scale's settings with every sample size at most ``max_n`` (and the steps study's batches at most 10)."""
    out = dict(settings)
    if "sizes" in out:
        sizes = tuple(n for n in out["sizes"] if n <= max_n)
        out["sizes"] = sizes or (max_n,)
    for key in ("true_pairs", "fit_pairs"):
        if out.get(key):
            out[key] = min(out[key], 10 * max_n)
    if "step_pairs" in out:
        out["step_pairs"] = tuple(min(n, max_n) for n in out["step_pairs"])
    if "fit_epochs" in out:
        out["fit_epochs"] = min(out["fit_epochs"], 3)
    if "batches" in out:
        out["batches"] = min(out["batches"], 10)
    return out


def train_runs(out: str, agents: int, iterations: int = 3) -> list:
    from pgdiag import preset, sweep

    paths = []
    for algorithm in ("ppo", "trpo"):
        path = os.path.join(out, f"hopper-{algorithm}")
        if not os.path.exists(os.path.join(path, "manifest.json")):
            cfg = preset(algorithm, "hopper").replace(num_envs=1, steps_per_env=2048, reset_every_iteration=True,
                                                      num_iterations=iterations, checkpoint_at=(iterations,))
            sweep(cfg, seeds=agents, out=path, progress=False)
        paths.append(path)
    return paths


def physics_floor_us(width: int, cache: dict) -> float:
    """MuJoCo's own µs per environment step on one thread for Hopper at batch ``width`` (capped at 256)."""
    from bench_floor import floor_ms, pgdiag_trajectory

    batch = max(1, min(width, 256))
    if batch not in cache:
        _, seen = pgdiag_trajectory("hopper", "brax", batch, 1, 32, 0.5)
        single, _ = floor_ms("hopper", "brax", seen, 1, 0.5)
        cache[batch] = single * 1e3 / batch
    return cache[batch]


def network_floor_us(width: int, cache: dict) -> float:
    """The network arithmetic a sampled pair cannot do without — one forward pass of the runs' policy (Hopper's
    64 × 64 MLP) at batch ``width`` — in µs per pair at the rate this host attains on that shape: the fastest of
    repeated timings of a compiled chain of 256 such passes (each feeding the next, so none is skipped)."""
    import jax
    import jax.numpy as jnp

    from bench_floor import _best
    from pgdiag import make_train, networks, preset, seed_key

    batch = max(1, width)
    if batch not in cache:
        cfg = preset("ppo", "hopper")
        knobs = cfg.knobs.as_arrays()
        policy = make_train(cfg.static).init(seed_key(0), knobs).policy
        obs = jnp.zeros((batch, 11), jnp.float32)

        def body(x, _):
            mean, _ = networks.policy_apply(policy, x, knobs)
            return x.at[:, :mean.shape[1]].add(1e-3 * mean), None

        run = jax.jit(lambda x: jax.lax.scan(body, x, None, length=256)[0])
        cache[batch] = _best(lambda: jax.block_until_ready(run(obs)), 0.5) * 1e6 / (256 * batch)
    return cache[batch]


#: the step study's own arithmetic: the algorithm's policy step on each batch, in forward passes per pair of the
#: batch (a backward pass as two forward ones) and the batch those passes move. PPO (the preset's 10 epochs of
#: minibatches of 64): 10 × (1 + 2) = 30 at 64. TRPO: the gradient (3), 10 conjugate-gradient Fisher-vector
#: products on a tenth of the batch (each a forward and about three backward-sized passes: 0.1 × 10 × 4 = 4) and
#: one line-search evaluation (1): 8, at the whole batch of 2,048 — a lower bound (more line-search steps cost more)
UPDATE_PASSES = {"ppo": (30, 64), "trpo": (8, 2048)}


def update_floor_us(algorithm: str, cache: dict) -> float:
    """µs per pair of the step study's batches for the algorithm's policy step at this host's attainable rate
    (``UPDATE_PASSES`` × one forward pass at their width); 0 for another algorithm."""
    passes, width = UPDATE_PASSES.get(algorithm, (0, 1))
    return passes * network_floor_us(width, cache) if passes else 0.0


def measure(runs: list, scale: str, max_n: int, names=TARGETS, report=None) -> list:
    from pgdiag.experiments import dry_run, targets
    from pgdiag.experiments.scales import pick

    cores, cache, net_cache, rows = os.cpu_count() or 1, {}, {}, []
    for name in names:
        t = targets.get(name)
        m = t.measurement
        full = pick(t.scales, scale).measuring(m.name, "hopper")
        planned = dry_run.runs_plan(t, runs, diag=full, scale=scale)
        full_pairs = sum(p.pairs for p in planned if p.stage != "train")
        t0 = time.perf_counter()
        study = m.measure(runs, save=False, progress=False, **capped(full, max_n))
        wall = time.perf_counter() - t0
        timings = study.manifest["timings"]
        for i, timing in enumerate(timings if isinstance(timings, list) else [timings]):
            pairs, run_s = timing.get("pairs", 0), timing["run_s"]
            width = max((p.width for p in planned if p.stage != "train"), default=1)
            physics_s = pairs * physics_floor_us(width, cache) / 1e6 / cores
            network_s = pairs * network_floor_us(width, net_cache) / 1e6   # XLA's CPU runs it on one core
            if name == "fig-step-variance":   # its batches' policy steps (a program holds one algorithm)
                network_s += pairs * update_floor_us(timing.get("algorithm", ""), net_cache) / 1e6
            floor_s = physics_s + network_s
            rows.append({"target": name, "program": i + 1, "pairs": pairs, "compile_s": timing["compile_s"],
                         "run_s": run_s, "us_per_pair": run_s / max(pairs, 1) * 1e6, "width": width,
                         "physics_s": physics_s, "network_s": network_s,
                         "floor_s": floor_s, "ratio": floor_s / max(run_s, 1e-9), "full_pairs": full_pairs,
                         "extrapolated_min": full_pairs * run_s / max(pairs, 1) / 60, "wall_s": wall})
        print(f"{name}: {wall:.0f} s", flush=True)
        if report is not None:   # the table so far, after every target (a run cut short keeps what it measured)
            report(rows)
    return rows


def table(rows: list, header: str) -> str:
    lines = [header, "",
             "| target | program | pairs | compile (s) | run (s) | µs / pair | width | physics (s) | network (s) | "
             "floor / run | full-scale pairs | extrapolated (min) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['target']} | {r['program']} | {r['pairs']:,} | {r['compile_s']:.1f} | {r['run_s']:.1f} | "
                     f"{r['us_per_pair']:.1f} | {r['width']} | {r['physics_s']:.2f} | {r['network_s']:.2f} | "
                     f"{r['ratio']:.2f} | {r['full_pairs']:,} | {r['extrapolated_min']:.1f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="mid", choices=["mid", "paper"])
    parser.add_argument("--max-n", type=int, default=20_000, help="the largest sample size run (first chunks)")
    parser.add_argument("--agents", type=int, default=2, help="agents per algorithm (PPO, TRPO)")
    parser.add_argument("--runs", nargs="*", default=None, help="run directories (default: train them)")
    parser.add_argument("--out", default="results/bench-study-floor")
    parser.add_argument("--markdown", default=None, help="also write the table there (after every target)")
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=TARGETS)
    args = parser.parse_args(argv)
    import jax

    runs = args.runs or train_runs(args.out, args.agents)
    device = jax.devices()[0]
    header = (f"Diagnostic programs at the {args.scale} scale's settings, sizes cut to {args.max_n:,} pairs, on "
              f"{device.platform} ({device.device_kind}), {os.cpu_count()} host cores; physics floor: MuJoCo's C "
              f"rollout on one thread at the program's width, over every core")

    def report(rows):
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(table(rows, header) + "\n")

    print(table(measure(runs, args.scale, args.max_n, args.targets, report), header))

if __name__ == "__main__":
    main()
