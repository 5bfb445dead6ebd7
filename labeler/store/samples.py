"""Designed samples of the pool: which entries people label, with their inclusion probabilities."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from labeler.store.access import require_admin
from labeler.store.connection import transaction
from labeler.store.errors import StoreError
from labeler.store.holds import queued_holders
from labeler.store.schema import now
from labeler.store.vocabulary import Caller

DESIGNS = ("queries", "stratified")


@dataclass(frozen=True, slots=True)
class PoolEntry:
    """A pool entry as a sample design sees it: its query, its best rank in any source."""

    query_id: str
    doc_id: str
    best_rank: int  # 0: no source gave a rank


@dataclass(frozen=True, slots=True)
class Sample:
    """A stored sample: ``items`` maps (query_id, doc_id) to the entry's inclusion probability."""

    name: str
    design: str
    judge: str | None
    seed: int
    params: dict[str, Any]
    created_at: str
    items: dict[tuple[str, str], float]


def pool_entries(db: sqlite_utils.Database, *, caller: Caller) -> list[PoolEntry]:
    """Every pool entry, queries in import order and entries in pool order."""
    require_admin(db, caller)
    rows = db.execute(
        "SELECT p.query_id, p.doc_id, p.sources FROM pool p JOIN queries q ON q.query_id = p.query_id "
        "ORDER BY q.rowid, p.position"
    )
    out = []
    for q, d, sources in rows:
        ranks = [int(r) for r in json.loads(sources).values() if isinstance(r, int | float) and r >= 1]
        out.append(PoolEntry(q, d, min(ranks) if ranks else 0))
    return out


def query_ids(db: sqlite_utils.Database, *, caller: Caller) -> list[str]:
    """The project's queries that have a pool entry, in import order."""
    require_admin(db, caller)
    return [r[0] for r in db.execute(
        "SELECT q.query_id FROM queries q WHERE EXISTS (SELECT 1 FROM pool p WHERE p.query_id = q.query_id) "
        "ORDER BY q.rowid")]


def relevance_grades(db: sqlite_utils.Database, judge: str, *, caller: Caller) -> dict[tuple[str, str], int]:
    """The judge's current relevance grade per pool entry (entries without a parsed grade left out).

    Raises:
        StoreError: the judge has no relevance verdict in the project.
    """
    require_admin(db, caller)
    found = db.execute("SELECT 1 FROM judge_verdicts WHERE judge = ? AND task = 'relevance' LIMIT 1", [judge]).fetchone()
    if found is None:
        known = [r[0] for r in db.execute("SELECT DISTINCT judge FROM judge_verdicts WHERE task = 'relevance' ORDER BY judge")]
        raise StoreError(f"judge {judge!r} has no relevance verdict in this project"
                         + (f" (judges with one: {', '.join(known)})" if known else " (run-judge --task relevance first)"))
    rows = db.execute(
        "SELECT query_id, doc_id, verdict FROM current_judge_verdicts WHERE judge = ? AND task = 'relevance' "
        "AND verdict IS NOT NULL", [judge])
    out: dict[tuple[str, str], int] = {}
    for q, d, v in rows:
        try:
            out[(q, d)] = int(v)
        except (TypeError, ValueError):
            continue
    return out


