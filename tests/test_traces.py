"""Traces in as answers (``import-traces``), answers out in RAGAS's columns (``export-answers``)
and back, and batches: spans made by the real OpenTelemetry SDK with OpenInference's attribute
names, written through the SDK's own OTLP JSON encodings and as Phoenix's spans dataframe."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

from labels_fixtures import write_jsonl
from labeler.cli import cli
from labeler.generation.answers import import_answers
from labeler.generation.traces import import_traces
from labeler.store import StoreError, connect
from labeler.store.access import OWNER
from labeler.store.answer_records import answer_records
from labeler.store.answers import default_batch
from pooling import PoolingError
from pooling.trace_readers import TraceReading, read_traces
from trace_fixtures import Trace, phoenix_frame, record_spans, write_spans, write_traces

CORPUS = [{"doc_id": "d1", "text": "Paris is the capital of France."},
          {"doc_id": "d2", "text": "Berlin is the capital of Germany."}]
QUERIES = [{"query_id": "q1", "text": "What is the capital of France?"}]

TRACES = [
    Trace("What is the capital of France?", "Paris.",
          [[("d1", "Paris is the capital of France.", 0.9), ("web-7", "France's capital is Paris.", 0.4)]],
          session="s-1", user="u-1", metadata={"release": "2.1"}, model="gpt-4o"),
    Trace("Which river runs through Berlin?", "The Spree.", [[("d2", "Berlin lies on the Spree.", 0.8)]],
          answer_in_child=True),
    Trace("Hello?", "Hi! How can I help?"),  # no retrieval: a greeting
    Trace("Capital of Germany?", "Berlin.", [[("d2", "Berlin is the capital of Germany.", 0.7)],
                                             [("d2", "Berlin is the capital of Germany.", 0.6),
                                              ("d1", "Paris is the capital of France.", 0.1)]]),
    Trace("", "", no_answer=True),  # a health check: no question, no answer
]


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    runner = CliRunner()
    for args in (["init"], ["import-corpus", str(write_jsonl(tmp_path / "c.jsonl", CORPUS))],
                 ["import-queries", str(write_jsonl(tmp_path / "q.jsonl", QUERIES))]):
        result = runner.invoke(cli, [args[0], str(tmp_path / "p.db"), *args[1:]])
        assert result.exit_code == 0, result.output
    store = connect(tmp_path / "p.db")
    yield store
    store.close()


def _answers(db: sqlite_utils.Database) -> dict[str, dict]:
    return {a["answer_id"]: a for a in answer_records(db)}


def test_sdk_traces_become_answers(db: sqlite_utils.Database, tmp_path: Path) -> None:
    ids = write_traces(tmp_path / "traces.jsonl", TRACES)
    r = import_traces(db, tmp_path / "traces.jsonl", "rag", caller=OWNER)
    assert (r.traces, r.added, r.unchanged, r.linked) == (5, 4, 0, 1)
    assert (r.skipped, r.no_retriever, r.several_retrievers) == (1, 1, 1)
    assert (r.first_skipped, r.first_no_retriever, r.first_several_retrievers) == ((ids[4],), (ids[2],), (ids[3],))
    assert (r.documents, r.in_corpus) == (6, 5)  # web-7 is not in the corpus
    stored = _answers(db)
    assert sorted(stored) == sorted(ids[:4])
    paris = stored[ids[0]]
    assert (paris["question"], paris["response"], paris["query_id"]) == ("What is the capital of France?", "Paris.", "q1")
    assert paris["contexts"] == ["Paris is the capital of France.", "France's capital is Paris."]
    assert paris["retrieved_ids"] == ["d1"]  # linked to the corpus; web-7 kept in the metadata only
    meta = paris["meta"]
    assert (meta["trace_id"], meta["session_id"], meta["user_id"], meta["model"]) == (ids[0], "s-1", "u-1", "gpt-4o")
    assert meta["metadata"] == {"release": "2.1"}
    assert meta["retrieved"] == [{"id": "d1", "score": 0.9}, {"id": "web-7", "score": 0.4}]
    assert paris["batch"] == default_batch()
    # The question and the answer of a CHAIN span under a root span without them.
    assert (stored[ids[1]]["question"], stored[ids[1]]["retrieved_ids"]) == ("Which river runs through Berlin?", ["d2"])
    assert stored[ids[2]]["contexts"] == [] and stored[ids[2]]["retrieved_ids"] == []
    # Two retrievers: their documents in the order the spans started, each id once.
    assert stored[ids[3]]["retrieved_ids"] == ["d2", "d1"]
    assert len(stored[ids[3]]["contexts"]) == 3


def test_both_sdk_encodings_and_phoenix_read_alike(tmp_path: Path) -> None:
    spans, ids = record_spans(TRACES)
    lines = list(read_traces(write_spans(tmp_path / "lines.jsonl", spans, encoding="lines", per_request=1)))
    document_path = write_spans(tmp_path / "doc.json", spans, encoding="document")
    assert document_path.read_text(encoding="utf-8").startswith("{\n")  # pretty-printed, ids in base64
    assert '"traceId": "' in document_path.read_text(encoding="utf-8")
    document = list(read_traces(document_path))
    phoenix_frame(spans).to_parquet(tmp_path / "spans.parquet")
    reading = TraceReading()
    phoenix = list(read_traces(tmp_path / "spans.parquet", reading))
    assert [a["answer_id"] for _, a in lines] == ids[:4]
    strip = [{k: v for k, v in a.items() if k != "fields"} for _, a in lines]
    assert [{k: v for k, v in a.items() if k != "fields"} for _, a in document] == strip
    assert [{k: v for k, v in a.items() if k != "fields"} for _, a in phoenix] == strip
    assert (reading.spans, reading.traces, reading.answers, reading.skipped) == (len(spans), 5, 4, 1)


def test_reimport_is_a_no_op_and_a_trace_keeps_its_batch(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_traces(path, TRACES[:2])
    first = import_traces(db, path, "rag", caller=OWNER, batch="2026-W49")
    again = import_traces(db, path, "rag", caller=OWNER)
    assert (first.added, again.added, again.unchanged) == (2, 0, 2)
    with pytest.raises(StoreError, match=r"already in the project in batch '2026-W49'"):
        import_traces(db, path, "rag", caller=OWNER, batch="2026-W50")
    with pytest.raises(StoreError, match=r"already in the project as an answer of system 'rag'"):
        import_traces(db, path, "other", caller=OWNER)
    assert {a["batch"] for a in answer_records(db)} == {"2026-W49"}


def _good_and(tmp_path: Path, bad: str) -> Path:
    path = tmp_path / "bad.jsonl"
    write_traces(path, TRACES[:1])
    with path.open("a", encoding="utf-8") as handle:
        handle.write(bad + "\n")
    return path


_SPAN = ('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c",'
         '"spanId":"eee19b7ec3c1b174","name":"r","attributes":[%s]}]}]}]}')


@pytest.mark.parametrize(("bad", "message"), [
    ("{not json", r"bad\.jsonl, line \d+: malformed JSON"),
    ('{"spans": []}', r"line \d+: not an OTLP trace export"),
    (_SPAN.replace('"5b8efff798038103d269b633813fc60c"', '"xyz"') % "",
     r"field 'resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.traceId': must be 16 bytes"),
    (_SPAN % ('{"key":"openinference.span.kind","value":{"stringValue":"CHAIN"}},'
              '{"key":"input.value","value":{"stringValue":"q"}},{"key":"output.value","value":{"intValue":"7"}}'),
     r"field 'resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.attributes\.output\.value': "
     r"trace 5b8efff798038103d269b633813fc60c: must be text"),
    (_SPAN % ('{"key":"openinference.span.kind","value":{"stringValue":"RETRIEVER"}},'
              '{"key":"input.value","value":{"stringValue":"q"}},{"key":"output.value","value":{"stringValue":"a"}},'
              '{"key":"retrieval.documents.0.document.score","value":{"stringValue":"high"}}'),
     r"attributes\.retrieval\.documents\.0\.document\.score': trace 5b8efff798038103d269b633813fc60c: must be a number"),
    (_SPAN % '{"key":"input.value","value":{"doubleValue":"many"}}', r"doubleValue 'many' is not a number"),
])
def test_bad_input_names_file_line_field_and_trace_and_writes_nothing(db: sqlite_utils.Database, tmp_path: Path,
                                                                      bad: str, message: str) -> None:
    with pytest.raises(PoolingError, match=message):
        import_traces(db, _good_and(tmp_path, bad), "rag", caller=OWNER)
    assert list(answer_records(db)) == []


def test_files_that_hold_no_trace_are_refused(db: sqlite_utils.Database, tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(PoolingError, match="holds no span"):
        import_traces(db, tmp_path / "empty.jsonl", "rag", caller=OWNER)
    write_jsonl(tmp_path / "answers.jsonl", [{"question": "q", "response": "a"}])
    with pytest.raises(PoolingError, match="not an OTLP trace export"):
        import_traces(db, tmp_path / "answers.jsonl", "rag", caller=OWNER)
    import pandas as pd

    pd.DataFrame([{"question": "q"}]).to_parquet(tmp_path / "other.parquet")
    with pytest.raises(PoolingError, match=r"row 1|line 1: no column 'context.trace_id'"):
        import_traces(db, tmp_path / "other.parquet", "rag", caller=OWNER)


def test_json_input_values_give_their_question(tmp_path: Path) -> None:
    trace = Trace('{"question": "What is RAG?", "history": []}', '{"answer": "Retrieval first."}',
                  extra={"input.mime_type": "application/json"})
    write_traces(tmp_path / "t.jsonl", [trace])
    (_, answer), = read_traces(tmp_path / "t.jsonl")
    assert answer["question"] == "What is RAG?"
    assert answer["response"] == '{"answer": "Retrieval first."}'  # no output.mime_type: text as given


def test_cli_prints_counts_and_first_trace_ids(db: sqlite_utils.Database, tmp_path: Path) -> None:
    ids = write_traces(tmp_path / "t.jsonl", TRACES)
    db_path = str(tmp_path / "p.db")
    result = CliRunner().invoke(cli, ["import-traces", db_path, str(tmp_path / "t.jsonl"), "--system", "rag",
                                      "--batch", "w1"])
    assert result.exit_code == 0, result.output
    spans = len(record_spans(TRACES)[0])
    assert result.output == (
        f"{tmp_path / 't.jsonl'}: 5 traces ({spans} spans): 4 answers of 'rag' added in batch 'w1', 0 unchanged; "
        "1 linked to project queries; 5 of 6 retrieved documents in the corpus\n"
        f"1 trace skipped: no root or CHAIN span with input.value and output.value (first: {ids[4]})\n"
        f"1 trace read without contexts: no RETRIEVER span (first: {ids[2]})\n"
        f"1 trace read with the documents of several RETRIEVER spans, in the order they started (first: {ids[3]})\n")
    again = CliRunner().invoke(cli, ["import-traces", db_path, str(tmp_path / "t.jsonl"), "--system", "rag", "--json"])
    assert json.loads(again.output)["unchanged"] == 4


# --- export-answers, and back ---

ANSWERS = [
    {"user_input": "What is the capital of France?", "response": "Paris.", "retrieved_contexts": ["Paris is..."],
     "reference": "Paris", "retrieved_ids": ["d1"], "team": "blue"},
    {"question": "Why?", "response": "", "contexts": []},
]


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_export_answers_round_trips_through_import_answers(db: sqlite_utils.Database, tmp_path: Path) -> None:
    import_answers(db, write_jsonl(tmp_path / "a.jsonl", ANSWERS), "plain", caller=OWNER, batch="2026-11")
    write_traces(tmp_path / "t.jsonl", TRACES)
    import_traces(db, tmp_path / "t.jsonl", "traced", caller=OWNER)
    _cli("export-answers", str(tmp_path / "p.db"), "-o", str(tmp_path / "out.jsonl"))
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 6 and all(list(line) == ["user_input", "retrieved_contexts", "response", "reference",
                                                   "answer_id", "system", "batch", "retrieved_ids", "meta"]
                                   for line in lines)
    plain = [line for line in lines if line["system"] == "plain"]
    assert plain[0]["batch"] == "2026-11" and {p["response"] for p in plain} == {"Paris.", ""}
    assert next(p for p in plain if p["response"])["meta"] == {"team": "blue"}
    # Into a new project with the same corpus and queries: the same answers, the same export.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    _cli("init", str(fresh / "p.db"))
    _cli("import-corpus", str(fresh / "p.db"), str(tmp_path / "c.jsonl"))
    _cli("import-queries", str(fresh / "p.db"), str(tmp_path / "q.jsonl"))
    for system in ("plain", "traced"):
        (tmp_path / f"{system}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines
                                                          if line["system"] == system), encoding="utf-8")
        _cli("import-answers", str(fresh / "p.db"), str(tmp_path / f"{system}.jsonl"), "--system", system)
        # And into the project it came from: nothing changes.
        again = _cli("import-answers", str(tmp_path / "p.db"), str(tmp_path / f"{system}.jsonl"), "--system", system,
                     "--json")
        assert json.loads(again)["added"] == 0
    _cli("export-answers", str(fresh / "p.db"), "-o", str(fresh / "out.jsonl"))
    assert (fresh / "out.jsonl").read_text(encoding="utf-8") == (tmp_path / "out.jsonl").read_text(encoding="utf-8")
    # One system, one batch.
    _cli("export-answers", str(tmp_path / "p.db"), "--system", "plain", "--batch", "2026-11", "-o", str(tmp_path / "x"))
    assert len((tmp_path / "x").read_text(encoding="utf-8").splitlines()) == 2


def test_a_record_of_another_system_or_batch_is_refused(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [{**ANSWERS[0], "system": "plain", "batch": "w1"}])
    with pytest.raises(StoreError, match=r"line 1, field 'system': an answer of system 'plain', imported as 'other'"):
        import_answers(db, path, "other", caller=OWNER)
    with pytest.raises(StoreError, match=r"line 1, field 'batch': an answer of batch 'w1', imported as batch 'w2'"):
        import_answers(db, path, "plain", caller=OWNER, batch="w2")
    with pytest.raises(StoreError, match="batch name 'a b'"):
        import_answers(db, path, "plain", caller=OWNER, batch="a b")
    assert list(answer_records(db)) == []
    import_answers(db, path, "plain", caller=OWNER)
    assert [a["batch"] for a in answer_records(db)] == ["w1"]


def test_each_batch_of_the_same_questions_is_its_own_answers(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", ANSWERS)
    for batch in ("w1", "w2", "w2"):
        import_answers(db, path, "rag", caller=OWNER, batch=batch)
    by_batch: dict[str, set[str]] = {}
    for a in answer_records(db):
        by_batch.setdefault(a["batch"], set()).add(a["question"])
    assert by_batch == {"w1": {"What is the capital of France?", "Why?"}, "w2": {"What is the capital of France?", "Why?"}}
    # Without a batch named, the ids are those of before batches (and the batch is the date).
    result, _ = import_answers(db, path, "rag", caller=OWNER)
    assert (result.added, result.batch) == (2, default_batch())
    result, _ = import_answers(db, path, "rag", caller=OWNER)
    assert (result.added, result.unchanged) == (0, 2)


def test_answers_stored_before_batches_take_the_date_they_were_added(tmp_path: Path) -> None:
    from labeler.store.migrations import MIGRATIONS, _sha256, migrate

    conn = sqlite3.connect(tmp_path / "old.db")
    conn.create_function("goldpool_sha256", 1, _sha256, deterministic=True)
    version = next(i for i, sql in enumerate(MIGRATIONS, start=1) if "CREATE TABLE IF NOT EXISTS answer_batches" in sql)
    for i, sql in enumerate(MIGRATIONS[:version - 1], start=1):
        conn.executescript(f"BEGIN;{sql}\nPRAGMA user_version={i};COMMIT;")
    conn.execute("INSERT INTO systems VALUES ('s', '2025-01-02T03:04:05+00:00')")
    conn.execute("INSERT INTO answers (answer_id, system, question, response, content_hash, added_at) "
                 "VALUES ('a1', 's', 'q', 'r', 'h', '2025-01-02T03:04:05.000001+00:00')")
    conn.commit()
    migrate(conn)
    assert conn.execute("SELECT answer_id, batch FROM answer_batches").fetchall() == [("a1", "2025-01-02")]
    with pytest.raises(sqlite3.DatabaseError, match="an answer belongs to one batch"):
        conn.execute("UPDATE answer_batches SET batch = 'x'")
    conn.execute(f"PRAGMA user_version = {version - 1}")  # the step again: nothing changes
    migrate(conn)
    assert conn.execute("SELECT answer_id, batch FROM answer_batches").fetchall() == [("a1", "2025-01-02")]
    conn.close()


def test_an_error_in_a_one_document_file_is_named_by_its_field(db: sqlite_utils.Database, tmp_path: Path) -> None:
    spans, ids = record_spans(TRACES[:1])
    path = write_spans(tmp_path / "doc.json", spans, encoding="document")
    text = path.read_text(encoding="utf-8").replace('"doubleValue": 0.9', '"doubleValue": "high"', 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PoolingError, match=r"^\S+doc\.json, field 'resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[\d\]\."
                                           r"attributes\['retrieval\.documents\.0\.document\.score'\]': doubleValue 'high'"):
        import_traces(db, path, "rag", caller=OWNER)
    assert list(answer_records(db)) == []
