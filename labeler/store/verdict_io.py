"""Human and judge verdicts in and out: import of checked records, export as JSONL.

The records come from a verdict file (JSONL, or TREC qrels for relevance), read and checked
before they reach the store (``labeler.judges.verdict_files``); one record per line:

- faithfulness: ``{"item_id", "verdict": "SUPPORTED" | "UNSUPPORTED"}``, the item one of
  ``import-items`` or an answer's whole-answer item ``ANSWER_ID@faithfulness`` (or ANSWER_ID
  with ``"task": "faithfulness"``).
- pairwise: ``{"item_id", "verdict": "A" | "B" | "tie", "order"?: "AB" | "BA"}``; the verdict
  names the response, ``order`` says which response was shown first.
- relevance: ``{"query_id", "doc_id", "relevance": 0-3}``, or a TREC qrels file
  (``query_id 0 doc_id relevance``).
- claims: ``{"item_id": "ANSWER_ID#N", "verdict": "SUPPORTED" | "UNSUPPORTED" | "NOT_ONE_CLAIM"}``
  (the last from people only: it flags how the answer was split, not a verdict a judge gives).
- nuggets: ``{"answer_id", "nugget_id", "verdict": "SUPPORT" | "PARTIAL_SUPPORT" | "NOT_SUPPORT"}``
  (nuggetizer's words, any case): whether the answer supports the nugget; the item
  ``ANSWER_ID@nugget=NUGGET_ID`` is made when first given.
- correctness and answer relevance: ``{"item_id": ANSWER_ID or "ANSWER_ID@TASK", "verdict":
  "CORRECT" | "INCORRECT" | "ADDRESSES" | "MISSES" | "DECLINES"}`` (an optional ``"task"`` key names it).

Optional keys: ``note``, ``seconds``, ``at``, ``prompt_hash`` (``rubric_hash`` for people),
and for judges ``model``, ``raw``, ``tokens_in``, ``tokens_out``, ``latency`` (a judge record
may carry ``"verdict": null`` for a reply that could not be parsed). Human relevance grades go
to ``judgments`` (the labelling table), human verdicts to ``human_verdicts``, judge verdicts to
``judge_verdicts``. A record equal to the latest one of the same person or judge on the same
item and order is skipped, so importing a file twice adds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

import sqlite_utils

from labeler.store.access import require_admin
from labeler.store.connection import transaction
from labeler.store.errors import InputError, StoreError, shown
from labeler.store.nugget_support import support_item
from labeler.store.schema import now
from labeler.store.settings import Settings, get_settings
from labeler.store.verdict_handout import settle
from labeler.store.verdicts import (
    CallResult,
    ImportCount,
    Target,
    _check_verdict,
    _insert_judge,
)
from labeler.store.versions import ensure_annotator
from labeler.store.vocabulary import (
    ANSWER_TASKS,
    GRADE_RANGE,
    JUDGE_VERDICTS,
    KINDS,
    PER_ANSWER_TASKS,
    VERDICTS,
    Caller,
    answer_item,
    is_grade,
    item_answer,
)


def _grade(record: Mapping[str, Any], path: str, line: int, judge: bool) -> str | None:
    value = record.get("relevance")
    if value is None and judge and "relevance" in record:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not is_grade(value):
        raise InputError(f"{shown(value)}: give an integer grade {GRADE_RANGE}", path, line, "relevance")
    return str(value)


#: The verdicts that name their task when given for an answer id (``CORRECT`` -> correctness).
_ANSWER_VERDICT_TASK = {v: t for t in ANSWER_TASKS if t != "claims" for v in VERDICTS[t]}


def answer_task(record: Mapping[str, Any]) -> str | None:
    """The task a verdict record given for an ANSWER_ID is for: its ``task``, else the task its
    verdict's word belongs to (``CORRECT`` -> correctness, ``MISSES`` -> answer-relevance)."""
    task = record.get("task")
    if task is None and isinstance(record.get("verdict"), str):
        task = _ANSWER_VERDICT_TASK.get(record["verdict"].strip().upper())
    return task if isinstance(task, str) else None


