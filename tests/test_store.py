"""The project database: migrations, opening, and append-only labels."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from labeler.store import SCHEMA_VERSION, StoreError, connect, init_db, transaction
from labeler.store.migrations import MIGRATIONS, migrate


def _schema(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()


def test_migrations_applied_twice_are_a_no_op(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    db = init_db(path)
    before = _schema(path)
    assert migrate(db.conn) == 0
    db.close()
    init_db(path).close()
    assert _schema(path) == before
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_an_old_database_is_brought_up_to_date_on_open(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with sqlite3.connect(path) as conn:  # a project made by the first release
        conn.executescript(MIGRATIONS[0])
        conn.execute("INSERT INTO rubrics VALUES ('abc', 'old rubric', '2026-01-01T00:00:00+00:00', NULL)")
        conn.execute("PRAGMA user_version=1")
    db = connect(path)
    assert db.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert "note" in db["skips"].columns_dict
    # The rubric in force before the upgrade is still the one in force after it.
    assert list(db.conn.execute("SELECT hash, at FROM rubric_changes")) == [("abc", "2026-01-01T00:00:00+00:00")]


def test_connect_refuses_a_missing_file_and_a_foreign_database(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such project database"):
        connect(tmp_path / "missing.db")
    foreign = tmp_path / "other.db"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(StoreError, match="not a goldpool project"):
        connect(foreign)


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    init_db(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer than this goldpool"):
        connect(path)


def test_the_database_refuses_to_change_or_delete_a_judgment(tmp_path: Path) -> None:
    db = init_db(tmp_path / "p.db")
    with transaction(db):
        db.execute("INSERT INTO documents (doc_id, text, content_hash) VALUES ('d', 't', 'h')")
        db.execute("INSERT INTO queries (query_id, text, content_hash) VALUES ('q', 't', 'h')")
        db.execute("INSERT INTO pool VALUES ('q', 'd', '{}', 1.0, 1, 'now', NULL)")
        db.execute("INSERT INTO annotators (name, role, token_salt, token_hash, created_at) VALUES ('a', 'admin', '', '', 'now')")
        db.execute("INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, at) VALUES ('q', 'd', 1, 2, 'now')")
    for statement in ("UPDATE judgments SET relevance = 0", "DELETE FROM judgments"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute(statement)
    assert [r["relevance"] for r in db["judgments"].rows] == [2]


def test_a_failed_transaction_leaves_nothing_behind(tmp_path: Path) -> None:
    db = init_db(tmp_path / "p.db")
    with pytest.raises(sqlite3.IntegrityError):
        with transaction(db):
            db.execute("INSERT INTO queries (query_id, text, content_hash) VALUES ('q', 't', 'h')")
            db.execute("INSERT INTO queries (query_id, text, content_hash) VALUES ('q', 't', 'h')")
    assert db["queries"].count == 0


def test_a_file_that_is_no_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"doc_id": "d1", "text": "hello"}\n' * 100, encoding="utf-8")
    before = corpus.read_bytes()
    for open_it in (connect, init_db):
        with pytest.raises(StoreError) as caught:
            open_it(corpus)
        assert str(caught.value) == f"{corpus}: not a goldpool project database (file is not a database)"
    assert corpus.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]


def test_a_foreign_database_is_refused_before_anything_is_written_to_it(tmp_path: Path) -> None:
    foreign = tmp_path / "other.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    before = foreign.read_bytes()
    with pytest.raises(StoreError, match="not a goldpool project"):
        connect(foreign)
    # Not even switched to WAL mode (a write to the file's header).
    assert foreign.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


@pytest.mark.parametrize(
    "where",
    [{}, {"path": "q.jsonl"}, {"path": "q.jsonl", "line": 3}, {"field": "text"}, {"path": "q.jsonl", "line": 3, "field": "text"}],
)
def test_store_errors_say_where_as_pooling_errors_do(where: dict) -> None:
    from pooling import located

    where = {"path": None, "line": None, "field": None, **where}
    assert str(StoreError("must not be empty", **where)) == located("must not be empty", **where)
