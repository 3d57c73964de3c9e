"""Check the built documentation site (`make docs` runs it after the strict build): what the build itself does
not see.

1. No reST role is left as literal text (``:func:`x``` and the like, in any page): the docstrings are Google
   style Markdown, their cross-references ``[`x`][pgdiag.path]`` (tools/docstring_roles.py rewrites roles).
2. Every public name of the package's API is in the API reference, as the kind of object it is, with a
   docstring: each name in ``__all__`` of ``pgdiag``, ``pgdiag.diagnostics`` and of every other module the
   reference renders with a ``::: module`` directive. A name counts as there when the page renders an object
   at its path (``pgdiag.sweep``) or at the path of what it names (``pgdiag.run.execute.sweep``, found by
   following the package's imports statically); a function rendered as the submodule of the same name (Griffe
   gives a submodule precedence over the name its package imports) does not count.

    python tools/check_api_docs.py site            # exit 1, listing each problem, if any

Standard library only (with tools/docstring_roles.py's static index of the package).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from html.parser import HTMLParser

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docstring_roles import Index  # noqa: E402

ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|obj|exc|const):(?:`|<code>)")
DIRECTIVE = re.compile(r"^:::\s+([\w.]+)", re.M)
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
KINDS = ("module", "class", "function", "attribute", "type_alias")
REQUIRED = ("pgdiag", "pgdiag.diagnostics")


class Node:
    def __init__(self, tag: str, attrs: dict, parent=None):
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    @property
    def classes(self) -> list:
        return (self.attrs.get("class") or "").split()

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()


class _Tree(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.current = Node("#root", {})

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(html: str) -> Node:
    tree = _Tree()
    tree.feed(html)
    tree.close()
    return tree.root


def rendered_objects(html: str) -> dict:
    """{heading id: (kind, has a docstring)} of each object mkdocstrings rendered on a page."""
    out = {}
    for node in parse(html).walk():
        if node.tag != "div" or "doc-object" not in node.classes:
            continue
        kind = next((k for k in KINDS if f"doc-{k}" in node.classes), "?")
        heading = next((c for c in node.children if isinstance(c, Node) and "doc-heading" in c.classes), None)
        contents = next((c for c in node.children if isinstance(c, Node) and "doc-contents" in c.classes), None)
        if heading is None or not heading.attrs.get("id"):
            continue
        documented = contents is not None and any(
            (c.strip() if isinstance(c, str) else "doc-children" not in c.classes and c.text().strip())
            for c in contents.children)
        out[heading.attrs["id"]] = (kind, bool(documented))
    return out


def literal_roles(site: str) -> list:
    """(page, context) of each reST role left as text in the site's pages."""
    found = []
    for folder, _, files in os.walk(site):
        for f in sorted(files):
            if f.endswith(".html"):
                path = os.path.join(folder, f)
                html = open(path, encoding="utf-8").read()
                for m in ROLE.finditer(html):
                    context = re.sub(r"<[^>]+>|\s+", " ", html[max(0, m.start() - 60):m.end() + 60])
                    found.append((os.path.relpath(path, site), context.strip()))
    return found


def exported(index: Index, module: str) -> list:
    """The names in a module's ``__all__`` (read statically; [] without one)."""
    m = index.modules.get(module)
    names = []
    for node in ast.walk(m.tree) if m else ():
        value = None
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            value = node.value
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            value = node.value
        if isinstance(value, (ast.List, ast.Tuple)):
            names += [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return names


def _kind(index: Index, canonical: str) -> str:
    if canonical in index.modules:
        return "module"
    mod, _, name = canonical.rpartition(".")
    while mod and mod not in index.modules:
        mod, _, head = mod.rpartition(".")
        name = f"{head}.{name}"
    m = index.modules.get(mod)
    if m is None:
        return "?"
    if "." not in name:
        return {"def": "function", "class": "class", "value": "attribute"}.get(m.defs.get(name), "?")
    cls, _, member = name.rpartition(".")
    return {"def": "function", "class": "class", "value": "attribute"}.get(m.classes.get(cls, {}).get(member), "?")


def undocumented(index: Index, objects: dict, modules: list) -> list:
    """Problems with the public names of ``modules`` on a page whose rendered ``objects`` are given."""
    by_canonical = {}
    for ident, (kind, documented) in objects.items():
        canonical = index.resolve(ident, want_module=kind == "module") or ident
        by_canonical.setdefault(canonical, []).append((ident, kind, documented))
    problems = []
    for module in modules:
        names = exported(index, module)
        if module not in index.modules:
            problems.append(f"{module}: no such module in the package")
        for name in names:
            path = f"{module}.{name}"
            canonical = index.resolve(path)
            if canonical is None:
                problems.append(f"{path}: in __all__ but not defined or imported there")
                continue
            want = _kind(index, canonical)
            hits = [(i, k, d) for i, k, d in by_canonical.get(canonical, []) if k == want or want == "?"]
            if path in objects and objects[path][0] != want and want != "?":
                problems.append(f"{path}: rendered as a {objects[path][0]}, but the package exports a {want} by "
                                f"that name (a submodule named {name!r} shadows it; rename the submodule)")
            if not hits:
                problems.append(f"{path}: not in the API reference (add `::: {path}`)")
            elif not any(d for _, _, d in hits):
                problems.append(f"{path}: has no docstring ({canonical})")
    return problems


def documented_modules(index: Index, api_md: str) -> list:
    """The modules the API reference renders with a ``::: module`` directive."""
    if not os.path.exists(api_md):
        return []
    text = open(api_md, encoding="utf-8").read()
    return [ident for ident in DIRECTIVE.findall(text) if ident in index.modules]


def check(site: str, package_dir: str, api_md: str, page: str, modules=REQUIRED) -> list:
    index = Index(package_dir)
    problems = [f"{p}: a reST role left as text: …{c}…" for p, c in literal_roles(site)]
    page_path = os.path.join(site, page)
    if not os.path.exists(page_path):
        return problems + [f"{page}: no such page in {site} (build the site first)"]
    objects = rendered_objects(open(page_path, encoding="utf-8").read())
    wanted = list(dict.fromkeys([*modules, *documented_modules(index, api_md)]))
    return problems + [f"{page}: {p}" for p in undocumented(index, objects, wanted)]


def main(argv=None) -> int:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", default=os.path.join(here, "site"), help="the built site (site/)")
    parser.add_argument("--package", default=os.path.join(here, "pgdiag"))
    parser.add_argument("--api", default=os.path.join(here, "docs", "reference", "api.md"))
    parser.add_argument("--page", default=os.path.join("reference", "api.html"))   # the offline plugin's layout
    parser.add_argument("--module", action="append", help=f"a module whose __all__ must be documented "
                                                          f"(default: {', '.join(REQUIRED)})")
    args = parser.parse_args(argv)
    problems = check(args.site, args.package, args.api, args.page, tuple(args.module or REQUIRED))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_api_docs: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
