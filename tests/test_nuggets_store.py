"""The nugget store: imports (ids, errors by file, line and field, nothing written), people's
edits as revisions, a judge's proposals and their fate, support labels through import-verdicts,
the per-answer support queue, and nuggets frozen with a version."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from nugget_fixtures import PEOPLE, build, run, support_records, write_jsonl

from labeler.cli import cli
from labeler.store import StoreError, connect, labels
from labeler.store import nugget_proposals as proposals
from labeler.store import nugget_support as support
from labeler.store import nuggets as store
from labeler.store.access import add_annotator
from labeler.store.assign import is_overlap, shuffle_key
from labeler.store.settings import get_settings
from labeler.store.vocabulary import OWNER, nugget_item


def _fails(*args: object) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 1, result.output
    return result.output


def _dump(db_path: str) -> list[tuple]:
    conn = sqlite3.connect(db_path)
    try:
        return [tuple(r) for t in ("nuggets", "nugget_revisions", "nugget_items", "human_verdicts", "judge_verdicts")
                for r in conn.execute(f"SELECT * FROM {t} ORDER BY 1")]
    finally:
        conn.close()


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return build(tmp_path, judge=False, people=False)


def test_ids_follow_file_order_per_query_unless_given(db_path: str, tmp_path: Path) -> None:
    db = connect(db_path)
    assert [n.nugget_id for n in store.list_nuggets(db, "q1")] == ["q1/n1", "q1/n2", "q1/n3"]
    assert [(n.position, n.importance, n.origin) for n in store.list_nuggets(db, "q1")] == [
        (1, "vital", "person"), (2, "vital", "person"), (3, "okay", "person")]
    path = write_jsonl(tmp_path / "more.jsonl", [{"query_id": "q4", "text": "Rebase replays commits", "importance": "VITAL",
                                                  "nugget_id": "rebase-1", "doc_ids": ["d1"]},
                                                 {"query_id": "q4", "text": "It rewrites history", "importance": "Okay"}])
    assert "2 nuggets added for 1 query, 0 unchanged" in run("import-nuggets", db_path, path)
    assert "0 nuggets added for 1 query, 2 unchanged" in run("import-nuggets", db_path, path)
    assert [(n.nugget_id, n.importance, n.doc_ids, n.position) for n in store.list_nuggets(db, "q4")] == [
        ("rebase-1", "vital", ("d1",), 1), ("q4/n2", "okay", (), 2)]


@pytest.mark.parametrize(("record", "field", "says"), [
    ({"query_id": "q9", "text": "x", "importance": "vital"}, "query_id", "no query 'q9'"),
    ({"query_id": "q1", "text": "  ", "importance": "vital"}, "text", "empty"),
    ({"query_id": "q1", "text": "x", "importance": "high"}, "importance", "give \"vital\" or \"okay\""),
    ({"query_id": "q1", "text": "x", "importance": "okay", "doc_ids": ["d9"]}, "doc_ids[0]", "'d9' is not a document"),
    ({"query_id": "q1", "text": "x", "importance": "okay", "doc_ids": "d1"}, "doc_ids", "must be a list"),
    ({"query_id": "q1", "text": "other text", "importance": "vital", "nugget_id": "q1/n1"}, "text", "already in the project"),
    ({"query_id": "q4", "text": "x", "importance": "okay", "nugget_id": "q4/n1"}, "nugget_id", "duplicate"),
])
def test_bad_nugget_lines_name_file_line_and_field_and_write_nothing(db_path: str, tmp_path: Path, record: dict,
                                                                     field: str, says: str) -> None:
    before = _dump(db_path)
    path = write_jsonl(tmp_path / "bad.jsonl", [{"query_id": "q4", "text": "fine", "importance": "okay"}, record])
    out = _fails("import-nuggets", db_path, path)
    assert f"bad.jsonl, line 2, field '{field}'" in out and says.lower() in out.lower()
    assert _dump(db_path) == before


def test_support_verdicts_import_case_insensitive_for_people_and_judges(db_path: str, tmp_path: Path) -> None:
    run("import-verdicts", db_path, write_jsonl(tmp_path / "p.jsonl", support_records(PEOPLE)), "--annotator", "ann")
    path = write_jsonl(tmp_path / "j.jsonl", [{"answer_id": "a1", "nugget_id": "q1/n1", "verdict": "Partial_Support"}])
    assert "1 verdict added for judge 'j'" in run("import-verdicts", db_path, path, "--judge", "j")
    assert "0 verdicts added" in run("import-verdicts", db_path, path, "--judge", "j")
    db = connect(db_path)
    people = {(x.answer_id, x.nugget_id): x.verdict for x in support.support_labels(db, caller=OWNER)}
    assert people == {k: v.upper() for k, v in PEOPLE.items()}
    assert [(x.answer_id, x.nugget_id, x.who, x.verdict) for x in support.support_labels(db, judge="j", caller=OWNER)] == [
        ("a1", "q1/n1", "j", "PARTIAL_SUPPORT")]
    exported = [json.loads(line) for line in run("export-verdicts", db_path).splitlines()]
    assert {r["item_id"] for r in exported if r["task"] == "nuggets"} >= {nugget_item("a1", "q1/n1")}


@pytest.mark.parametrize(("record", "field", "says"), [
    ({"answer_id": "a1", "nugget_id": "q1/n9", "verdict": "support"}, "nugget_id", "no nugget 'q1/n9'"),
    ({"answer_id": "zz", "nugget_id": "q1/n1", "verdict": "support"}, "answer_id", "no answer 'zz'"),
    ({"answer_id": "a1", "nugget_id": "q2/n1", "verdict": "support"}, "nugget_id", "a nugget of query 'q2'"),
    ({"answer_id": "a3", "nugget_id": "q3/n1", "verdict": "support"}, "answer_id", "is empty"),
    ({"answer_id": "a1", "nugget_id": "q1/n1", "verdict": "supported"}, "verdict", "SUPPORT, PARTIAL_SUPPORT, NOT_SUPPORT"),
    ({"nugget_id": "q1/n1", "verdict": "support"}, "answer_id", "missing"),
])
def test_bad_support_lines_name_file_line_and_field_and_write_nothing(db_path: str, tmp_path: Path, record: dict,
                                                                      field: str, says: str) -> None:
    before = _dump(db_path)
    path = write_jsonl(tmp_path / "bad.jsonl", [{"answer_id": "b1", "nugget_id": "q1/n1", "verdict": "support"}, record])
    out = _fails("import-verdicts", db_path, path, "--annotator", "ann")
    assert f"bad.jsonl, line 2, field '{field}'" in out and says in out
    assert _dump(db_path) == before


def test_edits_are_revisions_and_a_labelled_text_is_fixed(db_path: str, tmp_path: Path) -> None:
    db = connect(db_path)
    n = store.edit_nugget(db, "q1/n3", text="The log is checkpointed back", importance="vital", caller=OWNER)
    assert (n.text, n.importance, n.text_fixed) == ("The log is checkpointed back", "vital", False)
    run("import-verdicts", db_path, write_jsonl(tmp_path / "p.jsonl", support_records(PEOPLE)), "--annotator", "ann")
    with pytest.raises(StoreError, match="its text is fixed"):
        store.edit_nugget(db, "q1/n3", text="Something else", caller=OWNER)
    assert store.edit_nugget(db, "q1/n3", importance="okay", caller=OWNER).importance == "okay"
    history = db.conn.execute("SELECT text, importance FROM nugget_revisions WHERE nugget_id = 'q1/n3' ORDER BY id").fetchall()
    assert history == [("The log is checkpointed into the database", "okay"), ("The log is checkpointed back", "vital"),
                       ("The log is checkpointed back", "okay")]
    with pytest.raises(sqlite3.IntegrityError):
        db.conn.execute("UPDATE nugget_revisions SET text = 'x'")


def test_merge_reorder_drop_and_restore(db_path: str) -> None:
    db = connect(db_path)
    merged = store.merge_nuggets(db, ["q1/n2", "q1/n3"], "Readers go on while the log is checkpointed", caller=OWNER)
    assert (merged.nugget_id, merged.origin, merged.merged_from, merged.importance, merged.position) == (
        "q1/n4", "merge", ("q1/n2", "q1/n3"), "vital", 2)
    assert store.get_nugget(db, "q1/n2").merged_into == "q1/n4"
    assert [n.nugget_id for n in store.reorder_nuggets(db, "q1", ["q1/n4", "q1/n1"], caller=OWNER)] == ["q1/n4", "q1/n1"]
    with pytest.raises(StoreError, match="give every active nugget"):
        store.reorder_nuggets(db, "q1", ["q1/n1"], caller=OWNER)
    store.drop_nugget(db, "q1/n1", caller=OWNER)
    assert [n.nugget_id for n in store.list_nuggets(db, "q1")] == ["q1/n4"]
    assert store.restore_nugget(db, "q1/n1", caller=OWNER).position == 2
    with pytest.raises(StoreError, match="different questions"):
        store.merge_nuggets(db, ["q1/n1", "q2/n1"], "x", caller=OWNER)


def test_only_an_admin_changes_nuggets(db_path: str) -> None:
    db = connect(db_path)
    annotator, _ = add_annotator(db, "ben")
    with pytest.raises(StoreError, match="needs an active admin"):
        store.create_nugget(db, "q1", "x", caller=annotator)


def test_proposals_and_what_people_made_of_them(db_path: str) -> None:
    db = connect(db_path)
    proposals.record_proposals(db, "q4", [("Rebase replays commits", "vital"), ("It is fast", "okay"), ("It moves a base", "okay")],
                           judge="nz", model="m", prompt_hash="h", item_hash="x", result=None)
    p1, p2, p3 = proposals.list_proposals(db, "q4")
    assert [p.fate for p in (p1, p2, p3)] == ["pending"] * 3
    proposals.accept_proposal(db, p1.proposal_id, caller=OWNER)
    proposals.accept_proposal(db, p3.proposal_id, text="Rebase moves the branch's base", caller=OWNER)
    proposals.drop_proposal(db, p2.proposal_id, caller=OWNER)
    assert [(p.fate, p.nugget_id) for p in proposals.list_proposals(db, "q4", judge="nz")] == [
        ("kept", "q4/n1"), ("dropped", "q4/n3"), ("edited", "q4/n2")]
    with pytest.raises(StoreError, match="decided already"):
        proposals.accept_proposal(db, p1.proposal_id, caller=OWNER)
    assert [n.nugget_id for n in store.list_nuggets(db, "q4")] == ["q4/n1", "q4/n2"]
    assert proposals.record_proposals(db, "q4", [("Rebase replays commits", "vital")], judge="nz", model="m",
                                  prompt_hash="h", item_hash="x", result=None) == 0


def test_the_queue_serves_an_answer_s_nuggets_in_a_row_blind(db_path: str) -> None:
    db = connect(db_path)
    ann, _ = add_annotator(db, "ann", role="admin")
    seen = []
    while (card := support.next_support_card(db, ann.id)) is not None:
        row = db.conn.execute("SELECT answer_id, nugget_id FROM nugget_items WHERE item_id = ?", [card.item_id]).fetchone()
        seen.append((row[0], row[1], card.nugget_number, card.nuggets))
        assert {f.name for f in dataclasses.fields(card)} == {
            "item_id", "question", "response", "nugget", "nugget_number", "nuggets", "verdict", "note"}
        support.record_support(db, ann.id, card.item_id, "not_support", seconds=1.5)
    answers = [a for a, *_ in seen]
    # Each answer's nuggets come in a row, in their order; each question's answers one after the other.
    assert [answers[i] for i in range(len(answers)) if i == 0 or answers[i] != answers[i - 1]] == list(dict.fromkeys(answers))
    for answer in set(answers):
        assert [(n, k) for a, n, k, _ in seen if a == answer] == [(n, k) for a, n, k, _ in sorted(seen, key=lambda s: s[2])
                                                                  if a == answer]
    queries = [n.split("/")[0] for _, n, _, _ in seen]
    assert [queries[i] for i in range(len(queries)) if i == 0 or queries[i] != queries[i - 1]] == list(dict.fromkeys(queries))
    assert len(seen) == len(PEOPLE) and support.support_progress(db, ann.id) == (len(PEOPLE), len(PEOPLE))


def test_skip_back_and_a_second_annotator_gets_other_answers(db_path: str) -> None:
    db = connect(db_path)
    ann, _ = add_annotator(db, "ann", role="admin")
    ben, _ = add_annotator(db, "ben", role="admin")
    first = support.next_support_card(db, ann.id)
    support.skip_support(db, ann.id, first.item_id, note="unsure")
    second = support.next_support_card(db, ann.id)
    assert second.item_id != first.item_id
    support.record_support(db, ann.id, second.item_id, "SUPPORT")
    assert support.previous_support_card(db, ann.id, second.item_id).item_id == first.item_id
    mine = {r[0] for r in db.conn.execute("SELECT i.answer_id FROM verdict_assignments v JOIN nugget_items i "
                                          "ON i.item_id = v.item_id WHERE v.annotator_id = ?", [ann.id])}
    other = support.next_support_card(db, ben.id)
    answer = db.conn.execute("SELECT answer_id FROM nugget_items WHERE item_id = ?", [other.item_id]).fetchone()[0]
    assert answer not in mine
    with pytest.raises(StoreError, match="not assigned"):
        support.record_support(db, ben.id, first.item_id, "SUPPORT")


def test_nuggets_freeze_with_a_version_and_never_change(db_path: str, tmp_path: Path) -> None:
    (tmp_path / "h.qrels").write_text("q1 0 d1 2\n", encoding="utf-8")
    run("import-judgments", db_path, tmp_path / "h.qrels", "--annotator", "ann")
    run("freeze", db_path, "--version", "v1")
    db = connect(db_path)
    assert [n.nugget_id for n in store.version_nuggets(db, "v1")] == [n.nugget_id for n in store.list_nuggets(db)]
    with pytest.raises(StoreError, match="its text is fixed"):
        store.edit_nugget(db, "q1/n1", text="another", caller=OWNER)
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        db.conn.execute("INSERT INTO golden_nuggets (version, nugget_id, query_id, text, importance, position) "
                        "VALUES ('v1', 'x', 'q1', 't', 'okay', 9)")
    # The same grades and the same nuggets make no new version; a new nugget does.
    assert "v1" in run("freeze", db_path, "--version", "v2") and len(store.version_nuggets(db, "v2")) == 0
    store.create_nugget(db, "q4", "Rebase replays commits", "vital", caller=OWNER)
    run("freeze", db_path, "--version", "v3")
    assert len(store.version_nuggets(db, "v3")) == len(store.version_nuggets(db, "v1")) + 1


def test_relevant_chunks_from_labels_or_a_version(db_path: str, tmp_path: Path) -> None:
    (tmp_path / "h.qrels").write_text("q1 0 d1 1\nq1 0 d2 3\nq1 0 d3 0\n", encoding="utf-8")
    run("import-judgments", db_path, tmp_path / "h.qrels", "--annotator", "ann")
    db = connect(db_path)
    assert [(c.doc_id, c.relevance) for c in store.relevant_chunks(db, "q1", 1)] == [("d2", 3), ("d1", 1)]
    assert [c.doc_id for c in store.relevant_chunks(db, "q1", 2)] == ["d2"]


def test_exports_carry_the_nuggets_and_the_support_labels(db_path: str, tmp_path: Path) -> None:
    (tmp_path / "h.qrels").write_text("q1 0 d1 2\n", encoding="utf-8")
    run("import-judgments", db_path, tmp_path / "h.qrels", "--annotator", "ann")
    run("freeze", db_path, "--version", "v1")
    run("export", f"{db_path}@v1", "--format", "trec", "-o", tmp_path / "out")
    lines = [json.loads(line) for line in (tmp_path / "out" / "nuggets.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(n["nugget_id"], n["importance"]) for n in lines[:3]] == [("q1/n1", "vital"), ("q1/n2", "vital"),
                                                                    ("q1/n3", "okay")]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert "nuggets.jsonl" in manifest["files"] and manifest["nuggets"]["n"] == len(lines) == 7
    run("import-verdicts", db_path, write_jsonl(tmp_path / "p.jsonl", support_records(PEOPLE)), "--annotator", "ann")
    exported = [json.loads(line) for line in run("export-verdicts", db_path).splitlines()]
    rows = [r for r in exported if r["task"] == "nuggets"]
    assert {(r["answer_id"], r["nugget_id"]): r["verdict"] for r in rows} == {k: v.upper() for k, v in PEOPLE.items()}
    (tmp_path / "back.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert f"0 verdicts added for annotator 'ann', {len(PEOPLE)} unchanged" in run(
        "import-verdicts", db_path, tmp_path / "back.jsonl", "--annotator", "ann")


# The hand-out rule as it reads on the whole project (every open answer, sorted), the reference
# the question-by-question hand-out must agree with.
def _reference_next_answer(db, annotator_id: int) -> str | None:
    settings = get_settings(db)
    copies: dict[str, set[int]] = {}
    for answer_id, who in db.conn.execute(
            "SELECT DISTINCT i.answer_id, a.annotator_id FROM verdict_assignments a "
            "JOIN nugget_items i ON i.item_id = a.item_id JOIN annotators n ON n.id = a.annotator_id "
            "WHERE a.kind = 'nuggets' AND (n.active OR EXISTS (SELECT 1 FROM human_verdicts h "
            "WHERE h.item_id = a.item_id AND h.annotator_id = a.annotator_id)) "
            "UNION SELECT i.answer_id, h.annotator_id FROM human_verdicts h JOIN nugget_items i ON i.item_id = h.item_id"):
        copies.setdefault(answer_id, set()).add(who)
    found = []
    for answer_id, query_id in db.conn.execute("SELECT DISTINCT i.answer_id, a.query_id FROM nugget_items i "
                                               "JOIN answers a ON a.answer_id = i.answer_id"):
        held = copies.get(answer_id, set())
        wanted = settings.overlap_k if is_overlap("nuggets", answer_id, settings.overlap) else 1
        if annotator_id not in held and len(held) < wanted:
            found.append((query_id, answer_id))
    found.sort(key=lambda qa: (shuffle_key(annotator_id, "nuggets", qa[0]), shuffle_key(annotator_id, qa[0], qa[1])))
    last = db.conn.execute(
        "SELECT a.query_id FROM verdict_assignments v JOIN nugget_items i ON i.item_id = v.item_id "
        "JOIN answers a ON a.answer_id = i.answer_id WHERE v.annotator_id = ? AND v.kind = 'nuggets' "
        "ORDER BY abs(v.shown_order) DESC LIMIT 1", [annotator_id]).fetchone()
    same = [qa for qa in found if last is not None and qa[0] == last[0]]
    return (same or found)[0][1] if found else None


@pytest.mark.parametrize("overlap", [0.0, 0.5])
def test_the_hand_out_read_question_by_question_gives_what_the_whole_listing_gives(tmp_path: Path, overlap: float) -> None:
    questions = [f"s{n}" for n in range(12)]
    run("init", tmp_path / "p.db")
    path = tmp_path / "p.db"
    run("import-queries", path, write_jsonl(tmp_path / "q.jsonl", [{"query_id": q, "text": f"Question {q}"} for q in questions]))
    run("import-nuggets", path, write_jsonl(tmp_path / "n.jsonl", [
        {"query_id": q, "text": f"Fact {k} of {q}", "importance": "vital"} for q in questions[:10] for k in (1, 2)]))
    for system in ("x", "y", "z"):
        run("import-answers", path, write_jsonl(tmp_path / f"{system}.jsonl", [
            {"answer_id": f"{system}-{q}", "query_id": q, "response": "" if (system, q) == ("z", "s3") else f"{system} on {q}"}
            for q in questions]), "--system", system)
    db = connect(path)
    labels.set_settings(db, {"overlap": overlap, "overlap_k": 2}, caller=OWNER)
    people = [add_annotator(db, name, role="admin")[0].id for name in ("ann", "ben", "cat")]
    handed = 0
    for turn in range(200):
        who = people[turn % len(people)]
        if turn == 40:  # new answers, to questions people have passed: each stays in their question first
            run("import-answers", path, write_jsonl(tmp_path / "w.jsonl", [
                {"answer_id": f"w-{q}", "query_id": q, "response": f"w on {q}"} for q in questions]), "--system", "w")
        if turn == 90:  # a holder leaves: their unjudged copies are free again
            db.conn.execute("UPDATE annotators SET active = 0 WHERE id = ?", [people[2]])
            db.conn.commit()
            people = people[:2]
            continue
        expected = _reference_next_answer(db, who) if support._one(db, support._PENDING, who) is None else None
        card = support.next_support_card(db, who)
        if card is None:
            assert expected is None
            continue
        answer = db.conn.execute("SELECT answer_id FROM nugget_items WHERE item_id = ?", [card.item_id]).fetchone()[0]
        if expected is not None:
            assert answer == expected, turn
            handed += 1
        if turn % 7 == 3:
            support.skip_support(db, who, card.item_id)
        else:
            support.record_support(db, who, card.item_id, "support")
    assert handed >= 20


def test_the_current_nuggets_found_from_each_nugget_are_the_latest_revisions(db_path: str) -> None:
    """``current_nuggets`` as re-created by step 23 holds the rows of its first form (the latest
    revision of every nugget), after edits, a drop and a merge."""
    from labeler.store.schema import CURRENT_NUGGETS

    db = connect(db_path)
    store.edit_nugget(db, "q1/n1", importance="okay", caller=OWNER)
    store.edit_nugget(db, "q1/n1", importance="vital", caller=OWNER)
    store.edit_nugget(db, "q2/n2", text="NFC is a normal form of Unicode", caller=OWNER)
    store.drop_nugget(db, "q3/n2", caller=OWNER)
    store.merge_nuggets(db, ["q1/n2", "q1/n3"], "Readers go on while the log is checkpointed", caller=OWNER)
    first_form = CURRENT_NUGGETS.split(" AS", 1)[1].rstrip(";")
    columns = "id, nugget_id, query_id, text, importance, position, status, merged_into"
    now_rows = db.conn.execute(f"SELECT {columns} FROM current_nuggets ORDER BY nugget_id").fetchall()
    assert now_rows == db.conn.execute(f"SELECT {columns} FROM ({first_form}) ORDER BY nugget_id").fetchall()
    assert len(now_rows) == 8 and db.conn.execute("SELECT count(*) FROM nugget_revisions").fetchone()[0] > 8
    assert {("q3/n2", "dropped"), ("q1/n2", "merged"), ("q1/n3", "merged")} <= {(r[1], r[6]) for r in now_rows}
