"""The documentation: every target has its page in the site's navigation, every internal link in README.md and
docs/ reaches a file (and, with a #fragment, a heading there), and the README stays a screen or two. The site
itself is built with warnings as errors by `make docs` (CI runs it)."""

import os
import pathlib
import re

import pytest

from pgdiag.experiments import targets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _markdown_files():
    yield os.path.join(ROOT, "README.md")
    for folder, _, files in os.walk(os.path.join(ROOT, "docs")):
        yield from (os.path.join(folder, f) for f in sorted(files) if f.endswith(".md"))


def _anchors(path):
    """MkDocs' heading ids: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    for line in open(path, encoding="utf-8"):
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title)))
    return out


def _outside_code(text):
    return re.sub(r"```.*?```", "", text, flags=re.S)


@pytest.mark.parametrize("path", list(_markdown_files()), ids=lambda p: os.path.relpath(p, ROOT))
def test_every_internal_link_resolves(path):
    text = _outside_code(open(path, encoding="utf-8").read())
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not checked here
        file, _, fragment = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        assert os.path.exists(resolved), f"{os.path.relpath(path, ROOT)} links to {target}: no such file"
        if fragment and resolved.endswith(".md"):
            assert fragment in _anchors(resolved), f"{os.path.relpath(path, ROOT)} links to {target}: no such heading"


def test_every_target_has_its_page_in_the_navigation():
    nav = open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8").read()
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    for name in targets.TARGETS:
        page = os.path.join(ROOT, "docs", "targets", f"{name}.md")
        assert os.path.exists(page), f"target {name} has no page docs/targets/{name}.md"
        assert open(page, encoding="utf-8").readline().strip() == f"# {name}"
        assert f"targets/{name}.md" in nav, f"docs/targets/{name}.md is not in mkdocs.yml's nav"
        assert f"(docs/targets/{name}.md)" in readme, f"the README's table of targets lacks {name}"


def test_the_generated_pages_are_current():
    """The settings reference and every target page's table of scales are written from the code (the settings'
    declarations, the targets' Scale records) by `python tools/gen_docs.py` (`make docs`): the committed
    pages must be what it writes, so they cannot drift from what the code allows and trains."""
    gen_docs = _tool("gen_docs")
    pages = gen_docs.pages()
    assert set(pages) >= {os.path.join("docs", "targets", f"{name}.md") for name in targets.TARGETS}
    for path, text in pages.items():
        assert open(os.path.join(ROOT, path), encoding="utf-8").read() == text, \
            f"{path} is not current: run python tools/gen_docs.py"


def test_every_generated_table_row_names_a_declared_setting():
    """The settings reference has a row for every declared knob and static setting."""
    from pgdiag.config import KNOB_SETTINGS, STATIC_SETTINGS
    gen_docs = _tool("gen_docs")
    page = open(os.path.join(ROOT, gen_docs.SETTINGS_PAGE), encoding="utf-8").read()
    for name in (*KNOB_SETTINGS, *STATIC_SETTINGS):
        assert f"| `{name}` |" in page, f"{gen_docs.SETTINGS_PAGE} has no row for {name}"


def test_every_page_is_in_the_navigation():
    nav = open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8").read()
    for path in _markdown_files():
        rel = os.path.relpath(path, os.path.join(ROOT, "docs"))
        if not rel.startswith(".."):
            assert rel in nav, f"docs/{rel} is not in mkdocs.yml's nav"


def test_the_readme_fits_a_screen_or_two():
    lines = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().splitlines()
    assert len(lines) <= 150
    assert "make fig-ablation" in "\n".join(lines) and "make test" in "\n".join(lines)


def _semantics_entries():
    """{section: {entry numbers}} of docs/semantics.md: '### §2.1 ...' followed by numbered items ('1. **'),
    and §8's labelled bullets ('- **B4.**')."""
    entries, section = {}, None
    for line in open(os.path.join(ROOT, "docs", "semantics.md"), encoding="utf-8"):
        heading = re.match(r"#+ §(\d+(?:\.\d+)?) ", line)
        if heading:
            section = heading.group(1)
            entries[section] = set()
            continue
        item = re.match(r"(\d+)\. \*\*", line) or re.match(r"- \*\*B(\d+)\.\*\*", line)
        if item and section:
            entries[section].add(int(item.group(1)))
    return entries


CITATION = re.compile(r"§(\d+(?:\.\d+)?) (?:steps?|items?) (\d+)(?:–(\d+))?|§(8) (B\d+(?:, B\d+)*)")


