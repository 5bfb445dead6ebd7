"""Verdict items, human verdicts and judge verdicts: every SQL statement for them.

Two kinds of item are judged by a verdict rather than a grade: ``faithfulness`` (is the
response supported by the contexts: ``SUPPORTED`` / ``UNSUPPORTED``) and ``pairwise`` (which
of two responses is better: ``A`` / ``B`` / ``TIE``, naming the response, not the slot it was
shown in). Relevance verdicts of a judge refer to pool entries by (query_id, doc_id); human
relevance grades stay in ``judgments``.

Human verdicts (``human_verdicts``) and judge verdicts (``judge_verdicts``) never share a
table; both are append-only and the latest row per (who, item, order) counts. Imports receive
records already read and checked from their file (the store opens no file) and write them in
one transaction: a bad record anywhere leaves the database exactly as it was, and importing
the same file twice adds nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from labeler.store.access import require_active, require_admin
from labeler.store.connection import transaction
from labeler.store.errors import InputError, StoreError, shown
from labeler.store.schema import now
from labeler.store.settings import get_settings
from labeler.store.verdict_handout import settle
from labeler.store.vocabulary import KINDS, ORDERS, VERDICTS, Caller, item_answer

_ITEM_FIELDS = {
    "faithfulness": ("item_id", "kind", "question", "contexts", "response"),
    "pairwise": ("item_id", "kind", "question", "context", "response_a", "response_b", "model_a", "model_b"),
}


@dataclass(frozen=True, slots=True)
class VerdictItem:
    """One verdict item as stored: a faithfulness or pairwise item, or an item of a task on
    answers (a claim, an answer's correctness or relevance)."""

    item_id: str
    kind: str
    question: str
    contexts: tuple[str, ...]
    context: str | None
    response: str | None
    response_a: str | None
    response_b: str | None
    model_a: str | None
    model_b: str | None
    content_hash: str
    answer_id: str | None = None  # the answer an item of a task on answers is about
    claim: str | None = None  # the claim judged, on a claims item
    reference: str | None = None  # the reference answer, on an answer's items


@dataclass(frozen=True, slots=True)
class ImportCount:
    """What one import did: records added, records already present unchanged, and whether the
    annotator the records were imported for was created by the import."""

    path: str
    added: int
    unchanged: int
    created_annotator: bool = False


@dataclass(frozen=True, slots=True)
class HumanVerdict:
    """The latest verdict of one annotator on one item."""

    item_id: str
    kind: str
    annotator: str
    verdict: str
    shown_order: str | None
    at: str


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """The latest verdict of a judge on one item (or pool entry) in one order."""

    task: str
    item_id: str | None
    query_id: str | None
    doc_id: str | None
    shown_order: str | None
    verdict: str | None  # None: unparseable reply or failed call
    parseable: bool
    error: str | None
    model: str
    prompt_hash: str
    tokens_in: int | None
    tokens_out: int | None
    latency: float | None
    raw: str | None


# --- items ---------------------------------------------------------------------------------


def content_hash(values: list[Any]) -> str:
    """sha256 of the canonical JSON of ``values`` (the texts a verdict was given on)."""
    return hashlib.sha256(json.dumps(values, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


_ITEM_COLUMNS = ("item_id", "kind", "question", "contexts", "context", "response", "response_a", "response_b",
                 "model_a", "model_b", "content_hash", "meta")


def _item_row(item: Mapping[str, Any], path: str, line: int) -> dict[str, Any]:
    kind = item.get("kind")
    if kind not in _ITEM_FIELDS:
        raise InputError(f"{shown(kind)}: give {' or '.join(map(repr, _ITEM_FIELDS))} (items of the tasks on answers "
                         "come from `goldpool import-answers`)", path, line, "kind")
    row = {column: item.get(column) for column in _ITEM_COLUMNS}
    row["contexts"] = list(item.get("contexts") or [])
    row["content_hash"] = content_hash([row[f] for f in _ITEM_FIELDS[kind] if f != "item_id"])
    row["contexts"] = json.dumps(row["contexts"], ensure_ascii=False)
    row["meta"] = json.dumps(dict(item.get("meta") or {}), ensure_ascii=False, sort_keys=True, default=str)
    return row


def _changed(stored: dict[str, Any], row: dict[str, Any]) -> str:
    for field in ("kind", "question", "contexts", "context", "response", "response_a", "response_b", "model_a", "model_b", "meta"):
        if stored[field] != row[field]:
            return field
    return "meta"


def add_items(db: sqlite_utils.Database, path: str | Path, items: Iterable[tuple[int, Mapping[str, Any]]], *,
              caller: Caller) -> ImportCount:
    """Add faithfulness and pairwise items read from the file ``path`` (admin only), in one transaction.

    ``items`` are ``(line, item)``, each item a mapping of the columns of ``verdict_items``
    (``contexts`` a list, ``meta`` a dict), checked field by field by the file's reader. An
    item already stored with the same content counts as unchanged.

    Raises:
        StoreError: an unknown kind, or changed text under an existing item_id (named by
            file, line and field); nothing is written.
    """
    require_admin(db, caller)
    path = str(path)
    added = unchanged = 0
    insert = f"INSERT INTO verdict_items ({', '.join(_ITEM_COLUMNS)}, added_at) VALUES ({', '.join('?' * (len(_ITEM_COLUMNS) + 1))})"
    at = now()
    with transaction(db):
        for line, item in items:
            row = _item_row(item, path, line)
            _check_not_an_answer_item(db, row["item_id"], path, line)
            stored = _stored_item(db, row["item_id"])
            if stored is not None:
                if stored["content_hash"] == row["content_hash"] and stored["meta"] == row["meta"]:
                    unchanged += 1
                    continue
                raise InputError(
                    f"item {shown(row['item_id'])} is already in the project with different content; "
                    "verdicts were given on the stored text: import the new text under a new item_id",
                    path, line, _changed(stored, row),
                )
            db.execute(insert, [*(row[c] for c in _ITEM_COLUMNS), at])
            added += 1
    return ImportCount(path, added, unchanged)


def _check_not_an_answer_item(db: sqlite_utils.Database, item_id: str, path: str, line: int) -> None:
    """Refuse an item_id that is, or would be, an item of a stored answer: a claim
    ``ANSWER_ID#N`` or ``ANSWER_ID@TASK`` (:func:`labeler.store.vocabulary.item_answer`)."""
    answer_id, hash_mark, n = item_id.rpartition("#")
    of = item_answer(item_id)
    if of is not None:
        answer_id, what = of[0], f"its {of[1]} item"
    elif hash_mark and answer_id and n.isdigit():
        what = f"its claim {n}"
    else:
        return
    stored = db.execute("SELECT system FROM answers WHERE answer_id = ?", [answer_id]).fetchone()
    if stored is not None:
        raise InputError(f"{shown(item_id)} is the id of {what} of answer {shown(answer_id)} (system "
                         f"{shown(stored[0])}), made by `goldpool import-answers`; give the item another item_id",
                         path, line, "item_id")


def _stored_item(db: sqlite_utils.Database, item_id: str) -> dict[str, Any] | None:
    cursor = db.execute("SELECT * FROM verdict_items WHERE item_id = ?", [item_id])
    row = cursor.fetchone()
    return None if row is None else dict(zip([d[0] for d in cursor.description], row))


def _item(row: tuple) -> VerdictItem:
    return VerdictItem(row[0], row[1], row[2], tuple(json.loads(row[3])), *row[4:])


# The items of tasks on answers keep only what is theirs (the claim); their answer's texts are
# read from the answer, stored once however many items an answer has.
_ITEM_SELECT = (
    "SELECT i.item_id, i.kind, coalesce(a.question, i.question), coalesce(a.contexts, i.contexts), i.context, "
    "coalesce(a.response, i.response), i.response_a, i.response_b, i.model_a, i.model_b, i.content_hash, "
    "i.answer_id, i.claim, coalesce(a.reference, i.reference) "
    "FROM verdict_items i LEFT JOIN answers a ON a.answer_id = i.answer_id"
)


def list_items(db: sqlite_utils.Database, kind: str | None = None) -> list[VerdictItem]:
    """Every verdict item (of ``kind``), by item_id. Items hold no verdict: anyone may read them."""
    if kind is None:
        return [_item(r) for r in db.execute(_ITEM_SELECT + " ORDER BY i.item_id")]
    return [_item(r) for r in db.execute(_ITEM_SELECT + " WHERE i.kind = ? ORDER BY i.item_id", [kind])]


def get_item(db: sqlite_utils.Database, item_id: str) -> VerdictItem:
    """The item ``item_id``.

    Raises:
        StoreError: no such item.
    """
    row = db.execute(_ITEM_SELECT + " WHERE i.item_id = ?", [item_id]).fetchone()
    if row is None:
        raise StoreError(f"no verdict item {shown(item_id)} (import items with `goldpool import-items DB FILE`)")
    return _item(row)


# --- human verdicts --------------------------------------------------------------------------


def _seconds(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise StoreError(f"{where}seconds {shown(value)}: give a non-negative number")
    return float(value)


def _check_verdict(kind: str, verdict: object, order: object, where: str = "") -> tuple[str, str | None]:
    text = str(verdict).strip().upper() if isinstance(verdict, str) else None
    if text not in VERDICTS[kind]:
        raise StoreError(f"{where}verdict {shown(verdict)}: a {kind} verdict is one of {', '.join(VERDICTS[kind])}")
    if kind != "pairwise" and order is not None:
        raise StoreError(f"{where}order {shown(order)}: only pairwise verdicts have an order")
    if order is not None and order not in ORDERS:
        raise StoreError(f"{where}order {shown(order)}: give 'AB' (A shown first) or 'BA' (B shown first)")
    return text, order  # type: ignore[return-value]


def record_human_verdict(
    db: sqlite_utils.Database,
    annotator_id: int,
    item_id: str,
    verdict: str,
    *,
    shown_order: str | None = None,
    seconds: float | None = None,
    note: str = "",
    rubric_hash: str | None = None,
) -> int:
    """Append one annotator's verdict on an item (``shown_order``: what the page showed first).

    Raises:
        StoreError: an unknown item, a verdict the item's kind does not take, a pairwise
            verdict without its order, or a deactivated annotator; nothing is written.
    """
    item = get_item(db, item_id)
    verdict, shown_order = _check_verdict(item.kind, verdict, shown_order)
    if item.kind == "pairwise" and shown_order is None:
        raise StoreError("a pairwise verdict made on the page records the order shown ('AB' or 'BA')")
    seconds = _seconds(seconds, "")
    with transaction(db):
        require_active(db, annotator_id)
        cursor = db.execute(
            "INSERT INTO human_verdicts (item_id, annotator_id, verdict, shown_order, note, at, seconds, rubric_hash, source) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'app')",
            [item_id, annotator_id, verdict, shown_order, str(note or ""), now(), seconds, rubric_hash],
        )
        settle(db, item_id, get_settings(db))
    return int(cursor.lastrowid)


_HUMAN_LATEST = """
SELECT h.item_id, i.kind, n.name, h.verdict, h.shown_order, h.at
FROM current_human_verdicts h JOIN annotators n ON n.id = h.annotator_id JOIN verdict_items i ON i.item_id = h.item_id
ORDER BY h.item_id, n.name
"""


def own_verdicts(db: sqlite_utils.Database, annotator_id: int) -> dict[str, tuple[str, str | None, str]]:
    """One annotator's latest (verdict, shown_order, note) per item: all they may see of verdicts."""
    rows = db.execute(
        "SELECT item_id, verdict, shown_order, note FROM current_human_verdicts WHERE annotator_id = ?",
        [annotator_id],
    )
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def latest_human_verdicts(db: sqlite_utils.Database, *, caller: Caller) -> list[HumanVerdict]:
    """The latest verdict per (item, annotator), every annotator (admin only)."""
    require_admin(db, caller)
    return [HumanVerdict(*r) for r in db.execute(_HUMAN_LATEST)]


def task_verdict_rows(db: sqlite_utils.Database, *, caller: Caller) -> list[tuple[str, str, str, str, str]]:
    """``(task, item_id, question, annotator, verdict)`` of every current human verdict (admin
    only): what the calibration report counts per task beside the relevance judgments (the
    question, the answer's for an item on an answer, is the unit its intervals resample)."""
    require_admin(db, caller)
    return [tuple(r) for r in db.execute(
        "SELECT i.kind, h.item_id, coalesce(a.question, i.question), n.name, h.verdict FROM current_human_verdicts h "
        "JOIN annotators n ON n.id = h.annotator_id JOIN verdict_items i ON i.item_id = h.item_id "
        "LEFT JOIN answers a ON a.answer_id = i.answer_id ORDER BY h.item_id, n.name")]


# --- judge verdicts and the call cache --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallResult:
    """One reply of a judge model (or the error that ended the attempt)."""

    raw: str | None
    verdict: str | None
    parseable: bool
    tokens_in: int | None
    tokens_out: int | None
    latency: float | None
    error: str | None = None
    raw_length: int | None = None  # the reply's length when ``raw`` holds only its start
    finish_reason: str | None = None  # why the model stopped (``length``: at its token budget); not cached
    key: Any = None  # the call's :class:`labeler.store.judge_calls.CallKey`, what its reply is cached under

    @property
    def cut_short(self) -> str | None:
        """Why the reply is not whole, or None: ``length`` (the model stopped at its token
        budget, ``finish_reason: "length"``) or ``kept`` (longer than what is kept of a reply,
        ``raw_length``). A cut reply is never read as a complete verdict, claim list or answer."""
        if self.finish_reason == "length":
            return "length"
        return "kept" if self.raw_length is not None else None

    @property
    def cacheable(self) -> bool:
        """Whether the reply may be cached: it arrived, and was not cut by the token budget (a
        rerun under the same budget asks again, as it did before the cache was keyed on it)."""
        return self.error is None and self.raw is not None and self.finish_reason != "length"


@dataclass(frozen=True, slots=True)
class Target:
    """What a judge verdict is about: a verdict item, or a pool entry (relevance)."""

    task: str
    item_id: str | None = None
    query_id: str | None = None
    doc_id: str | None = None
    shown_order: str | None = None


def _insert_judge(db: sqlite_utils.Database, judge: str, target: Target, model: str, prompt_hash: str,
                  result: CallResult, source: str, at: str | None = None) -> int:
    """Insert one judge verdict; its row id."""
    return db.conn.execute(
        "INSERT INTO judge_verdicts (judge, task, item_id, query_id, doc_id, model, prompt_hash, shown_order, verdict, "
        "parseable, raw, tokens_in, tokens_out, latency, error, at, source, raw_length) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [judge, target.task, target.item_id, target.query_id, target.doc_id, model, prompt_hash, target.shown_order,
         result.verdict, int(result.parseable), result.raw, result.tokens_in, result.tokens_out, result.latency,
         result.error, at or now(), source, result.raw_length],
    ).lastrowid


_JUDGE_LATEST = """
SELECT v.task, v.item_id, v.query_id, v.doc_id, v.shown_order, v.verdict, v.parseable, v.error, v.model, v.prompt_hash,
       v.tokens_in, v.tokens_out, v.latency, v.raw
FROM current_judge_verdicts v
WHERE v.judge = ?
ORDER BY v.task, v.item_id, v.query_id, v.doc_id, v.shown_order
"""


def latest_judge_verdicts(db: sqlite_utils.Database, judge: str, *, caller: Caller) -> list[JudgeVerdict]:
    """The latest verdict of ``judge`` per (task, item or pool entry, order) (admin only)."""
    require_admin(db, caller)
    return [JudgeVerdict(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), *r[7:]) for r in db.execute(_JUDGE_LATEST, [judge])]


def judges(db: sqlite_utils.Database, *, caller: Caller) -> list[str]:
    """Names of every judge with a verdict in the project (admin only)."""
    require_admin(db, caller)
    return [r[0] for r in db.execute("SELECT DISTINCT judge FROM judge_verdicts ORDER BY judge")]


@dataclass(frozen=True, slots=True)
class VerdictCounts:
    """What the project holds beyond the pool: verdict items, people's verdicts, judges' verdicts.

    Attributes:
        items: kind -> verdict items (every kind listed).
        human: kind -> (current verdicts, items with at least one), imports included.
        judges: judge -> task -> current verdicts (one per item, or per item and order for
            a pairwise judge asked both orders), by judge name.
    """

    items: dict[str, int]
    human: dict[str, tuple[int, int]]
    judges: dict[str, dict[str, int]]


def verdict_counts(db: sqlite_utils.Database, *, caller: Caller) -> VerdictCounts:
    """Counts of verdict items and of the current human and judge verdicts (admin only)."""
    require_admin(db, caller)
    items = dict.fromkeys(KINDS, 0) | dict(db.execute("SELECT kind, count(*) FROM verdict_items GROUP BY kind").fetchall())
    human = dict.fromkeys(KINDS, (0, 0)) | {
        kind: (n, distinct) for kind, n, distinct in db.execute(
            "SELECT i.kind, count(*), count(DISTINCT h.item_id) FROM current_human_verdicts h "
            "JOIN verdict_items i ON i.item_id = h.item_id GROUP BY i.kind"
        )
    }
    judges: dict[str, dict[str, int]] = {}
    for judge, task, n in db.execute(
        "SELECT judge, task, count(*) FROM current_judge_verdicts GROUP BY judge, task ORDER BY judge"
    ):
        judges.setdefault(judge, {})[task] = n
    return VerdictCounts(items, human, judges)
