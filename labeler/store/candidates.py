"""Candidate lists and what adaptive pooling reads and writes (SQL only).

The ``candidates`` table keeps each pool source's ranking of a query to the candidate depth;
:mod:`labeler.retrieval.adaptive` reads it with the labels so far and asks :mod:`pooling.strategies` what
to judge next; the hand-out (:mod:`labeler.store.assign`) adds chosen candidates to the pool here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

import sqlite_utils

from labeler.store.schema import now

__all__ = [
    "add_to_pool",
    "begin_check",
    "check_urn",
    "judged_order",
    "candidate_queries",
    "labels",
    "pending",
    "pool_depth",
    "pool_sources",
    "query_rankings",
    "query_text",
    "replace_rankings",
    "texts",
]


def replace_rankings(db: sqlite_utils.Database, rankings: Mapping[str, Mapping[str, Sequence[str]]]) -> int:
    """Store ``{source: {query_id: [doc_id, ...]}}``, replacing those sources' rankings.

    Call inside the transaction that records the pool build. Returns the rows written.
    """
    written = 0
    for source in sorted(rankings):
        db.conn.execute("DELETE FROM candidates WHERE source = ?", [source])
        rows = [
            (query_id, source, doc_id, rank)
            for query_id, doc_ids in rankings[source].items()
            for rank, doc_id in enumerate(doc_ids, start=1)
        ]
        db.conn.executemany("INSERT INTO candidates (query_id, source, doc_id, rank) VALUES (?, ?, ?, ?)", rows)
        written += len(rows)
    return written


def query_rankings(db: sqlite_utils.Database, query_id: str) -> dict[str, list[str]]:
    """``{source: [doc_id, ...]}`` best first: the query's candidate lists (empty: none kept)."""
    found: dict[str, list[str]] = {}
    sql = "SELECT source, doc_id FROM candidates WHERE query_id = ? ORDER BY source, rank"
    for source, doc_id in db.execute(sql, [query_id]):
        found.setdefault(source, []).append(doc_id)
    return found


def pool_sources(db: sqlite_utils.Database, query_id: str) -> dict[str, dict[str, int]]:
    """``{doc_id: {source: rank}}``: the provenance of the query's pool entries, in pool order."""
    rows = db.execute("SELECT doc_id, sources FROM pool WHERE query_id = ? ORDER BY position", [query_id]).fetchall()
    return {doc_id: json.loads(sources) for doc_id, sources in rows}


def candidate_queries(db: sqlite_utils.Database) -> list[str]:
    """Queries with a pool, in import order."""
    sql = "SELECT q.query_id FROM queries q WHERE EXISTS (SELECT 1 FROM pool p WHERE p.query_id = q.query_id) ORDER BY q.rowid"
    return [r[0] for r in db.execute(sql)]


def query_text(db: sqlite_utils.Database, query_id: str) -> str:
    """The query's text ('' for an unknown query)."""
    row = db.execute("SELECT text FROM queries WHERE query_id = ?", [query_id]).fetchone()
    return "" if row is None else row[0]


def texts(db: sqlite_utils.Database, doc_ids: Iterable[str]) -> dict[str, str]:
    """doc_id -> title and text, for the given documents."""
    wanted = sorted(set(doc_ids))
    found: dict[str, str] = {}
    for start in range(0, len(wanted), 500):
        batch = wanted[start : start + 500]
        sql = f"SELECT doc_id, title, text FROM documents WHERE doc_id IN ({','.join('?' * len(batch))})"
        found.update((d, f"{t}\n{x}" if t else x) for d, t, x in db.execute(sql, batch))
    return found


def pool_depth(db: sqlite_utils.Database) -> int:
    """The deepest source depth of the latest pool build (50 when none is recorded)."""
    row = db.execute("SELECT params FROM pool_builds ORDER BY id DESC LIMIT 1").fetchone()
    params = json.loads(row[0]) if row else {}
    depths = [int(params.get(k, 0) or 0) for k in ("bm25_depth", "dense_depth", "run_depth")]
    return max(depths) or 50


