"""Limits every module of the packages keeps, read from the source:

- no module over 500 lines (a migration, one file per step, excepted) and no function over 60;
- an import of a goldpool module sits at the top of its module, unless moving it there would
  make ``goldpool --help`` load more (a heavy library, or modules the help does without: a
  command's services and renderers are imported in its body) or close an import cycle: each such
  import says which, and the test checks that what it says is true;
- each module of ``labeler/commands`` serves one wing, with what that wing builds on.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pooling", "calibration", "labeler")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60

#: Third-party libraries too slow for start-up (sqlite_utils loads pandas and numpy).
HEAVY = {
    "numpy", "scipy", "pandas", "pyarrow", "sklearn", "torch", "sentence_transformers", "streamlit", "ray",
    "openai", "httpx", "krippendorff", "ir_measures", "pytrec_eval", "crowdkit", "rank_bm25", "tenacity",
    "sqlite_utils",
}
LAZY = re.compile(r"#\s*lazy:\s*(start-up|cycle)")


@cache
def _sources() -> dict[str, tuple[Path, str, ast.Module]]:
    """Every module by dotted name (a package by its own name): path, text, tree."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            text = path.read_text(encoding="utf-8")
            found[name] = (path, text, ast.parse(text))
    return found


def _is_migration(path: Path) -> bool:
    return path.parent.name == "migrations" and path.name.startswith("m")


def test_no_module_is_over_500_lines() -> None:
    long = {name: len(text.splitlines()) for name, (path, text, _) in _sources().items()
            if not _is_migration(path) and len(text.splitlines()) > MAX_MODULE_LINES}
    assert long == {}


def test_no_function_is_over_60_lines() -> None:
    long = {f"{name}.{node.name}:{node.lineno}": node.end_lineno - node.lineno + 1
            for name, (_, _, tree) in _sources().items() for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES}
    assert long == {}


def _base(node: ast.ImportFrom, module: str) -> str:
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        is_package = _sources()[module][0].name == "__init__.py"
        keep = len(parts) - node.level + is_package
        base = ".".join([*parts[:keep], base] if base else parts[:keep])
    return base


