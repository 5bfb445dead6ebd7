"""Runs: a system's ranked lists, imported under a name, and removed with their provenance in
the pool; every SQL statement for them.

A run joins the pool as a source when the pool is built or extended
(:mod:`labeler.retrieval.build`); removing it takes it out of every pool entry's sources.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from labeler.store import corpus
from labeler.store.connection import transaction
from labeler.store.errors import StoreError
from labeler.store.records import RunRow, ScoredDoc
from labeler.store.schema import now

#: Source names the pool builder uses itself; runs may not take them.
RESERVED_SOURCES = ("bm25", "dense")


def _missing_ids(db: sqlite_utils.Database, table: str, key: str, ids: set[str]) -> set[str]:
    found: set[str] = set()
    ordered = sorted(ids)
    for batch in corpus.batched(ordered, corpus.BATCH):
        marks = ",".join("?" * len(batch))
        sql = f"SELECT {key} FROM {table} WHERE {key} IN ({marks}) AND {corpus.visible(table)}"
        found.update(r[0] for r in db.conn.execute(sql, batch))
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
) -> corpus.ImportResult:
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
            return corpus.ImportResult(str(path), 0, 0, old[1])
        if old is not None:
            raise StoreError(f"a different run named {name!r} is already imported; choose another --name", path=path)
        rows, ranked = read()
        _check_run_ids(db, path, rows)
        db.conn.execute(
            "INSERT INTO runs (name, path, content_hash, imported_at, n_rows) VALUES (?, ?, ?, ?, ?)",
            [name, str(path), file_hash, now(), len(rows)],
        )
        entries = ((name, d.query_id, d.doc_id, d.rank, d.score) for docs in ranked.values() for d in docs)
        for batch in corpus.batched(entries, corpus.BATCH * 5):
            db.conn.executemany(
                "INSERT INTO run_entries (run, query_id, doc_id, rank, score) VALUES (?, ?, ?, ?, ?)", batch
            )
    return corpus.ImportResult(str(path), len(rows))


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


def remove_run(
    db: sqlite_utils.Database, name: str, *, priority: Callable[[Mapping[str, int]], float]
) -> RunRemoval:
    """Remove the run ``name``: its row, its ranked entries and its provenance in the pool.

    In one transaction. Each pool entry the run found loses the run from its ``sources`` and
    gets ``priority(sources it has left)`` as its ``priority``; its
    position (labelling order) is unchanged. An entry that only this run had found is deleted
    with its assignments and reservations, unless it has a label (a judgment, a skip or an
    adjudication): then it stays, with no source and priority 0, and so do its labels.

    Raises:
        StoreError: no run of that name.
    """
    with transaction(db):
        if db.conn.execute("SELECT 1 FROM runs WHERE name = ?", [name]).fetchone() is None:
            names = [r[0] for r in db.conn.execute("SELECT name FROM runs ORDER BY name")]
            known = f" (runs: {', '.join(names)})" if names else " (the project has no run)"
            raise StoreError(f"no run named {name!r}{known}")
        n_entries = db.conn.execute("DELETE FROM run_entries WHERE run = ?", [name]).rowcount
        db.conn.execute("DELETE FROM runs WHERE name = ?", [name])
        db.conn.execute("DELETE FROM candidates WHERE source = ?", [name])  # adaptive pooling's lists
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
                [json.dumps(sources, sort_keys=True), priority(sources), *item],
            )
    return RunRemoval(name, n_entries, changed, removed, kept)


def run_rankings(db: sqlite_utils.Database, depth: int) -> dict[str, dict[str, list[str]]]:
    """``{run: {query_id: [doc_id, ...]}}``: each imported run's top ``depth`` per query."""
    rankings: dict[str, dict[str, list[str]]] = {}
    if depth <= 0:
        return rankings
    sql = "SELECT run, query_id, doc_id FROM run_entries WHERE rank <= ? ORDER BY run, query_id, rank"
    for run, query_id, doc_id in db.conn.execute(sql, [depth]):
        rankings.setdefault(run, {}).setdefault(query_id, []).append(doc_id)
    return rankings
