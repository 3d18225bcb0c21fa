"""The shape of genprob's imports: no cycles, and the library never imports the applications.

Every module under ``genprob/`` is parsed with ``ast``; imports inside functions count like
top-level ones (deferring an import hides a cycle, it does not remove it).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "genprob"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _imported(name: str, path: Path, known: set[str]) -> set[str]:
    """genprob modules that ``name`` imports anywhere in its source (functions included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from genprob import em` imports the module genprob.em; `from genprob.core import
            # model` imports genprob.core
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            # the deepest genprob module the import names (a.b.c -> a.b.c, else a.b, ...)
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imported(name, path, known) for name, path in modules.items()}


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of size > 1."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def _edges_within(graph, component):
    return {(a, b) for a in component for b in graph[a] & component}


def _cycle_edges(graph, component):
    return sorted(f"{a} -> {b}" for a, b in _edges_within(graph, component))


def test_graph_sees_function_level_and_relative_imports():
    """The walker finds imports inside functions, and resolves the module a name refers to."""
    graph = _graph()
    assert "genprob.core" in graph["genprob.estimators._base"]
    assert "genprob.em" in graph["genprob.estimators._base"]  # `from genprob import em as _em`
    assert "genprob.app.registry" in graph["genprob.app.cli"]  # imported inside functions
    assert "genprob" not in graph["genprob.core"]
    # a made-up two-module cycle is found
    assert _strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]
    assert _strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    graph = _graph()
    cycles = [_cycle_edges(graph, component) for component in _strongly_connected(graph)]
    assert cycles == []


def test_layers():
    """Draw evaluation needs only the core; persistence needs no estimators; exact posteriors
    and the ArviZ bridge do not import each other."""
    graph = _graph()
    assert not any(m.startswith("genprob.estimators") for m in graph["genprob.persistence"])
    assert "genprob.arviz_io" not in graph["genprob.posterior"]
    assert "genprob.posterior" not in graph["genprob.arviz_io"]
    assert graph["genprob.draws"] <= {"genprob.core", "genprob.story", "genprob._validation"}


def test_library_does_not_import_the_applications():
    graph = _graph()
    offenders = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if not name.startswith("genprob.app")
        for target in targets
        if target == "genprob.app" or target.startswith("genprob.app.")
    )
    assert offenders == []
    assert {"genprob.app.cli", "genprob.app.registry"} <= set(graph)
