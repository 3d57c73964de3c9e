"""Rewrite Sphinx reST roles in the package's docstrings and comments into mkdocstrings cross-references.

The API reference (docs/reference/api.md) renders docstrings as Google style Markdown with mkdocstrings, which
reads ``[`title`][dotted.path]`` as a cross-reference (mkdocs-autorefs) and shows a reST role such as
``:func:`.engine.run``` as literal text. This tool turns every role (``:func:``, ``:class:``, ``:mod:``,
``:data:``, ``:meth:``, ``:attr:``, ``:obj:``, ``:exc:``, ``:const:``) in docstrings (any bare string
statement) and ``#`` comments of the package's modules into

* ``[`name`][pgdiag.full.dotted.path]`` when the target resolves to an object defined in the package: the
  path is where the object is defined (its canonical path), found statically (no imports): the target is
  looked up in the enclosing classes, the module's own names and imports, its package's and those of the
  packages above it, then a bare target as an absolute path and a relative one (a leading ``.``, Sphinx's
  relative reference, also as ``~.``) as the unique suffix of a defined name; ``:mod:`` takes modules only
  (a submodule before a name its package imports);
* plain code, ``` `name` ```, when it does not (an external object, a name the module does not bind).

``name`` is the role's text as Sphinx shows it: the explicit title of ``title <target>``, the last component
after ``~``, leading dots dropped. A cross-reference this tool wrote earlier whose path no longer resolves
(after a module moved) is re-resolved from its title in the same way, or becomes plain code.

Idempotent (a second run changes nothing) and stable (the output depends only on the package's sources).
Standard library only.

    python tools/docstring_roles.py                # rewrite pgdiag/ in place, list the files changed
    python tools/docstring_roles.py --check        # exit 1 if any role or stale cross-reference is left
    python tools/docstring_roles.py --diff FILES   # show what would change
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import os
import re
import sys
import tokenize

ROLES = ("func", "class", "mod", "data", "meth", "attr", "obj", "exc", "const")
# :role:`text` (the text on one line, no backticks in it)
ROLE = re.compile(r":(?P<role>" + "|".join(ROLES) + r"):`(?P<text>[^`\n]+)`")
# [`title`][identifier] as this tool writes it, for the package's own identifiers (filled in per package)
XREF = r"\[`(?P<title>[^`\n]+)`\]\[(?P<ident>{pkg}(?:\.[A-Za-z_]\w*)*)\]"


# --------------------------------------------------------------------------------------------------------- #
# A static index of the package: its modules, what each module binds, what each class holds
# --------------------------------------------------------------------------------------------------------- #

class Module:
    def __init__(self, name: str, path: str, is_package: bool):
        self.name, self.path, self.is_package = name, path, is_package
        self.package = name if is_package else name.rpartition(".")[0]
        self.defs: dict[str, str] = {}       # name -> "def" | "class" | "value"
        self.imports: dict[str, str] = {}    # name -> the dotted path it is bound to
        self.classes: dict[str, dict] = {}   # dotted name within the module ("A", "A.B") -> {member: kind}
        self.tree: ast.Module | None = None
        self.source = ""


def _targets(node) -> list:
    """The names an assignment target binds."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for elt in node.elts for n in _targets(elt)]
    return []


