"""Hand-outs of verdict items: which items of a task go to an annotator next, found through an index.

The rules are :mod:`labeler.store.verdict_queue`'s. An item is *open* while it may still go to
someone: a single-label item until its first verdict, an overlap item until ``overlap_k``
people gave one (holds come and go; verdicts stay, so an item that stops being open never is
again while the overlap settings stay). ``verdict_open`` lists each task's open items in import
order (``seq``, the item's rowid): an item joins it when it is added (a trigger, migration 22)
and leaves it with the verdict that finishes it (:func:`settle`). A batch is read from the first
open items of the task that the annotator neither holds nor judged, so its cost does not grow
with the items the project has finished: what it passes over are items others hold now and the
annotator's own unfinished ones.

``state.verdict_open`` records the overlap settings the list was made under; after a change
(or on a project whose verdicts predate the list) the next hand-out makes it again
(:func:`rebuild_open`). ``state.vcursor.<annotator>.<kind>`` is the ``shown_order`` from which
the annotator's unjudged items of a kind start: everything below it was judged or skipped when
their last batch was handed out.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import sqlite_utils

from labeler.store.assign import is_overlap, shuffle_key
from labeler.store.schema import now
from labeler.store.settings import Settings, get_settings, set_state, state

OPEN_STATE = "state.verdict_open"


def cursor_key(annotator_id: int, kind: str) -> str:
    """Where the annotator's unjudged items of ``kind`` start (a ``shown_order``)."""
    return f"state.vcursor.{annotator_id}.{kind}"


def slot_order(annotator_id: int, item_id: str) -> str:
    """``AB`` (response A on the left) or ``BA``, fixed per (annotator, item) by a hash.

    >>> slot_order(1, "p1") in ("AB", "BA")
    True
    """
    return "AB" if shuffle_key(annotator_id, "slots", item_id)[0] % 2 == 0 else "BA"


def finished(kind: str, item_id: str, givers: int, settings: Settings) -> bool:
    """Whether an item with verdicts from ``givers`` people goes to nobody any more."""
    return givers >= (settings.overlap_k if is_overlap(kind, item_id, settings.overlap) else 1)


def _built_for(settings: Settings) -> dict[str, float]:
    return {"overlap": settings.overlap, "overlap_k": settings.overlap_k}


def settle(db: sqlite_utils.Database, item_id: str, settings: Settings) -> None:
    """Take an item out of ``verdict_open`` once its verdicts finish it (after each verdict
    written, in the same transaction)."""
    row = db.execute("SELECT kind, rowid FROM verdict_items WHERE item_id = ?", [item_id]).fetchone()
    givers = db.execute("SELECT count(DISTINCT annotator_id) FROM human_verdicts WHERE item_id = ?",
                        [item_id]).fetchone()[0]
    if row is not None and finished(row[0], item_id, givers, settings):
        db.execute("DELETE FROM verdict_open WHERE kind = ? AND seq = ?", [row[0], row[1]])


def rebuild_open(db: sqlite_utils.Database, settings: Settings) -> None:
    """Make ``verdict_open`` again under ``settings`` (inside the caller's write transaction).

    Reads every item once: for an admin's change of the overlap settings, or once on a project
    whose verdicts were given before the list existed.
    """
    db.execute("DELETE FROM verdict_open")
    db.execute("INSERT INTO verdict_open (kind, seq, item_id) SELECT kind, rowid, item_id FROM verdict_items i "
               "WHERE NOT EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = i.item_id)")
    judged = db.execute("SELECT i.kind, i.rowid, i.item_id, count(DISTINCT h.annotator_id) FROM human_verdicts h "
                        "JOIN verdict_items i ON i.item_id = h.item_id GROUP BY h.item_id")
    db.conn.executemany("INSERT INTO verdict_open (kind, seq, item_id) VALUES (?, ?, ?)",
                   [(kind, seq, item_id) for kind, seq, item_id, givers in judged.fetchall()
                    if not finished(kind, item_id, givers, settings)])
    set_state(db, OPEN_STATE, _built_for(settings))


def ensure_open(db: sqlite_utils.Database, settings: Settings) -> None:
    """Make sure ``verdict_open`` was made under ``settings`` (inside a write transaction)."""
    if state(db, OPEN_STATE) != _built_for(settings):
        rebuild_open(db, settings)


# The next open items of a task that the annotator neither holds (nor held) nor judged.
_NOT_MINE = """
  AND NOT EXISTS (SELECT 1 FROM verdict_assignments a WHERE a.item_id = o.item_id AND a.annotator_id = :annotator)
  AND NOT EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = o.item_id AND h.annotator_id = :annotator)
"""
_OPEN = f"SELECT o.seq, o.item_id FROM verdict_open o WHERE o.kind = :kind AND o.seq > :after {_NOT_MINE} " \
        "ORDER BY o.seq LIMIT :limit"
