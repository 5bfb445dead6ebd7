"""Assignment: which pool entries go to which annotator, and in which order they are shown.

The policy (what a batch holds, who gets overlap copies, adaptive pooling) is a planner
(:class:`Planner`, :mod:`labeler.retrieval.scheduling`); this module reads what it plans from, and
applies its plan in the same write transaction: read, plan, write.

Two pieces of bookkeeping keep every call independent of the project's size; both live in the
``settings`` table under ``state.`` keys and are only ever lower bounds, so losing them costs a
scan, never a wrong answer:

- ``state.frontier``: the first query that may still have work to hand out. Queries before it
  have every single-label entry labelled and every overlap entry fully handed out.
- ``state.cursor.<annotator id>``: the ``shown_order`` from which that annotator's unlabelled
  items start; everything below it was labelled, skipped or handed on when their last batch
  was made.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

import sqlite_utils

from labeler.store.candidates import add_to_pool, begin_check
from labeler.store.connection import transaction
from labeler.store.holds import settle_waiting, stamp
from labeler.store.settings import (
    FRONTIER,
    Settings,
    get_settings,
    set_state,
    state,
)


def _cursor_key(annotator_id: int) -> str:
    return f"state.cursor.{annotator_id}"


def is_overlap(query_id: str, doc_id: str, share: float) -> bool:
    """Whether a pool entry is one of the ``share`` labelled by several annotators.

    A hash of the entry, not a random draw, so the choice is the same in every run and does
    not depend on the order in which entries are handed out.
    """
    digest = hashlib.sha256(f"{query_id}\x1f{doc_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def shuffle_key(annotator_id: int, query_id: str, doc_id: str) -> bytes:
    """Sort key of an entry in an annotator's shuffled batch (deterministic per annotator)."""
    return hashlib.sha256(f"{annotator_id}\x1f{query_id}\x1f{doc_id}".encode()).digest()


_PENDING = """
SELECT a.query_id, a.doc_id FROM assignments a
WHERE a.annotator_id = :annotator AND a.shown_order >= :cursor
  AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = a.query_id AND j.doc_id = a.doc_id
                  AND j.annotator_id = a.annotator_id)
  AND NOT EXISTS (SELECT 1 FROM skips s WHERE s.annotator_id = a.annotator_id
                  AND s.query_id = a.query_id AND s.doc_id = a.doc_id)
ORDER BY a.shown_order LIMIT 1
"""

# Skipped, still unlabelled, still held: least recently skipped first.
_SKIPPED = """
SELECT s.query_id, s.doc_id, max(s.id) AS last FROM skips s
JOIN assignments a ON a.query_id = s.query_id AND a.doc_id = s.doc_id AND a.annotator_id = s.annotator_id
WHERE s.annotator_id = :annotator AND a.shown_order > 0
  AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = s.query_id AND j.doc_id = s.doc_id
                  AND j.annotator_id = s.annotator_id)
GROUP BY s.query_id, s.doc_id ORDER BY last LIMIT 1
"""


def _pending(db: sqlite_utils.Database, annotator_id: int) -> tuple[str, str] | None:
    cursor = max(1, int(state(db, _cursor_key(annotator_id)) or 1))
    row = db.execute(_PENDING, {"annotator": annotator_id, "cursor": cursor}).fetchone()
    return None if row is None else (row[0], row[1])


def next_assignment(db: sqlite_utils.Database, annotator_id: int, planner: Planner) -> tuple[str, str] | None:
    """The (query_id, doc_id) an annotator should see next, handing out a batch if needed.

    Order: the annotator's unlabelled, unskipped items in ``shown_order``; then a new batch,
    planned by ``planner``; only when no new work exists, the items they skipped (least
    recently skipped first).
    """
    found = _pending(db, annotator_id)
    if found is not None:
        return found
    shared = shared_counts(db, annotator_id)
    planner.decide_before_lock(db)  # slow decisions (models) before the write lock, not under it
    with transaction(db):
        # Re-check under the write lock: the same annotator may be signed in twice.
        found = _pending(db, annotator_id)
        if found is None and assign_batch(db, annotator_id, planner, shared):
            found = _pending(db, annotator_id)
    if found is not None:
        return found
    row = db.execute(_SKIPPED, {"annotator": annotator_id}).fetchone()
    return None if row is None else (row[0], row[1])