def labels(db: sqlite_utils.Database, query_id: str) -> dict[str, bool]:
    """doc_id -> relevant (grade >= 1) for the query's judged entries.

    The latest adjudication decides where there is one; otherwise the latest judgment of
    each annotator votes, and the entry is relevant when at least half the votes say so.
    """
    votes: dict[str, list[bool]] = {}
    for doc_id, relevance in db.execute(
        "SELECT doc_id, relevance FROM current_judgments WHERE query_id = ?", [query_id]
    ):
        votes.setdefault(doc_id, []).append(relevance >= 1)
    found = {d: 2 * sum(v) >= len(v) for d, v in votes.items()}
    adjudicated = db.execute(
        "SELECT doc_id, relevance FROM current_adjudications WHERE query_id = ?",
        [query_id],
    ).fetchall()
    found.update((d, r >= 1) for d, r in adjudicated)
    return found


def judged_order(db: sqlite_utils.Database, query_id: str) -> list[str]:
    """The query's judged doc_ids in the order they were first judged (adjudicated-only last)."""
    sql = """
    SELECT doc_id FROM (
        SELECT doc_id, min(id) AS first, 0 AS late FROM judgments WHERE query_id = :q GROUP BY doc_id
        UNION ALL
        SELECT doc_id, min(id), 1 FROM adjudications WHERE query_id = :q
            AND doc_id NOT IN (SELECT doc_id FROM judgments WHERE query_id = :q) GROUP BY doc_id
    ) ORDER BY late, first
    """
    return [r[0] for r in db.execute(sql, {"q": query_id})]


def _check_key(query_id: str) -> str:
    return f"check_sample.{query_id}"


def check_urn(db: sqlite_utils.Database, query_id: str) -> frozenset[str] | None:
    """The urn of the query's random check sample (the ``sample`` stopping rule), if begun.

    Kept in the ``settings`` table under ``check_sample.<query_id>``: unlike the hand-out's
    bookkeeping it cannot be rebuilt from the labels (which judgments were draws depends on
    when the sample began), so it is written once and never changed.
    """
    row = db.execute("SELECT value FROM settings WHERE key = ?", [_check_key(query_id)]).fetchone()
    return None if row is None else frozenset(json.loads(row[0]))


def begin_check(db: sqlite_utils.Database, query_id: str, urn: Iterable[str]) -> None:
    """Record the query's check sample urn, unless one is recorded. Call inside a write transaction."""
    db.conn.execute("INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)", [_check_key(query_id), json.dumps(sorted(urn))])


def pending(db: sqlite_utils.Database, query_id: str) -> set[str]:
    """The query's entries handed out (assigned or held) that nobody has judged yet."""
    sql = """
    SELECT doc_id FROM assignments WHERE query_id = :q AND shown_order > 0
    UNION SELECT doc_id FROM reservations WHERE query_id = :q
    EXCEPT SELECT doc_id FROM judgments WHERE query_id = :q
    """
    return {r[0] for r in db.execute(sql, {"q": query_id})}


def add_to_pool(
    db: sqlite_utils.Database, query_id: str, entries: Sequence[tuple[str, Mapping[str, int], float]]
) -> int:
    """Append (doc_id, sources, priority) entries to the query's pool after its last position.

    Entries already in the pool are left as they are. Call inside a write transaction.
    Returns how many were added.
    """
    have = set(pool_sources(db, query_id))
    fresh = [e for e in entries if e[0] not in have]
    if not fresh:
        return 0
    last = db.execute("SELECT coalesce(max(position), 0) FROM pool WHERE query_id = ?", [query_id]).fetchone()[0]
    build = db.execute("SELECT max(id) FROM pool_builds").fetchone()[0]
    at = now()
    db.conn.executemany(
        "INSERT INTO pool (query_id, doc_id, sources, priority, position, added_at, build_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (query_id, doc_id, json.dumps(dict(sources), sort_keys=True), priority, last + offset, at, build)
            for offset, (doc_id, sources, priority) in enumerate(fresh, start=1)
        ],
    )
    return len(fresh)
