"""The notebooks run top to bottom in a real kernel at the tiny scale (their parameter cell overridden), show
their figures and tables inline, and are kept in git without outputs."""

import json
import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

from pgdiag.config import ConfigError
from pgdiag.experiments import costs, notebook

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_the_three_notebooks_are_there_without_outputs():
    assert [p.stem for p in NOTEBOOKS] == ["closer-look", "implementation-matters", "quickstart"]
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in code), path.name
        tagged = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
        assert len(tagged) == 1 and 'SCALE = "auto"\nBUDGET_MINUTES = 20' in "".join(tagged[0]["source"]), path.name


def _execute(path, out, km):
    nb = nbformat.read(path, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = f'SCALE = "tiny"\nBUDGET_MINUTES = 20\nOUT = {str(out)!r}'
    NotebookClient(nb, timeout=600, kernel_name="python3", km=km).execute()
    return nb


def _outputs(nb, kind):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if kind in o.get("data", {})]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Every notebook run once at the tiny scale, one after another in ONE kernel (as a user would run them
    in one session; imports and compiled programs are shared): {name: (executed notebook, its OUT)}. The
    kernel's working directory is a directory of its own, so a notebook writing anywhere but OUT shows."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path_factory.mktemp("kernel-cwd")))
    try:
        out = {}
        for path in NOTEBOOKS:
            where = tmp_path_factory.mktemp(path.stem)
            out[path.stem] = (_execute(path, where, km), where)
    finally:
        km.shutdown_kernel(now=True)
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_notebook_runs_top_to_bottom_at_the_tiny_scale(path, executed):
    nb, tmp_path = executed[path.stem]
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "smoke scale, tiny settings" in text                     # the choice is printed
    images = _outputs(nb, "image/png")
    expected = {"quickstart": 2, "implementation-matters": 2, "closer-look": 7}[path.stem]
    assert len(images) == expected                                  # every figure shown inline
    if path.stem == "quickstart":   # the algorithm defined in the notebook, registered and swept
        manifest = json.loads((tmp_path / "vpg-2" / "manifest.json").read_text())
        assert manifest["base_config"]["static"]["algorithm"] == "vpg-2"
    if path.stem == "implementation-matters":
        tables = "".join(o["data"]["text/markdown"] for o in _outputs(nb, "text/markdown"))
        assert "IM Table 2" in tables and "IM Table 3" in tables and "(published)" in tables
    if path.stem == "closer-look":   # the LQR ground truth is drawn (the exact gradient and V^π)
        assert (tmp_path / "gradients" / "fig-grad-true.png").is_file()
        assert any("exact" in o["data"]["text/markdown"] for o in _outputs(nb, "text/markdown"))
    assert not (pathlib.Path(path).parent / "results").exists()     # written under OUT only
    assert os.listdir(tmp_path)


def test_an_unknown_scale_is_named():
    with pytest.raises(ConfigError, match="unknown notebook scale 'huge'; choose one of: auto, paper, mid, smoke, tiny"):
        notebook.choose("huge")
    for budget in (0, -5, "20", True):
        with pytest.raises(ConfigError, match=f"time budget must be a number of minutes > 0, got {budget!r}"):
            notebook.choose("auto", budget, "quickstart")
    with pytest.raises(ConfigError, match="unknown notebook 'intro'; notebooks: quickstart"):
        notebook.choose("auto", 20, "intro")


