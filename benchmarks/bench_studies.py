"""What each diagnostic study costs per subject, on the same runs at the same K and N.

Runs the gradient, step, baseline and landscape studies (nothing saved) on the given run directories — by
default it trains them first: PPO and TRPO on Hopper at the papers' shape (1 environment × 2,048 steps,
reset every iteration), 2 agents each, checkpoints after the middle and the last iteration — and prints,
per study, the subjects, the pairs sampled, compile and run time, the run time per subject, and its ratio
to the gradient study's, bare (K estimates at every N) and as fig-grad-variance runs it at mid scale (with
a true gradient from 2^18 pairs, the counterpart of the baseline study's V*). Every baseline reads the
same samples, so the baseline study without V* costs what the gradient study costs; V*'s fit data
(fit_pairs states, each segment run on until its returns are complete) is sampled once more on top, and
fit for the mid scale's 10 epochs.

    python benchmarks/bench_studies.py [--runs DIR ...] [--iterations 20] [--out results/bench-studies]
"""

from __future__ import annotations

import argparse
import json
import os

SIZES = (100, 300, 1000, 2048, 4000, 8192)  # fig-baselines' mid-scale grid; K = 10 for every study


def train_runs(out: str, iterations: int) -> list:
    from pgdiag import preset, sweep

    paths = []
    for algorithm in ("ppo", "trpo"):
        path = os.path.join(out, f"hopper-{algorithm}")
        if not os.path.exists(os.path.join(path, "manifest.json")):
            cfg = preset(algorithm, "hopper").replace(num_envs=1, steps_per_env=2048, reset_every_iteration=True,
                                                      num_iterations=iterations,
                                                      checkpoint_at=tuple(sorted({iterations // 2, iterations - 1})),
                                                      physics="native")
            sweep(cfg, seeds=2, out=path)
        paths.append(path)
    return paths


def measure(runs: list) -> list:
    from pgdiag.studies.baselines.diagnostic import baseline_study
    from pgdiag.studies.gradients.diagnostic import gradient_study
    from pgdiag.studies.landscape.diagnostic import landscape_study
    from pgdiag.studies.steps.diagnostic import step_study

    studies = {
        "gradients (K = 10, N ≤ 8,192)": lambda: gradient_study(runs, save=False, sizes=SIZES, estimates=10),
        "gradients + a true gradient from 2^18 pairs (mid fig-grad-variance's)": lambda: gradient_study(
            runs, save=False, sizes=SIZES, estimates=10, true_pairs=262_144),
        "baselines (value, V* from 2e5 pairs, zero)": lambda: baseline_study(
            runs, save=False, sizes=SIZES, estimates=10, fit_pairs=200_000, fit_epochs=10),
        "baselines without V* (value, zero)": lambda: baseline_study(
            runs, save=False, sizes=SIZES, estimates=10, baselines=("value", "zero")),
        "steps (M = 16)": lambda: step_study(runs, save=False, batches=16),
        "landscape (25 points × 2K/8K/32K pairs)": lambda: landscape_study(
            runs, save=False, points=5, sizes=(2_000, 8_000, 32_000), envs=8),
    }
    rows = []
    for name, study in studies.items():
        manifest = study().manifest
        timings = manifest["timings"]
        timings = timings if isinstance(timings, list) else [timings]
        subjects = len(manifest["subjects"])
        run_s = sum(t["run_s"] for t in timings)
        rows.append({"study": name, "subjects": subjects, "pairs": sum(t.get("pairs", 0) for t in timings),
                     "compile_s": sum(t["compile_s"] for t in timings), "run_s": run_s,
                     "per_subject_s": run_s / subjects})
    for r in rows:
        r["vs_gradients"] = r["per_subject_s"] / rows[0]["per_subject_s"]
        r["vs_gradients_true"] = r["per_subject_s"] / rows[1]["per_subject_s"]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="*", default=None, help="run directories (default: train them)")
    parser.add_argument("--iterations", type=int, default=20, help="training iterations when training")
    parser.add_argument("--out", default="results/bench-studies")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()
    runs = args.runs or train_runs(args.out, args.iterations)
    rows = measure(runs)
    print("| study | subjects | pairs | compile (s) | run (s) | per subject (s) | × gradient study | "
          "× with its true gradient |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['study']} | {r['subjects']} | {r['pairs']:,} | {r['compile_s']:.1f} | {r['run_s']:.1f} | "
              f"{r['per_subject_s']:.1f} | {r['vs_gradients']:.2f} | {r['vs_gradients_true']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
