"""A replication part's wall time over the sessions it took (pgdiag.experiments.replication): sessions that ended
are summed, one the machine cut short (no end) is named and not counted; its published evidence, gzipped."""

import json
import os

from pgdiag.experiments import replication as rep
from pgdiag.experiments import replication_page, replication_plans


def test_a_parts_wall_time_sums_the_sessions_that_ended(tmp_path):
    part = rep.PARTS[0]
    sessions = [{"start": "2026-11-28T21:54:19+00:00", "host": "vm"},                       # cut short
                {"start": "2026-11-29T01:20:00+00:00", "host": "vm", "seconds": 5400.0},
                {"start": "2026-11-30T01:20:00+00:00", "host": "vm", "seconds": 1800.0}]
    (tmp_path / f"{part.name}.sessions.json").write_text(json.dumps(sessions))
    assert rep.wall(str(tmp_path), part) == 7200.0
    assert rep.wall(str(tmp_path / "none"), part) is None
    text = replication_page._sessions({"sessions": 3, "sessions_cut_short": 1})
    assert text == " over 3 sessions (1 cut short by the machine, their time not counted)"
    # a session cut short after it began keeping records counts to its last one
    sessions[0]["last_seconds"] = 600.0
    (tmp_path / f"{part.name}.sessions.json").write_text(json.dumps(sessions))
    assert rep.wall(str(tmp_path), part) == 7800.0
    text = replication_page._sessions({"sessions": 3, "sessions_cut_short": 1, "sessions_uncounted": 0})
    assert text == " over 3 sessions (1 cut short by the machine, counted to their last record)"
    text = replication_page._sessions({"sessions": 3, "sessions_cut_short": 2, "sessions_uncounted": 1})
    assert text == " over 3 sessions (2 cut short by the machine, 1 counted to their last record, 1 not counted)"
    assert replication_page._sessions({"sessions": 1, "sessions_cut_short": 0}) == ""
    text = replication_page._sessions({"sessions": 2, "sessions_cut_short": 0, "session_cpus": ["A (avx2)",
                                                                                               "B (avx512f)"]})
    assert text == " over 2 sessions, on 2 CPU models (A (avx2); B (avx512f): its runs equal one CPU's to float32 " \
                   "rounding)"


def test_published_evidence_is_gzipped_the_same_bytes_each_time(tmp_path):
    """A part published twice from the same runs writes the same evidence file (no time stamp inside), and the rows
    read back as written."""
    import gzip

    text = "evidence,task,value\ntr_log_mean_kl,humanoid,-1.889656901359558\n" * 50
    written = []
    for name in ("a", "b"):
        path = tmp_path / name / "evidence.csv"
        path.parent.mkdir()
        path.write_text(text)
        rep._gzip(str(path))
        assert not path.exists()
        written.append((tmp_path / name / "evidence.csv.gz").read_bytes())
    assert written[0] == written[1]
    assert gzip.decompress(written[0]).decode() == text


def test_every_part_runs_its_targets_at_its_own_scale():
    """A part's commands name its scale and its directories; the model pair and the CPU gradient part train
    nothing of their own that another part does not (the same presets, agents and run length on the same
    model), and the pair differs from the trust-regions part only in model and length."""
    from pgdiag.experiments import targets

    for p in rep.PARTS:
        settings = rep.settings(p)       # every target has the part's scale
        assert set(settings) == set(p.targets)
        for line in rep.commands(p, "RUNS"):
            assert f"--scale {p.scale} " in line and f"-{p.scale} --progress" in line
    trust, pair = rep.part("trust-regions"), rep.part("brax-pair")
    gym = targets.get("fig-trust-region").scales[trust.scale].training("humanoid")
    brax = targets.get("fig-trust-region").scales[pair.scale].training("humanoid")
    assert gym["model"] == "gym" and "model" not in brax and brax["num_iterations"] == 100
    assert ({k: v for k, v in gym.items() if k not in ("model", "num_iterations", "checkpoint_at")}
            == {k: v for k, v in brax.items() if k != "num_iterations"})
    grads = targets.get("fig-grad-true").scales[rep.part("gradients-cpu").scale]
    for task, owner in (("humanoid", "fig-trust-region"), ("walker2d", "fig-value"), ("hopper", "fig-value")):
        assert grads.training(task) == targets.get(owner).scales["replication"].training(task)
    others = targets.get("fig-trust-region").scales[rep.part("trust-regions-others").scale]   # nor does this
    for task in ("walker2d", "hopper"):
        assert others.training(task) == targets.get("fig-value").scales["replication"].training(task)
    humanoid = targets.get("fig-value").scales[rep.part("value-humanoid").scale]   # trains nothing of its own
    assert humanoid.training("humanoid") == targets.get("fig-trust-region").scales["replication"].training("humanoid")
    floor = targets.get("fig-baselines").scales[rep.part("baselines-humanoid").scale]
    assert floor.training("humanoid") == humanoid.training("humanoid") and floor.checkpoints("baselines") == (
        150, 300, 450)
    baselines = targets.get("fig-baselines").scales[rep.part("baselines").scale]
    for task in ("walker2d", "hopper"):     # the value part's runs, measured at Fig 5's checkpoints
        assert baselines.training(task) == targets.get("fig-value").scales["replication"].training(task)
    assert baselines.checkpoints("baselines") == (150, 300, 450)


