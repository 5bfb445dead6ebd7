"""Annotators, assignment, judgments, skips, adjudications and rubrics.

This module is the contract between the labelling app and the database for items, judgments
and skips; every function is plain Python over a ``sqlite_utils.Database`` opened
with ``labeler.store.connect``. Annotators and tokens live in ``access``, who gets which item
in ``assign``, the admin reports in ``review``, the rubric in ``rubric``: import their names
from there (this module re-exports none of them).

Admin-only functions take the caller (``Annotator`` or id) and raise ``StoreError`` unless the
database says the caller is an active admin; ``None`` stands for the project owner working on
the file directly (the CLI). The app passes the signed-in annotator.

Blindness: nothing here returns a pool entry's sources, ranks or priority, or another
annotator's labels, to a non-admin caller. ``Item`` carries only what the annotator may see.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlite_utils

from labeler.store import assign
from labeler.store.access import find_annotator, require_active, require_admin
from labeler.store.answer_samples import check_answer_sample
from labeler.store.connection import transaction
from labeler.store.errors import StoreError
from labeler.store.holds import expiry, release_work, renew_holds
from labeler.store.rubric import rubric_in_use
from labeler.store.samples import check_sample
from labeler.store.schema import now
from labeler.store.settings import (
    Settings,
    forget_frontier,
    get_settings,
    validate_settings,
)
from labeler.store.verdict_handout import rebuild_open
from labeler.store.vocabulary import Caller, check_grade

__all__ = [
    "Item",
    "Judgment",
    "Progress",
    "SettingsChange",
    "change_settings",
    "get_item",
    "latest_judgments",
    "next_item",
    "pool_progress",
    "previous_item",
    "progress",
    "record_judgment",
    "record_skip",
    "release_annotator",
    "set_settings",
]



@dataclass(frozen=True, slots=True)
class Item:
    """One (query, chunk) as an annotator sees it, with nothing about where it came from."""

    query_id: str
    doc_id: str
    query_text: str
    doc_title: str
    doc_text: str
    position: int  # 1-based place of this item in the annotator's batch for this query
    batch_size: int  # items of this batch (one hand-out of one query to this annotator)
    relevance: int | None  # this annotator's current (latest) grade, if any
    note: str  # this annotator's latest note on it
    query_meta: Mapping[str, Any] = field(default_factory=dict)  # the query's other fields (desc, narr...)


@dataclass(frozen=True, slots=True)
class Progress:
    done: int  # items this annotator has labelled (skips do not count)
    assigned: int  # items assigned to this annotator so far
    query_done: int  # labelled of the current batch (one hand-out of one query)
    query_total: int  # items of the current batch


@dataclass(frozen=True, slots=True)
class Judgment:
    """The latest label of one annotator on one item."""

    query_id: str
    doc_id: str
    annotator: str
    relevance: int
    at: str
    seconds: float | None
    note: str


# Writes below are one short transaction each (``labeler.store.transaction``).


def _order(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str) -> int | None:
    row = db.execute(
        "SELECT shown_order FROM assignments WHERE query_id = ? AND doc_id = ? AND annotator_id = ?",
        [query_id, doc_id, annotator_id],
    ).fetchone()
    return None if row is None else row[0]


def _batch(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str) -> list[str]:
    """The doc_ids of the batch that holds (query_id, doc_id), in the order they are shown.

    A batch is what one hand-out gave this annotator: their entries of the query that share
    the item's ``assigned_at`` (one hand-out writes one time stamp; a later batch of the same
    query, or overlap copies handed on to them later, have their own). An item whose hold
    lapsed (negated shown_order) counts in its own place only: it is still on this
    annotator's screen, but no longer part of their batch.
    """
    return [
        r[0]
        for r in db.execute(
            "SELECT doc_id FROM assignments WHERE query_id = :query AND annotator_id = :annotator "
            "AND assigned_at = (SELECT assigned_at FROM assignments WHERE query_id = :query AND doc_id = :doc "
            "AND annotator_id = :annotator) AND (shown_order > 0 OR doc_id = :doc) ORDER BY abs(shown_order)",
            {"query": query_id, "doc": doc_id, "annotator": annotator_id},
        )
    ]


def _item(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str) -> Item:
    text = db.execute(
        "SELECT q.text, d.title, d.text, q.meta FROM queries q, documents d WHERE q.query_id = ? AND d.doc_id = ?",
        [query_id, doc_id],
    ).fetchone()
    batch = _batch(db, annotator_id, query_id, doc_id)
    latest = db.execute(
        "SELECT relevance, note, at FROM current_judgments WHERE query_id = ? AND doc_id = ? AND annotator_id = ?",
        [query_id, doc_id, annotator_id],
    ).fetchone()
    # A note left with a later skip is the annotator's latest word on the item.
    skipped = db.execute(
        "SELECT note, at FROM skips WHERE query_id = ? AND doc_id = ? AND annotator_id = ? AND note != '' "
        "ORDER BY id DESC LIMIT 1",
        [query_id, doc_id, annotator_id],
    ).fetchone()
    note = "" if latest is None else latest[1]
    if skipped is not None and (latest is None or skipped[1] > latest[2]):
        note = skipped[0]
    return Item(
        query_id=query_id,
        doc_id=doc_id,
        query_text=text[0],
        doc_title=text[1],
        doc_text=text[2],
        position=batch.index(doc_id) + 1,
        batch_size=len(batch),
        relevance=None if latest is None else latest[0],
        note=note,
        query_meta=_query_meta(text[3]),
    )


def _query_meta(stored: str | None) -> dict[str, Any]:
    try:
        meta = json.loads(stored or "{}")
    except json.JSONDecodeError:
        return {}
    return meta if isinstance(meta, dict) else {}


def next_item(db: sqlite_utils.Database, annotator_id: int, planner: assign.Planner) -> Item | None:
    """The annotator's next unlabelled, unskipped item, assigning a new query batch when the
    current one is done (as ``planner`` plans it: :func:`labeler.retrieval.scheduling.next_item` gives
    the project's own) and reserving single-label items; None when there is no work left.

    Skipped items come back only once the annotator has nothing else: no unlabelled item and
    no new batch to hand out (least recently skipped first).

    Raises:
        StoreError: the annotator does not exist or is deactivated.
    """
    require_active(db, annotator_id)
    found = assign.next_assignment(db, annotator_id, planner)
    return None if found is None else _item(db, annotator_id, *found)


def previous_item(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str) -> Item | None:
    """The item shown before (query_id, doc_id) in this annotator's order (the `u` key).

    Only items the annotator labelled or skipped count as shown; None at the start.
    """
    order = _order(db, annotator_id, query_id, doc_id)
    if order is None:
        raise StoreError(f"({query_id}, {doc_id}) is not assigned to this annotator")
    row = db.execute(
        """SELECT a.query_id, a.doc_id FROM assignments a
           WHERE a.annotator_id = :annotator AND a.shown_order > 0 AND a.shown_order < :order
             AND (EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = a.query_id AND j.doc_id = a.doc_id
                          AND j.annotator_id = a.annotator_id)
                  OR EXISTS (SELECT 1 FROM skips s WHERE s.annotator_id = a.annotator_id
                             AND s.query_id = a.query_id AND s.doc_id = a.doc_id))
           ORDER BY a.shown_order DESC LIMIT 1""",
        {"annotator": annotator_id, "order": abs(order)},
    ).fetchone()
    return None if row is None else _item(db, annotator_id, row[0], row[1])


def get_item(
    db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str, *, allow_lapsed: bool = False
) -> Item:
    """One of this annotator's assigned items.

    Args:
        allow_lapsed: also return an item whose hold lapsed and went to someone else. The app
            keeps such an item on screen, because a label or skip sent for it is still
            recorded (``record_judgment``, ``record_skip``).

    Raises:
        StoreError: the item is not assigned to this annotator (or its hold lapsed and
            ``allow_lapsed`` is False).
    """
    order = _order(db, annotator_id, query_id, doc_id)
    if order is None or (order < 0 and not allow_lapsed):
        raise StoreError(f"({query_id}, {doc_id}) is not assigned to this annotator")
    return _item(db, annotator_id, query_id, doc_id)


def _check_seconds(seconds: float | None) -> float | None:
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        raise StoreError(f"seconds {seconds!r}: give a non-negative number or None")
    return float(seconds)


def record_judgment(
    db: sqlite_utils.Database,
    annotator_id: int,
    query_id: str,
    doc_id: str,
    relevance: int,
    seconds: float | None,
    note: str = "",
) -> int:
    """Append one label (with the current rubric hash); return its row id.

    A label on an item whose hold lapsed and went to someone else is still recorded (the item
    then has one label more); it is never refused for being late.

    Raises:
        StoreError: a grade outside 0-3, an item not assigned to this annotator, or a
            deactivated annotator; nothing is written.
    """
    relevance = check_grade(relevance)
    seconds = _check_seconds(seconds)
    with transaction(db):
        require_active(db, annotator_id)
        order = _order(db, annotator_id, query_id, doc_id)
        if order is None:
            raise StoreError(f"({query_id}, {doc_id}) is not assigned to this annotator")
        if order < 0:
            db.execute(
                "UPDATE assignments SET shown_order = ? WHERE query_id = ? AND doc_id = ? AND annotator_id = ?",
                [-order, query_id, doc_id, annotator_id],
            )
        cursor = db.execute(
            "INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, note, at, seconds, rubric_hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [query_id, doc_id, annotator_id, relevance, str(note or ""), now(), seconds, rubric_in_use(db)],
        )
        renew_holds(db, annotator_id, query_id, expiry(db))
    return int(cursor.lastrowid)


def record_skip(
    db: sqlite_utils.Database,
    annotator_id: int,
    query_id: str,
    doc_id: str,
    seconds: float | None,
    note: str = "",
) -> None:
    """Append a skip (with the note typed, if any): the item comes back after other work.

    Like a late label, a skip of an item whose hold lapsed and went to someone else is still
    recorded, so its note is kept; the item stays with its new holder and does not come back.

    Raises:
        StoreError: an item not assigned to this annotator, or a deactivated annotator;
            nothing is written.
    """
    seconds = _check_seconds(seconds)
    with transaction(db):
        require_active(db, annotator_id)
        order = _order(db, annotator_id, query_id, doc_id)
        if order is None:
            raise StoreError(f"({query_id}, {doc_id}) is not assigned to this annotator")
        db.execute(
            "INSERT INTO skips (query_id, doc_id, annotator_id, at, seconds, note) VALUES (?, ?, ?, ?, ?, ?)",
            [query_id, doc_id, annotator_id, now(), seconds, str(note or "")],
        )
        renew_holds(db, annotator_id, query_id, expiry(db))


_DONE = """
SELECT count(*) FROM assignments a
WHERE a.annotator_id = :annotator AND a.shown_order > 0 {extra}
  AND EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = a.query_id AND j.doc_id = a.doc_id
              AND j.annotator_id = a.annotator_id)