# Under a sample of answers (``answer_sample``): the open items of the sample's answers, read from
# the sample, and items on no answer (read only when the task has some, a probe of an index).
_OPEN_SAMPLED = f"""
SELECT o.seq, o.item_id FROM answer_sample_items s
JOIN verdict_items i ON i.answer_id = s.answer_id AND i.kind = :kind
JOIN verdict_open o ON o.kind = i.kind AND o.seq = i.rowid
WHERE s.sample = :sample AND o.seq > :after {_NOT_MINE}
UNION ALL
SELECT o.seq, o.item_id FROM verdict_open o JOIN verdict_items i ON i.item_id = o.item_id
WHERE :loose AND o.kind = :kind AND o.seq > :after AND i.answer_id IS NULL {_NOT_MINE}
ORDER BY 1 LIMIT :limit
"""
_LOOSE = "SELECT EXISTS (SELECT 1 FROM verdict_items WHERE answer_id IS NULL AND kind = ?)"
_GIVERS = "SELECT DISTINCT annotator_id FROM human_verdicts WHERE item_id = ?"
# Active annotators whose queue holds the item (a lapsed hold's row is negated).
_HELD = ("SELECT a.annotator_id, a.assigned_at FROM verdict_assignments a JOIN annotators n ON n.id = a.annotator_id "
         "WHERE a.item_id = ? AND a.shown_order > 0 AND n.active")
_RECENT = ("SELECT EXISTS (SELECT 1 FROM human_verdicts WHERE annotator_id = :who AND at > :cutoff) "
           "OR EXISTS (SELECT 1 FROM verdict_skips WHERE annotator_id = :who AND at > :cutoff)")


def _candidates(db: sqlite_utils.Database, annotator_id: int, kind: str, limit: int,
                sample: str | None) -> Iterator[tuple[int, str]]:
    """(seq, item_id) of the open items not the annotator's, in import order, read a few at a
    time; under a sample of answers, only the sample's (and items on no answer)."""
    args: dict[str, object] = {"kind": kind, "annotator": annotator_id, "limit": limit, "sample": sample}
    if sample is not None:
        args["loose"] = db.execute(_LOOSE, [kind]).fetchone()[0]
    after = 0
    while True:
        rows = db.execute(_OPEN if sample is None else _OPEN_SAMPLED, {**args, "after": after}).fetchall()
        yield from rows
        if len(rows) < limit:
            return
        after = rows[-1][0]


def open_items(db: sqlite_utils.Database, annotator_id: int, kind: str, settings: Settings) -> list[tuple[str, list[int]]]:
    """The first ``batch_size`` items the annotator may take, in import order, each with the
    lapsed holders it leaves (items found finished on the way leave ``verdict_open``)."""
    cutoff = (datetime.now(UTC) - timedelta(minutes=settings.reservation_minutes)).isoformat(timespec="microseconds")
    recent: dict[int, bool] = {}

    def active(holder: int, at: str) -> bool:  # the holder's hold stands
        if holder not in recent:
            recent[holder] = bool(db.execute(_RECENT, {"who": holder, "cutoff": cutoff}).fetchone()[0])
        return recent[holder] or at > cutoff

    found: list[tuple[str, list[int]]] = []
    done: list[int] = []
    for seq, item_id in _candidates(db, annotator_id, kind, 4 * settings.batch_size, settings.answer_sample):
        givers = {r[0] for r in db.execute(_GIVERS, [item_id])}
        held = dict(db.execute(_HELD, [item_id]).fetchall())
        if finished(kind, item_id, len(givers), settings):
            done.append(seq)
        elif is_overlap(kind, item_id, settings.overlap):
            if len(givers | set(held)) < settings.overlap_k:
                found.append((item_id, []))
        elif not any(active(holder, at) for holder, at in held.items()):
            found.append((item_id, list(held)))
        if len(found) == settings.batch_size:
            break
    db.conn.executemany("DELETE FROM verdict_open WHERE kind = ? AND seq = ?", [(kind, seq) for seq in done])
    return found


_MINE = "FROM verdict_assignments WHERE annotator_id = ? AND kind = ?"


def assign_batch(db: sqlite_utils.Database, annotator_id: int, kind: str) -> int:
    """Hand the annotator their next batch of ``kind``; return its size (0: nothing left).

    Must run inside a write transaction, when the annotator has no unjudged, unskipped item
    of the kind left (``verdict_queue.next_card`` checks under the same lock): the batch's
    first ``shown_order`` becomes where their unjudged items start.
    """
    settings = get_settings(db)
    ensure_open(db, settings)
    batch = open_items(db, annotator_id, kind, settings)
    if not batch:
        return 0
    for item_id, lapsed in batch:
        for holder in lapsed:  # the item leaves the previous holder's queue
            db.execute("UPDATE verdict_assignments SET shown_order = -shown_order WHERE item_id = ? AND annotator_id = ? "
                       "AND shown_order > 0", [item_id, holder])
    # One extreme per statement, so each is read off an index (a lapsed item's order is negated).
    mine = [annotator_id, kind]
    high = db.execute(f"SELECT max(shown_order) {_MINE}", mine).fetchone()[0] or 0
    low = db.execute(f"SELECT min(shown_order) {_MINE}", mine).fetchone()[0] or 0
    number = db.execute(f"SELECT max(batch) {_MINE}", mine).fetchone()[0] or 0
    top = max(high, -low, 0)
    at = now()
    ordered = sorted((item_id for item_id, _ in batch), key=lambda i: shuffle_key(annotator_id, kind, i))
    for offset, item_id in enumerate(ordered, start=1):
        db.execute(
            "INSERT INTO verdict_assignments (item_id, annotator_id, kind, batch, shown_order, slot_order, assigned_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [item_id, annotator_id, kind, number + 1, top + offset,
             slot_order(annotator_id, item_id) if kind == "pairwise" else None, at],
        )
    set_state(db, cursor_key(annotator_id, kind), top + 1)
    return len(batch)
