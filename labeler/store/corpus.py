"""Documents, queries and the pool: every SQL statement for them (runs: :mod:`labeler.store.runs`).

The records come already parsed (:mod:`labeler.retrieval.build` reads the files through
:mod:`pooling`). Adding the same file twice changes nothing; a record whose text differs from
the stored one under the same id is refused unless ``replace=True``. A bad record anywhere
leaves the project exactly as it was.

Queries (a small file) go in one write transaction. A corpus can hold millions of chunks,
and labelling must not wait for it: its new documents go in short transactions of
:data:`BATCH` rows, marked with the import's id and invisible until the last, short
transaction marks the import finished (and applies any ``replace`` changes, kept aside
meanwhile). A failure deletes the import's rows; after ``kill -9`` the next import does.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, TextIO, TypeVar

import sqlite_utils

from labeler.store.connection import transaction
from labeler.store.errors import StoreError
from labeler.store.records import Document, PoolEntry, Query, Recorded
from labeler.store.schema import VISIBLE_DOCUMENTS, now

T = TypeVar("T")

BATCH = 2000


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What one import did: records added, replaced, and already present unchanged."""

    path: str
    added: int
    replaced: int = 0
    unchanged: int = 0


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of ``size`` items (the last may be shorter)."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _meta_json(meta: Any) -> str:
    return json.dumps(dict(meta), ensure_ascii=False, sort_keys=True, default=str)


def visible(table: str) -> str:
    """The SQL condition a row of ``table`` meets when it is visible: a document only once the
    import that wrote it has finished."""
    return VISIBLE_DOCUMENTS if table == "documents" else "1"


