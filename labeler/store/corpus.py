"""Documents, queries, runs and the pool: every SQL statement for them.

The records come already parsed (:mod:`labeler.build` reads the files through
:mod:`pooling`). Adding them streams the records in batches inside one write transaction: a
bad record anywhere rolls everything back, so the database is exactly as it was. Adding the
same file twice changes nothing; a record whose text differs from the stored one under the
same id is refused unless ``replace=True``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import sqlite_utils

from labeler.store.schema import StoreError, now, transaction

if TYPE_CHECKING:
    from pooling.types import Document, PoolEntry, Query, RunRow, ScoredDoc

#: The pool as recorded: ``{query_id: {doc_id: (sources, position)}}``.
Recorded = dict[str, dict[str, tuple[dict[str, int], int]]]

T = TypeVar("T")

BATCH = 2000
#: Source names the pool builder uses itself; runs may not take them.
RESERVED_SOURCES = ("bm25", "dense")


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


def _existing(db: sqlite_utils.Database, table: str, key: str, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    marks = ",".join("?" * len(ids))
    sql = f"SELECT {key}, content_hash, meta FROM {table} WHERE {key} IN ({marks})"
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
    db: sqlite_utils.Database, path: Path, documents: Iterable[Document], *, replace: bool = False
) -> ImportResult:
    """Add the documents read from ``path`` (an error in the stream rolls everything back).

    Raises:
        StoreError: changed content under an existing doc_id without ``replace``, or a change
            to a document that already has judgments; nothing is written.
    """
    rows = ((d.line, (d.doc_id, d.title, d.text, _meta_json(d.meta), d.content_hash)) for d in documents)
    return _import_records(db, path, "documents", ("doc_id", "title", "text", "meta", "content_hash"), rows, replace)


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


def _missing_ids(db: sqlite_utils.Database, table: str, key: str, ids: set[str]) -> set[str]:
    found: set[str] = set()
    ordered = sorted(ids)
    for batch in batched(ordered, BATCH):
        marks = ",".join("?" * len(batch))
        found.update(r[0] for r in db.conn.execute(f"SELECT {key} FROM {table} WHERE {key} IN ({marks})", batch))
    return ids - found


def _check_run_ids(db: sqlite_utils.Database, path: Path, rows: Sequence[RunRow]) -> None:
    """Refuse a run naming a query or document the project does not have (first bad line)."""
    unknown_q = _missing_ids(db, "queries", "query_id", {r.query_id for r in rows})
    unknown_d = _missing_ids(db, "documents", "doc_id", {r.doc_id for r in rows})
    for row in rows:
        if row.query_id in unknown_q:
            raise StoreError(
                f"unknown query {row.query_id!r}; import the queries first", path=path, line=row.line, field="query_id"
            )
        if row.doc_id in unknown_d:
            raise StoreError(
                f"unknown document {row.doc_id!r}; import the corpus first", path=path, line=row.line, field="doc_id"
            )


def add_run(
    db: sqlite_utils.Database,
    path: Path,
    name: str,
    file_hash: str,
    read: Callable[[], tuple[list[RunRow], Mapping[str, Sequence[ScoredDoc]]]],
) -> ImportResult:
    """Add the run read from ``path`` under ``name``: its rows and their trec_eval ranking.

    ``read`` is called only when the run is new; the same file (by ``file_hash``) under the
    same name again is a no-op, a different file under a name already taken is refused.

    Raises:
        StoreError: a reserved or malformed name, a name already taken, or an unknown query
            or document.
    """
    if not name or any(ch.isspace() for ch in name) or name in RESERVED_SOURCES:
        raise StoreError(
            f"run name {name!r} must be non-empty, without whitespace, and not one of {', '.join(RESERVED_SOURCES)}"
        )
    with transaction(db):
        old = db.conn.execute("SELECT content_hash, n_rows FROM runs WHERE name = ?", [name]).fetchone()
        if old is not None and old[0] == file_hash:
            return ImportResult(str(path), 0, 0, old[1])
        if old is not None:
            raise StoreError(f"a different run named {name!r} is already imported; choose another --name", path=path)
        rows, ranked = read()
        _check_run_ids(db, path, rows)
        db.conn.execute(
            "INSERT INTO runs (name, path, content_hash, imported_at, n_rows) VALUES (?, ?, ?, ?, ?)",
            [name, str(path), file_hash, now(), len(rows)],
        )
        entries = ((name, d.query_id, d.doc_id, d.rank, d.score) for docs in ranked.values() for d in docs)
        for batch in batched(entries, BATCH * 5):
            db.conn.executemany(
                "INSERT INTO run_entries (run, query_id, doc_id, rank, score) VALUES (?, ?, ?, ?, ?)", batch
            )
    return ImportResult(str(path), len(rows))


@dataclass(frozen=True, slots=True)
class RunRemoval:
    """What removing a run did.

    Attributes:
        name: the run.
        run_entries: its ranked rows deleted.
        provenance_removed: pool entries the run no longer appears in as a source.
        entries_removed: pool entries only the run had found, without any label, deleted
            (with their unlabelled assignments and reservations).
        entries_kept: pool entries only the run had found that stay because they have labels
            (judgments, skips or adjudications); they now have no source and priority 0.
    """

    name: str
    run_entries: int
    provenance_removed: int
    entries_removed: int
    entries_kept: int


_LABELLED = """
    EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = ? AND j.doc_id = ?)
    OR EXISTS (SELECT 1 FROM skips s WHERE s.query_id = ? AND s.doc_id = ?)
    OR EXISTS (SELECT 1 FROM adjudications a WHERE a.query_id = ? AND a.doc_id = ?)