@cache
def _loaded_on_use(package: str) -> dict[str, str]:
    """Names a package loads on first use -> the module that holds each.

    Such a package maps them in a literal ``_EXPORTS`` dict that its module ``__getattr__`` reads;
    importing one of them from the package loads that module, so the graph follows it there.
    """
    for stmt in _sources()[package][2].body:
        target = stmt.target if isinstance(stmt, ast.AnnAssign) else (
            stmt.targets[0] if isinstance(stmt, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == "_EXPORTS":
            return {name: f"{package}.{module}" for name, module in ast.literal_eval(stmt.value).items()}
    return {}


def _from_name(node: ast.ImportFrom, module: str, name: str) -> str:
    base = _base(node, module)
    if f"{base}.{name}" in _sources():
        return f"{base}.{name}"
    return _loaded_on_use(base).get(name, base) if base in _sources() else base


def _targets(node: ast.Import | ast.ImportFrom, module: str) -> tuple[set[str], set[str]]:
    """(goldpool modules, top-level third-party names) one import statement loads."""
    files = _sources()
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
        _from_name(node, module, a.name) for a in node.names]
    own, third = set(), set()
    for name in names:
        if name.split(".")[0] not in PACKAGES:
            third.add(name.split(".")[0])
            continue
        while name and name not in files:
            name = name.rpartition(".")[0]
        parts = name.split(".")  # importing a.b.c runs a/__init__ and a/b/__init__ first
        own.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in files)
    own.discard(module)
    return own, third


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module loads (not under ``if TYPE_CHECKING``, not in a function)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                found.append(stmt)
            elif isinstance(stmt, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(stmt.test):
                    visit(stmt.body)
                    visit(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                visit(stmt.body)
                for handler in stmt.handlers:
                    visit(handler.body)
                visit(stmt.orelse)
                visit(stmt.finalbody)

    visit(tree.body)
    return found


@cache
def _load_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Module -> goldpool modules and third-party libraries it loads as it loads."""
    own, third = {}, {}
    for module, (_, _, tree) in _sources().items():
        own[module], third[module] = set(), set()
        for node in _top_level_imports(tree):
            o, t = _targets(node, module)
            own[module] |= o
            third[module] |= t
    return own, third


def _reach(start: set[str], graph: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), list(start)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    return seen


def _inner_imports() -> list[tuple[str, int, ast.ImportFrom | ast.Import, str]]:
    """Imports of goldpool modules inside functions: (module, line, node, the line's text)."""
    found = []
    for module, (_, text, tree) in _sources().items():
        lines = text.splitlines()
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and _targets(node, module)[0]:
                    said = " ".join(lines[max(node.lineno - 2, 0): node.end_lineno])  # the line above may say it
                    found.append((module, node.lineno, node, said))
    return found


def _why_inner(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """What moving this import to the top would break: 'start-up', 'cycle', both or neither."""
    own, third = _load_graph()
    targets = _targets(node, module)[0]
    why = set()
    start_up = _reach({"labeler.cli"}, own)
    loaded = _reach(targets, own)
    if module in start_up and (any(third[m] & HEAVY for m in loaded) or not loaded <= start_up):
        why.add("start-up")  # a heavy library, or modules `goldpool --help` does without
    if module in loaded:  # the target loads this module back as it loads
        why.add("cycle")
    return why


def test_the_graph_sees_what_loads_at_start_up() -> None:
    own, third = _load_graph()
    start_up = _reach({"labeler.cli"}, own)
    assert "labeler.commands.common" in start_up
    assert not any(third[m] & HEAVY for m in start_up), "goldpool --help would load a heavy library"


def test_an_import_inside_a_function_says_why_and_is_right() -> None:
    wrong = []
    for module, line, node, said in _inner_imports():
        why = _why_inner(module, node)
        claimed = LAZY.search(said)
        if not why:
            wrong.append(f"{module}:{line} could sit at the top")
        elif not claimed:
            wrong.append(f"{module}:{line} stays inside for {'/'.join(sorted(why))}: say so with `# lazy: ...`")
        elif claimed.group(1) not in why:
            wrong.append(f"{module}:{line} says {claimed.group(1)}, but the reason is {'/'.join(sorted(why))}")
    assert wrong == []


#: What each wing may import of the other wings (the DAG ``tests/test_import_graph.py`` checks).
BELOW = {
    "retrieval": set(),
    "generation": set(),
    "judges": {"generation"},
    "diagnosis": {"judges", "generation", "retrieval"},
    "ui": {"diagnosis", "judges", "generation", "retrieval"},
}


def _wings_used(module: str) -> set[str]:
    """The wings a module imports, at its top or inside its functions."""
    used = set()
    for node in ast.walk(_sources()[module][2]):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _targets(node, module)[0]:
                parts = target.split(".")
                if len(parts) > 1 and parts[0] == "labeler" and parts[1] in BELOW:
                    used.add(parts[1])
    return used


def _serves_one_wing(used: set[str]) -> bool:
    return not used or any(used <= {wing, *BELOW[wing]} for wing in used)


def test_each_command_module_serves_one_wing() -> None:
    """A module of ``labeler/commands`` is one command family: it reaches one wing (and what that
    wing itself builds on), never two families side by side."""
    mixed = {module: sorted(_wings_used(module)) for module in _sources()
             if module.startswith("labeler.commands.") and not _serves_one_wing(_wings_used(module))}
    assert mixed == {}
    assert _serves_one_wing({"diagnosis", "judges"}) and not _serves_one_wing({"retrieval", "generation"})


def _import(line: str) -> ast.Import | ast.ImportFrom:
    return ast.parse(line).body[0]  # type: ignore[return-value]


def test_the_reasons_are_read_from_the_real_graph() -> None:
    # the connection loads sqlite_utils, and the command line loads labeler.commands.common
    assert _why_inner("labeler.commands.common", _import("from labeler.store.connection import connect")) == {"start-up"}
    # ... also when the name comes through the package's loaded-on-use exports
    assert _why_inner("labeler.commands.common", _import("from labeler.store import connect")) == {"start-up"}
    # verdicts imports vocabulary as it loads (a cycle the other way round), and loads sqlite_utils
    # (vocabulary is read at start-up)
    assert _why_inner("labeler.store.vocabulary", _import("from labeler.store.verdicts import Target")) == {
        "cycle", "start-up"}
    # errors are light, loaded at start-up anyway and import nothing back: such an import belongs at the top
    assert _why_inner("labeler.store.vocabulary", _import("from labeler.store.errors import StoreError")) == set()
    # a command's renderer is not needed for the help: in its body it stays out of start-up
    assert _why_inner("labeler.commands.gate", _import("from labeler.commands.reports.gate import junit")) == {"start-up"}
    # outside the start-up path, only a cycle keeps an import inside
    assert _why_inner("labeler.generation.metrics", _import("from labeler.store.answers import answer_hash")) == set()
