"""The tasks on answers (claims, correctness, answer relevance) as verdict items: made when
answers and claims are stored, given verdicts by ANSWER_ID, each verdict checked against its
item's task by the database itself, and made for answers stored before the tasks existed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils

from labels_fixtures import write_jsonl
from labeler.generation.answers import import_answers, split_claims
from labeler.store import StoreError, connect, init_db
from labeler.store.access import OWNER
from labeler.store.answers import item_hash
from labeler.store.verdicts import get_item, list_items, record_human_verdict
from labeler.judges.verdict_files import import_verdicts

ANSWERS = [
    {"answer_id": "a1", "question": "Capital of France?", "response": "Paris. It is large.",
     "contexts": ["Paris is the capital of France."], "reference": "Paris", "claims": ["Paris is the capital.", "It is large."]},
    {"answer_id": "a2", "question": "Capital of Spain?", "response": "Madrid.", "contexts": ["Madrid is in Spain."]},
    {"answer_id": "a3", "question": "Capital of Peru?", "response": "", "reference": "Lima"},  # an abstention
]


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    store = init_db(tmp_path / "p.db")
    import_answers(store, write_jsonl(tmp_path / "answers.jsonl", ANSWERS), "sys-a", caller=OWNER)
    yield store
    store.close()


def _kinds(db: sqlite_utils.Database) -> dict[str, str]:
    return {i.item_id: i.kind for i in list_items(db)}


def test_answers_and_claims_become_items_of_their_tasks(db: sqlite_utils.Database) -> None:
    assert _kinds(db) == {"a1#1": "claims", "a1#2": "claims", "a1@correctness": "correctness",
                          "a1@answer-relevance": "answer-relevance", "a2@answer-relevance": "answer-relevance",
                          "a1@faithfulness": "faithfulness", "a2@faithfulness": "faithfulness"}
    claim = get_item(db, "a1#2")
    assert (claim.answer_id, claim.claim, claim.response, claim.contexts, claim.reference) == (
        "a1", "It is large.", "Paris. It is large.", ("Paris is the capital of France.",), "Paris")
    assert get_item(db, "a1@correctness").reference == "Paris"
    split_claims(db, "sys-a", caller=OWNER)  # a2 gets sentence claims; a1 keeps its own; a3 has nothing to split
    assert _kinds(db)["a2#1"] == "claims" and "a1#3" not in _kinds(db) and not any(k.startswith("a3") for k in _kinds(db))


def test_a_claim_hash_changes_with_its_text_and_its_answer() -> None:
    assert len({item_hash("h1", "claims", "x"), item_hash("h1", "claims", "y"), item_hash("h2", "claims", "x"),
                item_hash("h1", "correctness"), item_hash("h1", "answer-relevance")}) == 5


def test_verdicts_for_an_answer_id_find_their_task_by_their_words(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "v.jsonl", [
        {"item_id": "a1", "verdict": "CORRECT"}, {"item_id": "a1", "verdict": "misses"},
        {"item_id": "a2", "task": "answer-relevance", "verdict": "ADDRESSES"},
        {"item_id": "a1#1", "verdict": "SUPPORTED"}, {"item_id": "a1#2", "verdict": "NOT_ONE_CLAIM"}])
    assert import_verdicts(db, path, annotator="ann", caller=OWNER).added == 5
    got = {(r[0], r[1]) for r in db.execute("SELECT item_id, verdict FROM current_human_verdicts")}
    assert got == {("a1@correctness", "CORRECT"), ("a1@answer-relevance", "MISSES"), ("a2@answer-relevance", "ADDRESSES"),
                   ("a1#1", "SUPPORTED"), ("a1#2", "NOT_ONE_CLAIM")}
    assert import_verdicts(db, path, annotator="ann", caller=OWNER).added == 0  # importing again adds nothing


@pytest.mark.parametrize(("record", "expected"), [
    ({"item_id": "a1#1", "verdict": "CORRECT"}, "line 1, field 'verdict': verdict 'CORRECT': a claims verdict is one of "
                                                 "SUPPORTED, UNSUPPORTED, NOT_ONE_CLAIM"),
    ({"item_id": "a2", "verdict": "CORRECT"}, "line 1, field 'item_id': no item 'a2' in the project"),  # a2 has no reference
    ({"item_id": "a3", "verdict": "ADDRESSES"}, "line 1, field 'item_id': no item 'a3' in the project"),  # an abstention
])
def test_a_verdict_its_item_does_not_take_is_refused_by_line_and_field(
        db: sqlite_utils.Database, tmp_path: Path, record: dict, expected: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [record])
    before = db.execute("SELECT count(*) FROM human_verdicts").fetchone()[0]
    with pytest.raises(StoreError) as raised:
        import_verdicts(db, path, annotator="ann", caller=OWNER)
    assert str(raised.value).startswith(f"{path}, {expected}")
    assert db.execute("SELECT count(*) FROM human_verdicts").fetchone()[0] == before


def test_the_database_itself_refuses_a_verdict_of_another_task(db: sqlite_utils.Database) -> None:
    db.execute("INSERT INTO annotators (name, token_salt, token_hash, role, created_at) VALUES ('x', 's', 'h', 'annotator', 'now')")
    with pytest.raises(sqlite3.IntegrityError, match="not one the item's task takes"):
        db.execute("INSERT INTO human_verdicts (item_id, annotator_id, verdict, at) VALUES ('a1#1', 1, 'CORRECT', 'now')")
    with pytest.raises(sqlite3.IntegrityError, match="item is of another task"):
        db.execute("INSERT INTO judge_verdicts (judge, task, item_id, verdict, at) "
                   "VALUES ('j', 'correctness', 'a1#1', 'CORRECT', 'now')")
    with pytest.raises(StoreError):
        record_human_verdict(db, 1, "a1@answer-relevance", "SUPPORTED")


def test_a_project_with_answers_from_before_the_tasks_gets_their_items(tmp_path: Path) -> None:
    from labeler.store.migrations import MIGRATIONS
    from labeler.store.migrations.m14_answer_tasks import SQL as _M_ANSWER_TASKS

    path = tmp_path / "old.db"
    before = MIGRATIONS.index(_M_ANSWER_TASKS)
    with sqlite3.connect(path) as conn:  # a project made by the release before these tasks
        conn.execute("PRAGMA foreign_keys=ON")
        for script in MIGRATIONS[:before]:
            conn.executescript(script)
        conn.execute(f"PRAGMA user_version={before}")
        conn.executescript("""
            INSERT INTO annotators (id, name, token_salt, token_hash, role, created_at) VALUES (1, 'ann', 's', 'h', 'annotator', 't');
            INSERT INTO verdict_items (item_id, kind, question, response, content_hash, added_at)
                VALUES ('f1', 'faithfulness', 'q?', 'r', 'hf', 't');
            INSERT INTO human_verdicts (item_id, annotator_id, verdict, at) VALUES ('f1', 1, 'SUPPORTED', 't');
            INSERT INTO judge_verdicts (judge, task, item_id, verdict, at, raw_length) VALUES ('j', 'faithfulness', 'f1', 'UNSUPPORTED', 't', 7);
            INSERT INTO verdict_skips (item_id, annotator_id, at) VALUES ('f1', 1, 't');
            INSERT INTO systems (name, added_at) VALUES ('s', 't');
            INSERT INTO answers (answer_id, system, question, response, reference, content_hash, added_at)
                VALUES ('a1', 's', 'q?', 'Yes. No.', 'Yes', 'H', 't'), ('a2', 's', 'q2?', '', NULL, 'H2', 't');
            INSERT INTO claims (claim_id, answer_id, n, text, source, added_at) VALUES ('a1#1', 'a1', 1, 'Yes.', 'sentence', 't');
        """)
    db = connect(path)
    items = {i.item_id: i for i in list_items(db)}
    assert set(items) == {"f1", "a1#1", "a1@correctness", "a1@answer-relevance", "a1@faithfulness"}
    assert items["a1#1"].content_hash == item_hash("H", "claims", "Yes.")  # SQL and Python hash alike
    assert items["a1@correctness"].content_hash == item_hash("H", "correctness")
    assert items["a1@faithfulness"].content_hash == item_hash("H", "faithfulness")
    assert json.loads(json.dumps(items["f1"].contexts)) == []
    assert db.execute("SELECT verdict FROM current_human_verdicts").fetchall() == [("SUPPORTED",)]
    assert db.execute("SELECT verdict, raw_length FROM current_judge_verdicts").fetchall() == [("UNSUPPORTED", 7)]
    assert db.execute("SELECT count(*) FROM verdict_skips").fetchone()[0] == 1
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    db.close()


def test_outcomes_take_peoples_majority_and_define_faithfulness_only_on_fully_judged_answers(
        db: sqlite_utils.Database, tmp_path: Path) -> None:
    from labeler.generation.outcomes import outcomes

    def verdicts(who: str, records: list[dict], judge: bool = False) -> None:
        path = write_jsonl(tmp_path / f"{who}.jsonl", records)
        import_verdicts(db, path, caller=OWNER, **({"judge": who} if judge else {"annotator": who}))

    verdicts("ann", [{"item_id": "a1", "verdict": "CORRECT"}, {"item_id": "a1#1", "verdict": "SUPPORTED"},
                     {"item_id": "a1#2", "verdict": "UNSUPPORTED"}, {"item_id": "a2", "verdict": "ADDRESSES"}])
    verdicts("bob", [{"item_id": "a1", "verdict": "INCORRECT"}, {"item_id": "a1#1", "verdict": "SUPPORTED"}])
    verdicts("cy", [{"item_id": "a1#2", "verdict": "UNSUPPORTED"}])
    verdicts("j", [{"item_id": "a1#1", "verdict": "SUPPORTED"}, {"item_id": "a1", "verdict": "CORRECT"}], judge=True)
    people = {o.answer_id: o for o in outcomes(db, "sys-a", caller=OWNER)}
    a1, a2, a3 = people["a1"], people["a2"], people["a3"]
    assert a1.correct is None  # one CORRECT, one INCORRECT: a tie is no verdict
    assert (a1.claims, a1.judged, a1.supported, a1.faithfulness) == (2, 2, 1, 0.5)
    assert (a2.addresses, a2.correct, a2.faithfulness) == (True, None, None)  # no reference, no claims
    assert (a3.abstained, a3.correct, a3.addresses, a3.words) == (True, False, False, 0)  # the empty response
    judged = {o.answer_id: o for o in outcomes(db, "sys-a", judge="j", caller=OWNER)}
    assert judged["a1"].correct is True
    assert judged["a1"].faithfulness is None  # the judge gave a verdict on one claim of two
    assert judged["a1"].unit == "question:Capital of France?"  # no project query: the question is the unit


def test_whole_answer_faithfulness_items_are_judged_by_run_judge(db: sqlite_utils.Database) -> None:
    from labeler.judges.run import default_prompt, units

    prompt = default_prompt(db, "faithfulness", None)
    found = {u.target.item_id: u for u in units(db, "faithfulness", prompt)}
    assert set(found) == {"a1@faithfulness", "a2@faithfulness"}  # the empty a3 has nothing to judge
    assert "Paris. It is large." in found["a1@faithfulness"].message
    assert "Paris is the capital of France." in found["a1@faithfulness"].message
    answer_hash = db.execute("SELECT content_hash FROM answers WHERE answer_id = 'a1'").fetchone()[0]
    assert found["a1@faithfulness"].item_hash == item_hash(answer_hash, "faithfulness")  # what its cache is keyed on


def test_whole_answer_verdicts_import_by_item_or_by_answer_id_with_the_task(db: sqlite_utils.Database,
                                                                             tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "w.jsonl", [{"item_id": "a1@faithfulness", "verdict": "UNSUPPORTED"},
                                              {"item_id": "a2", "task": "faithfulness", "verdict": "supported"}])
    assert import_verdicts(db, path, annotator="ann", caller=OWNER).added == 2
    got = set(db.execute("SELECT item_id, verdict FROM current_human_verdicts").fetchall())
    assert got == {("a1@faithfulness", "UNSUPPORTED"), ("a2@faithfulness", "SUPPORTED")}
    judged = write_jsonl(tmp_path / "j.jsonl", [{"item_id": "a1@faithfulness", "verdict": "SUPPORTED"}])
    assert import_verdicts(db, judged, judge="j", caller=OWNER).added == 1


@pytest.mark.parametrize(("item_id", "what"), [("a1#1", "its claim 1"), ("a2#1", "its claim 1"),
                                               ("a1@faithfulness", "its faithfulness item")])
def test_an_item_with_the_id_of_an_answers_item_is_refused_by_file_line_and_field(
        db: sqlite_utils.Database, tmp_path: Path, item_id: str, what: str) -> None:
    from labeler.judges.verdict_files import import_items

    good = {"item_id": "f1", "kind": "faithfulness", "question": "q?", "contexts": ["c"], "response": "r"}
    path = write_jsonl(tmp_path / "items.jsonl", [good, {**good, "item_id": item_id}])
    before = _kinds(db)
    with pytest.raises(StoreError) as raised:
        import_items(db, path, caller=OWNER)
    answer = item_id.split("#")[0].split("@")[0]
    assert str(raised.value) == (f"{path}, line 2, field 'item_id': '{item_id}' is the id of {what} of answer '{answer}' "
                                 "(system 'sys-a'), made by `goldpool import-answers`; give the item another item_id")
    assert _kinds(db) == before


@pytest.mark.parametrize(("item_id", "field"), [("z#2", "claims[1]"), ("z@faithfulness", "answer_id"),
                                                ("z@answer-relevance", "answer_id")])
def test_answers_whose_items_take_an_items_id_are_refused_by_file_line_and_field(
        db: sqlite_utils.Database, tmp_path: Path, item_id: str, field: str) -> None:
    from labeler.judges.verdict_files import import_items

    import_items(db, write_jsonl(tmp_path / "items.jsonl", [
        {"item_id": item_id, "kind": "faithfulness", "question": "q?", "contexts": ["c"], "response": "r"}]), caller=OWNER)
    answers = [{"answer_id": "y", "question": "Y?", "response": "Yes."},
               {"answer_id": "z", "question": "Z?", "response": "One. Two.", "claims": ["One.", "Two."]}]
    path = write_jsonl(tmp_path / "more.jsonl", answers)
    before = (_kinds(db), db.execute("SELECT count(*) FROM answers").fetchone()[0])
    with pytest.raises(StoreError) as raised:
        import_answers(db, path, "sys-b", caller=OWNER)
    assert str(raised.value) == (f"{path}, line 2, field '{field}': answer 'z' would make item '{item_id}', which the "
                                 "project already holds as a faithfulness item; give the answer another answer_id")
    assert (_kinds(db), db.execute("SELECT count(*) FROM answers").fetchone()[0]) == before


def test_a_judge_is_calibrated_on_imported_and_whole_answer_faithfulness_items_alike(
        db: sqlite_utils.Database, tmp_path: Path) -> None:
    from labeler.judges.report import judge_report
    from labeler.judges.verdict_files import import_items

    import_items(db, write_jsonl(tmp_path / "items.jsonl", [
        {"item_id": "f1", "kind": "faithfulness", "question": "q?", "contexts": ["c"], "response": "r"}]), caller=OWNER)
    people = [{"item_id": "f1", "verdict": "SUPPORTED"}, {"item_id": "a1@faithfulness", "verdict": "UNSUPPORTED"},
              {"item_id": "a2@faithfulness", "verdict": "SUPPORTED"}]
    judge = [{"item_id": "f1", "verdict": "SUPPORTED"}, {"item_id": "a1@faithfulness", "verdict": "SUPPORTED"},
             {"item_id": "a2@faithfulness", "verdict": "SUPPORTED"}]
    import_verdicts(db, write_jsonl(tmp_path / "p.jsonl", people), annotator="ann", caller=OWNER)
    import_verdicts(db, write_jsonl(tmp_path / "j.jsonl", judge), judge="j", caller=OWNER)
    t = judge_report(db, ["j"], caller=OWNER, n_boot=0).results["j"]["faithfulness"]
    assert (t.n_items, t.agreement.value) == (3, pytest.approx(2 / 3))


def test_split_claims_onto_an_items_id_names_that_id_and_writes_nothing(db: sqlite_utils.Database, tmp_path: Path) -> None:
    from labeler.judges.verdict_files import import_items

    import_items(db, write_jsonl(tmp_path / "items.jsonl", [
        {"item_id": "z#2", "kind": "faithfulness", "question": "q?", "contexts": ["c"], "response": "r"}]), caller=OWNER)
    import_answers(db, write_jsonl(tmp_path / "z.jsonl", [{"answer_id": "z", "question": "Z?", "response": "One. Two."}]),
                   "sys-b", caller=OWNER)
    before = _kinds(db)
    with pytest.raises(StoreError, match=r"^item 'z#2' is already a verdict item of the project"):
        split_claims(db, "sys-b", caller=OWNER)
    assert _kinds(db) == before and db.execute("SELECT count(*) FROM claims WHERE answer_id = 'z'").fetchone()[0] == 0