def upcoming_queries(db: sqlite_utils.Database, limit: int) -> list[str]:
    """The first ``limit`` queries the next hand-out may visit, in the order it visits them."""
    start = _frontier(db)[1]
    rows = db.execute("SELECT query_id FROM queries WHERE rowid >= ? ORDER BY rowid LIMIT ?", [start, limit])
    return [r[0] for r in rows]


@dataclass(frozen=True, slots=True)
class Entry:
    """One pool entry of a query as the annotator asking for work finds it."""

    doc_id: str
    holder: int | None  # the reservation's annotator: set for single-label entries only
    expires_at: str | None
    holders: int  # annotators assigned who are active or labelled it (any lapsed single holds too)
    mine: bool
    labelled: bool


@dataclass(frozen=True, slots=True)
class Request:
    """Who asks for work, and what the plan needs to know of the others (read under the lock).

    Attributes:
        annotator_id: the annotator asking.
        settings: the project's assignment settings.
        at: the time now, as stored (holds that expire before it have lapsed).
        labellers: active annotators who label, the one asking included, by id.
        shared: entries the annotator shares with each other annotator so far.
    """

    annotator_id: int
    settings: Settings
    at: str
    labellers: tuple[int, ...]
    shared: Mapping[int, int]


@dataclass(frozen=True, slots=True)
class Offer:
    """What one query offers the annotator asking.

    Attributes:
        batch: the entries to hand out, at most ``batch_size`` (empty: nothing here for them).
            An entry added by ``additions`` is fresh: no hold, no copy.
        finished: whether the query has nothing left to hand out to anyone.
        additions: ``(doc_id, sources, priority)`` to append to the query's pool first.
        check_urn: the query's check sample begins with this urn (the ``sample`` stopping
            rule; recorded once, never changed).
    """

    batch: tuple[Entry, ...]
    finished: bool
    additions: tuple[tuple[str, Mapping[str, int], float], ...] = ()
    check_urn: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class HandOut:
    """How a batch of one query goes out.

    Attributes:
        shown: the annotator's doc_ids in the order they see them.
        reserve: of those, the ones they alone hold (single-label entries).
        take_over: doc_id -> the annotator whose lapsed hold it was (their copy leaves their
            queue, a label they still send is kept).
        copies: other annotator -> overlap copies for them, in the order they see them.
        settle: overlap entries whose waiting state is checked once written.
    """

    shown: tuple[str, ...]
    reserve: frozenset[str] = frozenset()
    take_over: Mapping[str, int] = field(default_factory=dict)
    copies: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    settle: tuple[str, ...] = ()


class Planner(Protocol):
    """The scheduling policy the store applies (:mod:`labeler.retrieval.scheduling`)."""

    def decide_before_lock(self, db: sqlite_utils.Database) -> None:
        """Work done before the write lock is taken (decisions that need a model)."""

    def offer(self, db: sqlite_utils.Database, request: Request, query_id: str, entries: Sequence[Entry]) -> Offer:
        """What the query (``entries`` in pool order) offers the annotator; under the write lock."""

    def hand_out(self, request: Request, query_id: str, batch: Sequence[Entry], load: Mapping[int, int]) -> HandOut:
        """How ``batch`` goes out; ``load``: per other labeller, one past their largest ``shown_order``."""

    def shown_order(self, annotator_id: int, query_id: str, doc_ids: Sequence[str]) -> list[str]:
        """The order on screen of overlap copies handed to the annotator."""


# A deactivated annotator's hold lapses at once, and their unlabelled overlap copies stop
# counting, so the work goes to someone else.
_ENTRIES = """
SELECT p.doc_id, r.annotator_id, CASE WHEN h.active THEN r.expires_at ELSE '' END,
       (SELECT count(*) FROM assignments a JOIN annotators n ON n.id = a.annotator_id
        WHERE a.query_id = p.query_id AND a.doc_id = p.doc_id
          AND (n.active OR EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = a.query_id
                                   AND j.doc_id = a.doc_id AND j.annotator_id = a.annotator_id))),
       EXISTS (SELECT 1 FROM assignments a WHERE a.query_id = p.query_id AND a.doc_id = p.doc_id
               AND a.annotator_id = :annotator),
       EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = p.query_id AND j.doc_id = p.doc_id)
FROM pool p LEFT JOIN reservations r ON r.query_id = p.query_id AND r.doc_id = p.doc_id
LEFT JOIN annotators h ON h.id = r.annotator_id
WHERE p.query_id = :query
  AND (:sample IS NULL OR EXISTS (SELECT 1 FROM sample_items s WHERE s.sample = :sample
                                  AND s.query_id = p.query_id AND s.doc_id = p.doc_id))
ORDER BY p.position
"""