def _module_statements(body):
    """A module's statements, into if / try / with blocks (not into functions or classes)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _module_statements(node.body)
            yield from _module_statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                yield from _module_statements(block)
        elif isinstance(node, ast.With):
            yield from _module_statements(node.body)


def _class_members(cls: ast.ClassDef) -> dict:
    out = {}
    for node in _module_statements(cls.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = "def"
            for sub in ast.walk(node):   # instance attributes: self.x = ...
                targets = sub.targets if isinstance(sub, ast.Assign) else \
                    [sub.target] if isinstance(sub, (ast.AnnAssign, ast.AugAssign)) else []
                for t in targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        out.setdefault(t.attr, "value")
        elif isinstance(node, ast.ClassDef):
            out[node.name] = "class"
        elif isinstance(node, ast.Assign):
            out.update((n, "value") for t in node.targets for n in _targets(t))
        elif isinstance(node, ast.AnnAssign):
            out.update((n, "value") for n in _targets(node.target))
    return out


def _collect_classes(module: Module, body, prefix: str = "") -> None:
    for node in _module_statements(body):
        if isinstance(node, ast.ClassDef):
            name = prefix + node.name
            module.classes[name] = _class_members(node)
            _collect_classes(module, node.body, name + ".")


class Index:
    """Every module of the package under ``root`` (a folder holding the package's top folder)."""

    def __init__(self, package_dir: str):
        self.package_dir = os.path.abspath(package_dir)
        self.top = os.path.basename(self.package_dir)
        self.root = os.path.dirname(self.package_dir)
        self.modules: dict[str, Module] = {}
        self.by_path: dict[str, Module] = {}
        for folder, dirs, files in os.walk(self.package_dir):
            dirs[:] = sorted(d for d in dirs if os.path.exists(os.path.join(folder, d, "__init__.py")))
            for f in sorted(files):
                if f.endswith(".py"):
                    self._load(os.path.join(folder, f))

    def module_name(self, path: str) -> tuple:
        rel = os.path.relpath(os.path.abspath(path), self.root)[:-3].split(os.sep)
        is_package = rel[-1] == "__init__"
        return ".".join(rel[:-1] if is_package else rel), is_package

    def _load(self, path: str) -> None:
        name, is_package = self.module_name(path)
        m = Module(name, path, is_package)
        m.source = open(path, encoding="utf-8").read()
        m.tree = ast.parse(m.source, path)
        for node in _module_statements(m.tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                m.defs[node.name] = "def"
            elif isinstance(node, ast.ClassDef):
                m.defs[node.name] = "class"
            elif isinstance(node, ast.Assign):
                m.defs.update((n, "value") for t in node.targets for n in _targets(t))
            elif isinstance(node, ast.AnnAssign):
                m.defs.update((n, "value") for n in _targets(node.target))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        m.imports[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        m.imports[top] = top
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = m.package.split(".")
                    parts = parts[:len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                for a in node.names:
                    if a.name != "*":
                        m.imports[a.asname or a.name] = f"{base}.{a.name}"
        for n in m.defs:                      # a name both imported and defined: the definition wins
            m.imports.pop(n, None)
        _collect_classes(m, m.tree.body)
        self.modules[name] = m
        self.by_path[os.path.abspath(path)] = m

    # -- resolution ------------------------------------------------------------------------------------- #

    def resolve(self, dotted: str, want_module: bool = False, _seen=None):
        """The canonical path of the object ``dotted`` names (following imports), or None."""
        parts = dotted.split(".")
        if parts[0] != self.top or self.top not in self.modules:
            return None
        return self._walk(self.top, parts[1:], want_module, _seen or set())

    def _walk(self, mod: str, rest: list, want_module: bool, seen: set):
        if not rest:
            return mod
        m, name, sub = self.modules[mod], rest[0], f"{mod}.{rest[0]}"
        if want_module and len(rest) == 1 and sub in self.modules:
            return sub
        if name in m.defs:
            if len(rest) == 1:
                return sub
            if m.defs[name] == "class":
                found = self._in_class(m, name, rest[1:])
                if found:
                    return found
        elif name in m.imports and m.imports[name] not in seen:
            target = m.imports[name]
            bound = self.resolve(target, want_module and len(rest) == 1, seen | {target})
            found = bound if len(rest) == 1 else self._within(bound, rest[1:], want_module, seen)
            if found:
                return found
        if sub in self.modules:
            return self._walk(sub, rest[1:], want_module, seen)
        return None

    def _within(self, path, rest: list, want_module: bool, seen: set):
        """``rest`` looked up inside the object at canonical ``path`` (a module or a class)."""
        if path is None:
            return None
        if path in self.modules:
            return self._walk(path, rest, want_module, seen)
        mod, _, name = path.rpartition(".")
        while mod and mod not in self.modules:   # a nested class: A.B
            mod, _, head = mod.rpartition(".")
            name = f"{head}.{name}"
        if mod and name in self.modules[mod].classes:
            return self._in_class(self.modules[mod], name, rest)
        return None

    def _in_class(self, m: Module, cls: str, rest: list):
        members = m.classes.get(cls, {})
        if not rest or rest[0] not in members:
            return None
        if len(rest) == 1:
            return f"{m.name}.{cls}.{rest[0]}"
        if members[rest[0]] == "class":
            return self._in_class(m, f"{cls}.{rest[0]}", rest[1:])
        return None

    def defined_names(self):
        """Every canonical path the package defines (modules, module-level names, class members)."""
        for m in self.modules.values():
            yield m.name
            for n in m.defs:
                yield f"{m.name}.{n}"
            for cls, members in m.classes.items():
                for n in members:
                    yield f"{m.name}.{cls}.{n}"

    def suffix_match(self, suffix: str):
        """The one defined path ending in ``.suffix`` (None when none or several)."""
        if not hasattr(self, "_all"):
            self._all = sorted(set(self.defined_names()))
        hits = [p for p in self._all if p.endswith("." + suffix)]
        return hits[0] if len(hits) == 1 else None

    def lookup(self, m: Module, target: str, classes: list, want_module: bool):
        """Resolve a role's target as written in module ``m`` inside ``classes`` (innermost last)."""
        relative = target.startswith(".")
        name = target.lstrip(".")
        if not name:
            return None
        scopes = [f"{m.name}.{c}" for c in reversed(classes)] + [m.name]
        package = m.package.split(".")
        scopes += [".".join(package[:i]) for i in range(len(package), 0, -1) if ".".join(package[:i]) != m.name]
        candidates = [f"{scope}.{name}" for scope in scopes] + ([] if relative else [name])
        for candidate in candidates:
            found = self.resolve(candidate, want_module)
            if found and (found in self.modules or not want_module):
                return found
        return self.suffix_match(name) if relative else None


# --------------------------------------------------------------------------------------------------------- #
# Rewriting one module
# --------------------------------------------------------------------------------------------------------- #

def _offsets(source: str) -> list:
    starts, pos = [0], 0
    for line in source.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    return starts


def _spans(m: Module) -> list:
    """(start, end, classes) of each docstring (bare string statement) and comment, as character offsets."""
    starts, lines = _offsets(m.source), m.source.splitlines(keepends=True)

    def char(lineno, byte_col):
        return starts[lineno - 1] + len(lines[lineno - 1].encode("utf-8")[:byte_col].decode("utf-8"))

    spans = []

    def visit(body, classes):
        for node in body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                spans.append((char(node.lineno, node.col_offset), char(node.end_lineno, node.end_col_offset), classes))
            if isinstance(node, ast.ClassDef):
                visit(node.body, classes + [".".join(classes[-1:] + [node.name])])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(node.body, classes)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    block = getattr(node, field, None)
                    if isinstance(block, list):
                        visit([b for b in block if isinstance(b, ast.AST)], classes)

    visit(m.tree.body, [])
    # a comment's classes: those whose lines enclose it
    ranges = []

    def class_ranges(body, prefix):
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(node, ast.ClassDef):
                ranges.append((node.lineno, node.end_lineno, node.name))

    class_ranges(m.tree.body, "")
    for tok in tokenize.generate_tokens(io.StringIO(m.source).readline):
        if tok.type == tokenize.COMMENT:
            (row, col), (erow, ecol) = tok.start, tok.end
            enclosing = [name for lo, hi, name in sorted(ranges) if lo <= row <= hi]
            spans.append((starts[row - 1] + col, starts[erow - 1] + ecol, enclosing))
    return sorted(spans, key=lambda s: s[0])


def _title(text: str) -> tuple:
    """(title, target) of a role's text, as Sphinx's Python domain reads it."""
    explicit = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^<>]+)>", text)
    if explicit:
        return explicit["title"], explicit["target"].lstrip("~")
    target = text.lstrip("~")
    title = text.lstrip(".")
    if title.startswith("~"):
        title = title[1:].lstrip(".").rpartition(".")[2]
    return title, target


def convert(index: Index, m: Module) -> tuple:
    """(new source, [(line, old, new)], [stale cross-references left]) of module ``m``."""
    source, changes, stale = m.source, [], []
    xref = re.compile(XREF.format(pkg=re.escape(index.top)))
    pieces, last = [], 0
    for start, end, classes in _spans(m):
        if start < last:
            continue
        pieces.append(source[last:start])
        text = source[start:end]
        line = source.count("\n", 0, start) + 1

        def role(match):
            title, target = _title(match["text"])
            found = index.lookup(m, target, classes, want_module=match["role"] == "mod")
            new = f"[`{title}`][{found}]" if found else f"`{title}`"
            changes.append((line + text.count("\n", 0, match.start()), match.group(0), new))
            return new

        def relink(match):
            ident, title = match["ident"], match["title"]
            if index.resolve(ident):
                return match.group(0)
            found = index.lookup(m, title, classes, want_module=False) or \
                index.suffix_match(".".join(ident.split(".")[-2:]))
            new = f"[`{title}`][{found}]" if found else f"`{title}`"
            changes.append((line + text.count("\n", 0, match.start()), match.group(0), new))
            return new

        text = ROLE.sub(role, text)
        text = xref.sub(relink, text)
        pieces.append(text)
        last = end
    pieces.append(source[last:])
    new = "".join(pieces)
    # roles outside docstrings and comments (string values the code uses): reported, not rewritten
    for match in ROLE.finditer(new):
        stale.append((new.count("\n", 0, match.start()) + 1, match.group(0)))
    return new, changes, stale


def _files(paths: list) -> list:
    out = []
    for p in paths:
        if os.path.isdir(p):
            for folder, dirs, files in os.walk(p):
                dirs.sort()
                out += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".py")]
        else:
            out.append(p)
    return out


