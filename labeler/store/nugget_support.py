"""Support of a nugget by an answer: the items of the ``nuggets`` task, people's queue, labels.

Each (answer, nugget of its question) is a verdict item of the ``nuggets`` task,
``ANSWER_ID@nugget=NUGGET_ID`` (:func:`labeler.store.vocabulary.nugget_item`), with a row of
``nugget_items`` saying which answer and nugget it is about. Its verdicts are ``SUPPORT``,
``PARTIAL_SUPPORT`` and ``NOT_SUPPORT``, people's in ``human_verdicts`` and judges' in
``judge_verdicts`` like every other task's, so imports, exports, calibration and the judge
cache treat them as they treat the others. Items are made when first needed (a hand-out, a
judge run, an import): answers and nuggets arrive in any order. An empty answer has no item:
it supports nothing, known without a label.

People's queue is served per answer: an annotator gets one answer and all its nuggets in a
row, in the nuggets' order, so the answer is read once; the next answer is of the same
question while it has answers left for them. Questions and a question's answers come in a
per-annotator shuffled order, so position says nothing about the system. A share ``overlap``
of the answers (a hash of the answer) goes to ``overlap_k`` annotators (the settings of every
task); a deactivated annotator's copies stop counting. Skipped items come back once the
annotator has nothing else. A card carries the question, the answer and the nugget: no system,
no importance, no judge's or other person's label.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import sqlite_utils

from labeler.store.access import require_active, require_admin
from labeler.store.assign import is_overlap, shuffle_key
from labeler.store.settings import Settings, enabled_tasks, get_settings
from labeler.store.connection import transaction
from labeler.store.errors import StoreError, shown
from labeler.store.rubric import rubric_hash
from labeler.store.schema import now
from labeler.store.verdicts import record_human_verdict
from labeler.store.vocabulary import TASK_BY_NAME, Caller, nugget_item

TASK = "nuggets"

#: What a person is asked to weigh on the support page (its hash goes with each verdict).
RUBRIC = (
    "Does the answer support the nugget? **Support** when the answer states the nugget's fact (other words are "
    "fine); **Partial support** when it states part of it, or states it vaguely; **No support** when it does not "
    "state it, contradicts it, or declines to answer. Judge only what the answer says: whether the fact is true, and "
    "the answer's length and tone, do not matter."
)


@dataclass(frozen=True, slots=True)
class SupportTarget:
    """One (answer, nugget) to judge: the item, and the texts a judge is given."""

    item_id: str
    answer_id: str
    nugget_id: str
    question: str
    response: str
    nugget: str
    item_hash: str  # what a judge's cached reply is keyed on: the answer's and the nugget's texts


@dataclass(frozen=True, slots=True)
class SupportCard:
    """One (answer, nugget) as an annotator sees it: the texts, their place, their own label."""

    item_id: str
    question: str
    response: str
    nugget: str
    nugget_number: int  # 1-based place of the nugget among this answer's
    nuggets: int  # how many nuggets the answer is judged on
    verdict: str | None  # this annotator's latest verdict (SUPPORT, PARTIAL_SUPPORT, NOT_SUPPORT)
    note: str  # this annotator's latest note on it

    @property
    def mark(self) -> tuple[str | None, str]:
        """What the annotator's own work on the item looks like: changes when they act on it."""
        return self.verdict, self.note


@dataclass(frozen=True, slots=True)
class SupportLabel:
    """The current support verdict of one person (or of a judge) on one (answer, nugget)."""

    answer_id: str
    nugget_id: str
    who: str
    verdict: str


def support_rubric_hash() -> str:
    """The version of :data:`RUBRIC`, stored with every verdict given on the page."""
    return rubric_hash(RUBRIC, 16)


def item_hash(answer_hash: str, nugget_text: str) -> str:
    """Content hash of a support item: the answer's content hash and the nugget's text."""
    return hashlib.sha256(f"{answer_hash}\x1f{TASK}\x1f{nugget_text}".encode()).hexdigest()


# --- items -------------------------------------------------------------------------------------


_MISSING = """
SELECT a.answer_id, c.nugget_id, a.content_hash, c.text FROM current_nuggets c
JOIN answers a ON a.query_id = c.query_id
WHERE c.status = 'active' AND a.response <> '' AND NOT EXISTS (SELECT 1 FROM nugget_items i
      WHERE i.answer_id = a.answer_id AND i.nugget_id = c.nugget_id)
"""