def _item_id(db: sqlite_utils.Database, record: Mapping[str, Any]) -> str:
    """The verdict item a record is for. Correctness and answer relevance are given for an
    ANSWER_ID (or as ``ANSWER_ID@TASK``); the task comes from :func:`answer_task`. Whole-answer
    faithfulness is ``ANSWER_ID@faithfulness``, or ANSWER_ID with ``"task": "faithfulness"``
    when no imported item has that id."""
    item_id = record["item_id"]
    task = answer_task(record)
    if task in PER_ANSWER_TASKS and item_answer(item_id) is None:
        if task == "faithfulness" and db.execute("SELECT 1 FROM verdict_items WHERE item_id = ?",
                                                 [item_id]).fetchone() is not None:
            return item_id
        answer_id = answer_item(task, item_id)
        if db.execute("SELECT 1 FROM verdict_items WHERE item_id = ?", [answer_id]).fetchone() is not None:
            return answer_id
    return item_id


def _nugget_record(db: sqlite_utils.Database, record: Mapping[str, Any], path: str, line: int) -> dict[str, Any]:
    """A nugget support record as one on its item (``ANSWER_ID@nugget=NUGGET_ID``, made if missing)."""
    try:
        item_id = support_item(db, record["answer_id"], record["nugget_id"])
    except StoreError as exc:
        raise InputError(str(exc), path, line, exc.field or "nugget_id") from None
    return {**record, "item_id": item_id}


def _parse(db: sqlite_utils.Database, record: Mapping[str, Any], path: str, line: int, judge: bool) -> tuple[Target, str | None]:
    if record.get("nugget_id") is not None and record.get("item_id") is None:
        record = _nugget_record(db, record, path, line)
    if record.get("item_id") is not None:
        item_id = _item_id(db, record)
        row = db.execute("SELECT kind FROM verdict_items WHERE item_id = ?", [item_id]).fetchone()
        if row is None:
            raise InputError(f"no item {shown(item_id)} in the project (import it first with `goldpool import-items`, "
                             "or its answer with `goldpool import-answers`)", path, line, "item_id")
        kind, order = row[0], record.get("order")
        try:
            if judge and "verdict" in record and record["verdict"] is None:
                verdict, (_, order) = None, _check_verdict(kind, VERDICT_PLACEHOLDER[kind], order)
            else:
                verdict, order = _check_verdict(kind, record.get("verdict"), order)
        except StoreError as exc:
            field = "order" if str(exc).startswith("order") else "verdict"
            raise InputError(str(exc), path, line, field) from None
        if judge and verdict is not None and verdict not in JUDGE_VERDICTS[kind]:
            raise InputError(f"{shown(verdict)} flags how an answer was split, which only people do; a judge's "
                             f"{kind} verdict is one of {', '.join(JUDGE_VERDICTS[kind])}", path, line, "verdict")
        return Target(kind, item_id=item_id, shown_order=order), verdict
    query_id, doc_id = record["query_id"], record["doc_id"]
    if db.execute("SELECT 1 FROM pool WHERE query_id = ? AND doc_id = ?", [query_id, doc_id]).fetchone() is None:
        raise InputError(f"({shown(query_id)}, {shown(doc_id)}) is not in the pool of this project", path, line, "doc_id")
    if record.get("order") is not None:
        raise InputError("only pairwise verdicts have an order", path, line, "order")
    return Target("relevance", query_id=query_id, doc_id=doc_id), _grade(record, path, line, judge)


#: Any valid verdict of each kind, to check the order of a judge record without a verdict.
VERDICT_PLACEHOLDER = {kind: VERDICTS[kind][0] for kind in KINDS}