def _existing(db: sqlite_utils.Database, table: str, key: str, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    marks = ",".join("?" * len(ids))
    sql = f"SELECT {key}, content_hash, meta FROM {table} WHERE {key} IN ({marks}) AND {visible(table)}"
    return {row[0]: (row[1], row[2]) for row in db.conn.execute(sql, list(ids))}


def _changed_field(db: sqlite_utils.Database, table: str, columns: tuple[str, ...], row: tuple[str, ...]) -> str:
    """The field whose new value differs from the stored one: text first, then title, then meta."""
    fields = [c for c in ("text", "title", "meta") if c in columns]
    sql = f"SELECT {', '.join(fields)} FROM {table} WHERE {columns[0]} = ?"
    stored = dict(zip(fields, db.conn.execute(sql, [row[0]]).fetchone()))
    new = dict(zip(columns, row))
    return next((f for f in fields if new[f] != stored[f]), "text")


def _refuse_change(path: Path, line: int, field_name: str, key: str) -> StoreError:
    return StoreError(
        f"{key!r} is already in the project with different content; "
        "import it again with --replace to overwrite it",
        path=path,
        line=line,
        field=field_name,
    )


def add_documents(
    db: sqlite_utils.Database, path: Path, read: Callable[[], Iterable[Document]], *, replace: bool = False
) -> ImportResult:
    """Add the documents read from ``path``; ``read`` streams them and is called twice.

    The first pass checks every record (the reader's checks and the store's) and writes
    nothing, so a bad file leaves the database file byte for byte as it was. The second pass
    writes in short transactions that labelling can slip between; its rows stay invisible
    until the import is finished, and are deleted if it fails (a full disk, Ctrl-C).

    Raises:
        StoreError: changed content under an existing doc_id without ``replace``, or a change
            to a document that already has judgments; nothing is written.
    """

    def rows() -> Iterator[tuple[int, tuple[str, ...]]]:
        return ((d.line, (d.doc_id, d.title, d.text, _meta_json(d.meta), d.content_hash)) for d in read())

    _import_documents(db, path, None, rows(), replace)  # check only
    started: list[int] = []  # the import's id, once it has a row to write
    try:
        return _import_documents(db, path, started, rows(), replace)
    except BaseException:
        if started:
            _discard_import(db, started[0])
        raise
    finally:
        db.conn.execute("DROP TABLE IF EXISTS temp.replacements")


_DOC_COLUMNS = ("doc_id", "title", "text", "meta", "content_hash")


def _begin_import(db: sqlite_utils.Database, path: Path) -> int:
    """Record a new corpus import (after clearing away imports whose process died)."""
    _clear_abandoned(db)
    with transaction(db):
        cursor = db.conn.execute(
            "INSERT INTO imports (path, started_at, pid, host) VALUES (?, ?, ?, ?)",
            [str(path), now(), os.getpid(), socket.gethostname()],
        )
    return int(cursor.lastrowid or 0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _clear_abandoned(db: sqlite_utils.Database) -> None:
    """Delete the invisible rows of unfinished imports whose process on this host is gone."""
    host = socket.gethostname()
    rows = db.conn.execute("SELECT id, pid FROM imports WHERE finished_at IS NULL AND host = ?", [host]).fetchall()
    for import_id, pid in rows:
        if pid != os.getpid() and not _alive(pid):
            _discard_import(db, import_id)


def _discard_import(db: sqlite_utils.Database, import_id: int) -> None:
    """Delete an unfinished import's rows (short transactions), then its record.

    Its rows were never visible, so the project is as it was before the import began. If
    the project is too busy to finish this now, the next import clears what is left.
    """
    try:
        while True:
            with transaction(db):
                gone = db.conn.execute(
                    "DELETE FROM documents WHERE rowid IN (SELECT rowid FROM documents WHERE import_id = ? LIMIT ?)",
                    [import_id, BATCH * 5],
                ).rowcount
                if not gone:
                    db.conn.execute("DELETE FROM imports WHERE id = ? AND finished_at IS NULL", [import_id])
                    return
    except StoreError:
        return


def _import_documents(
    db: sqlite_utils.Database,
    path: Path,
    started: list[int] | None,
    rows: Iterable[tuple[int, tuple[str, ...]]],
    replace: bool,
) -> ImportResult:
    """Write new documents batch by batch (invisible), keep replacements aside, then make
    everything visible in one short transaction. The import is recorded (its id appended to
    ``started``) before its first row is written; a file with nothing new writes nothing.
    With ``started`` None, only check: every refusal is raised, nothing is written."""
    db.conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS replacements "
        "(doc_id TEXT PRIMARY KEY, line INTEGER, title TEXT, text TEXT, meta TEXT, content_hash TEXT)"
    )
    db.conn.execute("DELETE FROM temp.replacements")
    added = replaced = unchanged = 0
    insert = f"INSERT INTO documents ({', '.join(_DOC_COLUMNS)}, import_id) VALUES (?, ?, ?, ?, ?, ?)"
    for batch in batched(rows, BATCH):
        # Reading and checking happen outside the write lock; only the insert holds it.
        new, kept, same = _classify(db, path, batch, replace)
        added, replaced, unchanged = added + len(new), replaced + len(kept), unchanged + same
        if started is None:
            continue
        if new:
            if not started:
                started.append(_begin_import(db, path))
            try:
                with transaction(db):
                    db.conn.executemany(insert, [(*row, started[0]) for row in new])
            except sqlite3.IntegrityError as exc:
                raise StoreError(
                    f"another import is adding the same doc_id at this moment ({exc}); run one import at a time",
                    path=path,
                ) from exc
            checkpoint(db)
        db.conn.executemany("INSERT INTO temp.replacements VALUES (?, ?, ?, ?, ?, ?)", kept)  # no project lock
    if started is not None and (started or replaced):
        _finish_import(db, path, started[0] if started else None, replacing=bool(replaced))
    return ImportResult(str(path), added, replaced, unchanged)


def _classify(
    db: sqlite_utils.Database, path: Path, batch: list[tuple[int, tuple[str, ...]]], replace: bool
) -> tuple[list[tuple[str, ...]], list[tuple[object, ...]], int]:
    """(new rows, replacements as (doc_id, line, title, text, meta, hash), unchanged count);
    a refused change raises."""
    have = _existing(db, "documents", "doc_id", [row[0] for _, row in batch])
    new: list[tuple[str, ...]] = []
    kept: list[tuple[object, ...]] = []
    unchanged = 0
    for line, row in batch:
        old = have.get(row[0])
        if old is None:
            new.append(row)
        elif old == (row[-1], row[-2]):
            unchanged += 1
        elif not replace:
            raise _refuse_change(path, line, _changed_field(db, "documents", _DOC_COLUMNS, row), row[0])
        else:
            if old[0] != row[-1]:  # the text or title changes, not only metadata
                _refuse_if_judged(db, path, line, "doc_id", row[0])
            kept.append((row[0], line, *row[1:]))
    return new, kept, unchanged


def checkpoint(db: sqlite_utils.Database) -> None:
    """Copy what the WAL holds into the database file now, without waiting for anyone.

    SQLite has the connection whose commit crosses the WAL's size limit do this copy; after
    a bulk write that would be an annotator's key press, paying for the import's pages.
    """
    db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def _finish_import(db: sqlite_utils.Database, path: Path, import_id: int | None, *, replacing: bool) -> None:
    """Apply the replacements and make the import's rows (if any) visible: one transaction."""
    with transaction(db):
        if replacing:
            _apply_replacements(db, path)
        if import_id is not None:
            db.conn.execute("UPDATE imports SET finished_at = ? WHERE id = ?", [now(), import_id])


def _apply_replacements(db: sqlite_utils.Database, path: Path) -> None:
    """Write the kept replacements over the stored documents (inside the final transaction)."""
    judged = db.conn.execute(
        "SELECT r.doc_id, r.line FROM temp.replacements r JOIN documents d ON d.doc_id = r.doc_id "
        "WHERE d.content_hash != r.content_hash AND EXISTS (SELECT 1 FROM judgments j WHERE j.doc_id = r.doc_id) "
        "ORDER BY r.line LIMIT 1"
    ).fetchone()
    if judged is not None:  # labelled while the import ran
        _refuse_if_judged(db, path, judged[1], "doc_id", judged[0])
    db.conn.execute(
        "UPDATE documents SET title = r.title, text = r.text, meta = r.meta, content_hash = r.content_hash "
        "FROM temp.replacements r WHERE documents.doc_id = r.doc_id"
    )


def add_queries(
    db: sqlite_utils.Database, path: Path, queries: Iterable[Query], *, replace: bool = False
) -> ImportResult:
    """Add the queries read from ``path``.

    Raises:
        StoreError: as :func:`add_documents`, for query_id.
    """
    rows = ((q.line, (q.query_id, q.text, _meta_json(q.meta), q.content_hash)) for q in queries)
    return _import_records(db, path, "queries", ("query_id", "text", "meta", "content_hash"), rows, replace)


def _import_records(
    db: sqlite_utils.Database,
    path: Path,
    table: str,
    columns: tuple[str, ...],
    rows: Iterable[tuple[int, tuple[str, ...]]],
    replace: bool,
) -> ImportResult:
    """Stream (line, row) pairs into ``table`` in one transaction; the key is the first column
    and ``meta``/``content_hash`` the last two. Any refusal rolls the whole file back."""
    key = columns[0]
    added = replaced = unchanged = 0
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns[1:])
    insert = (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT ({key}) DO UPDATE SET {updates}"
    )
    with transaction(db):
        for batch in batched(rows, BATCH):
            have = _existing(db, table, key, [row[0] for _, row in batch])
            new: list[tuple[str, ...]] = []
            for line, row in batch:
                old = have.get(row[0])
                if old is None:
                    added += 1
                elif old == (row[-1], row[-2]):
                    unchanged += 1
                    continue
                elif not replace:
                    raise _refuse_change(path, line, _changed_field(db, table, columns, row), row[0])
                else:
                    if old[0] != row[-1]:  # the text or title changes, not only metadata
                        _refuse_if_judged(db, path, line, key, row[0])
                    replaced += 1
                new.append(row)
            db.conn.executemany(insert, new)
    return ImportResult(str(path), added, replaced, unchanged)


