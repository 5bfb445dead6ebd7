"""The vocabulary is defined once: tasks, verdicts, grades and callers, and the current row.

The scans read the source of ``labeler`` (``calibration`` is a library that imports nothing
of ``labeler``: its table of task scales is a default a project overrides, see
``calibrate_task(scale=...)``). SQL migrations spell the same values in CHECK constraints,
which a released migration keeps; they are strings, not the literals scanned here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from labeler.store import StoreError
from labeler.store import vocabulary as v

ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = ROOT / "labeler" / "store" / "vocabulary.py"
SCHEMA = ROOT / "labeler" / "store" / "schema.py"


def _modules() -> list[Path]:
    return sorted(p for p in (ROOT / "labeler").rglob("*.py") if p != VOCABULARY)


def _spelled(node: ast.AST) -> str | None:
    """What a literal re-spells of the vocabulary, if it does."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
        if not all(isinstance(e, ast.Constant) for e in node.elts):
            return None
        values = {e.value for e in node.elts}  # type: ignore[attr-defined]
        if values <= set(v.TASKS):
            return "task list"
        for task, verdicts in v.VERDICTS.items():
            if values == set(verdicts):
                return f"{task} verdicts"
        if values == set(v.GRADES):
            return "grades"
        if values == set(v.ORDERS):
            return "orders"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        if [a.value for a in node.args if isinstance(a, ast.Constant)] == [len(v.GRADES)]:
            return "grades as range()"
    if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and node.left.value == min(v.GRADES):
        if any(isinstance(c, ast.Constant) and c.value == max(v.GRADES) for c in node.comparators):
            return "grade range as a comparison"
    return None


def test_only_the_vocabulary_spells_tasks_verdicts_and_grades() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {what}"
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (what := _spelled(node)) is not None
    ]
    assert found == []


def test_the_scan_finds_what_it_looks_for() -> None:
    for code, what in (
        ('TASKS = ("relevance", "faithfulness", "pairwise")', "task list"),
        ('for t in ("faithfulness", "pairwise"): pass', "task list"),
        ('x = ["A", "B", "TIE"]', "pairwise verdicts"),
        ('x = ("0", "1", "2", "3")', "relevance verdicts"),
        ("x = {g: 0 for g in range(4)}", "grades as range()"),
        ("ok = 0 <= grade <= 3", "grade range as a comparison"),
    ):
        assert [w for n in ast.walk(ast.parse(code)) if (w := _spelled(n))] == [what], code


_DEFINITION = re.compile(r"^(?:class (Owner|Annotator|Task)\b|(Caller|OWNER|GRADES|GRADE_HELP|TASKS|KINDS|VERDICTS|ORDERS|Role)\s*[:=])",
                         re.M)


def test_callers_and_the_scale_are_defined_only_in_the_vocabulary() -> None:
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in _modules() for m in _DEFINITION.finditer(p.read_text(encoding="utf-8"))]
    assert found == []
    assert not (ROOT / "labeler" / "grades.py").exists()


_APPEND_ONLY = r"(judgments|adjudications|human_verdicts|judge_verdicts)"
_ALIAS = re.compile(rf"\b(?:FROM|JOIN)\s+{_APPEND_ONLY}(?:\s+(?:AS\s+)?(\w+))?", re.I)
_QUALIFIED = re.compile(r"max\(\s*(\w+)\.id\s*\)|ORDER BY\s+(\w+)\.id\s+DESC", re.I)
_BARE = re.compile(rf"max\(\s*id\s*\)[^()]*?\bFROM\s+{_APPEND_ONLY}\b|\bFROM\s+{_APPEND_ONLY}\b[^()]*ORDER BY\s+id\s+DESC", re.I)


def _reads_latest_row(sql: str) -> bool:
    """Whether ``sql`` picks the highest id of an append-only table itself."""
    names = {n for m in _ALIAS.finditer(sql) for n in m.groups() if n}
    qualified = {q for m in _QUALIFIED.finditer(sql) for q in m.groups() if q}
    return bool(names & qualified) or _BARE.search(sql) is not None


def _sql_strings(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            out.append((node.lineno, "".join(p.value for p in node.values if isinstance(p, ast.Constant))))
    return out


def test_no_query_spells_the_current_row_itself() -> None:
    """Readers of the current label, adjudication or verdict select from the schema's views."""
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in _modules()
        if path != SCHEMA
        for line, text in _sql_strings(path)
        if _reads_latest_row(text)
    ]
    assert found == []


