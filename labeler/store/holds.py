"""Holds on handed-out pool entries: when they lapse, their renewal, and work released back.

A single-label entry handed out is held by its annotator until the hold lapses
(``reservation_minutes``); an overlap entry waits in ``overlap_waiting`` until it has its copies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from datetime import UTC, datetime, timedelta

import sqlite_utils

from labeler.store.connection import transaction
from labeler.store.settings import forget_frontier, get_settings


def stamp(moment: datetime) -> str:
    """A time as the hand-out tables store it."""
    return moment.isoformat(timespec="microseconds")


def expiry(db: sqlite_utils.Database) -> str:
    """When a hold taken or renewed now lapses."""
    return stamp(datetime.now(UTC) + timedelta(minutes=get_settings(db).reservation_minutes))


def copies(db: sqlite_utils.Database, query_id: str, doc_id: str) -> int:
    """An entry's copies that count: held by an active annotator, or labelled."""
    return db.execute(
        "SELECT count(*) FROM assignments a JOIN annotators n ON n.id = a.annotator_id "
        "WHERE a.query_id = ? AND a.doc_id = ? AND (n.active OR EXISTS (SELECT 1 FROM judgments j "
        "WHERE j.query_id = a.query_id AND j.doc_id = a.doc_id AND j.annotator_id = a.annotator_id))",
        [query_id, doc_id],
    ).fetchone()[0]


def settle_waiting(db: sqlite_utils.Database, query_id: str, doc_id: str, overlap_k: int) -> None:
    """Keep an overlap entry in ``overlap_waiting`` exactly while it has fewer than
    ``overlap_k`` copies that count (:func:`copies`)."""
    if copies(db, query_id, doc_id) < overlap_k:
        db.execute("INSERT OR IGNORE INTO overlap_waiting (query_id, doc_id) VALUES (?, ?)", [query_id, doc_id])
    else:
        db.execute("DELETE FROM overlap_waiting WHERE query_id = ? AND doc_id = ?", [query_id, doc_id])


def release_holds(db: sqlite_utils.Database, annotator_id: int) -> None:
    """Let the annotator's holds on unlabelled entries lapse now (they stopped labelling):
    the next annotator who asks may take them. A label they still send is recorded."""
    at = stamp(datetime.now(UTC))
    held = "SELECT 1 FROM reservations WHERE annotator_id = ? AND expires_at > ? LIMIT 1"
    if db.execute(held, [annotator_id, at]).fetchone() is None:
        return  # nothing held: no write lock taken
    with transaction(db):
        db.execute(
            "UPDATE reservations SET expires_at = ? WHERE annotator_id = ? AND expires_at > ? AND NOT EXISTS "
            "(SELECT 1 FROM judgments j WHERE j.query_id = reservations.query_id AND j.doc_id = reservations.doc_id)",
            [at, annotator_id, at],
        )


# Entries handed out and still in their annotator's queue, unlabelled by them.
_QUEUED = """
SELECT a.query_id, a.doc_id, a.annotator_id, n.name,
       EXISTS (SELECT 1 FROM reservations r WHERE r.query_id = a.query_id AND r.doc_id = a.doc_id
               AND r.annotator_id = a.annotator_id)
FROM assignments a JOIN annotators n ON n.id = a.annotator_id
WHERE a.shown_order > 0
  AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = a.query_id AND j.doc_id = a.doc_id
                  AND j.annotator_id = a.annotator_id)
  AND (:annotator IS NULL OR a.annotator_id = :annotator)
  AND (:outside IS NULL OR NOT EXISTS (SELECT 1 FROM sample_items s WHERE s.sample = :outside
                                       AND s.query_id = a.query_id AND s.doc_id = a.doc_id))
ORDER BY n.name, a.shown_order
"""


def release_work(db: sqlite_utils.Database, *, annotator_id: int | None = None,
                 outside_sample: str | None = None) -> Counter[str]:
    """Take unlabelled pool entries out of the queues they were handed out to, so they go to
    whoever asks next: every annotator's (or only ``annotator_id``'s), and with
    ``outside_sample`` only the entries outside that designed sample. Return how many were
    released, by annotator name.

    A single-label entry's hold lapses at once (the next annotator who asks takes it over); an
    overlap copy leaves the queue and the entry waits for its next copy, or is fresh again if
    it has none left. Labels are never touched. Must run inside a write transaction
    (``labeler.store.transaction``).
    """
    queued = db.execute(_QUEUED, {"annotator": annotator_id, "outside": outside_sample}).fetchall()
    if not queued:
        return Counter()
    at = stamp(datetime.now(UTC))
    k = get_settings(db).overlap_k
    for query_id, doc_id, holder, _, reserved in queued:
        db.execute("DELETE FROM assignments WHERE query_id = ? AND doc_id = ? AND annotator_id = ?",
                   [query_id, doc_id, holder])
        if reserved:
            db.execute("UPDATE reservations SET expires_at = ? WHERE query_id = ? AND doc_id = ? AND annotator_id = ?",
                       [at, query_id, doc_id, holder])
            continue
        if copies(db, query_id, doc_id):
            settle_waiting(db, query_id, doc_id, k)
        else:  # no copy left: the entry is fresh again, handed out as any other
            db.execute("DELETE FROM overlap_waiting WHERE query_id = ? AND doc_id = ?", [query_id, doc_id])
    forget_frontier(db)  # a query finished before may have work again
    return Counter(name for _, _, _, name, _ in queued)


def queued_holders(db: sqlite_utils.Database, items: Collection[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    """Of ``items``, those sitting unlabelled in an active annotator's queue, with the names of
    the annotators whose queue holds them."""
    wanted = set(items)
    active = {r[0] for r in db.execute("SELECT name FROM annotators WHERE active = 1")}
    out: dict[tuple[str, str], list[str]] = {}
    for q, d, _, name, _ in db.execute(_QUEUED, {"annotator": None, "outside": None}):
        if (q, d) in wanted and name in active:
            out.setdefault((q, d), []).append(name)
    return out


def renew_holds(db: sqlite_utils.Database, annotator_id: int, query_id: str, expires: str) -> None:
    """Extend the annotator's holds in one query (they are working on it), those still in
    their queue only: a hold released (:func:`release_work`) stays lapsed. Read by the query's
    entries (the ``+`` keeps SQLite off the index of everything the annotator ever held)."""
    db.execute(
        "UPDATE reservations SET expires_at = ? WHERE query_id = ? AND +annotator_id = ? AND EXISTS "
        "(SELECT 1 FROM assignments a WHERE a.query_id = reservations.query_id AND a.doc_id = reservations.doc_id "
        "AND a.annotator_id = reservations.annotator_id)",
        [expires, query_id, annotator_id],
    )