def add_support_items(db: sqlite_utils.Database, query_ids: Sequence[str] | None = None) -> int:
    """Make the missing items: every non-empty answer to a query (of ``query_ids``, every query
    when None) with every active nugget of that query. Runs inside the caller's write
    transaction; returns how many were made. The stores of nuggets and answers call it as they
    write, so a task page finds its work.

    Raises:
        StoreError: an item id the project holds already as another task's item.
    """
    if query_ids is None:
        missing = db.conn.execute(_MISSING + " ORDER BY a.answer_id, c.position").fetchall()
    else:
        missing = db.conn.execute(_MISSING + " AND c.query_id IN (SELECT value FROM json_each(?)) "
                                  "ORDER BY a.answer_id, c.position", [json.dumps(sorted(set(query_ids)))]).fetchall()
    for answer_id, nugget_id, answer_hash, text in missing:
        _insert_item(db, answer_id, nugget_id, answer_hash, text)
    return len(missing)


def _insert_item(db: sqlite_utils.Database, answer_id: str, nugget_id: str, answer_hash: str, text: str) -> str:
    item_id = nugget_item(answer_id, nugget_id)
    taken = db.conn.execute("SELECT kind FROM verdict_items WHERE item_id = ?", [item_id]).fetchone()
    if taken is not None:
        raise StoreError(f"item {shown(item_id)} is already a {taken[0]} item of the project; the support of nugget "
                         f"{shown(nugget_id)} by answer {shown(answer_id)} has no id left")
    db.conn.execute("INSERT INTO verdict_items (item_id, kind, question, content_hash, added_at, answer_id) "
                    "VALUES (?, ?, '', ?, ?, ?)", [item_id, TASK, item_hash(answer_hash, text), now(), answer_id])
    db.conn.execute("INSERT INTO nugget_items (item_id, answer_id, nugget_id) VALUES (?, ?, ?)",
                    [item_id, answer_id, nugget_id])
    return item_id


def _refused(message: str, field: str) -> StoreError:
    """A refusal naming the record field at fault (``field``), for an import to locate."""
    exc = StoreError(message)
    exc.field = field
    return exc


def support_item(db: sqlite_utils.Database, answer_id: str, nugget_id: str) -> str:
    """The item of (``answer_id``, ``nugget_id``), made if missing (inside the caller's write
    transaction): what a support verdict of a file is recorded on.

    Raises:
        StoreError: no such answer or nugget, a nugget of another question or no longer
            active, an empty answer (it supports nothing; no label is taken).
    """
    found = db.conn.execute("SELECT item_id FROM nugget_items WHERE answer_id = ? AND nugget_id = ?",
                            [answer_id, nugget_id]).fetchone()
    if found is not None:
        return found[0]
    answer = db.conn.execute("SELECT query_id, response, content_hash FROM answers WHERE answer_id = ?",
                             [answer_id]).fetchone()
    if answer is None:
        raise _refused(f"no answer {shown(answer_id)} in the project (import it with `goldpool import-answers`)",
                       "answer_id")
    nugget = db.conn.execute("SELECT query_id, status, text FROM current_nuggets WHERE nugget_id = ?",
                             [nugget_id]).fetchone()
    if nugget is None:
        raise _refused(f"no nugget {shown(nugget_id)} in the project (import it with `goldpool import-nuggets`)",
                       "nugget_id")
    if nugget[0] != answer[0]:
        raise _refused(f"nugget {shown(nugget_id)} is a nugget of query {shown(nugget[0])}, and answer "
                       f"{shown(answer_id)} answers {shown(answer[0])}", "nugget_id")
    if nugget[1] != "active":
        raise _refused(f"nugget {shown(nugget_id)} is {nugget[1]}; restore it to label its support", "nugget_id")
    if answer[1] == "":
        raise _refused(f"answer {shown(answer_id)} is empty: it supports no nugget, with nothing to label", "answer_id")
    return _insert_item(db, answer_id, nugget_id, answer[2], nugget[2])


_TARGETS = """
SELECT i.item_id, i.answer_id, i.nugget_id, a.question, a.response, c.text, a.content_hash
FROM nugget_items i JOIN answers a ON a.answer_id = i.answer_id JOIN current_nuggets c ON c.nugget_id = i.nugget_id
WHERE c.status = 'active' ORDER BY i.answer_id, c.position
"""


def support_targets(db: sqlite_utils.Database) -> list[SupportTarget]:
    """Every (answer, active nugget) to judge, items made first: a judge run's work, by answer
    and the nuggets' order."""
    with transaction(db):
        add_support_items(db)
    return [SupportTarget(*r[:6], item_hash(r[6], r[5])) for r in db.conn.execute(_TARGETS)]