def test_auto_picks_the_largest_scale_that_fits_the_budget(tmp_path, monkeypatch):
    """At a per-step cost of 1 ms the quickstart's sweep (one training program) takes, by hand: sequential steps
    × 1 ms × 4.0 (training's allowance over physics) + 30 s of compiling — smoke 30 × 256 steps: 60.72 s; mid
    100 × 2,048: 849.2 s; paper 488 × 2,048: 4,027.696 s."""
    monkeypatch.setenv("PGDIAG_CACHE", str(tmp_path))   # no training cost recorded by other tests' runs

    def one_ms(task, width, *physics):
        return 1.0

    assert costs.OVERHEAD["train"] == 4.0
    assert notebook.estimate("quickstart", "smoke", one_ms) == pytest.approx(60.72)
    assert notebook.estimate("quickstart", "mid", one_ms) == pytest.approx(849.2)
    assert notebook.estimate("quickstart", "paper", one_ms) == pytest.approx(4027.696)
    picks = {budget: str(notebook.choose("auto", budget, "quickstart", step_ms=one_ms)).split(" (")[0]
             for budget in (0.5, 1, 1.1, 15, 67, 68)}
    assert picks == {0.5: "backend cpu: smoke scale, tiny settings", 1: "backend cpu: smoke scale, tiny settings",
                     1.1: "backend cpu: smoke scale", 15: "backend cpu: mid scale", 67: "backend cpu: mid scale",
                     68: "backend cpu: paper scale"}   # under 60.72 s nothing fits: the tiny settings
    fallback = notebook.choose("auto", 0.5, "quickstart", step_ms=one_ms)
    assert fallback.tiny and fallback.train()["tasks"] == ("point_mass",)
    assert str(fallback).endswith("smoke > 1 min; no scale fits, so the tiny settings)")
    # a cost of `width` ms: a scale is first bounded from one environment's cost (1 ms) and costed in full only
    # when that bound fits — paper's bound 4,027.7 s fits 120 min, in full (10 agents: 10 ms) 40,006.96 s does
    # not; mid's bound 849.2 s fits, in full (6 agents) 4,945.2 s fits; smoke then stays a bound
    choice = notebook.choose("auto", 120, "quickstart", step_ms=lambda task, width, *physics: float(width))
    assert [(s, round(t, 2), bound) for s, t, bound in choice.estimates] == [
        ("paper", 40006.96, False), ("mid", 4945.2, False), ("smoke", 60.72, True)]
    assert str(choice).startswith("backend cpu: mid scale (auto, budget 120 min; estimated paper 11.1 h, mid 82 min")
    # a notebook is offered mid where every one of its targets has it (implementation-matters: since fig-ablation
    # and the tables have one), never where one of them lacks it
    scales = [s for s, _, _ in notebook.choose("auto", 1e9, "implementation-matters", step_ms=one_ms).estimates]
    assert scales == ["paper", "mid", "smoke"]
    from pgdiag.studies import ablation

    monkeypatch.delitem(ablation.SCALES, "mid")
    scales = [s for s, _, _ in notebook.choose("auto", 1e9, "implementation-matters", step_ms=one_ms).estimates]
    assert scales == ["paper", "smoke"]


def test_a_step_cost_is_measured_here_when_none_is_recorded():
    from pgdiag.experiments import costs

    step_ms = costs.measured_step_ms()
    ms = step_ms("point_mass", 8)
    assert 0 < ms < 1e3 and step_ms("point_mass", 8) == ms   # timed once, then cached


@pytest.mark.parametrize("backend,scale", [("gpu", "paper"), ("tpu", "paper"), ("cpu", "smoke")])
def test_auto_without_a_notebook_picks_by_device(backend, scale):
    choice = notebook.choose("auto", backend=backend)
    assert choice.scale == scale and not choice.tiny and choice.train() == {} and choice.diagnostic(
        "fig-baselines") == {}
    tiny = notebook.choose("tiny", backend=backend)
    assert tiny.scale == "smoke" and tiny.train()["tasks"] == ("point_mass",)
    assert tiny.diagnostic("fig-grad-true")["tasks"] == ("lqr",)


def test_the_install_cell_installs_from_the_named_source_or_says_what_to_set(monkeypatch):
    """The first cell run where pgdiag is missing (find_spec patched): with neither REPOSITORY nor
    PGDIAG_SOURCE it says what to set; with a repository it pip-installs it (pip patched)."""
    import importlib.util
    import subprocess

    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    cell = next(c.source for c in nb.cells if c.cell_type == "code")
    assert cell.startswith("# Install pgdiag")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pgdiag" else real(name, *a))
    monkeypatch.delenv("PGDIAG_SOURCE", raising=False)
    with pytest.raises(RuntimeError, match="set REPOSITORY to OWNER/NAME"):
        exec(cell, {})
    calls = []
    monkeypatch.setattr(subprocess, "check_call", calls.append)
    exec(cell.replace('REPOSITORY = ""', 'REPOSITORY = "someone/pgdiag"'), {})
    assert calls[0][3:6] == ["install", "--quiet", "git+https://github.com/someone/pgdiag"]
    monkeypatch.setenv("PGDIAG_SOURCE", "/content/pgdiag")
    exec(cell, {})
    assert calls[1][5] == "/content/pgdiag"


