"""Who judges which faithfulness or pairwise item, in which order, and with which side left.

The rules follow the relevance queue (``labeler.store.assign``) where they carry over:

- Work goes out per kind in batches of ``batch_size`` items, items in import order. An
  annotator who has nothing left of a kind gets the next batch of that kind.
- Within a batch the order on screen is a per-annotator shuffle (``assign.shuffle_key``), so a
  rerun shows the same order and position says nothing about the import order.
- Each item is judged once, except a share ``overlap`` of items (a hash of the item), which
  go to ``overlap_k`` annotators: an overlap item waits for the next *other* annotators who
  ask for work, whenever they come. A deactivated annotator's unjudged copies stop counting,
  so the work goes to someone else; a verdict imported for an annotator counts as a copy.
- A single-label item is held by its annotator while they work: the hold lapses once neither
  the batch was handed out nor the annotator gave a verdict or skip in the last
  ``reservation_minutes``. A lapsed item goes to the next annotator who asks; the previous
  holder's assignment is kept with a negated ``shown_order`` (it leaves their queue), and a
  verdict they still send is recorded and makes the item theirs again.
- Pairwise items show their two responses in a left/right order drawn per (annotator, item)
  by a hash (``slot_order``): ``AB`` puts response A on the left. The order is stored with the
  assignment and with every verdict. Keys name slots (left, right, tie); the store records the
  response they stand for.
- Skipped items come back once the annotator has nothing else of the kind (least recently
  skipped first); back (``previous_card``) reaches the items they judged or skipped.

Blindness: a ``Card`` carries the texts only: no model name, no judge verdict, no other
person's verdict.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import sqlite_utils

from labeler.store.access import require_active
from labeler.store.assign import is_overlap, shuffle_key
from labeler.store.connection import transaction
from labeler.store.errors import StoreError
from labeler.store.rubric import rubric_hash
from labeler.store.schema import now
from labeler.store.settings import enabled_tasks, get_settings
from labeler.store.verdicts import get_item, record_human_verdict
from labeler.store.vocabulary import KINDS, ORDERS

#: What a person is asked to weigh, per kind (shown beside the keys; its hash goes with each verdict).
RUBRICS = {
    "faithfulness": (
        "**SUPPORTED** when every claim of the response is supported by the contexts; **UNSUPPORTED** when at "
        "least one claim is not. Only claims the contexts support count: a claim that is true but not in the "
        "contexts is unsupported. Length and a confident tone are not quality."
    ),
    "pairwise": (
        "Which response answers the question better? Judge correctness and helpfulness. Length and a confident "
        "tone are not quality, and the side a response is shown on does not matter. **Tie** when neither is "
        "better."
    ),
    "claims": (
        "Is the claim supported by the contexts? The claim is highlighted in the response; one further down a "
        "long response is also shown in a box of its own above the response, and one the response does not "
        "contain word for word is shown only in that box, and nothing is highlighted. **SUPPORTED** when the "
        "contexts state it or it follows from them; **UNSUPPORTED** when they do not, even if the claim is true. "
        "**Not one claim** when the claim is not one checkable statement (two facts joined, vague, or a "
        "question): it flags how the answer was split, not the answer."
    ),
    "correctness": (
        "Does the response give the answer the reference gives? **CORRECT** when it states the reference's answer "
        "(other words, more detail and a different order are fine); **INCORRECT** when it contradicts the "
        "reference, leaves its answer out or declines to answer. Length and a confident tone are not quality."
    ),
    "answer-relevance": (
        "Does the response address the question asked? **ADDRESSES** when it tries to answer this question, right "
        "or wrong (a hedge that still answers addresses it); **MISSES** when it answers another question or only "
        "talks around it; **Declines to answer** when it gives no answer of its own: it says the sources do not "
        "tell, that it cannot answer, refuses, asks you to rephrase, or does not know. Whether it is correct does "
        "not matter here."
    ),
}
#: The slots a pairwise key names: left, right, or neither.
SLOTS = ("left", "right", "tie")


def verdict_rubric_hash(kind: str) -> str:
    """The version of a verdict kind's rubric text, stored with every verdict given on the page:
    :func:`labeler.store.rubric.rubric_hash` at 16 hex digits (the length stored since verdicts began)."""
    return rubric_hash(RUBRICS[kind], 16)


def slot_order(annotator_id: int, item_id: str) -> str:
    """``AB`` (response A on the left) or ``BA``, fixed per (annotator, item) by a hash.

    >>> slot_order(1, "p1") in ("AB", "BA")
    True
    """
    return "AB" if shuffle_key(annotator_id, "slots", item_id)[0] % 2 == 0 else "BA"


def slot_to_response(slot: str, order: str) -> str:
    """The response (``A``, ``B`` or ``TIE``) a slot key names under the order shown.

    >>> slot_to_response("left", "BA"), slot_to_response("right", "BA"), slot_to_response("tie", "AB")
    ('B', 'A', 'TIE')
    """
    if slot not in SLOTS or order not in ORDERS:
        raise StoreError(f"slot {slot!r} under order {order!r}: give left, right or tie and AB or BA")
    return "TIE" if slot == "tie" else order[0 if slot == "left" else 1]


def response_to_slot(verdict: str, order: str) -> str:
    """The slot a stored pairwise verdict lands in under the order shown (inverse of the above)."""
    return "tie" if verdict == "TIE" else ("left" if order[0] == verdict else "right")


@dataclass(frozen=True, slots=True)
class Card:
    """One verdict item as an annotator sees it: texts in the order shown, nothing else."""

    item_id: str
    kind: str
    question: str
    contexts: tuple[str, ...]  # faithfulness, claims
    context: str | None  # pairwise, optional
    response: str | None  # faithfulness and the tasks on answers
    left: str | None  # pairwise: the response shown on the left
    right: str | None
    slot_order: str | None  # pairwise: AB when response A is on the left
    position: int  # 1-based place in the annotator's batch
    batch_size: int
    verdict: str | None  # this annotator's latest: SUPPORTED / UNSUPPORTED, or left / right / tie
    note: str  # this annotator's latest note on it
    claim: str | None = None  # claims: the claim judged, a part of ``response``
    reference: str | None = None  # correctness: the reference answer

    @property
    def mark(self) -> tuple[str | None, str]:
        """What the annotator's own work on the item looks like: changes when they act on it."""
        return self.verdict, self.note