def support_labels(db: sqlite_utils.Database, *, judge: str | None = None, caller: Caller) -> list[SupportLabel]:
    """Every current support verdict of people (``who``: the annotator; admin only, as every
    view of other people's work) or, with ``judge``, that judge's parseable ones."""
    require_admin(db, caller)
    if judge is None:
        rows = db.conn.execute(
            "SELECT i.answer_id, i.nugget_id, n.name, h.verdict FROM current_human_verdicts h "
            "JOIN nugget_items i ON i.item_id = h.item_id JOIN annotators n ON n.id = h.annotator_id "
            "ORDER BY i.answer_id, i.nugget_id, n.name")
    else:
        rows = db.conn.execute(
            "SELECT i.answer_id, i.nugget_id, v.judge, v.verdict FROM current_judge_verdicts v "
            "JOIN nugget_items i ON i.item_id = v.item_id WHERE v.judge = ? AND v.task = ? AND v.verdict IS NOT NULL "
            "ORDER BY i.answer_id, i.nugget_id", [judge, TASK])
    return [SupportLabel(*r) for r in rows]


# --- people's queue ----------------------------------------------------------------------------


_PENDING = """
SELECT a.item_id FROM verdict_assignments a
WHERE a.annotator_id = :annotator AND a.kind = 'nuggets' AND a.shown_order > 0
  AND NOT EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = a.item_id AND h.annotator_id = a.annotator_id)
  AND NOT EXISTS (SELECT 1 FROM verdict_skips s WHERE s.item_id = a.item_id AND s.annotator_id = a.annotator_id)
ORDER BY a.shown_order LIMIT 1
"""

_SKIPPED = """
SELECT s.item_id, max(s.id) AS last FROM verdict_skips s
JOIN verdict_assignments a ON a.item_id = s.item_id AND a.annotator_id = s.annotator_id
WHERE s.annotator_id = :annotator AND a.kind = 'nuggets' AND a.shown_order > 0
  AND NOT EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = s.item_id AND h.annotator_id = s.annotator_id)
GROUP BY s.item_id ORDER BY last LIMIT 1
"""


def _one(db: sqlite_utils.Database, sql: str, annotator_id: int) -> str | None:
    row = db.conn.execute(sql, {"annotator": annotator_id}).fetchone()
    return None if row is None else row[0]


def _check(db: sqlite_utils.Database, annotator_id: int, open_tasks: Collection[str] | None) -> None:
    annotator = require_active(db, annotator_id)
    if annotator.role != "admin" and TASK not in (enabled_tasks(db) if open_tasks is None else open_tasks):
        raise StoreError(f"the {TASK} task is not open to annotators in this project")


# Per question: its answers with an item of an active nugget, and who holds or has judged each
# (a deactivated holder's copy is free again unless they judged it).
_ANSWERS_OF = """
SELECT DISTINCT i.answer_id FROM current_nuggets c JOIN nugget_items i ON i.nugget_id = c.nugget_id
WHERE c.query_id = ? AND c.status = 'active'
"""
_HOLDERS_OF = """
SELECT i.answer_id, a.annotator_id FROM answers q JOIN nugget_items i ON i.answer_id = q.answer_id
JOIN verdict_assignments a ON a.item_id = i.item_id JOIN annotators n ON n.id = a.annotator_id
WHERE q.query_id = ? AND a.kind = 'nuggets' AND (n.active OR EXISTS (SELECT 1 FROM human_verdicts h
      WHERE h.item_id = a.item_id AND h.annotator_id = a.annotator_id))
UNION SELECT i.answer_id, h.annotator_id FROM answers q JOIN nugget_items i ON i.answer_id = q.answer_id
JOIN human_verdicts h ON h.item_id = i.item_id WHERE q.query_id = ?
"""


def _open_answers(db: sqlite_utils.Database, annotator_id: int, query_id: str, settings: Settings) -> list[str]:
    """The answers to one question this annotator may take, in their shuffled order: an answer
    with an item of an active nugget, not theirs yet, held or judged by fewer people than it
    needs (``overlap_k`` for an overlap answer, else one)."""
    copies: dict[str, set[int]] = {}
    for answer_id, who in db.conn.execute(_HOLDERS_OF, [query_id, query_id]):
        copies.setdefault(answer_id, set()).add(who)
    found = []
    for (answer_id,) in db.conn.execute(_ANSWERS_OF, [query_id]):
        held = copies.get(answer_id, set())
        wanted = settings.overlap_k if is_overlap(TASK, answer_id, settings.overlap) else 1
        if annotator_id not in held and len(held) < wanted:
            found.append(answer_id)
    return sorted(found, key=lambda answer_id: shuffle_key(annotator_id, query_id, answer_id))


