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