def _package_dir(path: str) -> str:
    folder = os.path.dirname(os.path.abspath(path)) if os.path.isfile(path) else os.path.abspath(path)
    while os.path.exists(os.path.join(os.path.dirname(folder), "__init__.py")):
        folder = os.path.dirname(folder)
    return folder


def main(argv=None) -> int:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=[os.path.join(here, "pgdiag")],
                        help="package folders or modules (default: the repository's pgdiag/)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything would change")
    mode.add_argument("--diff", action="store_true", help="change nothing; print a unified diff")
    parser.add_argument("--verbose", action="store_true", help="print every role and what it became")
    args = parser.parse_args(argv)

    indexes, pending, left = {}, 0, 0
    for path in _files(args.paths):
        pkg = _package_dir(path)
        if pkg not in indexes:
            indexes[pkg] = Index(pkg)
        index = indexes[pkg]
        m = index.by_path.get(os.path.abspath(path))
        if m is None:
            continue
        new, changes, leftover = convert(index, m)
        rel = os.path.relpath(path)
        for line, text in leftover:
            print(f"{rel}:{line}: a role outside a docstring or comment, left as it is: {text}", file=sys.stderr)
        left += len(leftover)
        if new == m.source:
            continue
        pending += 1
        if args.verbose or args.check:
            for line, old, repl in changes:
                print(f"{rel}:{line}: {old} -> {repl}")
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(m.source.splitlines(True), new.splitlines(True), rel, rel))
        elif not args.check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print(f"rewrote {rel} ({len(changes)} references)")
    if args.check and (pending or left):
        print(f"{pending} file(s) hold reST roles or stale cross-references: run python tools/docstring_roles.py",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