def _refuse_if_judged(db: sqlite_utils.Database, path: Path, line: int, key: str, value: str) -> None:
    # A label was given to the text as it was; changing the text under it would silently
    # turn the label into a judgment of something nobody saw.
    judged = db.conn.execute(f"SELECT count(*) FROM judgments WHERE {key} = ?", [value]).fetchone()[0]
    if judged:
        raise StoreError(
            f"{value!r} already has {judged} judgment{'s' if judged != 1 else ''}, made on its current text; "
            "import the new text under a new id instead",
            path=path,
            line=line,
            field="text",
        )


def export_pool(db: sqlite_utils.Database, out: TextIO) -> int:
    """Write the pool as JSON lines (query_id, doc_id, sources, priority), in labelling order.

    Returns:
        The number of entries written.
    """
    count = 0
    for query_id, doc_id, sources, priority in db.conn.execute(
        "SELECT query_id, doc_id, sources, priority FROM pool ORDER BY query_id, position"
    ):
        record = {"query_id": query_id, "doc_id": doc_id, "sources": json.loads(sources), "priority": priority}
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def stats(db: sqlite_utils.Database) -> dict[str, int]:
    """Counts of what the project holds: documents, queries, runs, pool entries, builds."""
    one = lambda sql: db.conn.execute(sql).fetchone()[0]  # noqa: E731
    return {
        "documents": one(f"SELECT count(*) FROM documents WHERE {VISIBLE_DOCUMENTS}"),
        "queries": one("SELECT count(*) FROM queries"),
        "runs": one("SELECT count(*) FROM runs"),
        "run_entries": one("SELECT count(*) FROM run_entries"),
        "pool": one("SELECT count(*) FROM pool"),
        "pooled_queries": one("SELECT count(DISTINCT query_id) FROM pool"),
        "pool_builds": one("SELECT count(*) FROM pool_builds"),
        "judged_entries": one("SELECT count(*) FROM (SELECT DISTINCT query_id, doc_id FROM judgments)"),
    }