"""


def progress(
    db: sqlite_utils.Database, annotator_id: int, query_id: str | None = None, doc_id: str | None = None
) -> Progress:
    """This annotator's labelled and assigned items, overall and in one batch.

    The batch is the one that holds (``query_id``, ``doc_id``) (see :func:`_batch`); without
    ``doc_id``, the batch of the annotator's most recently handed-out item of ``query_id``
    (of any query when ``query_id`` is None too).
    """
    params: dict[str, object] = {"annotator": annotator_id}
    done = db.execute(_DONE.format(extra=""), params).fetchone()[0]
    assigned = db.execute(
        "SELECT count(*) FROM assignments WHERE annotator_id = ? AND shown_order > 0", [annotator_id]
    ).fetchone()[0]
    if doc_id is None or query_id is None:
        row = db.execute(
            "SELECT query_id, doc_id FROM assignments WHERE annotator_id = :annotator "
            "AND (:query IS NULL OR query_id = :query) ORDER BY shown_order DESC LIMIT 1",
            {"annotator": annotator_id, "query": query_id},
        ).fetchone()
        query_id, doc_id = (None, None) if row is None else (row[0], row[1])
    if query_id is None or doc_id is None:
        return Progress(done, assigned, 0, 0)
    batch = set(_batch(db, annotator_id, query_id, doc_id))
    labelled = {
        r[0]
        for r in db.execute(
            "SELECT DISTINCT doc_id FROM judgments WHERE query_id = ? AND annotator_id = ?", [query_id, annotator_id]
        )
    }
    # Only the batch's items still held count, as in ``done`` (a lapsed one is no longer theirs).
    # Read by the query (its entries), not by the annotator's every item: the ``+`` keeps SQLite
    # off the annotator's index.
    held = {
        r[0]
        for r in db.execute(
            "SELECT doc_id FROM assignments WHERE query_id = ? AND +annotator_id = ? AND shown_order > 0",
            [query_id, annotator_id],
        )
    }
    batch &= held
    return Progress(done, assigned, len(batch & labelled), len(batch))


def pool_progress(db: sqlite_utils.Database) -> tuple[int, int]:
    """(entries to label, those labelled by anyone). The entries are the pool's, or the
    designed sample's when the ``sample`` setting hands out only a sample: people label
    nothing else then, so the rest of the pool is not work left. The pool's figures are kept
    as the pool and the labels are written (``work_counts``, migration 22); a sample's are
    counted, reading every entry of the sample."""
    sample = get_settings(db).sample
    if sample is not None:
        size = db.execute("SELECT count(*) FROM sample_items WHERE sample = ?", [sample]).fetchone()[0]
        labelled = db.execute(
            "SELECT count(*) FROM sample_items s WHERE s.sample = ? AND EXISTS "
            "(SELECT 1 FROM judgments j WHERE j.query_id = s.query_id AND j.doc_id = s.doc_id)", [sample]).fetchone()[0]
        return size, labelled
    counts = dict(db.execute("SELECT name, n FROM work_counts WHERE name IN ('pool', 'pool_labelled')").fetchall())
    return counts.get("pool", 0), counts.get("pool_labelled", 0)


_LATEST = """
SELECT j.query_id, j.doc_id, n.name, j.relevance, j.at, j.seconds, j.note, j.annotator_id
FROM current_judgments j JOIN annotators n ON n.id = j.annotator_id
ORDER BY j.query_id, j.doc_id, n.name
"""


def latest_judgments(db: sqlite_utils.Database, *, caller: Caller) -> list[Judgment]:
    """The latest label per (query_id, doc_id, annotator), every annotator (admin use)."""
    require_admin(db, caller)
    return [Judgment(*r[:7]) for r in db.execute(_LATEST)]


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """Settings after a change, and (when the change set a designed sample) the unlabelled
    entries outside the sample it took out of each annotator's queue, by name."""

    settings: Settings
    released: Mapping[str, int] | None = None


