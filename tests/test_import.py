"""Import into the store: all or nothing, idempotent, refuses silent changes; pool rebuilds only add."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlite_utils

from labels_fixtures import write_jsonl
from labeler.retrieval import build
from labeler.store import StoreError, corpus, init_db
from pooling import PoolingError

DOCS = [
    {"doc_id": "d1", "text": "the cat sat on the mat"},
    {"doc_id": "d2", "title": "Dogs", "text": "dogs chase cats in the park"},
    {"doc_id": "d3", "text": "python lists are mutable sequences"},
    {"doc_id": "d4", "text": "a list comprehension builds a list"},
]
QUERIES = [{"query_id": "q1", "text": "cat on a mat"}, {"query_id": "q2", "text": "python list"}]


def snapshot(db: sqlite_utils.Database) -> tuple[list[str], bytes]:
    """Every row as SQL, and the database file's bytes once the WAL is folded in."""
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    path = next(row[2] for row in db.conn.execute("PRAGMA database_list") if row[1] == "main")
    return list(db.conn.iterdump()), Path(path).read_bytes()


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    store = init_db(tmp_path / "p.db")
    build.import_corpus(store, write_jsonl(tmp_path / "corpus.jsonl", DOCS))
    build.import_queries(store, write_jsonl(tmp_path / "queries.jsonl", QUERIES))
    return store


def test_import_counts_and_stores_records(db: sqlite_utils.Database) -> None:
    rows = db.conn.execute("SELECT doc_id, title, text, meta FROM documents ORDER BY doc_id").fetchall()
    assert rows[1] == ("d2", "Dogs", "dogs chase cats in the park", "{}")
    assert corpus.stats(db)["documents"] == 4
    assert corpus.stats(db)["queries"] == 2


def test_reimport_is_a_no_op(db: sqlite_utils.Database, tmp_path: Path) -> None:
    before = snapshot(db)
    result = build.import_corpus(db, tmp_path / "corpus.jsonl")
    assert (result.added, result.replaced, result.unchanged) == (0, 0, 4)
    assert build.import_queries(db, tmp_path / "queries.jsonl").unchanged == 2
    assert snapshot(db) == before


def test_changed_text_is_refused_unless_replace(db: sqlite_utils.Database, tmp_path: Path) -> None:
    changed = write_jsonl(tmp_path / "v2.jsonl", [DOCS[0], {"doc_id": "d2", "text": "new text"}, {"doc_id": "d9", "text": "x"}])
    before = snapshot(db)
    with pytest.raises(StoreError, match=r"v2\.jsonl, line 2, field 'text': 'd2' is already in the project"):
        build.import_corpus(db, changed)
    assert snapshot(db) == before
    result = build.import_corpus(db, changed, replace=True)
    assert (result.added, result.replaced, result.unchanged) == (1, 1, 1)
    assert db.conn.execute("SELECT text, title FROM documents WHERE doc_id = 'd2'").fetchone() == ("new text", "")


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"doc_id": "d2", "title": "Dogs", "text": "dogs chase cats in the park", "source": "web"}, "meta"),
        ({"doc_id": "d2", "title": "Dogs", "text": "dogs chase cats in the park", "meta": {"lang": "en"}}, "meta"),
        ({"doc_id": "d2", "title": "Hounds", "text": "dogs chase cats in the park"}, "title"),
        ({"doc_id": "d2", "title": "Hounds", "text": "hounds chase cats", "source": "web"}, "text"),
    ],
)
def test_a_refused_change_names_the_field_that_changed(db: sqlite_utils.Database, tmp_path: Path, record: dict, field: str) -> None:
    changed = write_jsonl(tmp_path / "v2.jsonl", [DOCS[0], record])
    before = snapshot(db)
    with pytest.raises(StoreError) as caught:
        build.import_corpus(db, changed)
    assert str(caught.value) == (
        f"{changed}, line 2, field '{field}': 'd2' is already in the project with different content; "
        "import it again with --replace to overwrite it"
    )
    assert snapshot(db) == before


