"""One home per idea, read from the source: each statistical and text building block below is
defined once in package code, and no module imports another package's private name.

An idea is recognised by its name, and by its telling call where a copy could hide under
another name (``norm.ppf`` for the normal quantile).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pooling", "calibration", "labeler", "bench")

#: idea -> (the one function's name, its one home)
IDEAS = {
    "normal quantile": ("normal_quantile", "calibration/stats.py"),
    "Wilson interval": ("wilson", "calibration/stats.py"),
    "paired sign-flip test": ("sign_flip_p", "calibration/stats.py"),
    "Markdown escape": ("markdown_escape", "calibration/formatting.py"),
    "number formatting": ("fixed", "calibration/formatting.py"),
    "rubric hash": ("rubric_hash", "labeler/store/rubric.py"),
    "GOLDEN parsing (DB@VERSION, a folder, a qrels file)": ("parse_golden", "labeler/project.py"),
}
#: Other names the copies went by.
FORMER_NAMES = {"_z", "_markdown_escape", "_md_escape", "one_sided_p", "randomisation_p"}


@cache
def _trees() -> dict[str, ast.Module]:
    return {
        path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _defs(trees: dict[str, ast.Module], name: str) -> list[str]:
    return [f"{path}:{node.lineno}" for path, tree in trees.items() for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name]


@pytest.mark.parametrize("idea", sorted(IDEAS))
def test_each_idea_is_defined_once(idea: str) -> None:
    name, home = IDEAS[idea]
    assert _defs(_trees(), name) == [f"{home}:{line}" for line in _lines(home, name)]
    assert len(_defs(_trees(), name)) == 1, f"{idea}: more than one `def {name}`"


def _lines(home: str, name: str) -> list[int]:
    tree = ast.parse((ROOT / home).read_text(encoding="utf-8"))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]


def test_the_former_copies_are_gone() -> None:
    trees = _trees()
    assert [d for name in sorted(FORMER_NAMES) for d in _defs(trees, name)] == []


def test_the_normal_quantile_is_computed_in_one_place() -> None:
    # A copy under another name still calls scipy's norm.ppf.
    calls = [f"{path}:{node.lineno}" for path, tree in _trees().items() for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr == "ppf"
             and isinstance(node.value, ast.Name) and node.value.id == "norm"]
    assert [c.partition(":")[0] for c in calls] == ["calibration/stats.py"]


#: Private names still crossing a package: none (bench's reach into pooling became public
#: names in their homes). No other may join them.
STILL_CROSSING: set[tuple[str, str]] = set()


def test_no_module_imports_a_private_name_of_another_package() -> None:
    crossing = []
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.ImportFrom) and node.module and not node.level
                    and node.module.split(".")[0] != path.split("/")[0]):
                crossing += [f"{path}:{node.lineno}: from {node.module} import {a.name}"
                             for a in node.names if a.name.startswith("_") and not a.name.startswith("__")
                             and (node.module, a.name) not in STILL_CROSSING]
    assert crossing == []


# --- one registry of generation metrics -------------------------------------------------------

#: The one home of the generation metrics' names.
REGISTRY = "labeler/generation/registry.py"
#: Where generation metrics are computed or taken by name: none of these lists the names itself.
METRIC_USERS = ("labeler/generation/", "labeler/diagnosis/", "labeler/judges/estimate.py", "labeler/commands/")
#: Lists of generation metric names still written out beside the registry; each is to read it.
STILL_LISTED = {"labeler/commands/judge.py"}  # estimate's --metric choices


def _collections(tree: ast.Module) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Tuple, ast.List, ast.Set, ast.Dict))]


def _strings(node: ast.AST) -> set[str]:
    items = node.keys if isinstance(node, ast.Dict) else node.elts  # type: ignore[attr-defined]
    return {x.value for x in items if isinstance(x, ast.Constant) and isinstance(x.value, str)}


def test_the_generation_metrics_are_named_in_one_registry() -> None:
    from labeler.generation.registry import METRICS

    names = {m.name for m in METRICS}
    assert {"faithfulness", "correctness", "answer-relevance", "faithfulness-rate"} <= names
    lists = [f"{path}:{node.lineno}" for path, tree in _trees().items()
             if path.startswith(METRIC_USERS) and path not in STILL_LISTED | {REGISTRY}
             for node in _collections(tree) if len(_strings(node) & names) >= 2]
    assert lists == []
    made = [path for path, tree in _trees().items() for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "GenerationMetric"]
    assert set(made) == {REGISTRY}


def test_the_registry_check_finds_a_second_list() -> None:
    tree = ast.parse('GENERATION = {"correctness": "correct", "faithfulness": "faithfulness"}')
    assert [len(_strings(n) & {"correctness", "faithfulness"}) for n in _collections(tree)] == [2]


# --- rates, the paired test, escaping ---------------------------------------------------------

#: The pieces a rate is composed of: a service calls calibration.rates, never these.
RATE_PARTS = {"stratified_rate", "clustered_rate", "clustered_ppi", "with_known_part"}


def _called(tree: ast.Module) -> set[str]:
    return {n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))}


def test_rates_are_composed_inside_calibration() -> None:
    assert {path: sorted(_called(tree) & RATE_PARTS) for path, tree in _trees().items()
            if path.startswith("labeler/") and _called(tree) & RATE_PARTS} == {}
    assert {"labelled_rate", "ppi_rate"} <= _called(_trees()["labeler/generation/metrics.py"])


def _fields(node: ast.ClassDef) -> set[str]:
    return {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}


def test_one_record_holds_a_paired_test() -> None:
    """The sign-flip test's numbers (p, interval, MDD) are fields of one record; the gate and
    ``compare`` hold it (the gate by composition, compare as a subclass)."""
    records = [f"{path}:{node.name}" for path, tree in _trees().items() for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef) and {"p_value", "p_adjusted", "mdd"} <= _fields(node)]
    assert records == ["calibration/compare.py:PairedTest"]


#: The one Markdown escape (``markdown_escape``); HTML is escaped by the standard library's
#: ``html.escape``, called directly.
HTML_SPECIAL = {"<", ">", "&"}


def test_html_is_escaped_by_the_standard_library_alone() -> None:
    trees = _trees()
    own = [f"{path}:{node.lineno}: {node.name}" for path, tree in trees.items() for node in ast.walk(tree)
           if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "escape" in node.name.lower()
           and f"{path}:{node.name}" != "calibration/formatting.py:markdown_escape"]
    assert own == []
    replacing = [f"{path}:{node.lineno}" for path, tree in trees.items() for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                 and node.func.attr in {"replace", "maketrans"} and node.args
                 and isinstance(node.args[0], ast.Constant) and node.args[0].value in HTML_SPECIAL]
    assert replacing == []
    escapes = [f"{path}:{node.lineno}: {node.module}" for path, tree in trees.items() for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and any(a.name == "escape" for a in node.names) and node.module != "html"]
    assert escapes == []


def test_the_escape_check_finds_a_local_escape() -> None:
    tree = ast.parse('def _esc(t):\n    return t.replace("&", "&amp;").replace("<", "&lt;")\n')
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value in HTML_SPECIAL]
    assert len(calls) == 2


# --- services return results; renderers render -----------------------------------------------

#: The wings that compute: they return results, and text, Markdown, HTML and JUnit are written
#: by labeler/commands/ (its reports/), labeler/text.py, the app's pages and calibration/report*.
SERVICES = ("labeler/generation/", "labeler/diagnosis/", "labeler/judges/", "labeler/retrieval/", "labeler/store/")
RENDERING_IMPORTS = {"html", "xml.etree.ElementTree", "calibration.report_page", "calibration.report_html",
                     "calibration.report_judges", "calibration.report_compare"}
PAGE_MARKS = ("<!DOCTYPE", "<table", "<td", "<svg", "|---")
#: Services still writing a document themselves; each is to hand its result to a renderer.
STILL_RENDERING = {"labeler/retrieval/dataset_card.py"}  # the export's card, README.md


def _rendering(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name in RENDERING_IMPORTS]
        elif isinstance(node, ast.ImportFrom) and node.module in RENDERING_IMPORTS | {"calibration.formatting"}:
            found += [f"{node.module}.{a.name}" for a in node.names if node.module != "calibration.formatting"
                      or a.name == "markdown_escape"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and any(m in node.value for m in PAGE_MARKS):
            found.append(repr(node.value[:40]))
    return found


def test_services_build_no_text_markdown_html_or_junit() -> None:
    found = {path: _rendering(tree) for path, tree in _trees().items()
             if path.startswith(SERVICES) and path not in STILL_RENDERING}
    assert {path: marks for path, marks in found.items() if marks} == {}


def test_the_renderers_are_found_by_the_service_check() -> None:
    trees = _trees()
    assert _rendering(trees["labeler/commands/reports/gate.py"])
    assert _rendering(trees["calibration/report_page.py"])