def _shown_high(db: sqlite_utils.Database, annotator_id: int) -> tuple[int, str | None]:
    """The annotator's highest ``abs(shown_order)`` among their support items, and that item's
    id: two probes of the queue index (its top and its bottom), not a read of their work."""
    where = "FROM verdict_assignments WHERE annotator_id = ? AND kind = 'nuggets'"
    top = db.conn.execute(f"SELECT shown_order, item_id {where} ORDER BY shown_order DESC LIMIT 1", [annotator_id]).fetchone()
    bottom = db.conn.execute(f"SELECT shown_order, item_id {where} ORDER BY shown_order LIMIT 1", [annotator_id]).fetchone()
    if top is None:
        return 0, None
    return max((abs(top[0]), top[1]), (abs(bottom[0]), bottom[1]))


def _hand_out(db: sqlite_utils.Database, annotator_id: int) -> int:
    """Give the annotator their next answer's items (inside a write transaction): of the question
    of their last answer while it has some left, else of their next question in their shuffled
    order of the questions with nuggets. Reads question by question, until one has an answer
    left for them, so a hand-out costs the size of a question, not of the project. Returns the
    items handed out."""
    high, last_item = _shown_high(db, annotator_id)
    last = None if last_item is None else db.conn.execute(
        "SELECT a.query_id FROM nugget_items i JOIN answers a ON a.answer_id = i.answer_id WHERE i.item_id = ?",
        [last_item]).fetchone()
    questions = sorted((r[0] for r in db.conn.execute("SELECT DISTINCT query_id FROM nuggets")),
                       key=lambda query_id: shuffle_key(annotator_id, TASK, query_id))
    if last is not None:
        questions.insert(0, last[0])
    settings = get_settings(db)
    answer_id = None
    for query_id in questions:
        add_support_items(db, [query_id])  # the question's items, should a write have left some unmade
        open_answers = _open_answers(db, annotator_id, query_id, settings)
        if open_answers:
            answer_id = open_answers[0]
            break
    if answer_id is None:
        return 0
    items = [r[0] for r in db.conn.execute(
        "SELECT i.item_id FROM nugget_items i JOIN current_nuggets c ON c.nugget_id = i.nugget_id "
        "WHERE i.answer_id = ? AND c.status = 'active' ORDER BY c.position, i.nugget_id", [answer_id])]
    number = db.conn.execute(
        "SELECT coalesce(max(batch), 0) FROM verdict_assignments WHERE annotator_id = ? AND kind = 'nuggets'",
        [annotator_id]).fetchone()[0]
    at = now()
    db.conn.executemany(
        "INSERT INTO verdict_assignments (item_id, annotator_id, kind, batch, shown_order, slot_order, assigned_at) "
        "VALUES (?, ?, 'nuggets', ?, ?, NULL, ?)",
        [(item, annotator_id, number + 1, high + k, at) for k, item in enumerate(items, start=1)])
    return len(items)


def next_support_card(db: sqlite_utils.Database, annotator_id: int, *,
                      open_tasks: Collection[str] | None = None) -> SupportCard | None:
    """The annotator's next (answer, nugget), handing out their next answer if needed; None when
    there is nothing left (then their skipped items come back, least recently skipped first).

    ``open_tasks`` are the tasks open to annotators (``settings.enabled_tasks``), if already read.

    Raises:
        StoreError: a deactivated annotator, or (for an annotator) the task is not open.
    """
    _check(db, annotator_id, open_tasks)
    found = _one(db, _PENDING, annotator_id)
    if found is None:
        with transaction(db):  # re-check under the write lock: the same person may be signed in twice
            found = _one(db, _PENDING, annotator_id)
            if found is None and _hand_out(db, annotator_id):
                found = _one(db, _PENDING, annotator_id)
    if found is None:
        found = _one(db, _SKIPPED, annotator_id)
    return None if found is None else support_card(db, annotator_id, found)