def pooled_query_count(db: sqlite_utils.Database) -> int:
    """How many queries have pool entries."""
    return int(db.conn.execute("SELECT count(DISTINCT query_id) FROM pool").fetchone()[0])


def pool_texts(db: sqlite_utils.Database) -> Iterator[tuple[str, str, str, str, str]]:
    """Every pool entry with what a judge reads: ``(query_id, doc_id, query text, title, text)``,
    by query_id, then labelling order."""
    yield from db.conn.execute(
        "SELECT p.query_id, p.doc_id, q.text, d.title, d.text FROM pool p "
        "JOIN queries q ON q.query_id = p.query_id JOIN documents d ON d.doc_id = p.doc_id "
        "ORDER BY p.query_id, p.position"
    )


def pool_queries(db: sqlite_utils.Database) -> list[tuple[str, str]]:
    """Every query as ``(query_id, text)``, by query_id."""
    return [(q, t) for q, t in db.conn.execute("SELECT query_id, text FROM queries ORDER BY query_id")]


def document_keys(db: sqlite_utils.Database) -> list[tuple[str, str]]:
    """Every document as ``(doc_id, content_hash)``, by doc_id: the corpus order of a build."""
    sql = f"SELECT doc_id, content_hash FROM documents WHERE {VISIBLE_DOCUMENTS} ORDER BY doc_id"
    return db.conn.execute(sql).fetchall()


def document_texts(db: sqlite_utils.Database) -> Iterator[tuple[str, str]]:
    """Every document's ``(title, text)``, by doc_id, streamed."""
    yield from db.conn.execute(f"SELECT title, text FROM documents WHERE {VISIBLE_DOCUMENTS} ORDER BY doc_id")