def test_every_reference_citation_names_an_entry_of_the_semantics_page():
    """'ref §2.1 step 6', '§4.2 items 1–3', '§8 B1, B2' in the code and the docs each name a numbered entry of
    docs/semantics.md (the page the code's 'ref §N' comments cite)."""
    entries, cited = _semantics_entries(), 0
    paths = list(_markdown_files()) + [os.path.join(folder, f) for top in ("pgdiag", "benchmarks", "examples")
                                       for folder, _, files in os.walk(os.path.join(ROOT, top))
                                       for f in files if f.endswith(".py")]
    for path in paths:
        for m in CITATION.finditer(open(path, encoding="utf-8").read()):
            if m.group(4):
                section, numbers = "8", [int(b[1:]) for b in m.group(5).split(", ")]
            else:
                section, lo = m.group(1), int(m.group(2))
                numbers = range(lo, int(m.group(3) or lo) + 1)
            for n in numbers:
                assert n in entries.get(section, ()), (
                    f"{os.path.relpath(path, ROOT)} cites {m.group(0)!r}: docs/semantics.md has no entry {n} in §{section}")
                cited += 1
    assert cited >= 30   # the code and the docs cite the page's entries throughout


# The API reference's own checks: tools/docstring_roles.py (reST roles -> cross-references) and
# tools/check_api_docs.py (what `make docs` checks on the built site), on small fixtures.

def _tool(name):
    import importlib.util
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tools", f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(os.path.join(ROOT, "tools"))