@dataclass(frozen=True, slots=True)
class QueueProgress:
    done: int  # items of the kind this annotator has a verdict on (skips do not count)
    assigned: int


def _check(db: sqlite_utils.Database, annotator_id: int, kind: str) -> None:
    if kind not in KINDS:
        raise StoreError(f"unknown verdict task {kind!r}; give one of {', '.join(KINDS)}")
    annotator = require_active(db, annotator_id)
    if annotator.role != "admin" and kind not in enabled_tasks(db):
        raise StoreError(f"the {kind} task is not open to annotators in this project")


_PENDING = """
SELECT a.item_id FROM verdict_assignments a
WHERE a.annotator_id = :annotator AND a.kind = :kind AND a.shown_order > 0
  AND NOT EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = a.item_id AND h.annotator_id = a.annotator_id)
  AND NOT EXISTS (SELECT 1 FROM verdict_skips s WHERE s.item_id = a.item_id AND s.annotator_id = a.annotator_id)
ORDER BY a.shown_order LIMIT 1
"""

_SKIPPED = """
SELECT s.item_id, max(s.id) AS last FROM verdict_skips s
JOIN verdict_assignments a ON a.item_id = s.item_id AND a.annotator_id = s.annotator_id
WHERE s.annotator_id = :annotator AND a.kind = :kind AND a.shown_order > 0
  AND NOT EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = s.item_id AND h.annotator_id = s.annotator_id)
GROUP BY s.item_id ORDER BY last LIMIT 1
"""