def test_a_parts_plan_leaves_out_the_trainings_an_earlier_part_runs(monkeypatch):
    """The landscapes, the baselines and the CPU gradient part measure runs other CPU parts train: their plans are their
    measurements alone (the dry run's non-training programs summed by hand here), while the GPU gradient part,
    on another host, plans its own trainings."""
    from pgdiag.experiments import targets
    from pgdiag.experiments.planner import show_plan

    # the parts on another CPU device count (the Walker2d ablation) are not read here
    monkeypatch.setattr(replication_plans, "_planned_apart", lambda n: {p.name: None for p in rep.PARTS
                                                                         if p.cpu_devices == n})
    plans = replication_plans.plans()
    for name in ("landscapes", "baselines-humanoid", "baselines", "gradients-cpu"):
        p = rep.part(name)
        programs = list(dict.fromkeys(x for t in p.targets for x in targets.get(t).dry_run(p.scale)))
        table = show_plan([x for x in programs if x.stage != "train"], None, show=False)
        assert abs(plans[name] - float(table["estimated_s"].sum())) < 1e-6 * plans[name]
    for name in ("value-humanoid", "trust-regions-others"):   # other parts' trainings alone: nothing of their own
        p = rep.part(name)
        assert {x.stage for t in p.targets for x in targets.get(t).dry_run(p.scale)} == {"train"}
        assert plans[name] == 0.0
    p = rep.part("gradients")
    programs = list(dict.fromkeys(x for t in p.targets for x in targets.get(t).dry_run(p.scale)))
    assert any(x.stage == "train" for x in programs)
    assert abs(plans["gradients"] - float(show_plan(programs, None, show=False)["estimated_s"].sum())) \
        < 1e-6 * plans["gradients"]


def test_the_cpu_ablation_is_the_replications_walker2d():
    from pgdiag.experiments import targets

    scales = targets.get("fig-ablation").scales
    mine, all_ = scales[rep.part("ablation-walker2d").scale], scales[rep.part("ablation").scale]
    assert mine.tasks_of() == ("walker2d",) and "walker2d" in all_.tasks_of()
    assert (mine.training("walker2d"), mine.settings, mine.seeds) == (all_.training("walker2d"), all_.settings,
                                                                     all_.seeds)


def test_a_parts_dry_run_plans_on_a_declared_host(capsys):
    """`replication run PART --dry-run --host PROFILE` plans on the host the profile declares (its memory, its
    recorded costs: the H200's records no Gym model, so it says which to record); --host alone runs nothing."""
    import pytest

    from pgdiag.cli import main

    profile = "benchmarks/results/accelerator-h200-2026-11-28-host.json"
    main(["replication", "run", "value", "--dry-run", "--host", profile])
    out = capsys.readouterr().out
    assert f"declared by {profile}" in out and "none in the profile for hopper, walker2d" in out
    assert main(["replication", "run", "value", "--host", profile, "--runs", "/nonexistent"]) not in (None, 0)
    assert "--host plans on another host: it goes with --dry-run" in capsys.readouterr().err


