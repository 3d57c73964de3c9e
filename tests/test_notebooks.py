"""The notebooks run top to bottom in a real kernel at the tiny scale (their parameter cell overridden), show
their figures and tables inline, and are kept in git without outputs."""

import json
import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

from pg_diag.config import ConfigError
from pg_diag.experiments import notebook

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_the_three_notebooks_are_there_without_outputs():
    assert [p.stem for p in NOTEBOOKS] == ["closer-look", "implementation-matters", "quickstart"]
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in code), path.name
        tagged = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
        assert len(tagged) == 1 and 'SCALE = "auto"' in "".join(tagged[0]["source"]), path.name


def _execute(path, out):
    nb = nbformat.read(path, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = f'SCALE = "tiny"\nOUT = {str(out)!r}'
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(out)}}).execute()
    return nb


def _outputs(nb, kind):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if kind in o.get("data", {})]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_notebook_runs_top_to_bottom_at_the_tiny_scale(path, tmp_path):
    nb = _execute(path, tmp_path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "smoke scale, tiny settings" in text                     # the choice is printed
    images = _outputs(nb, "image/png")
    expected = {"quickstart": 2, "implementation-matters": 2, "closer-look": 7}[path.stem]
    assert len(images) == expected                                  # every figure shown inline
    if path.stem == "implementation-matters":
        tables = "".join(o["data"]["text/markdown"] for o in _outputs(nb, "text/markdown"))
        assert "IM Table 2" in tables and "IM Table 3" in tables and "(published)" in tables
    if path.stem == "closer-look":   # the LQR ground truth is drawn (the exact gradient and V^π)
        assert (tmp_path / "gradients" / "fig-grad-true.png").is_file()
        assert any("exact" in o["data"]["text/markdown"] for o in _outputs(nb, "text/markdown"))
    assert not (pathlib.Path(path).parent / "results").exists()     # written under OUT only
    assert os.listdir(tmp_path)


def test_an_unknown_scale_is_named():
    with pytest.raises(ConfigError, match="unknown notebook scale 'huge'; choose one of: auto, paper, smoke, tiny"):
        notebook.choose("huge")


@pytest.mark.parametrize("backend,scale", [("gpu", "paper"), ("tpu", "paper"), ("cpu", "smoke")])
def test_auto_picks_the_paper_scale_on_an_accelerator(backend, scale):
    choice = notebook.choose("auto", backend=backend)
    assert choice.scale == scale and not choice.tiny and choice.train() == {} and choice.diagnostic(
        "fig-baselines") == {}
    tiny = notebook.choose("tiny", backend=backend)
    assert tiny.scale == "smoke" and tiny.train()["tasks"] == ("point_mass",)
    assert tiny.diagnostic("fig-grad-true")["tasks"] == ("lqr",)