def _one(db: sqlite_utils.Database, sql: str, annotator_id: int, kind: str) -> str | None:
    row = db.execute(sql, {"annotator": annotator_id, "kind": kind}).fetchone()
    return None if row is None else row[0]


@dataclass
class _Copies:
    """Who has an item of a kind: verdict givers, and active holders with their assignment time."""

    givers: set[int]
    held: dict[int, str]


def _copies(db: sqlite_utils.Database, kind: str) -> dict[str, _Copies]:
    sample = get_settings(db).answer_sample  # a sample of answers: only its answers' items go out
    copies = {r[0]: _Copies(set(), {}) for r in db.execute(
        "SELECT item_id FROM verdict_items WHERE kind = ? AND (? IS NULL OR answer_id IS NULL OR answer_id IN "
        "(SELECT answer_id FROM answer_sample_items WHERE sample = ?)) ORDER BY rowid", [kind, sample, sample])}
    for item_id, annotator_id in db.execute(
            "SELECT DISTINCT h.item_id, h.annotator_id FROM human_verdicts h JOIN verdict_items i ON i.item_id = h.item_id "
            "WHERE i.kind = ?", [kind]):
        copies[item_id].givers.add(annotator_id)
    for item_id, annotator_id, at in db.execute(
            "SELECT a.item_id, a.annotator_id, a.assigned_at FROM verdict_assignments a JOIN annotators n ON n.id = a.annotator_id "
            "WHERE a.kind = ? AND a.shown_order > 0 AND n.active", [kind]):
        copies[item_id].held[annotator_id] = at
    return copies


def _mine(db: sqlite_utils.Database, annotator_id: int, kind: str) -> set[str]:
    return {r[0] for r in db.execute(
        "SELECT item_id FROM verdict_assignments WHERE annotator_id = ? AND kind = ? UNION "
        "SELECT h.item_id FROM human_verdicts h JOIN verdict_items i ON i.item_id = h.item_id "
        "WHERE h.annotator_id = ? AND i.kind = ?", [annotator_id, kind, annotator_id, kind])}


def _open_items(db: sqlite_utils.Database, annotator_id: int, kind: str) -> Iterator[tuple[str, list[int]]]:
    """Items this annotator may take, in import order, each with the lapsed holders it leaves."""
    settings = get_settings(db)
    cutoff = (datetime.now(UTC) - timedelta(minutes=settings.reservation_minutes)).isoformat(timespec="microseconds")
    recent = {r[0] for r in db.execute("SELECT annotator_id FROM human_verdicts WHERE at > ? UNION "
                                       "SELECT annotator_id FROM verdict_skips WHERE at > ?", [cutoff, cutoff])}
    mine = _mine(db, annotator_id, kind)
    for item_id, copy in _copies(db, kind).items():
        if item_id in mine:
            continue
        if is_overlap(kind, item_id, settings.overlap):
            if len(copy.givers | set(copy.held)) < settings.overlap_k:
                yield item_id, []
        elif not copy.givers and not any(a in recent or at > cutoff for a, at in copy.held.items()):
            yield item_id, list(copy.held)