def save_sample(
    db: sqlite_utils.Database, name: str, design: str, judge: str | None, seed: int, params: dict[str, Any],
    items: Sequence[tuple[str, str, float]], *, caller: Caller,
) -> Sample:
    """Store a sample under a new name.

    Raises:
        StoreError: a taken or empty name, an unknown design, a probability outside (0, 1],
            an entry not in the pool, no item; nothing is written.
    """
    require_admin(db, caller)
    name = name.strip()
    if not name:
        raise StoreError("sample name: give a non-empty name")
    if design not in DESIGNS:
        raise StoreError(f"design {design!r}: choose from {', '.join(DESIGNS)}")
    if not items:
        raise StoreError(f"sample {name!r}: no pool entry was drawn; give a larger share or budget")
    bad = [(q, d, p) for q, d, p in items if not 0 < p <= 1]
    if bad:
        raise StoreError(f"sample {name!r}: entry {bad[0][0]}/{bad[0][1]} has probability {bad[0][2]}, outside (0, 1]")
    with transaction(db):
        if db.execute("SELECT 1 FROM samples WHERE name = ?", [name]).fetchone() is not None:
            raise StoreError(f"sample {name!r} exists already: a sample never changes, choose another name")
        pooled = {(q, d) for q, d in db.execute("SELECT query_id, doc_id FROM pool")}
        missing = [(q, d) for q, d, _ in items if (q, d) not in pooled]
        if missing:
            raise StoreError(f"sample {name!r}: {missing[0][0]}/{missing[0][1]} is not a pool entry")
        at = now()
        db.execute("INSERT INTO samples (name, design, judge, seed, params, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                   [name, design, judge, seed, json.dumps(params, sort_keys=True), at])
        db.conn.executemany("INSERT INTO sample_items (sample, query_id, doc_id, probability) VALUES (?, ?, ?, ?)",
                       [(name, q, d, float(p)) for q, d, p in items])
    return get_sample(db, name, caller=caller)


def get_sample(db: sqlite_utils.Database, name: str, *, caller: Caller) -> Sample:
    """The stored sample ``name``.

    Raises:
        StoreError: no such sample.
    """
    require_admin(db, caller)
    row = db.execute("SELECT name, design, judge, seed, params, created_at FROM samples WHERE name = ?", [name]).fetchone()
    if row is None:
        known = sample_names(db)
        raise StoreError(f"no sample {name!r} in this project"
                         + (f" (samples: {', '.join(known)})" if known else " (plan one with goldpool plan-sample)"))
    items = {(q, d): float(p) for q, d, p in db.execute(
        "SELECT query_id, doc_id, probability FROM sample_items WHERE sample = ? ORDER BY query_id, doc_id", [name])}
    return Sample(row[0], row[1], row[2], int(row[3]), json.loads(row[4]), row[5], items)


def sample_names(db: sqlite_utils.Database) -> list[str]:
    """Names of the stored samples, oldest first."""
    return [r[0] for r in db.execute("SELECT name FROM samples ORDER BY created_at, name")]


def check_sample(db: sqlite_utils.Database, name: str) -> None:
    """Raise StoreError unless sample ``name`` exists (the ``sample`` setting names one)."""
    if db.execute("SELECT 1 FROM samples WHERE name = ?", [name]).fetchone() is None:
        known = sample_names(db)
        raise StoreError(f"setting sample: no sample {name!r} in this project"
                         + (f" (samples: {', '.join(known)})" if known else " (plan one with goldpool plan-sample)"))


@dataclass(frozen=True, slots=True)
class Holders:
    """Where entries without a label in a version are: ``labelled`` by someone since; in the
    queue of an active annotator, unlabelled (``held``: entries per annotator name, most
    first; ``held_entries``: how many entries, one held by two counted once); the rest
    (``unassigned``) handed out to nobody."""

    held: dict[str, int]
    held_entries: int
    labelled: int
    unassigned: int


def unlabelled_holders(db: sqlite_utils.Database, items: Sequence[tuple[str, str]], *, caller: Caller) -> Holders:
    """Of ``items``, those labelled by now, and who holds the others unlabelled."""
    require_admin(db, caller)
    labelled = {(q, d) for q, d in db.execute("SELECT DISTINCT query_id, doc_id FROM current_judgments")}
    done = [item for item in items if item in labelled]
    queued = queued_holders(db, [item for item in items if item not in labelled])
    per_name = Counter(name for names in queued.values() for name in names)
    held = dict(sorted(per_name.items(), key=lambda kv: (-kv[1], kv[0])))
    return Holders(held, len(queued), len(done), len(items) - len(done) - len(queued))


def unlabelled(db: sqlite_utils.Database, items: Iterable[tuple[str, str]]) -> int:
    """How many of ``items`` nobody has labelled yet."""
    labelled = {(q, d) for q, d in db.execute("SELECT DISTINCT query_id, doc_id FROM current_judgments")}
    return sum(1 for item in items if item not in labelled)