def _package(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return str(tmp_path / "fakepkg")


FAKE = {
    "fakepkg/__init__.py": '"""The package: :func:`study` and :mod:`.tables`."""\n'
                           "from fakepkg.study import study\nfrom fakepkg.tables import Table, helper\n\n"
                           '__all__ = ["study", "Table", "helper", "missing"]\n',
    "fakepkg/study.py": '"""Runs :func:`~.tables.helper`; see :class:`Table`, :func:`numpy.mean` and :func:`nowhere`."""\n'
                        "import numpy as np\nfrom fakepkg.tables import Table  # a :class:`Table`\n\n\n"
                        'def study():\n    """A study: :meth:`Table.rows` of each :data:`.tables.LIMIT`."""\n\n\n'
                        'X = ":func:`study`"  # a string the code uses: left as it is\n',
    "fakepkg/tables.py": '"""Tables."""\n\n#: the most rows\nLIMIT = 3\n\n\n'
                         'class Table:\n    """A table; :meth:`rows` counts them."""\n\n'
                         '    def rows(self):\n        """Its rows."""\n\n\n'
                         'def helper():\n    """Helps."""\n',
}


def test_docstring_roles_become_cross_references_once(tmp_path, capsys):
    roles = _tool("docstring_roles")
    pkg = _package(tmp_path, FAKE)
    assert roles.main([pkg, "--check"]) == 1
    assert roles.main([pkg]) == 0
    init, study, tables = (open(os.path.join(pkg, f), encoding="utf-8").read()
                           for f in ("__init__.py", "study.py", "tables.py"))
    assert "[`study`][fakepkg.study.study] and [`tables`][fakepkg.tables]" in init
    assert "Runs [`helper`][fakepkg.tables.helper]; see [`Table`][fakepkg.tables.Table]" in study
    assert "`numpy.mean` and `nowhere`." in study                       # unresolvable: plain code
    assert "# a [`Table`][fakepkg.tables.Table]" in study                # comments too
    assert "[`Table.rows`][fakepkg.tables.Table.rows] of each [`tables.LIMIT`][fakepkg.tables.LIMIT]" in study
    assert 'X = ":func:`study`"' in study                                # not a docstring: untouched, reported
    assert "[`rows`][fakepkg.tables.Table.rows] counts them" in tables   # a method from its class's docstring
    assert roles.main([pkg, "--check"]) == 1 and "outside a docstring" in capsys.readouterr().err
    (tmp_path / "fakepkg" / "study.py").write_text(study.replace('X = ":func:`study`"', "X = 1"), encoding="utf-8")
    assert roles.main([pkg, "--check"]) == 0                             # idempotent
    # a module moves: the cross-references into it are re-resolved, or become plain code
    os.rename(os.path.join(pkg, "tables.py"), os.path.join(pkg, "_tables.py"))
    (tmp_path / "fakepkg" / "__init__.py").write_text(init.replace("fakepkg.tables", "fakepkg._tables"),
                                                      encoding="utf-8")
    assert roles.main([pkg, "--check"]) == 1
    assert roles.main([pkg]) == 0
    study = open(os.path.join(pkg, "study.py"), encoding="utf-8").read()
    assert "Runs [`helper`][fakepkg._tables.helper]" in study and "[`tables`][" not in study


def test_the_package_holds_no_rest_roles():
    """`python tools/docstring_roles.py` rewrites them (and, after a module moves, stale cross-references)."""
    assert _tool("docstring_roles").main(["--check", os.path.join(ROOT, "pgdiag")]) == 0


def _object(ident, kind, docstring="<p>Does it.</p>", signature=True):
    sig = '<div class="doc-signature highlight"><pre><code>f()</code></pre></div>' if signature else ""
    return (f'<div class="doc doc-object doc-{kind}"><h3 id="{ident}" class="doc doc-heading">'
            f'<span class="doc doc-object-name">{ident}</span></h3>{sig}'
            f'<div class="doc doc-contents first">{docstring}<div class="doc doc-children"></div></div></div>')


def test_the_api_check_reads_rendered_objects_and_flags_what_is_missing(tmp_path):
    check = _tool("check_api_docs")
    pkg = _package(tmp_path, FAKE)
    site = tmp_path / "site"
    (site / "reference" / "api").mkdir(parents=True)
    page = "".join([_object("fakepkg.study", "module"),                  # the submodule, not the function
                    _object("fakepkg.tables.Table", "class", "<p>A table; <code>rows</code> counts them.</p>"),
                    _object("fakepkg.helper", "function", "")])          # rendered, no docstring
    (site / "reference" / "api" / "index.html").write_text(page, encoding="utf-8")
    (site / "index.html").write_text("<p>Use :func:<code>study</code> here.</p>", encoding="utf-8")
    assert check.rendered_objects(page) == {"fakepkg.study": ("module", True), "fakepkg.tables.Table": ("class", True),
                                            "fakepkg.helper": ("function", False)}
    problems = check.check(str(site), pkg, str(tmp_path / "api.md"), "reference/api/index.html", ("fakepkg",))
    text = "\n".join(problems)
    assert "index.html: a reST role left as text" in text and len(problems) == 5, text
    assert "fakepkg.study: rendered as a module, but the package exports a function" in text
    assert "fakepkg.study: not in the API reference" in text
    assert "fakepkg.Table" not in text                                   # at the path of what it names
    assert "fakepkg.helper: has no docstring" in text
    assert "fakepkg.missing: in __all__ but not defined" in text
    # fixed: the function at its own path, a docstring, no role
    page = page.replace(_object("fakepkg.helper", "function", ""), _object("fakepkg.helper", "function"))
    page += _object("fakepkg.study.study", "function")
    (site / "reference" / "api" / "index.html").write_text(page, encoding="utf-8")
    (site / "index.html").write_text("<p>Use <code>study</code> here.</p>", encoding="utf-8")
    problems = check.check(str(site), pkg, str(tmp_path / "api.md"), "reference/api/index.html", ("fakepkg",))
    assert [p for p in problems if "missing" not in p] == [
        "reference/api/index.html: fakepkg.study: rendered as a module, but the package exports a function by that "
        "name (a submodule named 'study' shadows it; rename the submodule)"]


def test_no_page_or_message_names_a_distribution_that_does_not_exist():
    """The distribution is pgdiag-rl: an extra is `pgdiag-rl[NAME]` (`pgdiag[NAME]` is another project's name,
    "No matching distribution" today and anyone's to register)."""

    root = pathlib.Path(__file__).parent.parent
    files = [root / "README.md", *root.glob("docs/**/*.md"), *root.glob("pgdiag/**/*.py"), *root.glob("examples/*")]
    bad = [f"{p.relative_to(root)}:{n}" for p in files if p.is_file()
           for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
           if re.search(r"(?<![\w-])pgdiag\[", line)]
    assert not bad, bad


def test_every_figure_on_a_page_is_readable_in_the_column():
    """The documentation's text column is about 700 px wide in a 1,280-px window, and a wider figure is shown at
    that width: its text then shows at (points) × 700 / (figure width in inches × 72) px. The figures' smallest text
    is 7–9 points, so a figure at most 11 inches wide (two panels side by side, figures.MAX_COLUMNS) shows it at
    ≥ 7 × 700 / (11 × 72) ≈ 6.2 px and its 9-point labels at ≈ 8 px; a strip of five 4.2-inch panels (21 in) at
    ≈ 3–4 px. Each PNG states its size in inches (its pHYs chunk: matplotlib's dpi, scaled with the image when
    tools/target_smoke.py reduces it). Long lines of code wrap (docs/stylesheets/extra.css)."""
    import struct

    wide = []
    for folder, _, files in os.walk(os.path.join(ROOT, "docs")):
        for name in (n for n in files if n.endswith(".png")):
            path = os.path.join(folder, name)
            data = open(path, "rb").read()
            width = struct.unpack(">I", data[16:20])[0]                       # IHDR: the width in pixels
            at = data.find(b"pHYs")
            per_metre, unit = struct.unpack(">IxxxxB", data[at + 4:at + 13]) if at > 0 else (0, 0)
            inches = width / (per_metre * 0.0254) if unit == 1 and per_metre else float("inf")
            if inches > 11:
                wide.append(f"{os.path.relpath(path, ROOT)} ({inches:.1f} in)")
    assert not wide, f"figures too wide to read in the docs' column (or with no size in inches): {wide}"
    css = open(os.path.join(ROOT, "docs", "stylesheets", "extra.css"), encoding="utf-8").read()
    assert "white-space: pre-wrap" in css and "extra.css" in open(os.path.join(ROOT, "mkdocs.yml")).read()
