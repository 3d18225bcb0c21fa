"""genprob's modules import each other without cycles (function-level imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import genprob

PACKAGE = Path(genprob.__file__).parent


def _module_files() -> dict:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("genprob",) + path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def import_graph() -> dict:
    """Module -> genprob modules it imports anywhere in its source (``from p import m`` names
    the submodule ``p.m`` when there is one, else ``p``)."""
    modules = _module_files()
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def find_cycle(graph: dict) -> list | None:
    """One import cycle as a list of modules (first = last), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return stack[stack.index(target) :] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_detector_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_genprob_has_no_import_cycle():
    graph = import_graph()
    assert "genprob.core" in graph and "genprob.story" in graph["genprob.core"]
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_layers():
    """Draw evaluation needs only the core; persistence needs no estimators; exact posteriors no
    ArviZ."""
    graph = import_graph()
    assert not any(m.startswith("genprob.estimators") for m in graph["genprob.persistence"])
    assert "genprob.arviz_io" not in graph["genprob.posterior"]
    assert "genprob.posterior" not in graph["genprob.arviz_io"]
    assert graph["genprob.draws"] <= {"genprob.core", "genprob.story", "genprob.em"}