def assign_batch(db: sqlite_utils.Database, annotator_id: int, kind: str) -> int:
    """Hand the annotator their next batch of ``kind``; return its size (0: nothing left).

    Must run inside a write transaction.
    """
    batch: list[str] = []
    size = get_settings(db).batch_size
    for item_id, lapsed in _open_items(db, annotator_id, kind):
        for holder in lapsed:  # the item leaves the previous holder's queue
            db.execute("UPDATE verdict_assignments SET shown_order = -shown_order WHERE item_id = ? AND annotator_id = ? "
                       "AND shown_order > 0", [item_id, holder])
        batch.append(item_id)
        if len(batch) == size:
            break
    if not batch:
        return 0
    high, number = db.execute(
        "SELECT coalesce(max(abs(shown_order)), 0), coalesce(max(batch), 0) FROM verdict_assignments "
        "WHERE annotator_id = ? AND kind = ?", [annotator_id, kind]).fetchone()
    at = now()
    ordered = sorted(batch, key=lambda i: shuffle_key(annotator_id, kind, i))
    for offset, item_id in enumerate(ordered, start=1):
        db.execute(
            "INSERT INTO verdict_assignments (item_id, annotator_id, kind, batch, shown_order, slot_order, assigned_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [item_id, annotator_id, kind, number + 1, high + offset,
             slot_order(annotator_id, item_id) if kind == "pairwise" else None, at],
        )
    return len(batch)


def next_card(db: sqlite_utils.Database, annotator_id: int, kind: str) -> Card | None:
    """The annotator's next item of ``kind``, handing out a batch if needed; None when done.

    Raises:
        StoreError: an unknown kind, a deactivated annotator, or (for an annotator) a task
            the project's admins have not opened.
    """
    _check(db, annotator_id, kind)
    found = _one(db, _PENDING, annotator_id, kind)
    if found is None:
        with transaction(db):  # re-check under the write lock: the same person may be signed in twice
            found = _one(db, _PENDING, annotator_id, kind)
            if found is None and assign_batch(db, annotator_id, kind):
                found = _one(db, _PENDING, annotator_id, kind)
    if found is None:
        found = _one(db, _SKIPPED, annotator_id, kind)
    return None if found is None else _card(db, annotator_id, found)


def _assignment(db: sqlite_utils.Database, annotator_id: int, item_id: str) -> tuple[str, int, int, str | None]:
    row = db.execute(
        "SELECT kind, batch, shown_order, slot_order FROM verdict_assignments WHERE item_id = ? AND annotator_id = ?",
        [item_id, annotator_id],
    ).fetchone()
    if row is None:
        raise StoreError(f"item {item_id!r} is not assigned to this annotator")
    return row[0], row[1], row[2], row[3]


def _card(db: sqlite_utils.Database, annotator_id: int, item_id: str) -> Card:
    kind, batch, _, order = _assignment(db, annotator_id, item_id)
    item = get_item(db, item_id)
    # A lapsed item (negated shown_order) counts in its own place only: it may still be on screen.
    members = [r[0] for r in db.execute(
        "SELECT item_id FROM verdict_assignments WHERE annotator_id = ? AND kind = ? AND batch = ? "
        "AND (shown_order > 0 OR item_id = ?) ORDER BY abs(shown_order)", [annotator_id, kind, batch, item_id])]
    latest = db.execute(
        "SELECT verdict, note, at FROM current_human_verdicts WHERE item_id = ? AND annotator_id = ?",
        [item_id, annotator_id]).fetchone()
    skipped = db.execute(
        "SELECT note, at FROM verdict_skips WHERE item_id = ? AND annotator_id = ? AND note != '' ORDER BY id DESC LIMIT 1",
        [item_id, annotator_id]).fetchone()
    note = "" if latest is None else latest[1]
    if skipped is not None and (latest is None or skipped[1] > latest[2]):
        note = skipped[0]
    verdict = None if latest is None else latest[0]
    left = right = None
    if kind == "pairwise":
        assert order is not None
        texts = {"A": item.response_a, "B": item.response_b}
        left, right = texts[order[0]], texts[order[1]]
        verdict = None if verdict is None else response_to_slot(verdict, order)
    return Card(item_id, kind, item.question, item.contexts, item.context, item.response, left, right, order,
                members.index(item_id) + 1, len(members), verdict, note, claim=item.claim, reference=item.reference)