"""


def remove_run(db: sqlite_utils.Database, name: str) -> RunRemoval:
    """Remove the run ``name``: its row, its ranked entries and its provenance in the pool.

    In one transaction. Each pool entry the run found loses the run from its ``sources`` and
    gets the reciprocal-rank fusion of the sources it has left as its ``priority``; its
    position (labelling order) is unchanged. An entry that only this run had found is deleted
    with its assignments and reservations, unless it has a label (a judgment, a skip or an
    adjudication): then it stays, with no source and priority 0, and so do its labels.

    Raises:
        StoreError: no run of that name.
    """
    from pooling.pool import rrf_priority

    with transaction(db):
        if db.conn.execute("SELECT 1 FROM runs WHERE name = ?", [name]).fetchone() is None:
            names = [r[0] for r in db.conn.execute("SELECT name FROM runs ORDER BY name")]
            known = f" (runs: {', '.join(names)})" if names else " (the project has no run)"
            raise StoreError(f"no run named {name!r}{known}")
        n_entries = db.conn.execute("DELETE FROM run_entries WHERE run = ?", [name]).rowcount
        db.conn.execute("DELETE FROM runs WHERE name = ?", [name])
        found = db.conn.execute(
            "SELECT query_id, doc_id, sources FROM pool WHERE sources LIKE ?", [f"%{json.dumps(name)}%"]
        ).fetchall()
        changed = removed = kept = 0
        for query_id, doc_id, text in found:
            sources = json.loads(text)
            if sources.pop(name, None) is None:
                continue
            changed += 1
            item = [query_id, doc_id]
            if not sources and not db.conn.execute(f"SELECT {_LABELLED}", item * 3).fetchone()[0]:
                db.conn.execute("DELETE FROM reservations WHERE query_id = ? AND doc_id = ?", item)
                db.conn.execute("DELETE FROM assignments WHERE query_id = ? AND doc_id = ?", item)
                db.conn.execute("DELETE FROM pool WHERE query_id = ? AND doc_id = ?", item)
                removed += 1
                continue
            kept += not sources
            db.conn.execute(
                "UPDATE pool SET sources = ?, priority = ? WHERE query_id = ? AND doc_id = ?",
                [json.dumps(sources, sort_keys=True), rrf_priority(sources), *item],
            )
    return RunRemoval(name, n_entries, changed, removed, kept)


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
        "documents": one("SELECT count(*) FROM documents"),
        "queries": one("SELECT count(*) FROM queries"),
        "runs": one("SELECT count(*) FROM runs"),
        "run_entries": one("SELECT count(*) FROM run_entries"),
        "pool": one("SELECT count(*) FROM pool"),
        "pooled_queries": one("SELECT count(DISTINCT query_id) FROM pool"),
        "pool_builds": one("SELECT count(*) FROM pool_builds"),
        "judged_entries": one("SELECT count(*) FROM (SELECT DISTINCT query_id, doc_id FROM judgments)"),
    }


def pool_queries(db: sqlite_utils.Database) -> list[tuple[str, str]]:
    """Every query as ``(query_id, text)``, by query_id."""
    return [(q, t) for q, t in db.conn.execute("SELECT query_id, text FROM queries ORDER BY query_id")]


def document_keys(db: sqlite_utils.Database) -> list[tuple[str, str]]:
    """Every document as ``(doc_id, content_hash)``, by doc_id: the corpus order of a build."""
    return db.conn.execute("SELECT doc_id, content_hash FROM documents ORDER BY doc_id").fetchall()


def document_texts(db: sqlite_utils.Database) -> Iterator[tuple[str, str]]:
    """Every document's ``(title, text)``, by doc_id, streamed."""
    yield from db.conn.execute("SELECT title, text FROM documents ORDER BY doc_id")