def add_verdicts(
    db: sqlite_utils.Database,
    path: str | Path,
    records: Iterable[tuple[int, Mapping[str, Any]]],
    *,
    annotator: str | None = None,
    judge: str | None = None,
    caller: Caller,
) -> ImportCount:
    """Add verdicts read from the file ``path`` as annotator ``annotator``'s or judge ``judge``'s
    (exactly one; admin only), in one transaction.

    ``records`` are ``(line, record)``, each record's ids, texts and numbers checked by the
    file's reader; here each is matched against the project (its item or pool entry, the
    verdicts its kind takes). They are taken one at a time inside the transaction, so a
    reader that yields them as it reads its file (``import-verdicts``) never holds the file,
    and a bad line it meets late still leaves nothing written. An annotator not yet in the project is created, without a usable
    token (``goldpool new-token`` gives them one).

    Raises:
        StoreError: neither or both of annotator and judge, a blank name, or a record the
            project refuses (named by file, line and field); nothing is written.
    """
    require_admin(db, caller)
    path = str(path)
    if (annotator is None) == (judge is None):
        raise StoreError("give exactly one of an annotator name or a judge name")
    if judge is not None and not judge.strip():
        raise StoreError("judge name: give a non-blank name")
    name = None if annotator is None else annotator.strip()
    if name is not None and not 0 < len(name) <= 100:
        raise StoreError("annotator name: give 1 to 100 characters")
    added = unchanged = 0
    created = False
    with transaction(db):
        person, settings = None, get_settings(db)
        if name is not None:
            person, created = ensure_annotator(db, name)
        for line, record in records:
            target, verdict = _parse(db, record, path, line, judge is not None)
            extra = _extras(record)
            if person is not None:
                fresh = _add_human(db, person, target, verdict, extra, settings)
            else:
                fresh = _add_judge(db, judge, target, verdict, extra)  # type: ignore[arg-type]
            added += fresh
            unchanged += not fresh
    return ImportCount(path, added, unchanged, created)


def _extras(record: Mapping[str, Any]) -> dict[str, Any]:
    return {field: record.get(field) for field in ("note", "at", "prompt_hash", "rubric_hash", "model", "raw", "seconds",
                                                   "latency", "tokens_in", "tokens_out")}


def _add_human(db: sqlite_utils.Database, annotator_id: int, target: Target, verdict: str | None, extra: dict[str, Any],
               settings: Settings) -> bool:
    note, at = extra["note"] or "", extra["at"] or now()
    rubric = extra["rubric_hash"] or extra["prompt_hash"]
    if target.task == "relevance":
        latest = db.execute(
            "SELECT relevance, note FROM current_judgments WHERE query_id = ? AND doc_id = ? AND annotator_id = ?",
            [target.query_id, target.doc_id, annotator_id],
        ).fetchone()
        if latest is not None and (str(latest[0]), latest[1]) == (verdict, note):
            return False
        if rubric is not None and db.execute("SELECT 1 FROM rubrics WHERE hash = ?", [rubric]).fetchone() is None:
            rubric = None  # a rubric this project has never seen: its text is unknown here
        db.execute(
            "INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, note, at, seconds, rubric_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [target.query_id, target.doc_id, annotator_id, int(verdict), note, at, extra["seconds"], rubric],  # type: ignore[arg-type]
        )
        return True
    latest = db.execute(
        "SELECT verdict, shown_order, note FROM current_human_verdicts WHERE item_id = ? AND annotator_id = ?",
        [target.item_id, annotator_id],
    ).fetchone()
    if latest is not None and tuple(latest) == (verdict, target.shown_order, note):
        return False
    db.execute(
        "INSERT INTO human_verdicts (item_id, annotator_id, verdict, shown_order, note, at, seconds, rubric_hash, source) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'import')",
        [target.item_id, annotator_id, verdict, target.shown_order, note, at, extra["seconds"], rubric],
    )
    settle(db, target.item_id, settings)  # type: ignore[arg-type]
    return True