@pytest.mark.parametrize("sql", [
    "SELECT j.* FROM judgments j JOIN (SELECT max(id) AS id FROM judgments GROUP BY query_id, doc_id, annotator_id) l ON l.id = j.id",
    "SELECT query_id, doc_id, relevance, max(id) FROM adjudications GROUP BY query_id, doc_id",
    "SELECT h.item_id FROM human_verdicts h WHERE h.id = (SELECT max(k.id) FROM human_verdicts k WHERE k.item_id = h.item_id)",
    "SELECT verdict FROM judge_verdicts WHERE judge = ? AND task = ? ORDER BY id DESC LIMIT 1",
])
def test_the_current_row_scan_finds_each_old_spelling(sql: str) -> None:
    assert _reads_latest_row(sql)
    assert not _reads_latest_row("SELECT s.item_id, max(s.id) FROM verdict_skips s WHERE NOT EXISTS "
                                 "(SELECT 1 FROM human_verdicts h WHERE h.item_id = s.item_id)")


def test_tasks_are_listed_in_page_order_and_each_knows_its_verdicts() -> None:
    assert v.TASKS == ("relevance", "faithfulness", "pairwise", "claims", "correctness", "answer-relevance", "nuggets")
    assert v.KINDS == ("faithfulness", "pairwise", "claims", "correctness", "answer-relevance", "nuggets")
    assert v.ANSWER_TASKS == ("claims", "correctness", "answer-relevance", "nuggets")
    assert v.VERDICTS["nuggets"] == ("SUPPORT", "PARTIAL_SUPPORT", "NOT_SUPPORT")
    assert v.VERDICTS["relevance"] == ("0", "1", "2", "3")
    assert v.VERDICTS["claims"] == ("SUPPORTED", "UNSUPPORTED", "NOT_ONE_CLAIM")
    assert v.JUDGE_VERDICTS["claims"] == ("SUPPORTED", "UNSUPPORTED")
    assert [t.name for t in v.TASK_LIST if t.ordered] == ["pairwise"]
    assert v.GRADE_RANGE == "0-3"


def test_the_database_holds_the_vocabularys_tasks_and_verdicts(tmp_path) -> None:
    from labeler.store import connection as schema

    db = schema.init_db(tmp_path / "p.db")
    assert [r[0] for r in db.execute("SELECT name FROM tasks")] == sorted(v.TASKS)
    assert {(t, x) for t, x in db.execute("SELECT task, verdict FROM task_verdicts")} == {
        (t, x) for t in v.TASKS for x in v.VERDICTS[t]}


@pytest.mark.parametrize("answer_id", ["a1", "a@b", "x@correctness-ish", "#"])
def test_an_answer_item_names_its_answer_and_task(answer_id: str) -> None:
    for task in ("correctness", "answer-relevance"):
        assert v.item_answer(v.answer_item(task, answer_id)) == (answer_id, task)
    assert v.item_answer(answer_id) is None


@pytest.mark.parametrize("bad", [4, -1, True, "2", 2.0, None])
def test_check_grade_refuses_what_is_not_a_grade(bad: object) -> None:
    with pytest.raises(StoreError, match="give an integer grade 0-3"):
        v.check_grade(bad)


def test_the_store_names_are_the_vocabularys() -> None:
    from labeler.store import access, labels

    assert access.OWNER is v.OWNER and access.Annotator is v.Annotator
    assert not {"OWNER", "Annotator", "GRADES"} & set(labels.__all__)  # labels re-exports none of them


def test_a_judge_report_takes_the_projects_scale() -> None:
    from calibration import CalibrationError
    from calibration.judges import calibrate_task

    humans = {("q", "d1"): {"ada": 4}, ("q", "d2"): {"ada": 0}}
    judge = {("q", "d1"): 4, ("q", "d2"): 0}
    groups = {k: "q" for k in judge}
    with pytest.raises(CalibrationError):
        calibrate_task("relevance", humans, judge, groups, n_project=1, n_boot=10)
    wider = calibrate_task("relevance", humans, judge, groups, n_project=1, n_boot=10, scale=(0, 1, 2, 3, 4))
    assert wider.agreement.value == 1.0