def _entries(db: sqlite_utils.Database, query_id: str, annotator_id: int, sample: str | None = None) -> list[Entry]:
    """The query's pool entries (only those of ``sample`` when one is set) as the annotator finds them."""
    rows = db.execute(_ENTRIES, {"query": query_id, "annotator": annotator_id, "sample": sample}).fetchall()
    return [Entry(r[0], r[1], r[2], r[3], bool(r[4]), bool(r[5])) for r in rows]


def _labellers(db: sqlite_utils.Database, annotator_id: int) -> list[int]:
    """Active annotators who label (have work already), plus the one asking; admins only
    when asking, as they get work only when they choose to label."""
    rows = db.execute(
        "SELECT id FROM annotators n WHERE active = 1 AND (id = ? OR (role <> 'admin' AND EXISTS "
        "(SELECT 1 FROM assignments a WHERE a.annotator_id = n.id))) ORDER BY id",
        [annotator_id],
    ).fetchall()
    return [r[0] for r in rows]


def _frontier(db: sqlite_utils.Database) -> tuple[int | None, int]:
    """(pool build, first query rowid that may have work); a new pool build starts over."""
    build = db.execute("SELECT max(id) FROM pool_builds").fetchone()[0]
    stored = state(db, FRONTIER)
    if isinstance(stored, dict) and stored.get("build") == build:
        return build, int(stored.get("rowid", 0))
    return build, 0


def assign_batch(
    db: sqlite_utils.Database, annotator_id: int, planner: Planner, shared: Counter[int] | None = None
) -> int:
    """Hand the annotator their next batch, as ``planner`` plans it; return its size (0:
    nothing left for them).

    Must run inside a write transaction (``labeler.store.transaction``). ``shared`` is
    ``shared_counts`` for the annotator, if already read.
    """
    settings = get_settings(db)
    now_dt = datetime.now(UTC)
    waiting = _hand_out_waiting(db, annotator_id, planner, settings, now_dt)
    if waiting:
        return waiting
    labellers = _labellers(db, annotator_id)
    if shared is None:
        shared = shared_counts(db, annotator_id)
    request = Request(annotator_id, settings, stamp(now_dt), tuple(labellers), shared)
    build, start = _frontier(db)
    frontier, advancing, taken = start, True, 0
    for rowid, query_id in db.execute("SELECT rowid, query_id FROM queries WHERE rowid >= ? ORDER BY rowid", [start]):
        offer = planner.offer(db, request, query_id, _entries(db, query_id, annotator_id, settings.sample))
        if offer.additions:
            add_to_pool(db, query_id, offer.additions)
        if offer.check_urn is not None:
            begin_check(db, query_id, offer.check_urn)
        if advancing and offer.finished:
            frontier = rowid + 1
        advancing = advancing and offer.finished
        if offer.batch:
            load = {a: _next_order(db, a) for a in labellers if a != annotator_id}
            plan = planner.hand_out(request, query_id, offer.batch, load)
            _hand_out(db, annotator_id, query_id, plan, settings, now_dt)
            taken = len(plan.shown)
            break
    if state(db, FRONTIER) != {"build": build, "rowid": frontier}:
        set_state(db, FRONTIER, {"build": build, "rowid": frontier})
    return taken


def _next_order(db: sqlite_utils.Database, annotator_id: int) -> int:
    """One past the largest ``shown_order`` the annotator has ever had (lapsed ones are negated)."""
    high = db.execute("SELECT max(shown_order) FROM assignments WHERE annotator_id = ?", [annotator_id]).fetchone()[0]
    low = db.execute("SELECT min(shown_order) FROM assignments WHERE annotator_id = ?", [annotator_id]).fetchone()[0]
    return max(high or 0, -(low or 0), 0) + 1