def get_card(db: sqlite_utils.Database, annotator_id: int, item_id: str) -> Card:
    """One of this annotator's assigned items.

    Raises:
        StoreError: the item is not assigned to this annotator.
    """
    return _card(db, annotator_id, item_id)


def previous_card(db: sqlite_utils.Database, annotator_id: int, item_id: str) -> Card | None:
    """The item judged or skipped before ``item_id`` in this annotator's order (the `u` key)."""
    kind, _, order, _ = _assignment(db, annotator_id, item_id)
    row = db.execute(
        """SELECT a.item_id FROM verdict_assignments a
           WHERE a.annotator_id = :annotator AND a.kind = :kind AND a.shown_order > 0 AND a.shown_order < abs(:order)
             AND (EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = a.item_id AND h.annotator_id = a.annotator_id)
                  OR EXISTS (SELECT 1 FROM verdict_skips s WHERE s.item_id = a.item_id AND s.annotator_id = a.annotator_id))
           ORDER BY a.shown_order DESC LIMIT 1""",
        {"annotator": annotator_id, "kind": kind, "order": order},
    ).fetchone()
    return None if row is None else _card(db, annotator_id, row[0])


def record_verdict(
    db: sqlite_utils.Database, annotator_id: int, item_id: str, choice: str, seconds: float | None, note: str = ""
) -> int:
    """Append the verdict a key gave on an assigned item; return its row id.

    ``choice`` is ``SUPPORTED`` / ``UNSUPPORTED`` for faithfulness and a slot (``left``,
    ``right``, ``tie``) for pairwise, stored as the response it names plus the order shown.

    Raises:
        StoreError: the item is not assigned to this annotator, a choice the kind does not
            take, or a deactivated annotator; nothing is written.
    """
    kind, _, position, order = _assignment(db, annotator_id, item_id)
    verdict, shown = (slot_to_response(choice, order), order) if kind == "pairwise" and order else (choice, None)
    row_id = record_human_verdict(db, annotator_id, item_id, verdict, shown_order=shown, seconds=seconds,
                                  note=note, rubric_hash=verdict_rubric_hash(kind))
    if position < 0:  # a verdict sent after the hold lapsed is kept, and the item is theirs again
        with transaction(db):
            db.execute("UPDATE verdict_assignments SET shown_order = -shown_order WHERE item_id = ? AND annotator_id = ? "
                       "AND shown_order < 0", [item_id, annotator_id])
    return row_id


def record_skip(db: sqlite_utils.Database, annotator_id: int, item_id: str, seconds: float | None, note: str = "") -> None:
    """Append a skip (with the note typed, if any): the item comes back after other work.

    Raises:
        StoreError: the item is not assigned to this annotator, or a deactivated annotator.
    """
    _assignment(db, annotator_id, item_id)
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0):
        raise StoreError(f"seconds {seconds!r}: give a non-negative number or None")
    with transaction(db):
        require_active(db, annotator_id)
        db.execute("INSERT INTO verdict_skips (item_id, annotator_id, at, seconds, note) VALUES (?, ?, ?, ?, ?)",
                   [item_id, annotator_id, now(), seconds, str(note or "")])


def progress(db: sqlite_utils.Database, annotator_id: int, kind: str) -> QueueProgress:
    """Items of ``kind`` assigned to this annotator, and how many of them they gave a verdict on."""
    done, assigned = db.execute(
        "SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = a.item_id "
        "AND h.annotator_id = a.annotator_id)), count(*) FROM verdict_assignments a WHERE annotator_id = ? AND kind = ? "
        "AND shown_order > 0",
        [annotator_id, kind]).fetchone()
    return QueueProgress(done, assigned)


__all__ = ["Card", "QueueProgress", "RUBRICS", "SLOTS", "assign_batch", "get_card", "next_card",
           "previous_card", "progress", "record_skip", "record_verdict", "response_to_slot", "slot_order",
           "slot_to_response", "verdict_rubric_hash"]
