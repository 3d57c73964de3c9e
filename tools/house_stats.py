"""Measure the house of a tree's pgdiag/ package and print it as a markdown table.

Usage: PYTHONPATH=TREE python tools/house_stats.py [--tree TREE] [--static]

TREE defaults to the repository this script sits in; PYTHONPATH must point at the same tree so that the traces run
that tree's pgdiag (its ``pgdiag.__file__`` is printed first).

The numbers:
- lines, files: all lines of pgdiag/**/*.py, and how many .py files there are.
- import circles: strongly connected components of more than one module in the graph of module-level imports
  among pgdiag modules (``import``/``from ... import`` reached from a module's body without entering a function,
  so ``if``/``try`` blocks count, ``if TYPE_CHECKING:`` blocks do not; ``from pgdiag.x import y`` is module
  ``pgdiag.x.y`` if that is one, else ``pgdiag.x``; a package's ``__init__`` is the package's module).
- longest functions: the top 5 by ``end_lineno - lineno + 1`` (decorators not counted), nested functions counted
  on their own, named ``module:Qual.name``; modules over 300 lines: how many, and the three longest.
- in-function imports: Import/ImportFrom nodes inside a function (every one that is not module-level above).
- traces, under ``sys.setprofile`` (main thread), counting only 'call' events of frames whose file is in TREE/pgdiag/:
  - preset: the frames entered by ``preset("ppo", "lqr", clip_eps=0.1, num_envs=2, steps_per_env=8,
    num_iterations=1, num_minibatches=4)``, after the same preset without clip_eps was built once (``cfg``;
    num_minibatches=4 because the preset's 16 would leave 1 sample per minibatch of the 16, which is refused);
  - sweep: the frames entered by ``sweep(cfg, None, seeds=1, out=None, progress=False)`` whose locals at the call
    hold ``cfg`` itself (an ``is`` check over ``f_locals`` values).
  For each: calls (frames counted), modules (distinct modules among them) and returns (walking the counted frames'
  modules in order, how often the module differs from the previous one's yet was seen before).
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
from pathlib import Path

TOP_FUNCTIONS, LONG_MODULE, TOP_MODULES = 5, 300, 3


def module_names(tree: Path) -> dict[str, Path]:
    """Every pgdiag module's dotted name -> its file (a package's ``__init__.py`` is the package)."""
    out = {}
    for path in sorted((tree / "pgdiag").rglob("*.py")):
        parts = list(path.relative_to(tree).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    """An ``if TYPE_CHECKING:`` block: imports for type checkers alone, never run."""
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING"
                                         or getattr(test, "attr", None) == "TYPE_CHECKING")


def walk_split(node: ast.AST, in_function: bool = False):
    """Yield (node, in_function) for every node under ``node``; in_function once a def or lambda is entered.
    ``if TYPE_CHECKING:`` blocks are skipped (what they import is never imported)."""
    for child in ast.iter_child_nodes(node):
        if _type_checking(child):
            continue
        yield child, in_function
        inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from walk_split(child, inner)


def import_targets(node: ast.Import | ast.ImportFrom, name: str, is_package: bool, modules) -> set[str]:
    """The pgdiag modules one import statement of module ``name`` names."""
    def existing(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None
    if isinstance(node, ast.Import):
        found = {existing(a.name) for a in node.names if a.name.split(".")[0] == "pgdiag"}
        return found - {None}
    base = node.module or ""
    if node.level:
        package = name.split(".") if is_package else name.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    if base.split(".")[0] != "pgdiag":
        return set()
    found = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        found.add(sub if sub in modules else existing(base))
    return found - {None}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=lambda c: (-len(c), c))


def functions(tree_node: ast.AST, prefix: str = ""):
    """Yield (qualified name, lines) of every function, nested ones included."""
    for child in ast.iter_child_nodes(tree_node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = f"{prefix}{child.name}"
            yield qual, child.end_lineno - child.lineno + 1
            yield from functions(child, f"{qual}.<locals>.")
        elif isinstance(child, ast.ClassDef):
            yield from functions(child, f"{prefix}{child.name}.")
        else:
            yield from functions(child, prefix)


def static_stats(tree: Path) -> list[tuple[str, str]]:
    """The rows measured from the source alone."""
    modules = module_names(tree)
    graph, lines, funcs, in_function = {}, {}, [], 0
    for name, path in modules.items():
        text = path.read_text(encoding="utf-8")
        lines[name] = len(text.splitlines())
        parsed = ast.parse(text, str(path))
        graph[name] = set()
        for node, inside in walk_split(parsed):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if inside:
                    in_function += 1
                else:
                    graph[name] |= import_targets(node, name, path.name == "__init__.py", modules) - {name}
        funcs += [(f"{name}:{qual}", n) for qual, n in functions(parsed)]
    found = circles(graph)
    funcs.sort(key=lambda f: (-f[1], f[0]))
    big = sorted(((n, m) for m, n in lines.items() if n > LONG_MODULE), reverse=True)
    rows = [("lines", str(sum(lines.values()))), ("files", str(len(modules))),
            ("import circles", str(len(found)))]
    rows += [(f"circle {i + 1} ({len(c)} modules)", ", ".join(c)) for i, c in enumerate(found)]
    rows += [(f"longest function {i + 1}", f"{q} ({n})") for i, (q, n) in enumerate(funcs[:TOP_FUNCTIONS])]
    rows += [(f"modules over {LONG_MODULE} lines", str(len(big)))]
    rows += [(f"longest module {i + 1}", f"{m} ({n})") for i, (n, m) in enumerate(big[:TOP_MODULES])]
    rows.append(("in-function imports", str(in_function)))
    return rows


def traced(fn, keep, package_dir: Path, tree: Path):
    """Run ``fn()`` under sys.setprofile; the modules of the pgdiag frames ``keep(frame)`` accepts, in call order."""
    prefix, where, seen = str(package_dir) + os.sep, {}, []

    def module_of(code):
        if code not in where:
            file = os.path.realpath(code.co_filename)
            where[code] = None
            if file.startswith(prefix) and file.endswith(".py"):
                parts = list(Path(file).relative_to(tree).with_suffix("").parts)
                where[code] = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        return where[code]

    def profile(frame, event, arg):
        if event == "call":
            module = module_of(frame.f_code)
            if module is not None and keep(frame):
                seen.append(module)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


def trace_numbers(modules: list[str]) -> str:
    """calls / distinct modules / returns to a module left earlier."""
    returns, before = 0, set()
    for i, module in enumerate(modules):
        if i and module != modules[i - 1] and module in before:
            returns += 1
        before.add(module)
    return f"{len(modules)} calls, {len(set(modules))} modules, {returns} returns"


def trace_stats(tree: Path) -> list[tuple[str, str]]:
    """The two traces' rows (imports the pgdiag on sys.path, which should be ``tree``'s)."""
    import pgdiag
    package_dir = Path(os.path.realpath(pgdiag.__file__)).parent
    if package_dir != tree / "pgdiag":
        print(f"warning: pgdiag imported from {package_dir}, not from {tree}", file=sys.stderr)
    small = dict(num_envs=2, steps_per_env=8, num_iterations=1, num_minibatches=4)  # the preset's 16 minibatches
    cfg = pgdiag.preset("ppo", "lqr", **small)
    rows = []
    seen = traced(lambda: pgdiag.preset("ppo", "lqr", clip_eps=0.1, **small), lambda f: True, package_dir, tree)
    rows.append(("trace preset(clip_eps=0.1)", trace_numbers(seen)))

    def holds_cfg(frame):
        return any(value is cfg for value in frame.f_locals.values())
    try:
        seen = traced(lambda: pgdiag.sweep(cfg, None, seeds=1, out=None, progress=False), holds_cfg,
                      package_dir, tree)
        rows.append(("trace sweep(cfg) frames holding cfg", trace_numbers(seen)))
    except Exception as error:  # noqa: BLE001 - a tool: report what failed and keep the static numbers
        rows.append(("trace sweep(cfg) frames holding cfg", f"failed: {type(error).__name__}: {error}"))
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the source tree holding pgdiag/ (default: this script's repository)")
    parser.add_argument("--static", action="store_true", help="skip the two traces (nothing is imported)")
    args = parser.parse_args(argv)
    tree = Path(os.path.realpath(args.tree))
    rows = static_stats(tree)
    if not args.static:
        import pgdiag
        print(f"pgdiag.__file__ = {pgdiag.__file__}")
        rows += trace_stats(tree)
    print(f"\n| {tree} | |\n|---|---|")
    for key, value in rows:
        print(f"| {key} | {value} |")


if __name__ == "__main__":
    main()
