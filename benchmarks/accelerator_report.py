"""What the paper-scale targets cost on this host, measured in one command: one Markdown report.

On whatever host it runs (a laptop, a cluster node, a GPU or TPU machine), within ``--budget-minutes``:

1. the device, the host's cores and the package versions;
2. ``physics=auto``'s crossover: one batched step of native MuJoCo and of MJX for Hopper, Walker2d and Humanoid
   under both solver settings over a ladder of batches, recorded for this host (``physics=auto`` then decides
   from them; ``--no-record`` leaves the record alone), and from which batch MJX is faster;
3. the first two iterations of every training program the paper-scale targets start (each target's sweeps,
   as ``--dry-run`` lists them; programs that two targets share are timed once): compile time, the first
   iteration's time (first-call costs included) and the second's, and the program's duration extrapolated
   from them beside the plan's estimate from step costs alone;
4. training throughput at the papers' shape (one environment × 2,048 steps per agent) with 1, 16 and 320
   agents (one agent, a seed sweep, the ablation's width) against the physics rate of the same batch;
5. the diagnostic targets' measurement programs, their first chunks (sample sizes cut to 20,000 pairs) on a few
   trained agents, against the floor of their physics and network arithmetic, extrapolated to the scale's pairs
   (``report_diagnostics.py``; ``--targets`` chooses them too);
6. each paper's report at the scale planned on this host, program by program: the physics ``auto`` takes at each
   width, where each runs, its estimated time (``report_plan.py``; what ``pgdiag report --dry-run`` prints).

Beside the report, ``accelerator-report-<device>-host.json``: this host's profile (devices, memory, every recorded
step cost), from which a plan for this host is made on any other machine: ``pgdiag report --dry-run --scale paper
--host FILE``. What does not fit the budget is listed as not measured. ``--scale tiny`` runs every section at a few
seconds' size on a CPU (Hopper at batch 4, the pure-JAX tasks' training): the test suite runs it.

    python benchmarks/accelerator_report.py [--scale paper|tiny] [--out benchmarks/results]
                                            [--budget-minutes 30] [--no-record]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_diagnostics  # noqa: E402
import report_plan  # noqa: E402
from report_diagnostics import diagnostic_targets, diagnostics_section  # noqa: E402
from report_training import first_chunks, throughput  # noqa: E402

from pgdiag.run import timings  # noqa: E402

SCALES = {
    "paper": dict(tasks=("hopper", "walker2d", "humanoid"), solvers=("converged", "fast"),
                  batches=(1, 16, 64, 256, 1024, 4096), plan_scale="paper", plan_tasks=None,
                  targets=None, shape=dict(num_envs=1, steps_per_env=2048), agents=(1, 16, 320),
                  throughput_task="hopper", plan_papers=("cl", "im"),
                  diagnostics=dict(scale="paper", max_n=20_000, agents=2, iterations=3, algorithms=("ppo", "trpo"),
                                   shape=dict(num_envs=1, steps_per_env=2048))),
    # tiny: the one MJX program tests/test_crossover.py also times (the suite's compilation cache serves it once)
    "tiny": dict(tasks=("hopper",), solvers=("converged",), batches=(4,), plan_scale="smoke",
                 plan_tasks=("point_mass",), targets=("fig-value",),
                 shape=dict(num_envs=2, steps_per_env=32, num_minibatches=4, ppo_epochs=2, value_epochs=2),
                 agents=(2,), throughput_task="point_mass", diagnostic_targets=("fig-grad-true",),
                 plan_papers=("cl",),
                 diagnostics=dict(scale="mid", max_n=256, agents=1, iterations=1, algorithms=("ppo",),
                                  shape=dict(num_envs=2, steps_per_env=32, num_minibatches=4, ppo_epochs=2,
                                             value_epochs=2))),
}


class Budget:
    def __init__(self, minutes: float):
        self.end = time.monotonic() + 60.0 * minutes

    def left(self) -> float:
        return self.end - time.monotonic()


def device_section() -> dict:
    import jax

    from pgdiag.run import provenance

    d = jax.devices()[0]
    return {"device": f"{d.platform} ({d.device_kind})", "devices": jax.device_count(), "host": platform.node(),
            "cpu_devices": len(jax.devices("cpu")),  # a split run's collecting blocks (pgdiag.run.host_devices)
            "host_cores": os.cpu_count(), "python": sys.version.split()[0], "versions": provenance.versions()}


def crossover_section(sc: dict, budget: Budget, record: bool, section: dict, save=lambda: None) -> dict:
    """Fill ``section`` (rows, skipped, recorded), calling ``save`` after each measured row."""
    from pgdiag.envs import crossover

    threads = os.cpu_count() or 1
    rows, skipped = section.setdefault("rows", []), section.setdefault("skipped", [])
    for task in sc["tasks"]:
        for solver in sc["solvers"]:
            for batch in sc["batches"]:
                if budget.left() <= 0:
                    skipped.append(f"{task}/{solver}/{batch}")
                    continue
                row = crossover.measure(task, solver, batch, threads)
                rows.append({**row, "faster": crossover.faster(row)})
                if record:  # recorded as measured: a killed report keeps what it measured
                    section["recorded"] = crossover.record(crossover.host_key(threads), [rows[-1]])
                save()
    return section


def crossover_batches(rows: list) -> dict:
    """{(task, solver): (the smallest measured batch from which an accelerator backend, MJX or Warp, is the faster
    at every larger one, the backends faster there)}; (None, "") where native MuJoCo wins at some largest batch."""
    out = {}
    for key in dict.fromkeys((r["task"], r["solver"]) for r in rows):
        mine = sorted((r for r in rows if (r["task"], r["solver"]) == key), key=lambda r: r["batch"])
        wins = [r["faster"] != "native" for r in mine]
        first = next((i for i in range(len(mine)) if all(wins[i:])), None)
        out[key] = (None, "") if first is None else \
            (mine[first]["batch"], "/".join(dict.fromkeys(NAMES[r["faster"]] for r in mine[first:])))
    return out


NAMES = {"mjx": "MJX", "warp": "Warp", "native": "native"}


def _s(x) -> str:
    if x is None:
        return "—"
    return f"{x:.1f} s" if x < 120 else f"{x / 60:.1f} min" if x < 7200 else f"{x / 3600:.1f} h"


def _s_ms(x) -> str:
    return "—" if x is None else f"{x:.3g}"


def markdown(report: dict) -> str:
    d, c = report["device"], report["crossover"]
    pieces = report.get("pieces", [])
    parts = (f" in {len(pieces)} pieces (" + "; ".join(f"{', '.join(p['sections'])}: budget {p['budget_minutes']:g} min"
                                                       for p in pieces) + ")") if len(pieces) > 1 else \
        f" (budget {report['budget_minutes']:g} min)"
    lines = [f"# Accelerator report: {d['device']} × {d['devices']}, {d['host_cores']} host cores"
             + (f" as {d['cpu_devices']} CPU devices" if d.get("cpu_devices", 1) > 1 else ""),
             *(["", "**In progress** (or stopped): the rows below are those measured so far."]
               if not report.get("complete", True) else []),
             "", f"Measured {report['date']} at scale `{report['scale']}` in {_s(report['elapsed_s'])}{parts} "
             f"with Python {d['python']}, "
             + ", ".join(f"{k} {v}" for k, v in d["versions"].items()) + ".", "",
             "## Physics: native MuJoCo, MJX or MuJoCo Warp (`physics=auto`)", "",
             "| task | solver | batch | native ms/step | MJX ms/step | Warp ms/step | faster |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['task']} | {r['solver']} | {r['batch']:,} | {r['native_ms']:.3g} | {r['mjx_ms']:.3g} | "
              f"{_s_ms(r.get('warp_ms'))} | {r['faster']} |" for r in c["rows"]]
    lines += ["", "| task | solver | an accelerator backend from batch |", "|---|---|---|"]
    lines += [f"| {t} | {s} | {f'{b:,} ({names})' if b else '— (native at the largest measured batch)'} |"
              for (t, s), (b, names) in crossover_batches(c["rows"]).items()]
    if c["skipped"]:
        lines += ["", f"Not measured (budget): {', '.join(c['skipped'])}."]
    if c["recorded"]:
        lines += ["", f"Recorded for `physics=auto` in `{c['recorded']}`."]
    lines += ["", "## The targets' training programs: first iterations timed", "",
              "| targets | task | algorithms | agents | iterations | compile | first iteration | next iteration | "
              "extrapolated | planned |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["programs"]:   # rows of reports before the second iteration was timed have no first_iteration_s
        timed = (f"{_s(r['compile_s'])} | {_s(r.get('first_iteration_s'))} | {_s(r['iteration_s'])} | "
                 f"{_s(r['extrapolated_s'])}" if r["measured"] else "not measured (budget) | | | ")
        lines.append(f"| {r['targets']} | {r['task']} | {r['algorithms']}{' (' + r['note'] + ')' if r['note'] else ''}"
                     f" | {r['agents']} | {r['iterations']} | {timed} | {_s(r['planned_s'])} |")
    lines += ["", "## Training throughput against the physics of the same batch", "",
              "| agents | batch | physics | training steps/s | physics steps/s | training / physics | compile |",
              "|---|---|---|---|---|---|---|"]
    for r in report["throughput"]:
        lines.append(f"| {r['agents']} | {r['batch']:,} | {r.get('backend', '—')} | {r['training_steps_per_s']:,.0f} | "
                     f"{r['physics_steps_per_s']:,.0f} | {r['ratio']:.2f} | {_s(r['compile_s'])} |"
                     if r["measured"] else f"| {r['agents']} | not measured (budget) | | | | | |")
    lines += report_diagnostics.markdown(report.get("diagnostics", []))
    lines += report_plan.markdown(report.get("plan", []))
    return "\n".join(lines) + "\n"


SECTIONS = ("crossover", "programs", "throughput", "diagnostics", "plan")


def run(scale: str = "paper", out: str = "benchmarks/results", budget_minutes: float = 30.0,
        record: bool = True, sections=SECTIONS, merge: str | None = None, tasks=None, targets=None,
        solvers=None, batches=None) -> str:
    """Measure the ``sections`` (in that order) and write ``out/accelerator-report-<device>.md`` (and
    ``.json``, and this host's profile ``-host.json`` for plans made elsewhere: ``pgdiag.envs.hosts``); the others
    come from the report ``merge`` names (a ``.json`` written earlier on the same kind
    of host: a report measured in pieces), else are listed as not measured. Returns the Markdown file's
    path. The report is written at the start and again after every measured row, so a run killed at the end of
    a short slot keeps what it measured (``--merge`` it to go on). ``tasks`` / ``targets`` keep those only;
    ``solvers`` / ``batches`` narrow the crossover's ladder (a piece that fits a short slot).
    Errors name a bad scale, section, budget, filter or output directory before anything is measured."""
    unknown = [x for x in sections if x not in SECTIONS]
    if unknown or not sections:
        raise SystemExit(f"accelerator-report: unknown section(s) {unknown or list(sections)}; choose from: "
                         f"{', '.join(SECTIONS)}")
    previous = {}
    if merge:
        try:
            with open(merge) as f:
                previous = json.load(f)
        except (OSError, ValueError) as e:
            raise SystemExit(f"accelerator-report: cannot read the report to merge {merge!r}: {e}") from None
    if scale not in SCALES:
        raise SystemExit(f"accelerator-report: unknown scale {scale!r}; choose one of: {', '.join(SCALES)}")
    if isinstance(budget_minutes, bool) or not isinstance(budget_minutes, (int, float)) or not budget_minutes > 0:
        raise SystemExit(f"accelerator-report: the budget must be a number of minutes > 0, got {budget_minutes!r}")
    try:
        os.makedirs(out, exist_ok=True)
        probe = os.path.join(out, ".writable")
        open(probe, "w").close()
        os.remove(probe)
    except OSError as e:
        raise SystemExit(f"accelerator-report: cannot write the report directory {out!r}: {e}") from None
    sc = ladder(filtered(SCALES[scale], tasks, targets), solvers, batches)
    if "diagnostics" in sections:   # the agents it measures, kept between the pieces of a report
        sc["diagnostic_targets"] = diagnostic_targets(targets or sc.get("diagnostic_targets"))
        sc["diagnostics"] = {**sc["diagnostics"], "work": os.path.join(timings.path().rpartition(os.sep)[0],
                                                                       "report-runs", scale)}
    budget, t0 = Budget(budget_minutes), time.monotonic()
    report = {"scale": scale, "budget_minutes": budget_minutes, "date": time.strftime("%Y-%m-%d"),
              "device": device_section(), "complete": False}
    empty = {"crossover": {"rows": [], "skipped": ["not run"], "recorded": None},
             "programs": [], "throughput": [], "diagnostics": [], "plan": []}
    for section in SECTIONS:
        report[section] = previous.get(section, empty[section]) if section not in sections else \
            ({"rows": [], "skipped": [], "recorded": None} if section == "crossover" else [])
    report["pieces"] = previous.get("pieces", []) + [{"sections": list(sections), "budget_minutes": budget_minutes}]
    name = "accelerator-report-" + "".join(ch if ch.isalnum() else "-" for ch in report["device"]["device"]).strip("-")
    path = os.path.join(out, name + ".md")

    def save():
        report["elapsed_s"] = time.monotonic() - t0 + previous.get("elapsed_s", 0.0)
        for file, text in ((name + ".json", json.dumps(report, indent=2, default=str)), (name + ".md", markdown(report))):
            tmp = os.path.join(out, f".{file}.tmp")
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, os.path.join(out, file))   # a reader never sees half a report

    save()
    profile = os.path.join(out, name + "-host.json")
    for section in sections:
        if section != sections[0]:   # the profile so far: a report killed in a later section keeps its rows
            save_profile(profile, time_pure_jax=False)
        if section == "crossover":
            crossover_section(sc, budget, record, report["crossover"], save)
        elif section == "programs":
            first_chunks(sc, budget, previous.get("programs", ()), report["programs"], save)
        elif section == "throughput":
            throughput(sc, budget, report["throughput"], save)
        elif section == "diagnostics":
            diagnostics_section(sc, budget, report["diagnostics"], save)
        else:
            report_plan.plan_section(sc, budget, report["plan"], save)
    report["complete"] = True
    save()
    save_profile(profile, time_pure_jax=record)
    return path


def save_profile(path: str, time_pure_jax: bool = True) -> None:
    """This host's profile beside its report (`pgdiag host save`'s contents, replaced by each piece as its
    recorded rows grow): plans for this host made elsewhere read it (``--dry-run --host``)."""
    from pgdiag.cli.hosts import recorded_host
    from pgdiag.envs import hosts

    hosts.save(recorded_host(time_pure_jax), path, replace=True)


def filtered(sc: dict, tasks=None, targets=None) -> dict:
    """The scale ``sc`` restricted to ``tasks`` (every section) and ``targets`` (the programs section)."""
    from pgdiag.envs import REGISTRY
    from pgdiag.experiments import targets as table

    sc = dict(sc)
    if tasks:
        bad = [t for t in tasks if t not in REGISTRY]
        if bad:
            raise SystemExit(f"accelerator-report: unknown task(s) {bad}; tasks: {', '.join(REGISTRY)}")
        sc["tasks"] = tuple(t for t in sc["tasks"] if t in tasks)
        sc["only_tasks"] = tuple(tasks)
        if sc["throughput_task"] not in tasks:
            sc["agents"] = ()      # the throughput section measures one task
    if targets:
        known = tuple(table.TARGETS)
        bad = [t for t in targets if t not in known]
        if bad:
            raise SystemExit(f"accelerator-report: unknown target(s) {bad}; targets: {', '.join(known)}")
        sc["targets"] = tuple(targets)
    return sc


def ladder(sc: dict, solvers=None, batches=None) -> dict:
    """The scale ``sc`` with the crossover's solvers and batches narrowed to those given (each checked)."""
    sc = dict(sc)
    if solvers:
        bad = [s for s in solvers if s not in ("converged", "fast")]
        if bad:
            raise SystemExit(f"accelerator-report: unknown solver(s) {bad}; choose from: converged, fast")
        sc["solvers"] = tuple(solvers)
    if batches:
        try:
            sizes = tuple(int(b) for b in batches)
        except ValueError:
            sizes = ()
        if not sizes or min(sizes) < 1:
            raise SystemExit(f"accelerator-report: batches must be whole numbers >= 1, got {','.join(batches)}")
        sc["batches"] = sizes
    return sc


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="paper", help="paper (default) or tiny (seconds, on a CPU)")
    parser.add_argument("--out", default="benchmarks/results", help="the report's directory")
    parser.add_argument("--budget-minutes", type=float, default=30.0, help="wall-clock budget (default 30)")
    parser.add_argument("--no-record", action="store_true", help="do not record the physics measurements")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"what to measure, in this order (default {','.join(SECTIONS)})")
    parser.add_argument("--merge", default=None, metavar="REPORT.json",
                        help="take the sections not measured now from this earlier report (a report in pieces)")
    parser.add_argument("--tasks", default=None, help="only these tasks, comma-separated (a piece that fits a slot)")
    parser.add_argument("--targets", default=None,
                        help="only these targets' training programs (and diagnostic programs), comma-separated")
    parser.add_argument("--solvers", default=None, help="the crossover's solvers only, comma-separated")
    parser.add_argument("--batches", default=None, help="the crossover's batches only, comma-separated")
    args = parser.parse_args(argv)
    sections = tuple(x.strip() for x in args.sections.split(",") if x.strip())
    split = lambda text: tuple(x.strip() for x in text.split(",") if x.strip()) if text else None  # noqa: E731
    path = run(args.scale, args.out, args.budget_minutes, not args.no_record, sections, args.merge,
               split(args.tasks), split(args.targets), split(args.solvers), split(args.batches))
    with open(path) as f:
        print(f.read())
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