def documents_by_id(db: sqlite_utils.Database, doc_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``{doc_id: (title, text)}`` for the given ids (unknown ids are absent)."""
    found: dict[str, tuple[str, str]] = {}
    for batch in batched(doc_ids, BATCH):
        marks = ",".join("?" * len(batch))
        sql = f"SELECT doc_id, title, text FROM documents WHERE doc_id IN ({marks})"
        found.update((d, (t, x)) for d, t, x in db.conn.execute(sql, batch))
    return found


def database_file(db: sqlite_utils.Database) -> Path | None:
    """The file the project lives in, or None for an in-memory database."""
    main = next((row[2] for row in db.conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    return Path(main) if main else None


_POOL_FINGERPRINT = "SELECT count(*), total(length(sources)), (SELECT max(id) FROM pool_builds) FROM pool"


def _recorded(db: sqlite_utils.Database) -> Recorded:
    recorded: Recorded = {}
    for query_id, doc_id, sources, position in db.conn.execute("SELECT query_id, doc_id, sources, position FROM pool"):
        recorded.setdefault(query_id, {})[doc_id] = (json.loads(sources), position)
    return recorded


def add_pool_build(
    db: sqlite_utils.Database,
    plan: Callable[[Recorded], tuple[Sequence[PoolEntry], Sequence[PoolEntry]]],
    params: Mapping[str, Any],
) -> tuple[int, int, int]:
    """Record one pool build, in one short transaction.

    ``plan`` turns the pool as recorded now into (entries to add, existing entries whose
    sources grew); the new entries are inserted and the grown ones get their new sources and
    priority, nothing else. ``params`` are stored with the build, with the counts added.
    The pool is read and planned outside the write lock; the transaction writes the plan
    only if the pool is still as read (else it plans again, the last time under the lock).

    Returns:
        (build_id, entries added, entries that were already in the pool).
    """
    for attempt in range(3):
        fingerprint = db.conn.execute(_POOL_FINGERPRINT).fetchone()
        recorded = _recorded(db) if attempt < 2 else None
        planned = plan(recorded) if recorded is not None else None
        with transaction(db):
            if recorded is None:  # the pool kept changing: plan under the lock
                recorded = _recorded(db)
                planned = plan(recorded)
            elif db.conn.execute(_POOL_FINGERPRINT).fetchone() != fingerprint:
                continue
            assert planned is not None
            entries, extended = planned
            build_id = _insert_pool(db, entries, {**params, "added": len(entries), "provenance_extended": len(extended)})
            # Provenance only grows: the entry, its position and its labels stay as they were.
            db.conn.executemany(
                "UPDATE pool SET sources = ?, priority = ? WHERE query_id = ? AND doc_id = ?",
                [(json.dumps(dict(e.sources), sort_keys=True), e.priority, e.query_id, e.doc_id) for e in extended],
            )
            counts = build_id, len(entries), sum(len(v) for v in recorded.values())
        checkpoint(db)
        return counts
    raise AssertionError("unreachable: the third attempt plans under the lock")


def _insert_pool(db: sqlite_utils.Database, entries: Sequence[PoolEntry], params: Mapping[str, Any]) -> int:
    at = now()
    cursor = db.conn.execute(
        "INSERT INTO pool_builds (at, params) VALUES (?, ?)", [at, json.dumps(dict(params), sort_keys=True)]
    )
    build_id = int(cursor.lastrowid or 0)
    rows = (
        (e.query_id, e.doc_id, json.dumps(dict(e.sources), sort_keys=True), e.priority, e.position, at, build_id)
        for e in entries
    )
    for batch in batched(rows, BATCH * 5):
        db.conn.executemany(
            "INSERT INTO pool (query_id, doc_id, sources, priority, position, added_at, build_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            batch,
        )
    return build_id
