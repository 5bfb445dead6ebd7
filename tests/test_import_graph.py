"""The import graph of the libraries: pooling and calibration import nothing of labeler, and no
module of a package imports itself back through another (no cycle, lazy imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _imports(package: str) -> dict[str, set[str]]:
    """Module -> the modules of any goldpool package it imports, at any depth of its code."""
    graph: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[module] = {m for m in found if m.split(".")[0] in ("pooling", "calibration", "labeler")}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle among the package's own modules (a package's ``__init__`` aside), or None."""
    edges = {m: {t for t in targets if t in graph and t != m and "." in t} for m, targets in graph.items()}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


@pytest.mark.parametrize("package", ["pooling", "calibration"])
def test_library_imports_nothing_of_labeler(package: str) -> None:
    graph = _imports(package)
    assert len(graph) > 3
    offenders = {m: sorted(t for t in ts if t.startswith("labeler")) for m, ts in graph.items()}
    assert {m: ts for m, ts in offenders.items() if ts} == {}


@pytest.mark.parametrize("package", ["pooling", "calibration"])
def test_library_modules_import_each_other_without_a_cycle(package: str) -> None:
    assert _cycle(_imports(package)) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": set()}
    assert _cycle(graph) == ["p.a", "p.b", "p.c", "p.a"]