def _colab_links():
    """tools/colab_links.py (a developer's tool, not in the package)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "colab_links.py")
    spec = importlib.util.spec_from_file_location("colab_links", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("remote", ["git@github.com:someone/pgdiag.git", "https://github.com/someone/pgdiag",
                                    "https://github.com/someone/pgdiag.git/", "someone/pgdiag"])
def test_the_colab_links_come_from_the_repositorys_remote(remote, tmp_path, monkeypatch):
    import json
    import shutil
    import subprocess

    colab = _colab_links()

    root = tmp_path / "clone"
    shutil.copytree(os.path.dirname(NOTEBOOKS[0]), root / "notebooks")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.delenv("PGDIAG_REPOSITORY", raising=False)
    with pytest.raises(colab.NoRepository, match="REPOSITORY=OWNER/NAME"):
        colab.repository(cwd=str(root))                                 # no origin yet: says how to name it
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", remote], check=True)
    repo = colab.repository(cwd=str(root))
    assert repo == "someone/pgdiag"
    for _ in range(2):                                                  # written twice: one badge, not two
        paths = colab.write_links(repo, str(root))
    assert len(paths) == len(NOTEBOOKS)
    nb = json.load(open(root / "notebooks" / "quickstart.ipynb"))
    first = nb["cells"][0]["source"]
    assert first[0] == ("[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab."
                        "research.google.com/github/someone/pgdiag/blob/main/notebooks/quickstart.ipynb) <!-- colab -->\n")
    assert first[1] == "\n" and first[2].startswith("# pgdiag quickstart")
    assert sum(colab.MARK in line for line in first) == 1
    install = "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])
    assert 'REPOSITORY = "someone/pgdiag"  # @param' in install
    nbformat.validate(nbformat.reads(json.dumps(nb), as_version=4))


def test_colab_links_refuse_an_address_colab_cannot_open():
    colab = _colab_links()

    with pytest.raises(colab.NoRepository, match="'https://gitlab.com/a/b' is not a GitHub address"):
        colab.repository("https://gitlab.com/a/b")


# The closer-look notebook runs the value, baseline and landscape targets end to end on the LQR task; what
# they wrote is checked here, and redrawn from disk through the command line with zero compiles.

def test_closer_look_value_curves_are_the_recorded_metrics_and_redraw(executed, tmp_path, capsys):
    import numpy as np
    import pandas as pd

    from pgdiag.cli import main
    from pgdiag.experiments import study_dir
    from pgdiag.run import CompileCounter

    out = executed["closer-look"][1] / "value"
    _, m = study_dir.load_runs(str(out), "value", "fig-value")
    c = pd.read_csv(out / "fig-value-curves.csv")
    assert set(m.algorithm) == {"ppo", "trpo"} and m.agent.nunique() == 2
    for kind in ("gae", "returns", "exact"):
        train = c[(c.error == kind) & (c.batch == "train") & (c.algorithm == "ppo")].set_index("iteration")["mean"]
        by_hand = m[m.algorithm == "ppo"].groupby("iteration")[f"value_mre_{kind}"].mean()
        np.testing.assert_allclose(train.to_numpy(), by_hand.to_numpy(), rtol=1e-6)
        held = c[(c.error == kind) & (c.batch == "held-out")]
        assert sorted(held.iteration.unique()) == [0, 2, 4]   # heldout_every = 2 at smoke scale, 6 iterations
    assert np.isfinite(pd.read_csv(out / "fig-value-summary.csv")["exact MRE (train)"]).all()
    with CompileCounter() as counter:
        assert main(["fig-value", "--from", str(out), "--out", str(tmp_path / "again")]) == 0
    assert counter.count == 0
    assert os.path.getsize(tmp_path / "again" / "fig-value.png") > 10_000
    assert "exact MRE (train)" in capsys.readouterr().out


def test_closer_look_baselines_cover_every_baseline_and_redraw(executed, tmp_path):
    import numpy as np
    import pandas as pd

    from pgdiag.cli import main
    from pgdiag.run import CompileCounter

    out = executed["closer-look"][1] / "baselines"
    s = pd.read_csv(out / "fig-baselines-summary.csv")
    assert set(s.label) == {"ppo", "trpo"} and set(s.task) == {"lqr"} and set(s.iteration) == {0, 5}
    assert set(s.baseline) == {"value", "fitted", "zero", "exact"}
    assert ((s.at_largest_n >= -1 - 1e-6) & (s.at_largest_n <= 1 + 1e-6)).all()    # cosines
    assert np.isfinite(s.fitted_mre).all() and (s.fitted_mre >= 0).all()
    with CompileCounter() as counter:
        assert main(["fig-baselines", "--from", str(out), "--out", str(tmp_path / "again")]) == 0
    assert counter.count == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "again" / "fig-baselines-summary.csv"), s)


def test_closer_look_landscapes_bracket_their_agreement_and_redraw(executed, tmp_path):
    import pandas as pd

    from pgdiag.cli import main
    from pgdiag.run import CompileCounter

    out = executed["closer-look"][1] / "landscape"
    s = pd.read_csv(out / "fig-landscape-surrogate-summary.csv")
    assert set(s.label) == {"ppo", "ppo-m", "trpo"} and set(s.step_pairs) == {1024, 2048}
    assert ((s.low <= s.agreement + 1e-9) & (s.agreement <= s.high + 1e-9)).all()
    c = pd.read_csv(out / "fig-landscape-concentration-summary.csv")
    assert set(c.label) == {"ppo", "trpo"} and set(c.n) == {512, 1024}
    with CompileCounter() as counter:
        for target in ("fig-landscape-concentration", "fig-landscape-surrogate"):
            assert main([target, "--from", str(out), "--out", str(tmp_path / "again")]) == 0
    assert counter.count == 0


def test_the_claims_report_reads_the_closer_look_studies_without_compiling(executed, tmp_path, capsys):
    """``pgdiag report`` on the notebook's studies (gradients, steps, value, baselines, landscapes at the tiny
    scale): every claim measured there gets a row with a verdict, every figure is redrawn, nothing compiles."""
    import pandas as pd

    from pgdiag.cli import main
    from pgdiag.experiments import claims
    from pgdiag.run import CompileCounter

    root = executed["closer-look"][1]
    with CompileCounter() as counter:
        assert main(["report", "--from", str(root), "--out", str(tmp_path / "report")]) == 0
    assert counter.count == 0
    assert "findings from baselines, gradients, landscape, value" in capsys.readouterr().out
    table = pd.read_csv(tmp_path / "report" / "claims.csv")
    assert set(table.verdict) <= set(claims.VERDICTS) and set(table.task) <= {"lqr", "point_mass"}
    # the papers' claims are about their MuJoCo tasks: on the pure-JAX tasks every row is exploratory
    assert (table[table.role != "check"].scope == "exploratory").all()
    assert (table[table.scope == "exploratory"].verdict == claims.NOT_HERE).all()
    measured = {"gradients-poorly-concentrated", "gradients-far-from-true", "gradients-converge-with-samples",
                "steps-vary", "value-baseline-helps", "landscape-noisy-at-small-n", "surrogate-aligned-early"}
    assert measured <= set(table.claim)
    text = (tmp_path / "report" / "report.md").read_text()
    for target in ("fig-grad-variance", "fig-grad-true", "fig-step-variance", "fig-value", "fig-baselines",
                   "fig-landscape-concentration", "fig-landscape-surrogate"):
        # one file, or one per task and algorithm where a single figure would be too tall (landscapes)
        drawn = sorted((tmp_path / "report" / "figures" / target).glob(f"{target}*.png"))
        assert drawn, target
        for path in drawn:
            assert f"![{target}](figures/{target}/{path.name})" in text


def test_the_im_report_reads_the_implementation_matters_studies_without_compiling(executed, tmp_path, capsys):
    """``pgdiag report --paper im`` on the notebook's fig-ablation and Tables 2/3 study: IM's claims each get a
    row per task, every one with agents counted (pairs for the ablation), nothing compiles."""
    import pandas as pd

    from pgdiag.cli import main
    from pgdiag.experiments import claims
    from pgdiag.run import CompileCounter

    root = executed["implementation-matters"][1]
    with CompileCounter() as counter:
        assert main(["report", "--paper", "im", "--from", str(root), "--out", str(tmp_path / "im")]) == 0
    assert counter.count == 0
    assert "findings from ablation, algorithms" in capsys.readouterr().out
    table = pd.read_csv(tmp_path / "im" / "claims.csv")
    assert set(table.paper) == {"IM"} and set(table.verdict) <= set(claims.VERDICTS)
    assert {"optimizations-matter-more-than-step", "reward-scaling-needed", "lr-annealing-needed",
            "orthogonal-init-needed", "noclip-beats-ppo-m", "noclip-matches-ppo"} <= set(table.claim)
    paper = table[table.scope == "paper"]
    assert (paper[paper.agents < claims.MIN_AGENTS].verdict == "too few agents").all()
    text = (tmp_path / "im" / "report.md").read_text()
    assert "# Implementation matters" in text and "![fig-ablation](figures/fig-ablation/fig-ablation.png)" in text
    assert "[table-2](figures/table-2/table-2.md)" in text
