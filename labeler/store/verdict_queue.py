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

How the next batch is found without reading every item is :mod:`labeler.store.verdict_handout`.

Blindness: a ``Card`` carries the texts only: no model name, no judge verdict, no other
person's verdict.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import sqlite_utils

from labeler.store.access import require_active
from labeler.store.assign import shuffle_key
from labeler.store.connection import transaction
from labeler.store.errors import StoreError
from labeler.store.rubric import rubric_hash
from labeler.store.schema import now
from labeler.store.settings import enabled_tasks, state
from labeler.store.verdict_handout import assign_batch, cursor_key, slot_order
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


def _check(db: sqlite_utils.Database, annotator_id: int, kind: str, open_tasks: Collection[str] | None) -> None:
    if kind not in KINDS:
        raise StoreError(f"unknown verdict task {kind!r}; give one of {', '.join(KINDS)}")
    annotator = require_active(db, annotator_id)
    if annotator.role != "admin" and kind not in (enabled_tasks(db) if open_tasks is None else open_tasks):
        raise StoreError(f"the {kind} task is not open to annotators in this project")


_PENDING = """
SELECT a.item_id FROM verdict_assignments a
WHERE a.annotator_id = :annotator AND a.kind = :kind AND a.shown_order >= :cursor
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


def _one(db: sqlite_utils.Database, sql: str, annotator_id: int, kind: str, cursor: int = 1) -> str | None:
    row = db.execute(sql, {"annotator": annotator_id, "kind": kind, "cursor": cursor}).fetchone()
    return None if row is None else row[0]


def _pending(db: sqlite_utils.Database, annotator_id: int, kind: str) -> str | None:
    """The annotator's first unjudged, unskipped item of ``kind``, read from where their
    unjudged items start (``verdict_handout.cursor_key``), not from their first item ever."""
    cursor = max(1, int(state(db, cursor_key(annotator_id, kind)) or 1))
    return _one(db, _PENDING, annotator_id, kind, cursor)


def next_card(db: sqlite_utils.Database, annotator_id: int, kind: str, *,
              open_tasks: Collection[str] | None = None) -> Card | None:
    """The annotator's next item of ``kind``, handing out a batch if needed; None when done.

    ``open_tasks`` are the tasks open to annotators (``settings.enabled_tasks``), if already read.

    Raises:
        StoreError: an unknown kind, a deactivated annotator, or (for an annotator) a task
            the project's admins have not opened.
    """
    _check(db, annotator_id, kind, open_tasks)
    found = _pending(db, annotator_id, kind)
    if found is None:
        with transaction(db):  # re-check under the write lock: the same person may be signed in twice
            found = _pending(db, annotator_id, kind)
            if found is None and assign_batch(db, annotator_id, kind):
                found = _pending(db, annotator_id, kind)
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
    # Read through the batch's index: the ``+`` keeps SQLite from reading the OR through others.
    members = [r[0] for r in db.execute(
        "SELECT item_id FROM verdict_assignments WHERE annotator_id = ? AND kind = ? AND batch = ? "
        "AND (+shown_order > 0 OR +item_id = ?) ORDER BY abs(shown_order)", [annotator_id, kind, batch, item_id])]
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
           "previous_card", "progress", "record_skip", "record_verdict", "response_to_slot", "shuffle_key", "slot_order",
           "slot_to_response", "verdict_rubric_hash"]