def test_a_profile_widened_by_a_floor_table_gains_only_the_models_it_lacked(tmp_path):
    """benchmarks/profile_with_floor.py: bench_floor's `pgdiag ms` rows join a profile as native_ms rows under the
    threads their table ran on, a later table's row replacing an earlier one's, never one of the profile's own;
    the result is a profile a plan reads (by hand: Gym's Hopper at 240 on 16 threads costs 1.761 ms)."""
    import importlib.util
    import pathlib

    import pytest

    spec = importlib.util.spec_from_file_location(
        "profile_with_floor", pathlib.Path(__file__).parent.parent / "benchmarks" / "profile_with_floor.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    head = "| task | model | batch | mj_step ms | rollout ms | pgdiag ms | mj_step / pgdiag |\n|---|---|---|---|---|---|---|\n"
    floor = tmp_path / "floor.md"
    floor.write_text("# one thread\n\n" + head + "| hopper | gym | 64 | 4.9 | 4.9 | 4.697 | 1.05 |\n\nprose\n\n" + head
                     + "| hopper | gym | 1,024 | 76.1 | 8.3 | 14.921 | 5.10 |\n| hopper | brax | 1,024 | 1 | 1 | 9.9 | 1 |\n"
                     + "\n" + head + "| hopper | gym | 1,024 | 75.5 | 7.9 | 8.512 | 8.87 |\n"
                     + "| hopper | gym | 240 | 17.1 | 2.1 | 1.761 | 9.75 |\n")
    out = tmp_path / "new.json"
    base = "benchmarks/results/accelerator-h200-2026-11-28-host.json"
    assert tool.main([base, str(floor), "--tables", "1=1", "2=16", "3=16", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["physics"]
    gym16 = {r["batch"]: r["native_ms"] for r in rows["16"] if r.get("model") == "gym"}
    assert gym16 == {1024: 8.512, 240: 1.761}          # the chunked table's 1,024 replaced the fixed shares'
    assert [r["native_ms"] for r in rows["1"] if r.get("model") == "gym"] == [4.697]
    assert 9.9 not in [r.get("native_ms") for r in rows["16"]]   # Brax's Hopper: the profile's own rows stand
    with pytest.raises(SystemExit, match="exists"):
        tool.main([base, str(floor), "--tables", "1=1", "--out", str(out)])
    from pgdiag.envs import hosts
    from pgdiag.experiments import costs
    with hosts.declare(hosts.load(str(out))):
        assert costs.recorded_step_ms(model="gym")("hopper", 240) == pytest.approx(1.761)


def test_a_part_runs_on_the_cpu_devices_it_declares():
    """The CPU ablation shards its agents over 2 CPU devices in every session: a fresh process is given them
    before JAX starts, its commands say so, and a process whose JAX already has another count is refused in words
    (its runs would continue as other programs)."""
    import dataclasses
    import subprocess
    import sys

    import pytest

    from pgdiag.config import ConfigError

    walker = rep.part("ablation-walker2d")
    assert walker.cpu_devices == 2 and all(c.startswith("PGDIAG_HOST_DEVICES=2 pgdiag ")
                                           for c in rep.commands(walker, "/r"))
    assert all(c.startswith("PGDIAG_HOST_DEVICES=1 pgdiag ") for c in rep.commands(rep.part("value"), "/r"))
    code = ("from pgdiag.experiments import replication as rep; rep.use_devices(rep.part('ablation-walker2d')); "
            "import jax; print(jax.device_count())")
    env = {k: v for k, v in __import__("os").environ.items() if k != "PGDIAG_HOST_DEVICES"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split()[-1] == "2"
    # a part begun on one device gets one, not a CPU-only host's default of two
    out = subprocess.run([sys.executable, "-c", code.replace("ablation-walker2d", "value")], capture_output=True,
                         text=True, env={**env, "JAX_PLATFORMS": "cpu"}, check=True)
    assert out.stdout.split()[-1] == "1"
    rep.use_devices(rep.part("value"))   # this process: JAX's one CPU device, as the part asks
    with pytest.raises(ConfigError, match=r"over 2 CPU device\(s\), this process has 1 \(JAX started before"):
        rep.use_devices(dataclasses.replace(rep.part("value"), cpu_devices=2))


def test_a_part_on_a_gpu_host_keeps_its_cpu_device_per_core(monkeypatch):
    """A host with an accelerator collects over one CPU device per core: no part's count replaces them, and its
    commands name none."""
    import pytest

    from pgdiag.run import host_devices

    monkeypatch.setattr(host_devices, "_accelerator_present", lambda: True)
    monkeypatch.setattr(host_devices, "configure", lambda count=None: pytest.fail(f"configure({count}) called"))
    for name in ("ablation", "value", "ablation-walker2d"):
        rep.use_devices(rep.part(name))
        assert not any("PGDIAG_HOST_DEVICES" in c for c in rep.commands(rep.part(name), "/r"))


def _value_rows(evidence, task, label, values):
    import pandas as pd

    return pd.DataFrame({"evidence": evidence, "task": task, "label": label, "agent": [str(i) for i in
                         range(len(values))], "value": values, "iteration": 150, "progress": 150 / 488,
                         "lr_share": 1 - 150 / 488, "pairs": float("nan"), "run_iterations": 488, "model": "gym"})


def test_a_finding_row_states_its_rule_each_tests_verdict_and_the_tasks_not_measured():
    """The held-out returns MRE (band [0.25, 0.75]) on 8 Hopper PPO agents at 0.40 … 0.47 over a floor well below
    (holds), on 8 Walker2d TRPO agents at 0.40 … 0.89 (the interval leaves the band: inconclusive); Humanoid, a task
    of Figs 4, 15, unmeasured. The original's GAE "MRE" (an extension) is listed apart, never counted."""
    import numpy as np
    import pandas as pd

    from pgdiag.experiments import claims, findings

    ev = pd.concat([_value_rows("value_heldout_truncated_mre", "hopper", "ppo", list(np.linspace(0.40, 0.47, 8))),
                    _value_rows("value_floor_excess_truncated_mre", "hopper", "ppo", [0.2] * 8),
                    _value_rows("value_heldout_truncated_mre", "walker2d", "trpo", list(np.linspace(0.40, 0.89, 8))),
                    _value_rows("value_heldout_gae_mre", "hopper", "ppo", [3.0 + i for i in range(8)])])
    results = claims.evaluate(ev, paper="CL")
    found = findings.findings(results, "CL")
    family = claims.by_key("value-off-by-about-half").family
    row = next(x for x in replication_page._section(family, found, results) if "`value-off-by-about-half`" in x)
    assert "held-out MRE against the original's returns (cut at the batch end, no bootstrap); holds if within " \
           "[0.25, 0.75]" in row
    assert "(holds)" in row and "(inconclusive)" in row
    assert "on hopper/walker2d (humanoid not measured yet)" in row
    ext = replication_page._extensions(results, "CL")
    line = next(x for x in ext if "`value-fits-its-target-original`" in x)
    assert line.endswith("| does not hold |") and "| 6.5 [" in line and "### Extensions" in ext[0]   # median of 3 … 10


def test_a_part_says_which_claims_it_decides(capsys):
    """The baselines part gives CL §5.2's three baseline findings (Walker2d, Fig 5's task), V*'s extension and the
    noise floor the value band is tested above; IM Fig 3's other tasks give IM's two findings read there, none of
    CL §5.4's (Fig 9: Humanoid); the dry run prints them under its plan."""
    from pgdiag.cli import main

    assert rep.decides(rep.part("baselines")) == {
        "finding": ["value-baseline-helps", "value-baseline-marginal-at-2k", "true-value-baseline-helps-more"],
        "extension": ["value-not-the-true-value"],
        "floor": ["value-off-by-about-half", "value-off-by-about-half-complete"]}
    assert rep.decides(rep.part("trust-regions-others")) == {"finding": ["ratios-leave-region", "kl-region-kept"]}
    main(["replication", "run", "trust-regions-others", "--dry-run"])
    assert "findings it decides: ratios-leave-region, kl-region-kept" in capsys.readouterr().out


def test_an_unmeasured_finding_names_its_parts_with_their_planned_times():
    """A gradient finding not measured names the GPU part with its time on the declared host and the CPU part with
    the project CPU's (both from the plans file, by hand: 3600 s is 1.0 h, 1,800 s 30 min)."""
    from pgdiag.experiments import claims

    plans = {"this host": {"profile": "this host", "seconds": {"gradients-cpu": 1800.0, "gradients": 7.0e5}},
             "H200 host": {"profile": "h200.json", "seconds": {"gradients": 3600.0, "gradients-cpu": 60.0}}}
    text = replication_page._supplier(claims.by_key("gradients-poorly-concentrated"), plans=plans)
    assert "`pgdiag replication run gradients` (GPU, planned 1.0 h on the H200 host)" in text
    assert "`pgdiag replication run gradients-cpu` (CPU, the replication-cpu scale, planned 30 min on this " \
           "project's CPU; N up to 8,192" in text
    assert "planned" not in replication_page._supplier(claims.by_key("gradients-poorly-concentrated"))
    assert "The declared hosts' profiles: H200 host: `h200.json`." in replication_page._profiles(plans)


def test_a_part_that_measures_a_finding_in_part_says_where_it_falls_short():
    """The surrogate's alignment (CL Figs 7, 8, 17–25: three tasks) is measured by the landscapes part on Humanoid
    alone, its steps at the mid scale's sample sizes; Walker2d and Hopper have no part: each said in words."""
    from pgdiag.experiments import claims

    text = replication_page._supplier(claims.by_key("surrogate-aligned-early"))
    assert "`pgdiag replication run landscapes` (CPU; on humanoid only; its surrogate steps from the mid scale's " \
           "sample sizes, not the paper's 1e6 pairs a point)" in text
    assert text.endswith("; hopper/walker2d: no replication part yet")


def test_a_row_outside_the_findings_tasks_is_shown_beside_it_and_an_inconclusive_one_says_why():
    """Without a baseline, 8 Walker2d agents at 0.1 … 0.3 of PPO's median score against PPO's 1 (differences
    −0.9 … −0.7 straddle the rule < −0.8: inconclusive, with the effect its test detects) and 8 Hopper agents at
    0.55 (−0.45; Hopper lies outside the study the sentence closes: shown beside it as exploratory, never counted)."""
    import numpy as np
    import pandas as pd

    from pgdiag.experiments import claims, findings

    def group(task, label, values):
        return _value_rows("nobaseline_score_relative", task, label, values)

    ev = pd.concat([group("walker2d", "ppo", [1.0] * 8), group("walker2d", "ppo-nobaseline", list(np.linspace(
                    0.1, 0.3, 8))), group("hopper", "ppo", [1.0] * 8), group("hopper", "ppo-nobaseline", [0.55] * 8)])
    results = claims.evaluate(ev, paper="CL")
    found = findings.findings(results, "CL")
    family = claims.by_key("no-baseline-order-worse").family
    row = next(x for x in replication_page._section(family, found, results) if "`no-baseline-order-worse`" in x)
    cells = row.split(" | ")
    assert "walker2d ppo-nobaseline − ppo, 8 agents" in cells[3] and \
        "hopper ppo-nobaseline − ppo, 8 agents, 488 iterations, Gym's *exploratory*" in cells[3]
    assert "−0.45 [" in cells[4] and cells[4].endswith("*exploratory*")
    assert "**inconclusive**" in cells[5] and "detects with probability 0.8" in cells[5]


def test_a_running_session_records_its_time_as_it_goes(tmp_path, monkeypatch):
    """While a part runs, its session records every HEARTBEAT_S how long it has run, so a machine that stops it
    without a word loses at most that much: read from the log mid-run, then the end replaces it."""
    import time
    import types

    from pgdiag.experiments import targets

    part, log = rep.PARTS[0], tmp_path / f"{rep.PARTS[0].name}.sessions.json"
    seen = []

    def train(scale, out, progress):
        time.sleep(0.5)
        seen.append(json.loads(log.read_text())[-1])

    monkeypatch.setattr(rep.sessions, "HEARTBEAT_S", 0.05)
    monkeypatch.setattr(targets, "get", lambda name: types.SimpleNamespace(study="s", train=train))
    total = rep.run(part, str(tmp_path))
    assert "seconds" not in seen[0] and 0.05 <= seen[0]["last_seconds"] <= 0.5 * len(part.targets)
    final = json.loads(log.read_text())[-1]
    assert final["seconds"] >= 0.5 * len(part.targets) and total == final["seconds"]


def test_a_finding_without_agents_says_why_once():
    """value-baseline-helps where no Walker2d agent's cosines clear 0.2 (the ratio is NaN on all 8): the outcome cell
    gives the reason its test and the finding share, once — not the bare verdict."""
    import numpy as np
    import pandas as pd

    from pgdiag.experiments import claims, findings

    claim = claims.by_key("value-baseline-helps")
    ev = pd.DataFrame({"evidence": claim.evidence, "task": "walker2d", "label": "ppo", "agent": [str(i) for i in
                       range(8)], "value": np.nan, "iteration": 300, "progress": 300 / 488, "lr_share": 1 - 300 / 488,
                       "pairs": 10_000, "run_iterations": 488, "model": "gym"})
    results = claims.evaluate(ev, paper="CL")
    found = findings.findings(results, "CL")
    row = next(x for x in replication_page._section(claim.family, found, results) if "`value-baseline-helps`" in x)
    outcome = row.split(" | ")[-1]
    assert outcome.startswith("**too few agents**: walker2d ppo: its statistic has no value on any of its 8 agents")
    assert outcome.count("no value on any") == 1


def test_a_published_part_that_fell_short_is_not_offered_again():
    """gradients-converge-with-samples read by the published gradients-cpu part at its own sample sizes only: the
    page offers the GPU part and says the CPU part was published, with what it falls short of — not "run" it."""
    from pgdiag.experiments import claims

    claim = claims.by_key("gradients-converge-with-samples")
    text = replication_page._supplier(claim, published={"gradients-cpu"}, read=True)
    assert text.startswith("run `pgdiag replication run gradients` (GPU")
    assert "run gradients-cpu" not in text and "(published: `gradients-cpu`, N up to 8,192" in text
    assert replication_page._supplier(claim, published={"gradients-cpu", "gradients"}, read=True) == \
        "published: `gradients-cpu`, `gradients` read it only there"
    # a finding only a CPU part at other sample sizes reads (the landscapes' steps from ~1e6 pairs): the target
    steps = claims.by_key("trpo-surrogate-tracks-true-with-many-samples")
    assert replication_page._supplier(steps, published={"landscapes"}, read=True) == "published: `landscapes` read " \
        "it only there; at the papers' settings: `pgdiag fig-landscape-surrogate --scale paper` on a 16-core GPU " \
        "host (no replication part yet)"


def test_each_part_is_planned_on_the_cpu_devices_it_runs_on(monkeypatch):
    """On a CPU-only host the parts on another count than this process's are planned in a process of their own
    (the count decides the update's cost and which recorded costs apply); the others are planned here."""
    from pgdiag.envs import hosts
    from pgdiag.run import host_devices

    apart = []
    monkeypatch.setattr(host_devices, "_accelerator_present", lambda: False)
    monkeypatch.setattr(hosts, "cpu_device_count", lambda: 1)
    monkeypatch.setattr(replication_plans, "_planned_apart", lambda n: apart.append(n) or
                        {p.name: 1.0 for p in rep.PARTS if p.cpu_devices == n})
    monkeypatch.setattr(replication_plans, "_planned", lambda p, host, earlier: 2.0)
    out = replication_plans.plans()
    assert apart == [2] and list(out) == [p.name for p in rep.PARTS]
    assert out["ablation-walker2d"] == 1.0 and all(v == 2.0 for k, v in out.items() if k != "ablation-walker2d")


def test_a_planning_process_gets_the_count_it_plans_for():
    """The process planning a count's parts is given that count before JAX starts, even where the inherited XLA
    flags ask for another (JAX would otherwise keep them, and the process would plan on the wrong count)."""
    import subprocess
    import sys

    code = ("from pgdiag.experiments import replication_plans as r; r._plans = lambda parts, host: "
            "[p.name for p in parts]; import jax; print(r.planned_at(1)[:2], jax.device_count())")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "PGDIAG_HOST_DEVICES": "2"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "['trust-regions', 'brax-pair'] 1"


def test_no_program_is_shared_across_cpu_device_counts():
    """Parts on other CPU device counts are planned in processes of their own, each leaving out only the programs
    an earlier part of its own count runs: that is right while no CPU program is read by parts of two counts."""
    from pgdiag.experiments import targets

    trains: dict = {}
    for p in rep.PARTS:
        if p.device == "cpu":
            trains.setdefault(p.cpu_devices, set()).update(
                x for t in p.targets for x in targets.get(t).dry_run(p.scale))
    assert sorted(trains) == [1, 2] and not trains[1] & trains[2]