def _add_judge(db: sqlite_utils.Database, judge: str, target: Target, verdict: str | None, extra: dict[str, Any]) -> bool:
    prompt = extra["prompt_hash"] or ""
    latest = db.execute(
        "SELECT verdict, prompt_hash FROM current_judge_verdicts WHERE judge = ? AND task = ? AND item_id IS ? "
        "AND query_id IS ? AND doc_id IS ? AND shown_order IS ?",
        [judge, target.task, target.item_id, target.query_id, target.doc_id, target.shown_order],
    ).fetchone()
    if latest is not None and tuple(latest) == (verdict, prompt):
        return False
    result = CallResult(extra["raw"], verdict, verdict is not None, extra["tokens_in"], extra["tokens_out"], extra["latency"])
    _insert_judge(db, judge, target, extra["model"] or "", prompt, result, "import", extra["at"])
    return True


_EXPORT_HUMAN = """
SELECT 'annotator', n.name, i.kind, h.item_id, NULL, NULL, h.verdict, h.shown_order, h.rubric_hash, h.note, h.at, h.seconds, h.id
FROM human_verdicts h JOIN annotators n ON n.id = h.annotator_id JOIN verdict_items i ON i.item_id = h.item_id
UNION ALL
SELECT 'annotator', n.name, 'relevance', NULL, j.query_id, j.doc_id, CAST(j.relevance AS TEXT), NULL, j.rubric_hash, j.note,
       j.at, j.seconds, j.id
FROM judgments j JOIN annotators n ON n.id = j.annotator_id
ORDER BY 11, 13
"""

_EXPORT_JUDGE = """
SELECT judge, task, item_id, query_id, doc_id, verdict, shown_order, prompt_hash, model, parseable, raw, tokens_in,
       tokens_out, latency, error, at, source, raw_length
FROM judge_verdicts ORDER BY id
"""


def _target_keys(task: str, item_id: str | None, query_id: str | None, doc_id: str | None, verdict: str | None) -> dict[str, Any]:
    if task == "relevance":
        return {"query_id": query_id, "doc_id": doc_id, "relevance": None if verdict is None else int(verdict)}
    if task == "nuggets" and item_id is not None:  # ANSWER_ID@nugget=NUGGET_ID: the answer and the nugget named too
        answer_id, _, nugget_id = item_id.partition("@nugget=")
        return {"item_id": item_id, "answer_id": answer_id, "nugget_id": nugget_id, "verdict": verdict}
    return {"item_id": item_id, "verdict": verdict}


def export_verdicts(db: sqlite_utils.Database, out: TextIO, *, caller: Caller) -> int:
    """Write every human and judge verdict as JSONL (history included); return the row count.

    Each row says who made it (``who``: ``annotator`` or ``judge``, ``name``), the task, the
    item (``item_id``, or ``query_id`` and ``doc_id``), the verdict (``relevance`` for
    relevance), the ``order`` and the ``prompt_hash`` (the rubric's, for people); a judge's
    row keeps its reply (``raw``, cut to a bounded length; ``raw_length``: the full length when
    cut, else null). The file imports back with ``import-verdicts``.
    """
    require_admin(db, caller)
    n = 0
    for who, name, task, item_id, query_id, doc_id, verdict, order, rubric, note, at, seconds, _ in db.execute(_EXPORT_HUMAN):
        row = {"who": who, "name": name, "task": task, **_target_keys(task, item_id, query_id, doc_id, verdict),
               "order": order, "prompt_hash": rubric, "note": note, "at": at, "seconds": seconds}
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        n += 1
    for r in db.execute(_EXPORT_JUDGE):
        judge, task, item_id, query_id, doc_id, verdict = r[:6]
        row = {"who": "judge", "name": judge, "task": task, **_target_keys(task, item_id, query_id, doc_id, verdict),
               "order": r[6], "prompt_hash": r[7], "model": r[8], "parseable": bool(r[9]), "raw": r[10],
               "tokens_in": r[11], "tokens_out": r[12], "latency": r[13], "error": r[14], "at": r[15], "source": r[16],
               "raw_length": r[17]}
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        n += 1
    return n