def test_a_refused_query_change_names_meta(db: sqlite_utils.Database, tmp_path: Path) -> None:
    changed = write_jsonl(tmp_path / "q2.jsonl", [{**QUERIES[0], "topic": "pets"}])
    before = snapshot(db)
    with pytest.raises(StoreError, match=r"q2\.jsonl, line 1, field 'meta': 'q1' is already in the project"):
        build.import_queries(db, changed)
    assert snapshot(db) == before


def test_replace_refuses_to_change_text_that_has_judgments(db: sqlite_utils.Database, tmp_path: Path) -> None:
    build.build_pool(db, dense_depth=0, progress=False)
    query_id = db.conn.execute("SELECT query_id FROM pool WHERE doc_id = 'd1'").fetchone()[0]
    db.conn.execute(
        "INSERT INTO annotators (name, role, token_salt, token_hash, created_at) VALUES ('a', 'annotator', '', '', 'now')"
    )
    db.conn.execute(
        "INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, at) VALUES (?, 'd1', 1, 3, 'now')", [query_id]
    )
    changed = write_jsonl(tmp_path / "v2.jsonl", [{"doc_id": "d9", "text": "new"}, {"doc_id": "d1", "text": "rewritten"}])
    before = snapshot(db)
    with pytest.raises(StoreError, match=r"v2\.jsonl, line 2, field 'text': 'd1' already has 1 judgment, made"):
        build.import_corpus(db, changed, replace=True)
    assert snapshot(db) == before
    # Metadata is not what was judged: it may change under a judgment.
    retagged = write_jsonl(tmp_path / "v3.jsonl", [{"doc_id": "d1", "text": DOCS[0]["text"], "source": "wiki"}])
    assert build.import_corpus(db, retagged, replace=True).replaced == 1
    assert db.conn.execute("SELECT text, meta FROM documents WHERE doc_id = 'd1'").fetchone() == (
        DOCS[0]["text"],
        '{"source": "wiki"}',
    )


BAD = [
    ("malformed", '{"doc_id": "n1", "text": "ok"}\n{"doc_id": "n2", "text": "x"\n', 2, None),
    ("missing id", '{"doc_id": "n1", "text": "ok"}\n{"text": "x"}\n', 2, "doc_id"),
    ("duplicate id", '{"doc_id": "n1", "text": "ok"}\n{"doc_id": "n1", "text": "x"}\n', 2, "doc_id"),
    ("empty text", '{"doc_id": "n1", "text": "ok"}\n{"doc_id": "n2", "text": ""}\n', 2, "text"),
    # JSON lets a lone surrogate through; UTF-8 and SQLite cannot store it.
    ("lone surrogate", '{"doc_id": "n1", "text": "ok"}\n{"doc_id": "n2", "text": "caf\\ud800"}\n', 2, "text"),
    ("surrogate in meta", '{"doc_id": "n1", "text": "ok"}\n{"doc_id": "n2", "text": "x", "meta": {"a": "\\udc00"}}\n', 2, "meta"),
]


@pytest.mark.parametrize(("kind", "content", "line", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_corpus_leaves_database_unchanged(
    db: sqlite_utils.Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, content: str, line: int, field: str | None
) -> None:
    # One record per batch, so the good first record is written before the bad one is read.
    monkeypatch.setattr(corpus, "BATCH", 1)
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    before = snapshot(db)
    with pytest.raises(PoolingError) as caught:
        build.import_corpus(db, path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), line, field)
    assert snapshot(db) == before


def test_bad_encoding_leaves_database_unchanged(db: sqlite_utils.Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus, "BATCH", 1)
    path = tmp_path / "q.tsv"
    path.write_bytes(b"query_id\ttext\nq7\tfine\nq8\tna\xefve\n")
    before = snapshot(db)
    with pytest.raises(PoolingError, match=r"q\.tsv, line 3: not valid UTF-8"):
        build.import_queries(db, path)
    assert snapshot(db) == before


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [("q9 Q0 d1 2 1.0 r", "query_id", "unknown query 'q9'"), ("q1 Q0 d9 2 1.0 r", "doc_id", "unknown document 'd9'")],
)
def test_run_naming_unknown_ids_is_refused(db: sqlite_utils.Database, tmp_path: Path, line: str, field: str, words: str) -> None:
    path = tmp_path / "run.trec"
    path.write_text(f"q1 Q0 d1 1 2.0 r\n{line}\n", encoding="utf-8")
    before = snapshot(db)
    with pytest.raises(StoreError) as caught:
        build.import_run(db, path, "sys")
    assert (caught.value.line, caught.value.field) == (2, field)
    assert words in str(caught.value)
    assert snapshot(db) == before


