"""The package's layout holds: nothing imports upward, no module imports itself through others, and no line,
function or module is longer than the house limits."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).parent.parent / "pgdiag"

#: the layers, lowest first (docs/development.md); the modules at the package's top level that the trainer
#: builds on share one layer
LAYERS = ("errors", "config", "envs", "core", "adapters", "algorithms", "stages", "metrics", "trainer", "run", "diagnostics",
          "experiments", "studies", "cli")
CORE = {"rollout", "networks", "normalize", "objectives", "optim", "policy", "stats", "aggregates"}

#: the imports that read upward inside a function, each for a stated reason
LATE_UPWARD = {
    ("pgdiag.config.schema", "pgdiag.envs"),   # a Config checks its task against the registered tasks
    ("pgdiag.config.static", "pgdiag.envs"),   # the static settings' task choices are the registered tasks
    ("pgdiag.config.static", "pgdiag.networks"),   # ... and its network choices the registered networks
    ("pgdiag.envs.lqr", "pgdiag.normalize"),   # the exact answers of a normalized advantage use its epsilon
    # the engine also answers to its measurements' public names (pgdiag.diagnostics.gradient_study, ...), read when
    # first asked
    ("pgdiag.diagnostics", "pgdiag.studies"),
}

LIMIT = 120
#: the most lines of a module, and of a function (its signature, docstring and body)
MODULE_LINES, FUNCTION_LINES = 300, 60


def _layer(module: str):
    parts = module.split(".")
    if parts[0] != "pgdiag" or len(parts) == 1:
        return None
    return LAYERS.index("core") if parts[1] in CORE else LAYERS.index(parts[1]) if parts[1] in LAYERS else None


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node, [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            yield node, [a.name for a in node.names]


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        yield path, ".".join(p for p in rel.parts if p != "__init__")


def test_no_module_imports_a_higher_layer():
    upward = set()
    for path, module in _modules():
        me = _layer(module)
        if me is None:
            continue
        tree = ast.parse(path.read_text())
        top = {id(n) for n in tree.body}
        for node, targets in _imports(tree):
            for target in targets:
                there = _layer(target)
                if there is not None and there > me:
                    owner = ".".join(target.split(".")[:2])
                    upward.add((module, owner, id(node) in top))
    assert not [u for u in upward if u[2]], "module-level imports of a higher layer"
    assert {(m, o) for m, o, _ in upward} <= LATE_UPWARD


def test_no_line_is_wider_than_the_limit():
    wide = [f"{path.relative_to(ROOT.parent)}:{i}" for path, _ in _modules()
            for i, line in enumerate(path.read_text().split("\n"), 1) if len(line) > LIMIT]
    assert not wide, f"lines over {LIMIT} characters: {wide[:10]}"


def test_no_module_or_function_is_longer_than_the_limit():
    long_modules, long_functions = [], []
    for path, module in _modules():
        text = path.read_text()
        if len(text.split("\n")) - (1 if text.endswith("\n") else 0) > MODULE_LINES:
            long_modules.append(module)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if node.end_lineno - first + 1 > FUNCTION_LINES:
                    long_functions.append(f"{module}.{node.name}")
    assert not long_modules, f"modules over {MODULE_LINES} lines: {long_modules}"
    assert not long_functions, f"functions over {FUNCTION_LINES} lines: {long_functions}"


def test_no_import_circle_at_module_level():
    """The modules' module-level imports of each other form no circle (an import inside a function is read when it
    runs, after every module has loaded)."""
    names = {module for _, module in _modules()}
    edges = {}
    for path, module in _modules():
        tree = ast.parse(path.read_text())
        out = set()
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for _, targets in _imports(ast.Module(body=[node], type_ignores=[])):
                    out |= {t for t in targets if t in names and t != module}
        edges[module] = out
    # a package's __init__ importing its own submodules is how a package is put together, not a circle
    edges = {m: {t for t in ts if not (t.startswith(m + ".") and m + "." in t)} for m, ts in edges.items()}
    state, circles = {}, []

    def visit(m, stack):
        state[m] = "open"
        for t in sorted(edges.get(m, ())):
            if state.get(t) == "open":
                circles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t, stack + [t])
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert not circles, f"import circles: {circles[:5]}"

def test_the_recorded_version_is_the_installed_distributions():
    """Every manifest records pgdiag's version (the distribution is named pgdiag-rl, the package pgdiag): the
    package's __version__, the installed distribution's and pyproject's agree."""
    import importlib.metadata
    import tomllib

    import pgdiag
    from pgdiag.run import provenance

    declared = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["project"]["version"]
    assert provenance.versions()["pgdiag"] == pgdiag.__version__ == declared
    assert importlib.metadata.version("pgdiag-rl") == declared
