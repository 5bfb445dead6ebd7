"""The import graph of goldpool's packages, read from the source at every depth: imports at
load time, inside functions and under ``TYPE_CHECKING`` all count, since each of them makes one
module depend on another.

- ``pooling`` and ``calibration`` import nothing of ``labeler``;
- nothing under ``labeler/store/`` imports a goldpool module outside the store;
- no module imports itself back through others (no cycle);
- no SQL runs outside ``labeler/store/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pooling", "calibration", "labeler")
SQL_CALLS = ("execute", "executemany", "executescript")


def _files() -> dict[str, Path]:
    """Every module of the packages by its dotted name (a package by its own name)."""
    return {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _targets(node: ast.Import | ast.ImportFrom, module: str, files: dict[str, Path]) -> set[str]:
    """The goldpool modules one import statement loads (``from p import m`` names module p.m)."""
    if isinstance(node, ast.Import):
        names = {alias.name for alias in node.names}
    else:
        base = node.module or ""
        if node.level:  # relative: counted from the importing module's package
            parts = module.split(".")
            keep = len(parts) - node.level + (files[module].name == "__init__.py")
            base = ".".join([*parts[:keep], base] if base else parts[:keep])
        names = {f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names}
    found = set()
    for name in names:
        while name and name not in files:  # `import a.b.c` of a name that is not a module
            name = name.rpartition(".")[0]
        if name:
            found.add(name)
    return found


def _graph() -> dict[str, set[str]]:
    """Module -> the goldpool modules it imports anywhere in its code."""
    files = _files()
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] = {
            target
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for target in _targets(node, module, files)
            if target != module
        }
    return graph


def _cycle(graph: dict[str, set[str]], packages: frozenset[str] = frozenset()) -> list[str] | None:
    """One cycle of the graph as ``[a, b, ..., a]``, or None.

    ``packages`` are left out: importing ``p.m`` runs ``p/__init__.py`` first, which may import
    ``p.m`` back by design.
    """
    edges = {m: {t for t in ts if t in graph and t not in packages} for m, ts in graph.items() if m not in packages}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_the_graph_sees_imports_inside_functions_and_under_type_checking() -> None:
    graph = _graph()
    assert "labeler.store.schema" in graph["labeler.store.access"]  # at load time
    assert "pooling.strategies" in graph["labeler.adaptive"]  # inside a function only
    assert "pooling.stopping" in graph["labeler.adaptive"]  # under TYPE_CHECKING too


@pytest.mark.parametrize("package", ["pooling", "calibration"])
def test_library_imports_nothing_of_labeler(package: str) -> None:
    graph = _graph()
    modules = [m for m in graph if m.split(".")[0] == package]
    assert len(modules) > 3
    wrong = {m: sorted(t for t in graph[m] if t.split(".")[0] == "labeler") for m in modules}
    assert {m: t for m, t in wrong.items() if t} == {}


def _in_store(module: str) -> bool:
    return module == "labeler.store" or module.startswith("labeler.store.")


STORE = sorted(m for m in _files() if _in_store(m))


def test_the_store_has_its_modules() -> None:
    assert len(STORE) > 5 and "labeler.store.assign" in STORE


@pytest.mark.parametrize("module", STORE)
def test_the_store_imports_nothing_outside_the_store(module: str) -> None:
    assert sorted(t for t in _graph()[module] if not _in_store(t)) == []


def test_no_import_cycle() -> None:
    packages = frozenset(m for m, path in _files().items() if path.name == "__init__.py")
    cycle = _cycle(_graph(), packages)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"labeler.build": {"labeler.golden_set"}, "labeler.golden_set": {"labeler.demo"}, "labeler.demo": {"labeler.build"}}
    assert _cycle(graph) == ["labeler.build", "labeler.golden_set", "labeler.demo", "labeler.build"]


def test_no_sql_outside_the_store() -> None:
    """Every ``.execute(``, ``.executemany(`` and ``.executescript(`` call is under ``labeler/store/``."""
    found = []
    for module, path in _files().items():
        if _in_store(module):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_CALLS:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