def _hand_out(
    db: sqlite_utils.Database, annotator_id: int, query_id: str, plan: HandOut, settings: Settings, now_dt: datetime
) -> None:
    at = stamp(now_dt)
    expires = stamp(now_dt + timedelta(minutes=settings.reservation_minutes))
    base = _next_order(db, annotator_id)
    # Nothing of theirs below `base` is waiting (checked by the caller under the same lock).
    set_state(db, _cursor_key(annotator_id), base)
    for offset, doc_id in enumerate(plan.shown):
        _assign(db, query_id, doc_id, annotator_id, base + offset, at)
        if doc_id in plan.take_over:
            db.execute(
                "UPDATE assignments SET shown_order = -shown_order WHERE query_id = ? AND doc_id = ? "
                "AND annotator_id = ? AND shown_order > 0",
                [query_id, doc_id, plan.take_over[doc_id]],
            )
        if doc_id in plan.reserve:
            _reserve(db, query_id, doc_id, annotator_id, expires)
    for partner, doc_ids in plan.copies.items():
        start = _next_order(db, partner)
        for offset, doc_id in enumerate(doc_ids):
            _assign(db, query_id, doc_id, partner, start + offset, at)
    for doc_id in plan.settle:
        settle_waiting(db, query_id, doc_id, settings.overlap_k)


# The first query (in import order) with an overlap copy waiting that the annotator has not had.
# Only entries of the designed sample when one is set (``:sample``), like every hand-out.
_IN_SAMPLE = """(:sample IS NULL OR EXISTS (SELECT 1 FROM sample_items s WHERE s.sample = :sample
                                  AND s.query_id = w.query_id AND s.doc_id = w.doc_id))"""

_WAITING_QUERY = f"""
SELECT w.query_id FROM overlap_waiting w JOIN queries q ON q.query_id = w.query_id
WHERE NOT EXISTS (SELECT 1 FROM assignments a WHERE a.query_id = w.query_id AND a.doc_id = w.doc_id
                  AND a.annotator_id = :annotator) AND {_IN_SAMPLE}
ORDER BY q.rowid LIMIT 1
"""

_WAITING_ENTRIES = f"""
SELECT w.doc_id FROM overlap_waiting w JOIN pool p ON p.query_id = w.query_id AND p.doc_id = w.doc_id
WHERE w.query_id = :query AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.query_id = w.query_id
                                          AND a.doc_id = w.doc_id AND a.annotator_id = :annotator)
  AND {_IN_SAMPLE}
ORDER BY p.position LIMIT :limit
"""


def _hand_out_waiting(
    db: sqlite_utils.Database, annotator_id: int, planner: Planner, settings: Settings, now_dt: datetime
) -> int:
    """Give the annotator waiting overlap copies of one query (up to a batch); return how many."""
    row = db.execute(_WAITING_QUERY, {"annotator": annotator_id, "sample": settings.sample}).fetchone()
    if row is None:
        return 0
    query_id = row[0]
    doc_ids = [
        r[0]
        for r in db.execute(
            _WAITING_ENTRIES,
            {"query": query_id, "annotator": annotator_id, "limit": settings.batch_size, "sample": settings.sample},
        )
    ]
    base = _next_order(db, annotator_id)
    set_state(db, _cursor_key(annotator_id), base)
    at = stamp(now_dt)
    for offset, doc_id in enumerate(planner.shown_order(annotator_id, query_id, doc_ids)):
        _assign(db, query_id, doc_id, annotator_id, base + offset, at)
        settle_waiting(db, query_id, doc_id, settings.overlap_k)
    return len(doc_ids)


def _assign(db: sqlite_utils.Database, query_id: str, doc_id: str, annotator_id: int, order: int, at: str) -> None:
    db.execute(
        "INSERT INTO assignments (query_id, doc_id, annotator_id, shown_order, assigned_at) VALUES (?, ?, ?, ?, ?)",
        [query_id, doc_id, annotator_id, order, at],
    )


def _reserve(db: sqlite_utils.Database, query_id: str, doc_id: str, annotator_id: int, expires: str) -> None:
    db.execute(
        "INSERT OR REPLACE INTO reservations (query_id, doc_id, annotator_id, expires_at) VALUES (?, ?, ?, ?)",
        [query_id, doc_id, annotator_id, expires],
    )


def shared_counts(db: sqlite_utils.Database, annotator_id: int) -> Counter[int]:
    """How many entries the annotator shares with each other annotator so far.

    Read before the write lock is taken: it only steers who gets overlap copies, so a count a
    moment old does no harm, and other annotators' labels need not wait for it.
    """
    rows = db.execute(
        "SELECT b.annotator_id, count(*) FROM assignments a JOIN assignments b "
        "ON b.query_id = a.query_id AND b.doc_id = a.doc_id AND b.annotator_id <> a.annotator_id "
        "WHERE a.annotator_id = ? GROUP BY b.annotator_id",
        [annotator_id],
    ).fetchall()
    return Counter(dict(rows))