def support_card(db: sqlite_utils.Database, annotator_id: int, item_id: str) -> SupportCard:
    """One of the annotator's (answer, nugget) items, as their page shows it.

    Raises:
        StoreError: the item is not assigned to this annotator.
    """
    row = db.conn.execute(
        "SELECT v.batch, a.question, a.response, c.text FROM verdict_assignments v "
        "JOIN nugget_items i ON i.item_id = v.item_id JOIN answers a ON a.answer_id = i.answer_id "
        "JOIN current_nuggets c ON c.nugget_id = i.nugget_id "
        "WHERE v.item_id = ? AND v.annotator_id = ? AND v.kind = 'nuggets'", [item_id, annotator_id]).fetchone()
    if row is None:
        raise StoreError(f"item {shown(item_id)} is not assigned to this annotator")
    members = [r[0] for r in db.conn.execute(
        "SELECT item_id FROM verdict_assignments WHERE annotator_id = ? AND kind = 'nuggets' AND batch = ? "
        "ORDER BY abs(shown_order)", [annotator_id, row[0]])]
    latest = db.conn.execute("SELECT verdict, note FROM current_human_verdicts WHERE item_id = ? AND annotator_id = ?",
                             [item_id, annotator_id]).fetchone()
    return SupportCard(item_id, row[1], row[2], row[3], members.index(item_id) + 1, len(members),
                       None if latest is None else latest[0], "" if latest is None else latest[1])


def previous_support_card(db: sqlite_utils.Database, annotator_id: int, item_id: str) -> SupportCard | None:
    """The item labelled or skipped before ``item_id`` in the annotator's order (back), or None."""
    order = db.conn.execute("SELECT shown_order FROM verdict_assignments WHERE item_id = ? AND annotator_id = ?",
                            [item_id, annotator_id]).fetchone()
    if order is None:
        raise StoreError(f"item {shown(item_id)} is not assigned to this annotator")
    row = db.conn.execute(
        "SELECT a.item_id FROM verdict_assignments a WHERE a.annotator_id = :annotator AND a.kind = 'nuggets' "
        "AND a.shown_order > 0 AND a.shown_order < abs(:order) "
        "AND (EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = a.item_id AND h.annotator_id = a.annotator_id) "
        "     OR EXISTS (SELECT 1 FROM verdict_skips s WHERE s.item_id = a.item_id AND s.annotator_id = a.annotator_id)) "
        "ORDER BY a.shown_order DESC LIMIT 1", {"annotator": annotator_id, "order": order[0]}).fetchone()
    return None if row is None else support_card(db, annotator_id, row[0])


def record_support(db: sqlite_utils.Database, annotator_id: int, item_id: str, verdict: str,
                   seconds: float | None = None, note: str = "") -> int:
    """Append the annotator's support verdict (``SUPPORT``, ``PARTIAL_SUPPORT`` or ``NOT_SUPPORT``,
    any case) on an assigned item, with the rubric's hash; return its row id.

    Raises:
        StoreError: the item is not assigned to this annotator, another verdict, a deactivated
            annotator; nothing is written.
    """
    support_card(db, annotator_id, item_id)
    word = verdict.strip().upper() if isinstance(verdict, str) else verdict
    if word not in TASK_BY_NAME[TASK].verdicts:
        raise StoreError(f"verdict {shown(verdict)}: a support verdict is one of {', '.join(TASK_BY_NAME[TASK].verdicts)}")
    return record_human_verdict(db, annotator_id, item_id, word, seconds=seconds, note=note,
                                rubric_hash=support_rubric_hash())


def skip_support(db: sqlite_utils.Database, annotator_id: int, item_id: str, seconds: float | None = None,
                 note: str = "") -> None:
    """Append a skip (with the note typed): the item comes back after the annotator's other work.

    Raises:
        StoreError: the item is not assigned to this annotator, a deactivated annotator.
    """
    support_card(db, annotator_id, item_id)
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0):
        raise StoreError(f"seconds {seconds!r}: give a non-negative number or None")
    with transaction(db):
        require_active(db, annotator_id)
        db.conn.execute("INSERT INTO verdict_skips (item_id, annotator_id, at, seconds, note) VALUES (?, ?, ?, ?, ?)",
                        [item_id, annotator_id, now(), seconds, str(note or "")])


def support_progress(db: sqlite_utils.Database, annotator_id: int) -> tuple[int, int]:
    """(items this annotator gave a support verdict on, items assigned to them)."""
    done, assigned = db.conn.execute(
        "SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = a.item_id "
        "AND h.annotator_id = a.annotator_id)), count(*) FROM verdict_assignments a "
        "WHERE a.annotator_id = ? AND a.kind = 'nuggets' AND a.shown_order > 0", [annotator_id]).fetchone()
    return int(done), int(assigned)


__all__ = ["RUBRIC", "SupportCard", "SupportLabel", "SupportTarget", "add_support_items", "item_hash",
           "next_support_card", "previous_support_card", "record_support", "skip_support", "support_card",
           "support_item", "support_labels", "support_progress", "support_rubric_hash", "support_targets"]