def documents_by_id(db: sqlite_utils.Database, doc_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``{doc_id: (title, text)}`` for the given ids (unknown ids are absent)."""
    found: dict[str, tuple[str, str]] = {}
    for batch in batched(doc_ids, BATCH):
        marks = ",".join("?" * len(batch))
        sql = f"SELECT doc_id, title, text FROM documents WHERE doc_id IN ({marks})"
        found.update((d, (t, x)) for d, t, x in db.conn.execute(sql, batch))
    return found


def run_rankings(db: sqlite_utils.Database, depth: int) -> dict[str, dict[str, list[str]]]:
    """``{run: {query_id: [doc_id, ...]}}``: each imported run's top ``depth`` per query."""
    rankings: dict[str, dict[str, list[str]]] = {}
    if depth <= 0:
        return rankings
    sql = "SELECT run, query_id, doc_id FROM run_entries WHERE rank <= ? ORDER BY run, query_id, rank"
    for run, query_id, doc_id in db.conn.execute(sql, [depth]):
        rankings.setdefault(run, {}).setdefault(query_id, []).append(doc_id)
    return rankings


def database_file(db: sqlite_utils.Database) -> Path | None:
    """The file the project lives in, or None for an in-memory database."""
    main = next((row[2] for row in db.conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    return Path(main) if main else None


def add_pool_build(
    db: sqlite_utils.Database,
    plan: Callable[[Recorded], tuple[Sequence[PoolEntry], Sequence[PoolEntry]]],
    params: Mapping[str, Any],
) -> tuple[int, int, int]:
    """Record one pool build, in one transaction.

    ``plan`` turns the pool as recorded now into (entries to add, existing entries whose
    sources grew); the new entries are inserted and the grown ones get their new sources and
    priority, nothing else. ``params`` are stored with the build, with the counts added.

    Returns:
        (build_id, entries added, entries that were already in the pool).
    """
    with transaction(db):
        recorded: Recorded = {}
        for query_id, doc_id, sources, position in db.conn.execute("SELECT query_id, doc_id, sources, position FROM pool"):
            recorded.setdefault(query_id, {})[doc_id] = (json.loads(sources), position)
        entries, extended = plan(recorded)
        build_id = _insert_pool(db, entries, {**params, "added": len(entries), "provenance_extended": len(extended)})
        # Provenance only grows: the entry, its position and its labels stay as they were.
        db.conn.executemany(
            "UPDATE pool SET sources = ?, priority = ? WHERE query_id = ? AND doc_id = ?",
            [(json.dumps(dict(e.sources), sort_keys=True), e.priority, e.query_id, e.doc_id) for e in extended],
        )
    return build_id, len(entries), sum(len(v) for v in recorded.values())


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
