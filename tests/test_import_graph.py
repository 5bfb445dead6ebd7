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
    assert "pooling.strategies" in graph["labeler.retrieval.adaptive"]  # inside a function only
    assert "pooling.stopping" in graph["labeler.retrieval.adaptive"]  # under TYPE_CHECKING too


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
    graph = {"labeler.retrieval.build": {"labeler.retrieval.golden_set"}, "labeler.retrieval.golden_set": {"labeler.retrieval.demo"}, "labeler.retrieval.demo": {"labeler.retrieval.build"}}
    assert _cycle(graph) == ["labeler.retrieval.build", "labeler.retrieval.golden_set", "labeler.retrieval.demo", "labeler.retrieval.build"]


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


#: labeler's own top level: its entry points and the layer every wing may use; the rest are wings.
TOP_LEVEL = {"__init__.py", "cli.py", "app.py", "project.py", "text.py"}

#: What each wing may import of the others (beside itself, ``labeler.project``, ``labeler.text``,
#: ``labeler`` and the libraries). The arrows of the README's layout: commands, ui -> diagnosis ->
#: judges -> generation -> store; diagnosis -> retrieval -> store; the closure written out.
WINGS = {
    "store": set(),
    "generation": {"store"},
    "retrieval": {"store"},
    "judges": {"generation", "store"},
    "diagnosis": {"judges", "generation", "retrieval", "store"},
    "ui": {"diagnosis", "judges", "generation", "retrieval", "store"},
    "commands": {"ui", "diagnosis", "judges", "generation", "retrieval", "store"},
}
SHARED = {"labeler", "labeler.project", "labeler.text"}


def _wing(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "labeler" and len(parts) > 1 and parts[1] in WINGS else None


def test_labeler_s_top_level_holds_only_its_entry_points_the_shared_layer_and_wings() -> None:
    top = ROOT / "labeler"
    files = {p.name for p in top.iterdir() if p.is_file() and p.suffix == ".py"}
    folders = {p.name for p in top.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert files == TOP_LEVEL
    assert folders == set(WINGS)


def test_the_wings_import_each_other_only_along_the_stated_arrows() -> None:
    graph = _graph()
    wrong = {}
    for module, targets in graph.items():
        wing = _wing(module)
        if wing is None:
            continue
        bad = sorted(t for t in targets if t.split(".")[0] == "labeler" and t not in SHARED
                     and _wing(t) not in {wing, *WINGS[wing]})
        if bad:
            wrong[module] = bad
    assert wrong == {}


def test_the_shared_layer_imports_no_wing_but_the_store() -> None:
    graph = _graph()
    for module in ("labeler.project", "labeler.text"):
        assert {_wing(t) for t in graph[module] if _wing(t)} <= {"store"}, module


def test_the_arrows_are_a_dag() -> None:
    assert _cycle({w: set(d) for w, d in WINGS.items()}) is None
    for wing, deps in WINGS.items():  # written out closed: what a wing reaches, it names
        assert all(WINGS[d] <= deps for d in deps), wing


def test_every_module_with_a_doctest_is_collected() -> None:
    import tomllib

    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    paths = [ROOT / p for p in options["testpaths"]]
    ignored = {ROOT / a.split("=", 1)[1] for a in options["addopts"].split() if a.startswith("--ignore=")}
    assert "--doctest-modules" in options["addopts"].split()
    for path in _files().values():
        if ">>> " in path.read_text(encoding="utf-8"):
            assert path not in ignored and any(path == p or p in path.parents for p in paths), path


def test_the_readme_layout_names_every_module_of_labeler() -> None:
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout"):readme.index("## Benchmarks")]
    words = set(re.findall(r"[A-Za-z_]+", layout))
    for module, path in _files().items():
        if module.startswith("labeler.") and path.name != "__init__.py" and path.parent.name != "migrations":
            assert path.stem in words, f"the README's Layout section does not name {module}"
    assert "migrations/" in layout  # one module per step: named by the folder
    for module, path in _files().items():  # and every wing by its folder
        if module.startswith("labeler.") and path.name == "__init__.py" and module.count(".") == 1:
            assert f"{path.parent.name}/" in layout, module


def test_no_test_module_imports_another() -> None:
    """Shared test helpers live in the fixture modules (``*_fixtures``, ``browser_helpers``,
    ``judge_server``), never in a test module another imports."""
    found = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0].startswith("test_")]
    assert found == []
