"""The documentation: every target has its page in the site's navigation, every internal link in README.md and
docs/ reaches a file (and, with a #fragment, a heading there), and the README stays a screen or two. The site
itself is built with warnings as errors by `make docs` (CI runs it)."""

import os
import re

import pytest

from pg_diag.cli import gen_docs
from pg_diag.experiments import targets

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
    declarations, the targets' Scale records) by `python -m pg_diag.cli.gen_docs` (`make docs`): the committed
    pages must be what it writes, so they cannot drift from what the code allows and trains."""
    pages = gen_docs.pages()
    assert set(pages) >= {os.path.join("docs", "targets", f"{name}.md") for name in targets.TARGETS}
    for path, text in pages.items():
        assert open(os.path.join(ROOT, path), encoding="utf-8").read() == text, \
            f"{path} is not current: run python -m pg_diag.cli.gen_docs"


def test_every_generated_table_row_names_a_declared_setting():
    """The settings reference has a row for every declared knob and static setting."""
    from pg_diag.config import KNOB_SETTINGS, STATIC_SETTINGS
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
    paths = list(_markdown_files()) + [os.path.join(folder, f) for top in ("pg_diag", "benchmarks", "examples")
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