def change_settings(
    db: sqlite_utils.Database,
    values: dict[str, object],
    *,
    caller: Caller,
    strategies: Collection[str] = ("depth",),
    rules: Collection[str] = ("sample",),
) -> SettingsChange:
    """Change assignment settings (admin only). Applies to work handed out next; setting a
    ``sample`` also releases the unlabelled entries outside it that were handed out before
    (:func:`labeler.store.holds.release_work`), in the same transaction, so nobody is left
    labelling outside the sample.

    ``strategies`` are the valid ``strategy`` names, ``rules`` the valid ``stop_rule`` names
    (:func:`labeler.retrieval.scheduling.set_settings` passes every pooling strategy and stopping rule).

    Raises:
        StoreError: an unknown setting or a value out of range; nothing is changed.
    """
    require_admin(db, caller)
    clean = validate_settings(values, strategies, rules)
    if clean.get("sample") is not None:
        check_sample(db, str(clean["sample"]))
    if clean.get("answer_sample") is not None:
        check_answer_sample(db, str(clean["answer_sample"]))
    merged = {**{k: getattr(get_settings(db), k) for k in ("strategy", "stop_recall", "sample")}, **clean}
    if merged["sample"] is not None and (merged["strategy"] != "depth" or merged["stop_recall"] is not None):
        # A designed sample fixes which entries people label, with known probabilities; an
        # adaptive strategy would choose others and break the design.
        raise StoreError("setting sample: a designed sample is handed out as drawn, so it cannot be combined with an "
                         "adaptive strategy or a stopping rule (set strategy=depth stop_recall=off first)")
    released = None
    with transaction(db):
        for key, value in clean.items():
            db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", [key, json.dumps(value)])
        if clean.keys() & {"strategy", "stop_recall", "stop_confidence", "stop_rule", "sample"}:
            forget_frontier(db)  # a query finished under the old rule may have work again
        if clean.get("sample") is not None:
            released = dict(release_work(db, outside_sample=str(clean["sample"])))
        if clean.keys() & {"overlap", "overlap_k"}:
            rebuild_open(db, get_settings(db))  # which verdict items are finished depends on them
    return SettingsChange(get_settings(db), released)


def set_settings(
    db: sqlite_utils.Database,
    values: dict[str, object],
    *,
    caller: Caller,
    strategies: Collection[str] = ("depth",),
    rules: Collection[str] = ("sample",),
) -> Settings:
    """Change assignment settings (admin only); return them all (:func:`change_settings`)."""
    return change_settings(db, values, caller=caller, strategies=strategies, rules=rules).settings


def release_annotator(db: sqlite_utils.Database, name: str, *, caller: Caller) -> int:
    """Hand back the pool entries annotator ``name`` was given and has not labelled, so
    whoever asks next gets them (:func:`labeler.store.holds.release_work`); their labels
    are kept and they go on getting new work. Return how many were released.

    Raises:
        StoreError: no such annotator, or a caller who is not an admin; nothing is changed.
    """
    require_admin(db, caller)
    annotator = find_annotator(db, name)
    with transaction(db):
        return sum(release_work(db, annotator_id=annotator.id).values())
