"""A system's answers and their claims: validated imports (JSONL, Parquet, RAGAS's column names),
links to project queries, derived ids, append-only tables, claims from the file and from the
sentence splitter."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

from labels_fixtures import dump, write_jsonl
from labeler.generation.answers import derived_answer_id, import_answers, normalise_question, split_claims
from labeler.cli import cli
from labeler.store import StoreError, connect
from labeler.store.access import OWNER
from labeler.store.answers import add_claims, list_answers, list_claims
from pooling import PoolingError

CORPUS = [{"doc_id": "d1", "text": "Paris is the capital of France."},
          {"doc_id": "d2", "text": "Berlin is the capital of Germany."},
          {"doc_id": "d3", "text": "Rome is the capital of Italy."}]
QUERIES = [{"query_id": "q1", "text": "What is the capital of France?"},
           {"query_id": "q2", "text": "What is the capital of Germany?"}]

#: RAGAS's column names, as a RAGAS evaluation dataset gives them.
RAGAS = [
    {"user_input": "What is  the capital\tof France?", "response": "Paris. It has the Eiffel Tower.",
     "retrieved_contexts": ["Paris is the capital of France."], "reference": "Paris", "retrieved_ids": ["d1", "d3"]},
    {"user_input": "Which river runs through Rome?", "response": "", "retrieved_contexts": [], "reference": "The Tiber"},
]
#: goldpool's own names: a query_id instead of a question, claims, an explicit answer_id.
OWN = [
    {"query_id": "q2", "response": "Berlin is the capital. Dr. Who lives there.", "contexts": ["Berlin is the capital of Germany."],
     "claims": ["Berlin is the capital of Germany.", "Dr. Who lives in Berlin."], "team": "blue"},
    {"answer_id": "own-7", "question": "What is the capital of Italy?", "response": "Rome.", "retrieved_ids": ["d3"]},
]


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    runner = CliRunner()
    for args in (["init", "p.db"], ["import-corpus", "p.db", str(write_jsonl(tmp_path / "c.jsonl", CORPUS))],
                 ["import-queries", "p.db", str(write_jsonl(tmp_path / "q.jsonl", QUERIES))]):
        result = runner.invoke(cli, [args[0], str(tmp_path / args[1]), *args[2:]])
        assert result.exit_code == 0, result.output
    store = connect(tmp_path / "p.db")
    yield store
    store.close()


def test_ragas_columns_load_unchanged_and_questions_link_to_queries(db: sqlite_utils.Database, tmp_path: Path) -> None:
    result, linked = import_answers(db, write_jsonl(tmp_path / "ragas.jsonl", RAGAS), "rag-a", caller=OWNER)
    assert (result.added, result.unchanged, result.claims, linked) == (2, 0, 0, 1)
    first, second = sorted(list_answers(db, "rag-a"), key=lambda a: a.response, reverse=True)
    assert first.query_id == "q1"  # whitespace aside, the question is q1's text
    assert first.question == RAGAS[0]["user_input"]  # stored as the file gave it
    assert (first.contexts, first.retrieved_ids, first.reference) == (("Paris is the capital of France.",), ("d1", "d3"), "Paris")
    assert first.answer_id == derived_answer_id("rag-a", None, "What is the capital of France?")
    assert (second.query_id, second.response, second.contexts) == (None, "", ())  # an abstention is an answer


def test_query_ids_claims_and_meta_from_the_file(db: sqlite_utils.Database, tmp_path: Path) -> None:
    result, linked = import_answers(db, write_jsonl(tmp_path / "own.jsonl", OWN), "rag-b", caller=OWNER)
    assert (result.added, result.claims, linked) == (2, 2, 1)
    by_query = {a.query_id: a for a in list_answers(db, "rag-b")}
    berlin = by_query["q2"]
    assert berlin.question == "What is the capital of Germany?"  # the query's text, when the file gives only its id
    assert berlin.answer_id == derived_answer_id("rag-b", "q2", "")
    assert by_query[None].answer_id == "own-7"
    claims = list_claims(db, "rag-b")
    assert [(c.claim_id, c.n, c.text, c.source, c.method, c.meta) for c in claims] == [
        (f"{berlin.answer_id}#1", 1, "Berlin is the capital of Germany.", "file", "", {}),
        (f"{berlin.answer_id}#2", 2, "Dr. Who lives in Berlin.", "file", "", {}),
    ]
    meta = db.execute("SELECT meta FROM answers WHERE answer_id = ?", [berlin.answer_id]).fetchone()[0]
    assert json.loads(meta) == {"team": "blue"}


def test_parquet_file_with_ragas_columns(db: sqlite_utils.Database, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [dict(RAGAS[0]), {**RAGAS[1], "retrieved_ids": None}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "ragas.parquet")
    result, linked = import_answers(db, tmp_path / "ragas.parquet", "rag-p", caller=OWNER)
    assert (result.added, linked) == (2, 1)
    assert {a.retrieved_ids for a in list_answers(db, "rag-p")} == {("d1", "d3"), ()}
    # The same answers in JSONL under the same system are the same answers.
    again, _ = import_answers(db, write_jsonl(tmp_path / "ragas.jsonl", RAGAS), "rag-p", caller=OWNER)
    assert (again.added, again.unchanged) == (0, 2)


def test_parquet_errors_name_the_row(db: sqlite_utils.Database, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([RAGAS[0], {**RAGAS[0], "user_input": "Other?", "response": None}]),
                   tmp_path / "bad.parquet")
    before = dump(db)
    with pytest.raises(PoolingError) as error:
        import_answers(db, tmp_path / "bad.parquet", "rag-p", caller=OWNER)
    assert str(error.value) == (f"{tmp_path / 'bad.parquet'}, line 2, field 'response': missing; give the response text "
                                "(\"\" for an abstention)")
    assert dump(db) == before


def test_reimport_is_a_no_op(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "own.jsonl", OWN)
    import_answers(db, path, "rag-b", caller=OWNER)
    before = dump(db)
    result, _ = import_answers(db, path, "rag-b", caller=OWNER)
    assert (result.added, result.unchanged, result.claims) == (0, 2, 0)
    assert dump(db) == before


def _refused(db: sqlite_utils.Database, path: Path, system: str = "rag-x") -> str:
    before = dump(db)
    with pytest.raises((PoolingError, StoreError)) as error:
        import_answers(db, path, system, caller=OWNER)
    assert dump(db) == before
    message = str(error.value)
    assert message.startswith(f"{path}, line ") or message.startswith(f"{path}: ")
    return message[len(str(path)) + 2:]


GOOD = {"question": "What is the capital of Italy?", "response": "Rome."}


@pytest.mark.parametrize(("second", "message"), [
    ({"response": "Rome."}, "line 2, field 'question': missing; every answer needs a question (or user_input), or the "
                            "query_id of a project query"),
    ({"question": "Why?"}, "line 2, field 'response': missing; give the response text (\"\" for an abstention)"),
    ({"question": " \u200b", "response": "x"}, "line 2, field 'question': empty; every record needs non-blank text"),
    ({"user_input": "Why?", "response": "x", "contexts": ["a", "b\x00c"]},
     "line 2, field 'contexts[1]': holds U+0000 NUL at character 2; remove it (NUL is not allowed in text)"),
    ({"user_input": "Why?", "response": "x", "retrieved_contexts": "one text"},
     "line 2, field 'retrieved_contexts': must be a list of texts, not a str value"),
    ({"question": "Why?", "response": 3}, "line 2, field 'response': must be a string, not a number"),
    ({"question": "Why?", "response": "x", "retrieved_ids": [1.5]},
     "line 2, field 'retrieved_ids[0]': must be a string, not a number"),
    ({"question": "Why?", "response": "x", "retrieved_ids": [7]},
     "line 2, field 'retrieved_ids[0]': '7' is not a document of the project's corpus; import the corpus the system "
     "retrieved from first, or leave the id out"),
    ({"question": "Why?", "user_input": "How?", "response": "x"},
     "line 2, field 'user_input': differs from 'question' in the same record; give one of them"),
    ({"answer_id": "a b", "question": "Why?", "response": "x"},
     "line 2, field 'answer_id': 'a b' contains whitespace (U+0020 SPACE); TREC run and qrels files cannot hold it"),
    ({"answer_id": "a#2", "question": "Why?", "response": "x"},
     "line 2, field 'answer_id': 'a#2' holds '#', which separates an answer_id from its claim's number (ANSWER_ID#N); "
     "choose another id"),
    ({"question": "Why?", "response": "x", "retrieved_ids": ["d1", "d1"]},
     "line 2, field 'retrieved_ids[1]': 'd1' is also retrieved_ids[0]; a ranking names each document once"),
    ({"question": "Why?", "response": "x", "retrieved_ids": ["d1", "d\u200b2"]},
     "line 2, field 'retrieved_ids[1]': 'd\\u200b2' holds, at character 2, U+200B ZERO WIDTH SPACE, an invisible "
     "character; ids may hold only visible characters"),
    ({"question": "Why?", "response": "x", "retrieved_ids": ["d1", "d9"]},
     "line 2, field 'retrieved_ids[1]': 'd9' is not a document of the project's corpus; import the corpus the system "
     "retrieved from first, or leave the id out"),
    ({"question": "Why?", "response": "x", "claims": ["one", "  "]},
     "line 2, field 'claims[1]': empty; every claim needs non-blank text"),
    ({"query_id": "q9", "response": "x"},
     "line 2, field 'query_id': 'q9' is not a query of the project; import the queries first, or give the question "
     "text instead"),
    ({"question": "What is the capital  of Italy?", "response": "Milan."},
     "line 2, field 'question': the same question as line 1: one system gives one answer per question; give each "
     "record its own answer_id to keep both"),
    ({"query_id": "q1", "response": "x"}, None),
])
def test_a_bad_record_is_refused_by_file_line_and_field(db: sqlite_utils.Database, tmp_path: Path, second: dict,
                                                        message: str | None) -> None:
    if message is None:  # the same query twice, by its id
        first = {"query_id": "q1", "response": "y"}
        message = ("line 2, field 'query_id': the same query as line 1: one system gives one answer per question; give "
                   "each record its own answer_id to keep both")
        assert _refused(db, write_jsonl(tmp_path / "a.jsonl", [first, second])) == message
        return
    assert _refused(db, write_jsonl(tmp_path / "a.jsonl", [GOOD, second])) == message


def test_file_level_refusals(db: sqlite_utils.Database, tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n", encoding="utf-8")
    assert _refused(db, tmp_path / "empty.jsonl") == "empty: no answers in the file; nothing was imported"
    (tmp_path / "broken.jsonl").write_text(json.dumps(GOOD) + "\n{\"question\": \n", encoding="utf-8")
    assert _refused(db, tmp_path / "broken.jsonl") == "line 2: malformed JSON (Expecting value at column 1)"


def test_a_long_value_is_cut_in_the_message(db: sqlite_utils.Database, tmp_path: Path) -> None:
    long_id = "d" + "x" * 5000
    message = _refused(db, write_jsonl(tmp_path / "a.jsonl", [{**GOOD, "retrieved_ids": [long_id]}]))
    assert message.startswith("line 1, field 'retrieved_ids[0]': 'dxxxxxxxxxxxxxxxxxxxxxxxxx")
    assert len(message) < 300


def test_duplicate_questions_with_their_own_answer_ids_are_kept(db: sqlite_utils.Database, tmp_path: Path) -> None:
    records = [{**GOOD, "answer_id": "s1"}, {**GOOD, "answer_id": "s2", "response": "Rome, Italy."}]
    result, _ = import_answers(db, write_jsonl(tmp_path / "a.jsonl", records), "sampled", caller=OWNER)
    assert result.added == 2
    message = _refused(db, write_jsonl(tmp_path / "b.jsonl", [{**GOOD, "answer_id": "s1"}, {**GOOD, "answer_id": "s1"}]))
    assert message == "line 2, field 'answer_id': duplicate answer_id 's1' (first at line 1); ids must be unique"


def test_the_same_question_in_two_systems_is_two_answers(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [GOOD])
    import_answers(db, path, "one", caller=OWNER)
    import_answers(db, path, "two", caller=OWNER)
    assert len({a.answer_id for a in list_answers(db)}) == 2


def test_changed_content_under_a_stored_answer_id_is_refused(db: sqlite_utils.Database, tmp_path: Path) -> None:
    import_answers(db, write_jsonl(tmp_path / "a.jsonl", RAGAS), "rag-a", caller=OWNER)
    changed = [RAGAS[0], {**RAGAS[1], "response": "The Tiber."}]
    assert _refused(db, write_jsonl(tmp_path / "b.jsonl", changed), "rag-a") == (
        f"line 2, field 'response': answer {derived_answer_id('rag-a', None, RAGAS[1]['user_input'])!r} is already in "
        "the project with different content; labels are given on the stored text: import the new text under a new "
        "answer_id")
    with_claims = [RAGAS[0], {**RAGAS[1], "claims": ["nothing"]}]
    assert _refused(db, write_jsonl(tmp_path / "c.jsonl", with_claims), "rag-a").startswith("line 2, field 'claims': answer")
    other = [{**GOOD, "answer_id": derived_answer_id("rag-a", None, RAGAS[0]["user_input"])}]
    assert _refused(db, write_jsonl(tmp_path / "d.jsonl", other), "rag-z").endswith(
        "is already in the project as an answer of system 'rag-a'; answer_ids are unique across systems")


def test_a_bad_system_name_is_refused_before_anything_is_read(db: sqlite_utils.Database, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="system name 'a b': give a non-empty name of visible characters, without '#'"):
        import_answers(db, tmp_path / "missing.jsonl", "a b", caller=OWNER)


def test_answers_and_claims_are_append_only(db: sqlite_utils.Database, tmp_path: Path) -> None:
    import_answers(db, write_jsonl(tmp_path / "own.jsonl", OWN), "rag-b", caller=OWNER)
    for sql, message in (("UPDATE answers SET response = 'x'", "answers do not change"),
                         ("DELETE FROM answers", "answers do not change"),
                         ("UPDATE claims SET text = 'x'", "claims do not change"),
                         ("DELETE FROM claims", "claims do not change")):
        with pytest.raises(sqlite3.IntegrityError, match=message):
            db.conn.execute(sql)


def test_question_normalisation_and_ambiguous_texts() -> None:
    assert normalise_question(" What\u00a0is\n RAG? ") == "What is RAG?"
    assert normalise_question("cafe\u0301") == normalise_question("caf\u00e9")
    assert normalise_question("What is RAG?") != normalise_question("what is rag?")  # case is kept


def test_a_question_two_queries_share_links_to_neither(tmp_path: Path) -> None:
    runner = CliRunner()
    write_jsonl(tmp_path / "c.jsonl", CORPUS)
    write_jsonl(tmp_path / "q.jsonl", [{"query_id": "q1", "text": "Same?"}, {"query_id": "q2", "text": "Same? "}])
    for args in (["init", "p.db"], ["import-corpus", "p.db", "c.jsonl"], ["import-queries", "p.db", "q.jsonl"]):
        assert runner.invoke(cli, [args[0], *(str(tmp_path / a) for a in args[1:])]).exit_code == 0
    db = connect(tmp_path / "p.db")
    _, linked = import_answers(db, write_jsonl(tmp_path / "a.jsonl", [{"question": "Same?", "response": "x"}]), "s", caller=OWNER)
    assert linked == 0 and list_answers(db)[0].query_id is None
    db.close()


# --- claims ------------------------------------------------------------------------------------


def test_sentence_claims_number_from_one_and_keep_claims_from_the_file(db: sqlite_utils.Database, tmp_path: Path) -> None:
    import_answers(db, write_jsonl(tmp_path / "own.jsonl", OWN), "rag-b", caller=OWNER)
    import_answers(db, write_jsonl(tmp_path / "ragas.jsonl", RAGAS), "rag-a", caller=OWNER)
    assert split_claims(db, "rag-a", caller=OWNER) == {"answers": 1, "claims": 2, "skipped": 1}  # the abstention has none
    paris = derived_answer_id("rag-a", None, RAGAS[0]["user_input"])
    assert [(c.claim_id, c.text, c.source, c.method) for c in list_claims(db, "rag-a")] == [
        (f"{paris}#1", "Paris.", "sentence", "sentences-v1"),
        (f"{paris}#2", "It has the Eiffel Tower.", "sentence", "sentences-v1"),
    ]
    assert split_claims(db, "rag-b", caller=OWNER) == {"answers": 1, "claims": 1, "skipped": 1}
    sources = {(c.answer_id, c.source) for c in list_claims(db, "rag-b")}
    assert sources == {(derived_answer_id("rag-b", "q2", ""), "file"), ("own-7", "sentence")}
    before = dump(db)
    assert split_claims(db, "rag-a", caller=OWNER) == {"answers": 0, "claims": 0, "skipped": 2}
    assert dump(db) == before


def test_claims_of_an_unknown_system_or_answer_are_refused(db: sqlite_utils.Database) -> None:
    with pytest.raises(StoreError, match="no system 'nope' in the project; import its answers with `goldpool import-answers`"):
        split_claims(db, "nope", caller=OWNER)
    before = dump(db)
    with pytest.raises(StoreError, match="answer 'ghost' is not in the project"):
        add_claims(db, [("ghost", ["a claim"])], source="sentence", method="x", caller=OWNER)
    with pytest.raises(StoreError, match="claim source 'guess'"):
        add_claims(db, [], source="guess", method="x", caller=OWNER)
    assert dump(db) == before


# --- the command line ----------------------------------------------------------------------------


def test_cli_import_and_split_print_fixed_json(db: sqlite_utils.Database, tmp_path: Path) -> None:
    runner = CliRunner()
    path = str(write_jsonl(tmp_path / "own.jsonl", OWN))
    project = str(tmp_path / "p.db")
    result = runner.invoke(cli, ["import-answers", project, path, "--system", "rag-b", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"file": path, "system": "rag-b", "added": 2, "unchanged": 0, "claims": 2, "linked": 1}
    result = runner.invoke(cli, ["import-answers", project, path, "--system", "rag-b"])
    assert result.output == f"{path}: 0 answers of 'rag-b' added, 2 unchanged, 0 claims from the file; 1 linked to project queries\n"
    result = runner.invoke(cli, ["split-claims", project, "--system", "rag-b", "--sentences", "--json"])
    assert json.loads(result.output) == {"system": "rag-b", "method": "sentences-v1", "answers": 1, "claims": 1,
                                         "skipped": 1, "calls": 0, "from_cache": 0, "errors": 0, "unparseable": 0,
                                         "cut_short": {}}
    for args in ([], ["--sentences", "--judge", "j"], ["--judge", "j", "--model", "m"]):
        result = runner.invoke(cli, ["split-claims", project, "--system", "rag-b", *args])
        assert result.exit_code == 2, args
    assert "--judge needs --model and --base-url" in result.output
    bad = str(write_jsonl(tmp_path / "bad.jsonl", [{"question": "Why?"}]))
    result = runner.invoke(cli, ["import-answers", project, bad, "--system", "rag-b"])
    assert (result.exit_code, result.output) == (
        1, f"Error: {bad}, line 1, field 'response': missing; give the response text (\"\" for an abstention)\n")


def test_a_project_from_before_answers_gets_their_tables_on_open(tmp_path: Path) -> None:
    from labeler.store.migrations import MIGRATIONS
    from labeler.store.migrations.m13_answers import SQL as _M_ANSWERS

    path = tmp_path / "old.db"
    before = MIGRATIONS.index(_M_ANSWERS)
    with sqlite3.connect(path) as conn:  # a project made by the release before answers
        for script in MIGRATIONS[:before]:
            conn.executescript(script)
        conn.execute(f"PRAGMA user_version={before}")
    db = connect(path)
    tables = {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"systems", "answers", "claims"} <= tables
    db.conn.executescript(_M_ANSWERS)  # replaying the step changes nothing
    db.close()


# --- CSV, any suffix, RAGAS's older names ---------------------------------------------------------


def _ragas_csv(path: Path, rows: list[dict], *, index: bool = False) -> Path:
    """``rows`` as RAGAS's ``EvaluationDataset.to_csv`` writes them (csv.DictWriter: a list cell is
    the list's Python repr), or with ``index`` as pandas' ``to_csv`` does (an unnamed index column)."""
    import csv

    names = list(dict.fromkeys(k for row in rows for k in row))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(([""] if index else []) + names)
        for n, row in enumerate(rows):
            writer.writerow(([n] if index else []) + ["" if row.get(k) is None else row[k] for k in names])
    return path


@pytest.mark.parametrize("index", [False, True])
def test_answers_as_csv_with_lists_as_python_literals(db: sqlite_utils.Database, tmp_path: Path, index: bool) -> None:
    rows = [{**RAGAS[0], "retrieved_contexts": ["Paris is the capital of France.", "It's \"big\",\nold."],
             "faithfulness": 0.5},
            {**RAGAS[1], "retrieved_ids": None}]
    path = _ragas_csv(tmp_path / "ragas.csv", rows, index=index)
    result, linked = import_answers(db, path, "rag-c", caller=OWNER)
    assert (result.added, linked) == (2, 1)
    first, second = sorted(list_answers(db, "rag-c"), key=lambda a: a.response, reverse=True)
    assert first.contexts == ("Paris is the capital of France.", "It's \"big\",\nold.")
    assert (first.retrieved_ids, first.reference, first.query_id) == (("d1", "d3"), "Paris", "q1")
    assert (second.response, second.contexts, second.retrieved_ids) == ("", (), ())  # an empty cell: an abstention
    meta = db.execute("SELECT meta FROM answers WHERE answer_id = ?", [first.answer_id]).fetchone()[0]
    assert json.loads(meta) == {"faithfulness": "0.5"}  # the pandas index column is not kept
    # The same answers in JSONL are the same answers (a CSV cell is text: the score too).
    again, _ = import_answers(db, write_jsonl(tmp_path / "ragas.jsonl", [{**rows[0], "faithfulness": "0.5"}]), "rag-c",
                              caller=OWNER)
    assert (again.added, again.unchanged) == (0, 1)


def test_a_csv_cell_may_hold_a_json_array(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text('question,response,contexts,retrieved_ids\nWhy?,x,"[""a"", ""b\\u00e9""]","[""d1""]"\n',
                    encoding="utf-8")
    import_answers(db, path, "rag-j", caller=OWNER)
    [answer] = list_answers(db, "rag-j")
    assert (answer.contexts, answer.retrieved_ids) == (("a", "b\u00e9"), ("d1",))


@pytest.mark.parametrize(("cell", "message"), [
    ("['a', 1]", "line 2, field 'retrieved_contexts[1]': must be a string, not a number"),
    ("['a' 'b']", "line 2, field 'retrieved_contexts': two strings with no comma between them (NumPy prints an array "
                  "so, and cuts a long one with '...'); write the list with commas, as Python's list does"),
    ("[__import__('os').system('true')]", "line 2, field 'retrieved_contexts[0]': must be a string, not Python code "
                                          "(which goldpool never runs)"),
    ("__import__('os')", "line 2, field 'retrieved_contexts': give a list of texts: a JSON array [\"a\", \"b\"] or "
                         "Python's ['a', 'b'], as pandas and RAGAS write it"),
    ("just one text", "line 2, field 'retrieved_contexts': give a list of texts: a JSON array [\"a\", \"b\"] or "
                      "Python's ['a', 'b'], as pandas and RAGAS write it"),
    ("['a', ['b']]", "line 2, field 'retrieved_contexts[1]': must be a string, not an array"),
    ("['unclosed", "line 2, field 'retrieved_contexts': give a list of texts: a JSON array [\"a\", \"b\"] or "
                   "Python's ['a', 'b'], as pandas and RAGAS write it"),
    ("['a\\x00b']", "line 2, field 'retrieved_contexts[0]': holds U+0000 NUL at character 2; remove it (NUL is not "
                    "allowed in text)"),
    ("['\\ud800']", "line 2, field 'retrieved_contexts[0]': holds a lone surrogate (\\ud800-\\udfff without its "
                    "pair), which is not valid Unicode; fix or remove the escape"),
    ("[" * 100_000 + "]" * 100_000, "line 2, field 'retrieved_contexts': nested deeper than 100 levels of arrays and "
                                    "objects; flatten the record"),
])
def test_a_bad_list_cell_is_refused_by_file_line_and_field(db: sqlite_utils.Database, tmp_path: Path, cell: str,
                                                           message: str) -> None:
    path = _ragas_csv(tmp_path / "a.csv", [{"user_input": "Why?", "response": "x", "retrieved_contexts": cell}])
    assert _refused(db, path) == message


@pytest.mark.parametrize("name", ["answers.txt", "answers", "answers.csv", "answers.parquet.json"])
def test_jsonl_answers_are_read_whatever_the_suffix(db: sqlite_utils.Database, tmp_path: Path, name: str) -> None:
    result, linked = import_answers(db, write_jsonl(tmp_path / name, RAGAS), "rag-s", caller=OWNER)
    assert (result.added, linked) == (2, 1)


def test_parquet_is_known_by_its_content(db: sqlite_utils.Database, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([RAGAS[0]]), tmp_path / "answers.bin")
    result, _ = import_answers(db, tmp_path / "answers.bin", "rag-p", caller=OWNER)
    assert result.added == 1
    (tmp_path / "fake.parquet").write_text("question,response\nWhy?,x\n", encoding="utf-8")
    assert _refused(db, tmp_path / "fake.parquet") == ("named .parquet but not a Parquet file (it does not start with "
                                                      "PAR1); give the file its right name")


def test_file_level_refusals_of_the_sniffed_formats(db: sqlite_utils.Database, tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([GOOD]), encoding="utf-8")
    assert _refused(db, tmp_path / "a.json") == ("line 1: a JSON array; answers are one JSON object a line (JSONL), "
                                                 "a CSV file with a header row, or Parquet")
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2.0 run\n", encoding="utf-8")
    assert _refused(db, tmp_path / "run.txt") == (
        "line 1: the header names no field of an answer (question, user_input, query_id, response, answer...); "
        "answers are one JSON object a line (JSONL), a CSV file with a header row, or Parquet")
    (tmp_path / "header.csv").write_text("question,response\n", encoding="utf-8")
    assert _refused(db, tmp_path / "header.csv") == ("empty: no answers in the file (a CSV/TSV file needs rows below "
                                                     "its header); nothing was imported")


#: RAGAS before 0.2: question, contexts, answer, ground_truth.
OLD_RAGAS = [
    {"question": "What is the capital of France?", "contexts": ["Paris is the capital of France."], "answer": "Paris.",
     "ground_truth": "Paris"},
    {"question": "Which river runs through Rome?", "contexts": [], "answer": "", "ground_truth": "The Tiber"},
]


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_ragas_older_column_names_are_read(db: sqlite_utils.Database, tmp_path: Path, suffix: str) -> None:
    path = (write_jsonl(tmp_path / "old.jsonl", OLD_RAGAS) if suffix == "jsonl"
            else _ragas_csv(tmp_path / "old.csv", OLD_RAGAS))
    result, linked = import_answers(db, path, "rag-old", caller=OWNER)
    assert (result.added, linked, result.warnings) == (2, 1, ())
    by_response = {a.response: a for a in list_answers(db, "rag-old")}
    assert by_response["Paris."].reference == "Paris"  # ground_truth is the reference, not metadata
    assert by_response[""].reference == "The Tiber"
    assert by_response["Paris."].contexts == ("Paris is the capital of France.",)
    meta = db.execute("SELECT meta FROM answers WHERE response = 'Paris.'").fetchone()[0]
    assert json.loads(meta) == {}


@pytest.mark.parametrize(("record", "message"), [
    ({"question": "Why?", "response": "x", "answer": "y"},
     "line 2, field 'answer': differs from 'response' in the same record; give one of them"),
    ({"question": "Why?", "response": "x", "reference": "r", "ground_truth": "s"},
     "line 2, field 'ground_truth': differs from 'reference' in the same record; give one of them"),
])
def test_an_old_name_beside_the_new_one_must_agree(db: sqlite_utils.Database, tmp_path: Path, record: dict,
                                                   message: str) -> None:
    assert _refused(db, write_jsonl(tmp_path / "a.jsonl", [GOOD, record])) == message
    same = {**record, **{k: record["response" if k == "answer" else "reference"] for k in ("answer", "ground_truth")
                         if k in record}}
    result, _ = import_answers(db, write_jsonl(tmp_path / "b.jsonl", [same]), "rag-same", caller=OWNER)
    assert result.added == 1


def test_a_known_column_kept_as_metadata_is_named_in_a_warning(db: sqlite_utils.Database, tmp_path: Path) -> None:
    rows = [{"Question": "Q?", "user_input": "What is the capital of France?", "response": "Paris.",
             "ground_truths": ["Paris"], "retrieved_context_ids": ["d1"]},
            {"user_input": "Why?", "response": "x", "ground_truths": ["y"], "Reference": "z"}]
    result, _ = import_answers(db, write_jsonl(tmp_path / "a.jsonl", rows), "rag-w", caller=OWNER)
    assert result.warnings == (
        "column 'Question' (first at line 1) is kept as metadata: did you mean 'question'? names are case-sensitive",
        "column 'ground_truths' (first at line 1) is kept as metadata: give the reference answer as one text, "
        "'reference' (or 'ground_truth'), for it to be the answer's reference",
        "column 'retrieved_context_ids' (first at line 1) is kept as metadata: name it 'retrieved_ids' if it holds "
        "doc_ids of the project's corpus, best first",
        "column 'Reference' (first at line 2) is kept as metadata: did you mean 'reference'? names are case-sensitive",
    )
    project, path = str(tmp_path / "p.db"), str(write_jsonl(tmp_path / "b.jsonl", rows))
    out = CliRunner().invoke(cli, ["import-answers", project, path, "--system", "rag-w2", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["added"] == 2
    assert out.stderr.splitlines() == [f"warning: {path}: {w}" for w in result.warnings]


def test_a_meta_that_is_not_an_object_is_kept_not_dropped(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text('question,response,meta,team\nWhy?,x,"{""run"": 3}",blue\nHow?,y,free text,red\n', encoding="utf-8")
    import_answers(db, path, "rag-m", caller=OWNER)
    metas = {a.response: json.loads(m) for a in list_answers(db, "rag-m")
             for (m,) in [db.execute("SELECT meta FROM answers WHERE answer_id = ?", [a.answer_id]).fetchone()]}
    assert metas == {"x": {"run": 3, "team": "blue"}, "y": {"meta": "free text", "team": "red"}}
    import_answers(db, write_jsonl(tmp_path / "b.jsonl", [{**GOOD, "meta": ["a", "b"]}]), "rag-m2", caller=OWNER)
    (meta,) = db.execute("SELECT meta FROM answers WHERE system = 'rag-m2'").fetchone()
    assert json.loads(meta) == {"meta": ["a", "b"]}