def test_run_import_ranks_like_trec_eval_and_is_idempotent(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 1.0 r\nq1 Q0 d3 2 2.0 r\nq1 Q0 d2 3 1.0 r\n", encoding="utf-8")
    assert build.import_run(db, path, "sys").added == 3
    ranks = db.conn.execute("SELECT doc_id, rank FROM run_entries ORDER BY rank").fetchall()
    assert ranks == [("d3", 1), ("d2", 2), ("d1", 3)]
    before = snapshot(db)
    assert build.import_run(db, path, "sys").added == 0
    assert snapshot(db) == before
    other = tmp_path / "other.trec"
    other.write_text("q1 Q0 d1 1 1.0 r\n", encoding="utf-8")
    with pytest.raises(StoreError, match="a different run named 'sys' is already imported"):
        build.import_run(db, other, "sys")
    with pytest.raises(StoreError, match="run name 'bm25'"):
        build.import_run(db, other, "bm25")
    assert snapshot(db) == before


def _pool_rows(db: sqlite_utils.Database) -> dict[tuple[str, str], tuple]:
    rows = db.conn.execute("SELECT query_id, doc_id, sources, priority, position, added_at, build_id FROM pool")
    return {(r[0], r[1]): r for r in rows}


def test_rebuild_after_adding_a_run_keeps_every_row_and_adds(db: sqlite_utils.Database, tmp_path: Path) -> None:
    first = build.build_pool(db, dense_depth=0, progress=False)
    before = _pool_rows(db)
    assert first.added == len(before) > 0
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d4 1 5.0 r\nq1 Q0 d1 2 4.0 r\nq2 Q0 d2 1 1.0 r\n", encoding="utf-8")
    build.import_run(db, run, "sys")
    second = build.build_pool(db, dense_depth=0, progress=False)
    after = _pool_rows(db)
    # Every existing row keeps its position, time and build; d1 was already pooled for q1 by
    # BM25 and the run also found it (rank 2), so its provenance gains the run.
    assert {k: (r[4], r[5], r[6]) for k, r in after.items() if k in before} == {
        k: (r[4], r[5], r[6]) for k, r in before.items()
    }
    bm25_rank = json.loads(before[("q1", "d1")][2])["bm25"]
    assert json.loads(after[("q1", "d1")][2]) == {"bm25": bm25_rank, "sys": 2}
    assert after[("q1", "d1")][3] == 1 / (60 + bm25_rank) + 1 / (60 + 2)
    untouched = [k for k in before if k != ("q1", "d1") and "sys" not in json.loads(after[k][2])]
    assert all(after[k] == before[k] for k in untouched)
    new = {k: v for k, v in after.items() if k not in before}
    assert second.added == len(new) > 0 and second.kept == len(before)
    for (query_id, _), row in new.items():
        assert json.loads(row[2]).keys() >= {"sys"} and row[6] == second.build_id
        assert row[4] > max(r[4] for k, r in before.items() if k[0] == query_id)
    assert build.build_pool(db, dense_depth=0, progress=False).added == 0
    assert _pool_rows(db) == after


def test_export_pool_writes_the_issue_format(db: sqlite_utils.Database) -> None:
    import io

    build.build_pool(db, dense_depth=0, progress=False)
    out = io.StringIO()
    count = corpus.export_pool(db, out)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert count == len(records) == corpus.stats(db)["pool"]
    assert all(set(r) == {"query_id", "doc_id", "sources", "priority"} for r in records)
    assert records[0] == {"query_id": "q1", "doc_id": "d1", "sources": {"bm25": 1}, "priority": 1 / (60 + 1)}
