"""Documents, queries, runs and the pool: every SQL statement for them.

Imports stream their file in batches inside one write transaction: a bad record anywhere
rolls everything back, so the database is exactly as it was. Importing the same file twice
changes nothing; a record whose text differs from the stored one under the same id is
refused unless ``replace=True``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import sqlite_utils

from labeler.store.schema import now, transaction
from pooling import PoolingError
from pooling.pool import RRF_K, Rankings, grown, merge
from pooling.readers import read_corpus, read_queries
from pooling.retrieve import retrieve
from pooling.trec import rank_run, read_run
from pooling.types import search_text

if TYPE_CHECKING:
    from pooling.ray_engine import RayOptions

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


def _refuse_change(path: Path, line: int, field_name: str, key: str) -> PoolingError:
    return PoolingError(
        f"{key!r} is already in the project with different content; "
        "import with --replace (replace=True) to overwrite it",
        path=path,
        line=line,
        field=field_name,
    )


def import_corpus(db: sqlite_utils.Database, path: str | Path, *, replace: bool = False) -> ImportResult:
    """Add the documents of a corpus file (see :mod:`pooling.readers` for formats).

    Raises:
        PoolingError: bad input, changed content under an existing doc_id without
            ``replace``, or a change to a document that already has judgments; nothing is
            written.
    """
    path = Path(path)
    rows = ((d.line, (d.doc_id, d.title, d.text, _meta_json(d.meta), d.content_hash)) for d in read_corpus(path))
    return _import_records(db, path, "documents", ("doc_id", "title", "text", "meta", "content_hash"), rows, replace)


def import_queries(db: sqlite_utils.Database, path: str | Path, *, replace: bool = False) -> ImportResult:
    """Add the queries of a query file (JSONL, CSV, TSV or TREC topics).

    Raises:
        PoolingError: as :func:`import_corpus`, for query_id.
    """
    path = Path(path)
    rows = ((q.line, (q.query_id, q.text, _meta_json(q.meta), q.content_hash)) for q in read_queries(path))
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
        raise PoolingError(
            f"{value!r} already has {judged} judgment(s), made on its current text; "
            "import the new text under a new id instead",
            path=path,
            line=line,
            field="text",
        )


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise PoolingError(f"cannot open: {exc.strerror}", path=path) from exc
    return digest.hexdigest()


def _missing_ids(db: sqlite_utils.Database, table: str, key: str, ids: set[str]) -> set[str]:
    found: set[str] = set()
    ordered = sorted(ids)
    for batch in batched(ordered, BATCH):
        marks = ",".join("?" * len(batch))
        found.update(r[0] for r in db.conn.execute(f"SELECT {key} FROM {table} WHERE {key} IN ({marks})", batch))
    return ids - found


def _check_run_ids(db: sqlite_utils.Database, path: Path, rows: list[Any]) -> None:
    """Refuse a run naming a query or document the project does not have (first bad line)."""
    unknown_q = _missing_ids(db, "queries", "query_id", {r.query_id for r in rows})
    unknown_d = _missing_ids(db, "documents", "doc_id", {r.doc_id for r in rows})
    for row in rows:
        if row.query_id in unknown_q:
            raise PoolingError(
                f"unknown query {row.query_id!r}; import the queries first", path=path, line=row.line, field="query_id"
            )
        if row.doc_id in unknown_d:
            raise PoolingError(
                f"unknown document {row.doc_id!r}; import the corpus first", path=path, line=row.line, field="doc_id"
            )


def import_run(db: sqlite_utils.Database, path: str | Path, name: str) -> ImportResult:
    """Add a TREC run under ``name``, ranked as trec_eval ranks it.

    Importing the same file under the same name again is a no-op; a different file under a
    name already taken is refused.

    Raises:
        PoolingError: bad input, unknown query or document, or a name already taken.
    """
    path = Path(path)
    if not name or any(ch.isspace() for ch in name) or name in RESERVED_SOURCES:
        raise PoolingError(
            f"run name {name!r} must be non-empty, without whitespace, and not one of {', '.join(RESERVED_SOURCES)}"
        )
    file_hash = _file_hash(path)
    with transaction(db):
        old = db.conn.execute("SELECT content_hash, n_rows FROM runs WHERE name = ?", [name]).fetchone()
        if old is not None and old[0] == file_hash:
            return ImportResult(str(path), 0, 0, old[1])
        if old is not None:
            raise PoolingError(f"a different run named {name!r} is already imported; choose another --name", path=path)
        rows = list(read_run(path))
        _check_run_ids(db, path, rows)
        db.conn.execute(
            "INSERT INTO runs (name, path, content_hash, imported_at, n_rows) VALUES (?, ?, ?, ?, ?)",
            [name, str(path), file_hash, now(), len(rows)],
        )
        ranked = rank_run(rows)
        entries = ((name, d.query_id, d.doc_id, d.rank, d.score) for docs in ranked.values() for d in docs)
        for batch in batched(entries, BATCH * 5):
            db.conn.executemany(
                "INSERT INTO run_entries (run, query_id, doc_id, rank, score) VALUES (?, ?, ?, ?, ?)", batch
            )
    return ImportResult(str(path), len(rows))


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


@dataclass(frozen=True, slots=True)
class PoolBuildResult:
    """What one pool build did.

    Attributes:
        build_id: row of ``pool_builds`` recording the parameters.
        queries: queries pooled.
        added: pool entries added by this build.
        kept: entries that were already in the pool (left untouched).
        per_source: documents each source put forward (summed over queries).
        encoded: texts the dense model encoded (0 on a warm cache).
        seconds: wall time per stage, and ``total``.
    """

    build_id: int
    queries: int
    added: int
    kept: int
    per_source: dict[str, int] = field(default_factory=dict)
    encoded: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


def default_cache_dir(db: sqlite_utils.Database) -> Path:
    """``<database file>.cache``, beside the project database."""
    main = next((row[2] for row in db.conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    if not main:
        raise PoolingError("an in-memory database has no default cache directory; pass cache_dir")
    return Path(main + ".cache")


def _search_texts(db: sqlite_utils.Database) -> Iterator[str]:
    for title, text in db.conn.execute("SELECT title, text FROM documents ORDER BY doc_id"):
        yield search_text(title, text)


def _fetcher(db: sqlite_utils.Database, doc_ids: Sequence[str]) -> Callable[[Sequence[int]], list[str]]:
    def fetch(positions: Sequence[int]) -> list[str]:
        wanted = [doc_ids[p] for p in positions]
        found: dict[str, str] = {}
        for batch in batched(wanted, BATCH):
            marks = ",".join("?" * len(batch))
            sql = f"SELECT doc_id, title, text FROM documents WHERE doc_id IN ({marks})"
            found.update((d, search_text(t, x)) for d, t, x in db.conn.execute(sql, batch))
        return [found[d] for d in wanted]

    return fetch


def _run_rankings(db: sqlite_utils.Database, depth: int) -> dict[str, dict[str, list[str]]]:
    rankings: dict[str, dict[str, list[str]]] = {}
    if depth <= 0:
        return rankings
    sql = "SELECT run, query_id, doc_id FROM run_entries WHERE rank <= ? ORDER BY run, query_id, rank"
    for run, query_id, doc_id in db.conn.execute(sql, [depth]):
        rankings.setdefault(run, {}).setdefault(query_id, []).append(doc_id)
    return rankings


def build_pool(
    db: sqlite_utils.Database,
    *,
    bm25_depth: int = 50,
    dense_depth: int = 50,
    run_depth: int = 50,
    model: str | Path | None = None,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    ray: RayOptions | None = None,
) -> PoolBuildResult:
    """Pool every query: union of BM25, dense and every run's top-k, ordered by RRF.

    Existing pool entries are kept exactly as they are; only new (query, doc) pairs are
    added, after the query's existing positions (see :mod:`pooling.pool`). A depth of 0
    turns a source off. With ``ray``, the chunks and queries the embedding cache lacks are
    encoded on Ray (:mod:`pooling.ray_engine`); the pool is the same.

    Raises:
        PoolingError: no queries or documents, a negative depth, or an unusable model.
    """
    for name, depth in (("bm25_depth", bm25_depth), ("dense_depth", dense_depth), ("run_depth", run_depth)):
        if depth < 0:
            raise PoolingError(f"{name} must be 0 (off) or more, not {depth}")
    started = time.perf_counter()
    queries = [(q, t) for q, t in db.conn.execute("SELECT query_id, text FROM queries ORDER BY query_id")]
    ids_keys = db.conn.execute("SELECT doc_id, content_hash FROM documents ORDER BY doc_id").fetchall()
    if not queries or not ids_keys:
        raise PoolingError("nothing to pool: import a corpus and queries first")
    doc_ids, doc_keys = [row[0] for row in ids_keys], [row[1] for row in ids_keys]
    del ids_keys
    found = retrieve(
        queries,
        doc_ids,
        doc_keys,
        lambda: _search_texts(db),
        _fetcher(db, doc_ids),
        bm25_depth=bm25_depth,
        dense_depth=dense_depth,
        model=model,
        cache_dir=(cache_dir if cache_dir is not None else default_cache_dir(db)) if dense_depth > 0 else None,
        progress=progress,
        ray=ray,
    )
    rankings = {**found.rankings, **_run_rankings(db, run_depth)}
    depths = {"bm25_depth": bm25_depth, "dense_depth": dense_depth, "run_depth": run_depth}
    params = {**depths, "model": found.model, "model_identity": found.model_identity, "sources": sorted(rankings), "rrf_k": RRF_K}
    with transaction(db):
        build_id, added, kept = _write_pool(db, rankings, params)
    per_source = {s: sum(len(d) for d in r.values()) for s, r in sorted(rankings.items())}
    seconds = {**found.seconds, "total": time.perf_counter() - started}
    return PoolBuildResult(build_id, len(queries), added, kept, per_source, found.encoded, seconds)


def _write_pool(db: sqlite_utils.Database, rankings: Rankings, params: dict[str, Any]) -> tuple[int, int, int]:
    recorded: dict[str, dict[str, tuple[dict[str, int], int]]] = {}
    for query_id, doc_id, sources, position in db.conn.execute("SELECT query_id, doc_id, sources, position FROM pool"):
        recorded.setdefault(query_id, {})[doc_id] = (json.loads(sources), position)
    positions = {q: {d: pos for d, (_, pos) in docs.items()} for q, docs in recorded.items()}
    entries = merge(rankings, positions)
    extended = grown(rankings, recorded)
    params = {**params, "added": len(entries), "provenance_extended": len(extended)}
    at = now()
    cursor = db.conn.execute(
        "INSERT INTO pool_builds (at, params) VALUES (?, ?)", [at, json.dumps(params, sort_keys=True)]
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
    # Provenance only grows: the entry, its position and its labels stay as they were.
    db.conn.executemany(
        "UPDATE pool SET sources = ?, priority = ? WHERE query_id = ? AND doc_id = ?",
        [(json.dumps(dict(e.sources), sort_keys=True), e.priority, e.query_id, e.doc_id) for e in extended],
    )
    return build_id, len(entries), sum(len(v) for v in recorded.values())
