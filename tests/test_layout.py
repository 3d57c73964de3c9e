"""The package's layout holds: nothing imports upward, and no line is wider than the house limit."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).parent.parent / "pgdiag"

#: the layers, lowest first (docs/development.md); the modules at the package's top level that the trainer
#: builds on share one layer
LAYERS = ("errors", "config", "envs", "core", "adapters", "algorithms", "stages", "metrics", "trainer", "run", "diagnostics",
          "experiments", "cli")
CORE = {"rollout", "networks", "normalize", "objectives", "optim", "policy", "stats", "aggregates"}

#: the imports that read upward inside a function, each for a stated reason
LATE_UPWARD = {
    ("pgdiag.config.schema", "pgdiag.envs"),   # a Config checks its task against the registered tasks
    ("pgdiag.config.static", "pgdiag.envs"),   # the static settings' task choices are the registered tasks
    ("pgdiag.envs.lqr", "pgdiag.normalize"),   # the exact answers of a normalized advantage use its epsilon
}

LIMIT = 120


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
