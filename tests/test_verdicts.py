"""Verdict items and human/judge verdicts: validated imports, append-only tables, export."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

from labeler.cli import cli
from labeler.store import StoreError
from labeler.store import access
from labeler.store.access import OWNER
from labeler.store.verdict_io import export_verdicts
from labeler.store.verdicts import latest_human_verdicts, own_verdicts, latest_judge_verdicts, list_items, record_human_verdict
from labeler.judges.verdict_files import import_items, import_verdicts
from labels_fixtures import dump, make_project, write_jsonl
from pooling import PoolingError

#: A bad file is refused by its reader (PoolingError) or by the project (StoreError).
REFUSED = (PoolingError, StoreError)

ITEMS = [
    {"item_id": "f1", "kind": "faithfulness", "question": "Who wrote it?", "contexts": ["Ann wrote it."], "response": "Ann."},
    {"item_id": "f2", "kind": "faithfulness", "question": "When?", "contexts": ["In 1990.", "Or 1991."], "response": "1999."},
    {"item_id": "p1", "kind": "pairwise", "question": "Sum 2+2?", "response_a": "4", "response_b": "five",
     "model_a": "gpt-x", "model_b": "llama", "source": "demo"},
]


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    store = make_project(tmp_path / "p.db", n_queries=2, per_query=3)
    import_items(store, write_jsonl(tmp_path / "items.jsonl", ITEMS), caller=OWNER)
    access.add_annotator(store, "ann")
    return store


def test_items_are_stored_and_reimport_is_a_no_op(db: sqlite_utils.Database, tmp_path: Path) -> None:
    items = {i.item_id: i for i in list_items(db)}
    assert items["f2"].contexts == ("In 1990.", "Or 1991.")
    assert (items["p1"].model_a, items["p1"].response_b) == ("gpt-x", "five")
    assert json.loads(db.execute("SELECT meta FROM verdict_items WHERE item_id = 'p1'").fetchone()[0]) == {"source": "demo"}
    before = dump(db)
    result = import_items(db, tmp_path / "items.jsonl", caller=OWNER)
    assert (result.added, result.unchanged) == (0, 3)
    assert dump(db) == before


@pytest.mark.parametrize(
    ("record", "line_field"),
    [
        ({"item_id": "f1", "kind": "faithfulness", "question": "Who wrote it?", "contexts": ["Bob wrote it."], "response": "Ann."},
         "line 2, field 'contexts'"),
        ({"item_id": "x", "kind": "ranking", "question": "q"}, "line 2, field 'kind'"),
        ({"item_id": "x", "kind": "pairwise", "question": "q", "response_a": "a"}, "line 2, field 'response_b'"),
        ({"item_id": "x", "kind": "faithfulness", "question": "q", "contexts": "one text", "response": "r"},
         "line 2, field 'contexts'"),
        ({"kind": "faithfulness", "question": "q", "contexts": ["c"], "response": "r"}, "line 2, field 'item_id'"),
    ],
)
def test_bad_items_are_refused_with_file_line_field_and_nothing_written(
    db: sqlite_utils.Database, tmp_path: Path, record: dict, line_field: str
) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [{**ITEMS[0], "item_id": "new1"}, record])
    before = dump(db)
    with pytest.raises(REFUSED) as error:
        import_items(db, path, caller=OWNER)
    assert f"{path}, {line_field}:" in str(error.value)
    assert "\n" not in str(error.value)
    assert dump(db) == before


def test_malformed_json_names_the_line(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ITEMS[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(PoolingError, match=r"bad.jsonl, line 2: malformed JSON"):
        import_items(db, path, caller=OWNER)


def test_annotator_cannot_import_items(db: sqlite_utils.Database, tmp_path: Path) -> None:
    annotator = access.find_annotator(db, "ann")
    with pytest.raises(StoreError, match="admin"):
        import_items(db, tmp_path / "items.jsonl", caller=annotator)


def test_human_and_judge_verdicts_import_into_separate_tables(db: sqlite_utils.Database, tmp_path: Path) -> None:
    human = write_jsonl(tmp_path / "h.jsonl", [
        {"item_id": "f1", "verdict": "SUPPORTED"},
        {"item_id": "p1", "verdict": "a", "order": "BA", "note": "clear"},
        {"query_id": "q001", "doc_id": "q001-d001", "relevance": 2},
    ])
    judge = write_jsonl(tmp_path / "j.jsonl", [
        {"item_id": "p1", "verdict": "A", "order": "AB", "prompt_hash": "abc"},
        {"item_id": "p1", "verdict": "tie", "order": "BA", "prompt_hash": "abc"},
        {"item_id": "f2", "verdict": None, "raw": "maybe?"},
    ])
    assert import_verdicts(db, human, annotator="ann", caller=OWNER).added == 3
    assert import_verdicts(db, judge, judge="g1", caller=OWNER).added == 3
    counts = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("human_verdicts", "judge_verdicts", "judgments")}
    assert counts == {"human_verdicts": 2, "judge_verdicts": 3, "judgments": 1}
    mine = {(v.item_id, v.verdict, v.shown_order) for v in latest_human_verdicts(db, caller=OWNER)}
    assert mine == {("f1", "SUPPORTED", None), ("p1", "A", "BA")}
    theirs = {(v.item_id, v.shown_order): (v.verdict, v.parseable) for v in latest_judge_verdicts(db, "g1", caller=OWNER)}
    assert theirs == {("p1", "AB"): ("A", True), ("p1", "BA"): ("TIE", True), ("f2", None): (None, False)}
    before = dump(db)
    assert import_verdicts(db, human, annotator="ann", caller=OWNER).unchanged == 3
    assert import_verdicts(db, judge, judge="g1", caller=OWNER).unchanged == 3
    assert dump(db) == before


def test_a_qrels_file_is_accepted_for_relevance(db: sqlite_utils.Database, tmp_path: Path) -> None:
    qrels = tmp_path / "judge.qrels"
    qrels.write_text("q001 0 q001-d001 3\nq001 0 q001-d002 0\nq002 0 q002-d003 1\n", encoding="utf-8")
    assert import_verdicts(db, qrels, judge="umb", caller=OWNER).added == 3
    got = {(v.query_id, v.doc_id): v.verdict for v in latest_judge_verdicts(db, "umb", caller=OWNER)}
    assert got == {("q001", "q001-d001"): "3", ("q001", "q001-d002"): "0", ("q002", "q002-d003"): "1"}


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"item_id": "f1", "verdict": "A"}, "line 2, field 'verdict'"),
        ({"item_id": "p1", "verdict": "A", "order": "BB"}, "line 2, field 'order'"),
        ({"item_id": "f1", "verdict": "SUPPORTED", "order": "AB"}, "line 2, field 'order'"),
        ({"item_id": "nope", "verdict": "A"}, "line 2, field 'item_id'"),
        ({"query_id": "q001", "doc_id": "not-pooled", "relevance": 1}, "line 2, field 'doc_id'"),
        ({"query_id": "q001", "doc_id": "q001-d001", "relevance": 4}, "line 2, field 'relevance'"),
        ({"query_id": "q001", "doc_id": "q001-d001", "relevance": True}, "line 2, field 'relevance'"),
        ({"verdict": "A"}, "line 2, field 'item_id'"),
    ],
)
def test_bad_verdicts_are_refused_and_nothing_written(db: sqlite_utils.Database, tmp_path: Path, record: dict, expected: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [{"item_id": "f2", "verdict": "UNSUPPORTED"}, record])
    before = dump(db)
    with pytest.raises(REFUSED) as error:
        import_verdicts(db, path, judge="g1", caller=OWNER)
    assert f"{path}, {expected}:" in str(error.value)
    assert dump(db) == before


def test_human_verdicts_are_append_only(db: sqlite_utils.Database) -> None:
    annotator = access.find_annotator(db, "ann")
    record_human_verdict(db, annotator.id, "p1", "B", shown_order="AB", seconds=3.5)
    record_human_verdict(db, annotator.id, "p1", "A", shown_order="AB")
    assert [v.verdict for v in latest_human_verdicts(db, caller=OWNER)] == ["A"]
    assert own_verdicts(db, annotator.id) == {"p1": ("A", "AB", "")}
    other, _ = access.add_annotator(db, "cat")
    assert own_verdicts(db, other.id) == {}
    with pytest.raises(StoreError, match="admin"):
        latest_human_verdicts(db, caller=other)
    for sql in ("UPDATE human_verdicts SET verdict = 'B'", "DELETE FROM human_verdicts"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute(sql)
    with pytest.raises(StoreError, match="order"):
        record_human_verdict(db, annotator.id, "p1", "A")
    with pytest.raises(StoreError, match="verdict"):
        record_human_verdict(db, annotator.id, "f1", "TIE")


def test_export_round_trips_through_import(db: sqlite_utils.Database, tmp_path: Path) -> None:
    annotator = access.find_annotator(db, "ann")
    record_human_verdict(db, annotator.id, "p1", "B", shown_order="BA")
    import_verdicts(db, write_jsonl(tmp_path / "j.jsonl", [{"item_id": "p1", "verdict": "B", "order": "AB", "prompt_hash": "h1"},
                                                      {"query_id": "q002", "doc_id": "q002-d001", "relevance": 2}]),
                    judge="g1", caller=OWNER)
    out = io.StringIO()
    assert export_verdicts(db, out, caller=OWNER) == 3
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert rows[0] | {"at": None} == {"who": "annotator", "name": "ann", "task": "pairwise", "item_id": "p1", "verdict": "B",
                                      "order": "BA", "prompt_hash": None, "note": "", "at": None, "seconds": None}
    assert {(r["who"], r["order"], r["prompt_hash"]) for r in rows[1:]} == {("judge", "AB", "h1"), ("judge", None, "")}
    judge_rows = tmp_path / "judge_rows.jsonl"
    write_jsonl(judge_rows, [r for r in rows if r["who"] == "judge"])
    assert import_verdicts(db, judge_rows, judge="g1", caller=OWNER).added == 0


def test_cli_import_and_export(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = str(tmp_path / "p.db")
    runner = CliRunner()
    result = runner.invoke(cli, ["import-items", path, str(tmp_path / "items.jsonl")])
    assert result.exit_code == 0, result.output
    assert "0 items added, 3 unchanged" in result.output
    verdicts = write_jsonl(tmp_path / "v.jsonl", [{"item_id": "f1", "verdict": "UNSUPPORTED"}])
    result = runner.invoke(cli, ["import-verdicts", path, str(verdicts), "--judge", "g2"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["import-verdicts", path, str(verdicts)])
    assert result.exit_code != 0 and "exactly one" in result.output
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"item_id": "f1", "verdict": "maybe"}])
    result = runner.invoke(cli, ["import-verdicts", path, str(bad), "--annotator", "ann"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [f"Error: {bad}, line 1, field 'verdict': verdict 'maybe': a faithfulness verdict is one of SUPPORTED, UNSUPPORTED"]
    result = runner.invoke(cli, ["export-verdicts", path])
    assert json.loads(result.output.splitlines()[0])["name"] == "g2"


def _refused_whole(db: sqlite_utils.Database, run) -> str:
    """The one-line error of ``run()``, checked to have left the database exactly as it was."""
    before = dump(db)
    with pytest.raises(REFUSED) as error:
        run()
    assert dump(db) == before
    assert "\n" not in str(error.value)
    return str(error.value)


def test_import_verdicts_creates_a_new_annotator_as_import_judgments_does(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = str(tmp_path / "p.db")
    verdicts = write_jsonl(tmp_path / "dora.jsonl", [{"item_id": "f1", "verdict": "SUPPORTED"},
                                                {"query_id": "q001", "doc_id": "q001-d001", "relevance": 2}])
    result = CliRunner().invoke(cli, ["import-verdicts", path, str(verdicts), "--annotator", "dora"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{verdicts}: 2 verdicts added for annotator 'dora' (new annotator), 0 unchanged"
    qrels = tmp_path / "eve.qrels"
    qrels.write_text("q001 0 q001-d002 1\n", encoding="utf-8")
    assert CliRunner().invoke(cli, ["import-judgments", path, str(qrels), "--annotator", "eve"]).exit_code == 0
    people = {name: (role, salt, hashed, active) for name, role, salt, hashed, active in
              db.execute("SELECT name, role, token_salt, token_hash, active FROM annotators WHERE name IN ('dora', 'eve')")}
    assert people["dora"] == people["eve"] == ("annotator", "", people["eve"][2], 1)
    assert [v.annotator for v in latest_human_verdicts(db, caller=OWNER)] == ["dora"]
    again = CliRunner().invoke(cli, ["import-verdicts", path, str(verdicts), "--annotator", "dora"])
    assert again.output.strip() == f"{verdicts}: 0 verdicts added for annotator 'dora', 2 unchanged"


def test_a_new_annotators_token_opens_nothing(db: sqlite_utils.Database, tmp_path: Path) -> None:
    verdicts = write_jsonl(tmp_path / "dora.jsonl", [{"item_id": "f1", "verdict": "SUPPORTED"}])
    assert import_verdicts(db, verdicts, annotator=" dora ", caller=OWNER).created_annotator
    dora = access.find_annotator(db, "dora")
    for secret in ("0" * 20, "0" * 64, "A" * 43):
        assert access.authenticate(db, f"gp{dora.id}.{secret}") is None


def test_items_with_an_empty_response_are_accepted(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "empty.jsonl", [
        {"item_id": "f9", "kind": "faithfulness", "question": "Who?", "contexts": ["Ann."], "response": ""},
        {"item_id": "p9", "kind": "pairwise", "question": "Sum?", "response_a": "", "response_b": "4"},
        {"item_id": "p10", "kind": "pairwise", "question": "Sum?", "response_a": "4", "response_b": " \n"},
    ])
    assert import_items(db, path, caller=OWNER).added == 3
    items = {i.item_id: i for i in list_items(db)}
    assert (items["f9"].response, items["p9"].response_a, items["p10"].response_b) == ("", "", " \n")
    assert import_items(db, path, caller=OWNER).unchanged == 3


def test_a_missing_response_is_still_refused(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [{"item_id": "f9", "kind": "faithfulness", "question": "Who?", "contexts": ["Ann."]}])
    assert _refused_whole(db, lambda: import_items(db, path, caller=OWNER)) == (
        f"{path}, line 1, field 'response': missing; give the response text (\"\" for an empty response)")


LONG_ID = "x" * 1_000_000


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([{**ITEMS[0], "item_id": "f\u0000x"}],
         "line 1, field 'item_id': 'f\\x00x' holds, at character 2, U+0000 NUL, an invisible character; ids may hold only visible characters"),
        ([{**ITEMS[0], "item_id": "f7\u200b"}],
         "line 1, field 'item_id': 'f7\\u200b' ends with U+200B ZERO WIDTH SPACE, an invisible character; ids may hold only visible characters"),
        ([{**ITEMS[0], "item_id": "f7"}, {**ITEMS[1], "item_id": "f8", "question": "Wh\u0000en?"}],
         "line 2, field 'question': holds U+0000 NUL at character 3; remove it (NUL is not allowed in text)"),
        ([{**ITEMS[0], "item_id": "f7", "contexts": ["fine", "bad\u0000"]}],
         "line 1, field 'contexts[1]': holds U+0000 NUL at character 4; remove it (NUL is not allowed in text)"),
        ([{**ITEMS[2], "item_id": "p7", "response_b": "\u0000"}],
         "line 1, field 'response_b': holds U+0000 NUL at character 1; remove it (NUL is not allowed in text)"),
        ([{**ITEMS[0], "item_id": "f7"}, {**ITEMS[1], "item_id": "f7"}],
         "line 2, field 'item_id': duplicate item_id 'f7' (first at line 1); ids must be unique"),
        ([{**ITEMS[0], "item_id": LONG_ID + "\u200b"}],
         "line 1, field 'item_id': 'xxxxxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxxxxxx\\u200b' (1000001 characters) ends with "
         "U+200B ZERO WIDTH SPACE, an invisible character; ids may hold only visible characters"),
    ],
)
def test_import_items_checks_ids_and_texts_as_every_reader_does(
    db: sqlite_utils.Database, tmp_path: Path, records: list[dict], expected: str
) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    assert _refused_whole(db, lambda: import_items(db, path, caller=OWNER)) == f"{path}, {expected}"


@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_empty_item_and_verdict_files_are_refused(db: sqlite_utils.Database, tmp_path: Path, content: str) -> None:
    for name, run, what in (("items.jsonl", lambda p: import_items(db, p, caller=OWNER), "items"),
                            ("v.jsonl", lambda p: import_verdicts(db, p, judge="g1", caller=OWNER), "verdicts"),
                            ("v.qrels", lambda p: import_verdicts(db, p, annotator="ann", caller=OWNER), "verdicts")):
        path = tmp_path / f"empty-{name}"
        path.write_text(content, encoding="utf-8")
        assert _refused_whole(db, lambda: run(path)) == f"{path}: empty: no {what} in the file; nothing was imported"


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([{"item_id": "f1\u00ad", "verdict": "SUPPORTED"}],
         "line 1, field 'item_id': 'f1\\xad' ends with U+00AD SOFT HYPHEN, an invisible character; ids may hold only visible characters"),
        ([{"query_id": "q001", "doc_id": "q001-d001\u0000", "relevance": 1}],
         "line 1, field 'doc_id': 'q001-d001\\x00' ends with U+0000 NUL, an invisible character; ids may hold only visible characters"),
        ([{"item_id": "f1", "verdict": "SUPPORTED", "note": "fi\u0000ne"}],
         "line 1, field 'note': holds U+0000 NUL at character 3; remove it (NUL is not allowed in text)"),
        ([{"item_id": "f1", "verdict": "SUPPORTED", "at": "2024-05-01T09:30:00Z"}, {"item_id": "f2", "verdict": "SUPPORTED", "at": "yesterday"}],
         "line 2, field 'at': 'yesterday' is not a date; give an ISO 8601 date or time such as 2024-05-01 or 2024-05-01T09:30:00Z"),
        ([{"item_id": "f1", "verdict": "SUPPORTED"}, {"item_id": "f2", "verdict": "SUPPORTED"}, {"item_id": "f1", "verdict": "UNSUPPORTED"}],
         "line 3, field 'verdict': two different verdicts for one item: 'UNSUPPORTED' here, 'SUPPORTED' on line 1; "
         "a file gives one verdict per item"),
        ([{"item_id": "p1", "verdict": "a", "order": "AB"}, {"item_id": "p1", "verdict": "B", "order": "BA"}],
         "line 2, field 'verdict': two different verdicts for one item: 'B' here, 'a' on line 1; a file gives one verdict per item"),
        ([{"query_id": "q001", "doc_id": "q001-d001", "relevance": 1}, {"query_id": "q001", "doc_id": "q001-d001", "relevance": "2"}],
         "line 2, field 'relevance': two different verdicts for one item: '2' here, 1 on line 1; a file gives one verdict per item"),
        ([{"item_id": LONG_ID, "verdict": "SUPPORTED"}],
         "line 1, field 'item_id': no item 'xxxxxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxxxxxxxxxxxx' (1000000 characters) in the "
         "project (import it first with `goldpool import-items`, or its answer with `goldpool import-answers`)"),
        ([{"item_id": "f1", "verdict": "maybe" * 100_000}],
         "line 1, field 'verdict': verdict 'maybemaybemaybemaybemaybema...ybemaybemaybemaybemaybemaybe' (500000 characters): "
         "a faithfulness verdict is one of SUPPORTED, UNSUPPORTED"),
    ],
)
def test_import_verdicts_checks_as_every_reader_does(db: sqlite_utils.Database, tmp_path: Path, records: list[dict], expected: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    assert _refused_whole(db, lambda: import_verdicts(db, path, annotator="ann", caller=OWNER)) == f"{path}, {expected}"


def test_one_item_in_both_orders_is_two_verdicts_for_a_judge_only(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "both.jsonl", [{"item_id": "p1", "verdict": "A", "order": "AB"},
                                            {"item_id": "p1", "verdict": "B", "order": "BA"},
                                            {"item_id": "p1", "verdict": "a", "order": "AB"}])
    assert import_verdicts(db, path, judge="g1", caller=OWNER).added == 2
    assert "two different verdicts for one item" in _refused_whole(db, lambda: import_verdicts(db, path, annotator="ann", caller=OWNER))


def test_the_verdict_store_opens_no_file_and_imports_nothing_outside_the_store() -> None:
    import ast

    root = Path(__file__).resolve().parent.parent / "labeler" / "store"
    for name in ("verdicts.py", "verdict_io.py"):
        tree = ast.parse((root / name).read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        outside = {m for m in imported if m.split(".")[0] in ("pooling", "calibration")
                   or (m.startswith("labeler") and not m.startswith("labeler.store"))}
        assert outside == set(), name


def test_an_order_that_is_not_text_is_refused_by_the_reader(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [{"item_id": "p1", "verdict": "A", "order": ["AB"]}])
    assert _refused_whole(db, lambda: import_verdicts(db, path, judge="g1", caller=OWNER)) == (
        f"{path}, line 1, field 'order': must be a string, not an array")
