"""The package's shape: each layer imports only the layers below it, and no module imports
itself back through others (docs/architecture.md gives the flow). Read from the source with
`ast`, imports inside functions and under TYPE_CHECKING included, so that the shape cannot
erode unnoticed."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ragqa"

# Lowest first: a module may import its own layer and the layers before it.
LAYERS = [
    ("base", ("ragqa.version", "ragqa.config", "ragqa.errors", "ragqa.text", "ragqa.resources",
              "ragqa.prompts", "ragqa.tokenizer")),
    ("sources", ("ragqa.sources",)),
    ("models", ("ragqa.models",)),
    ("index", ("ragqa.index",)),
    ("retrieval", ("ragqa.retrieval",)),
    ("screening", ("ragqa.screening",)),
    ("answering", ("ragqa.answering",)),
    ("maps", ("ragqa.maps",)),
    ("app", ("ragqa.app", "ragqa.requests", "ragqa.evaluate")),
    # The Python API and its adapters: faces too, for code rather than people.
    ("library", ("ragqa.api", "ragqa.results", "ragqa.integrations")),
    # "ragqa" alone is the package's __init__: the front door, which offers the Python API.
    ("faces", ("ragqa.faces", "ragqa.__main__", "ragqa")),
]


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def layer_of(module: str) -> int:
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            # "ragqa" alone is the package's __init__ only, not everything below it
            exact = prefix == "ragqa"
            if (module == prefix or (not exact and module.startswith(prefix + "."))) and \
                    len(prefix) > best:
                best, rank = len(prefix), i
    assert rank is not None, f"{module} belongs to no layer: add it to LAYERS and the docs"
    return rank


def _resolve(name: str, known: dict[str, Path]) -> str:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The ragqa modules that `module` imports: `from ragqa.x import y` is module ragqa.x.y
    where y is a module, and ragqa.x (its __init__) in any case."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(_resolve(alias.name, known) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")
                if path.name != "__init__.py":
                    package = package[:-1]
                package = package[:len(package) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in known else _resolve(base, known))
                # `from ragqa import resources` runs ragqa/__init__.py too: an import of the
                # package itself, which (as the front door) may import the layers above.
                targets.add(_resolve(base, known))
    return {t for t in targets if t.startswith("ragqa") and t != module}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports_of(m, p, known) for m, p in known.items()}


def test_every_module_belongs_to_a_layer():
    for module in modules():
        layer_of(module)


def test_no_import_goes_up_the_layers():
    upward = []
    for module, targets in graph().items():
        for target in targets:
            if layer_of(target) > layer_of(module):
                upward.append(f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} "
                              f"({LAYERS[layer_of(target)][0]})")
    assert not upward, "imports that go up the layers:\n" + "\n".join(sorted(upward))


def test_no_import_circles():
    edges = graph()
    circles, state = [], {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for target in sorted(edges.get(node, ())):
            if state.get(target) == "open":
                circles.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif target not in state:
                visit(target, [*trail, target])
        state[node] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_checker_sees_an_upward_import(tmp_path):
    """The checker itself: a module of the index layer that imports a face is caught."""
    fake = tmp_path / "ragqa" / "index"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("def f():\n    from ragqa.faces import cli\n", encoding="utf-8")
    known = {**modules(), "ragqa.index.bad": fake / "bad.py"}
    targets = imports_of("ragqa.index.bad", fake / "bad.py", known)
    assert targets == {"ragqa.faces.cli", "ragqa.faces"}
    assert layer_of("ragqa.faces.cli") > layer_of("ragqa.index.bad")


def test_every_package_ships_in_the_wheel():
    """A package missing from pyproject's list is absent from `pip install .` while the tests,
    run from the repository, still find it (as ragqa.screening once was)."""
    import pytest

    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
                 ["tool"]["setuptools"]["packages"])
    packages = {".".join(init.parent.relative_to(PACKAGE.parent).parts)
                for init in PACKAGE.rglob("__init__.py")}
    assert packages <= listed, f"not in pyproject.toml's packages: {sorted(packages - listed)}"
