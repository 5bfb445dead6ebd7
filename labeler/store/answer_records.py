"""Stored answers as whole records, by system and batch (batch names, the default batch): what ``export-answers`` writes, a
sample of answers is drawn from and metrics per batch split by; and which retrieved ids are
documents of the corpus (``import-traces`` links only those); and the current verdicts on a
system's answer items, people's or a judge's (:func:`answer_verdicts`, what each answer's
outcome is made of)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import sqlite_utils

from labeler.store.access import require_admin
from labeler.store.errors import StoreError, shown
from labeler.store.schema import VISIBLE_DOCUMENTS, now
from labeler.store.vocabulary import Caller

_BATCH = 500
#: An answer's batch in a query joining ``answers a LEFT JOIN answer_batches b``: its row, else
#: the date it was added (an answer written by a step before batches, had one been missed).
BATCH_OF = "coalesce(b.batch, substr(a.added_at, 1, 10))"
_JOIN = "answers a LEFT JOIN answer_batches b ON b.answer_id = a.answer_id"


def check_batch_name(batch: str, *, path: str | Path | None = None, line: int | None = None,
                     field: str | None = None) -> str:
    """``batch`` if it can name a batch of answers: non-empty, visible characters only (no space).

    Raises:
        StoreError: otherwise (with the file, line and field it came from, when given).
    """
    if not batch or any(ch.isspace() or not ch.isprintable() for ch in batch):
        raise StoreError(f"batch name {shown(batch)}: give a non-empty name of visible characters (a date, a week "
                         "such as 2026-W49, a release)", path=path, line=line, field=field)
    return batch


def default_batch() -> str:
    """The batch of an import that names none: its date, UTC (``YYYY-MM-DD``)."""
    return now()[:10]


def corpus_ids(db: sqlite_utils.Database, doc_ids: Iterable[str]) -> set[str]:
    """Those of ``doc_ids`` that are documents of the project's corpus."""
    ids = sorted(set(doc_ids))
    found: set[str] = set()
    for start in range(0, len(ids), _BATCH):
        chunk = ids[start:start + _BATCH]
        sql = f"SELECT doc_id FROM documents WHERE doc_id IN ({','.join('?' * len(chunk))}) AND {VISIBLE_DOCUMENTS}"
        found.update(r[0] for r in db.conn.execute(sql, chunk))
    return found


def answer_records(db: sqlite_utils.Database, system: str | None = None,
                   batch: str | None = None) -> Iterator[dict[str, Any]]:
    """Every stored answer (of ``system``, in ``batch``) as a dict of its columns, lists and
    ``meta`` decoded, by system, batch and answer_id."""
    where, args = [], []
    for column, value in (("a.system", system), (BATCH_OF, batch)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    names = ("answer_id", "system", "batch", "query_id", "question", "response", "contexts", "retrieved_ids",
             "reference", "meta")
    sql = (f"SELECT a.answer_id, a.system, {BATCH_OF}, a.query_id, a.question, a.response, a.contexts, "
           f"a.retrieved_ids, a.reference, a.meta FROM {_JOIN}" + (f" WHERE {' AND '.join(where)}" if where else "")
           + " ORDER BY a.system, 3, a.answer_id")
    for row in db.conn.execute(sql, args):
        record = dict(zip(names, row))
        for key in ("contexts", "retrieved_ids", "meta"):
            record[key] = json.loads(record[key])
        yield record


def batches(db: sqlite_utils.Database, system: str | None = None) -> list[str]:
    """The batches of the stored answers (of ``system``), sorted."""
    sql = f"SELECT DISTINCT {BATCH_OF} FROM {_JOIN}" + (" WHERE a.system = ?" if system else "") + " ORDER BY 1"
    return [r[0] for r in db.conn.execute(sql, [system] if system else [])]


def answer_batches(db: sqlite_utils.Database, system: str) -> dict[str, str]:
    """answer_id -> batch, for ``system``'s answers."""
    return dict(db.conn.execute(f"SELECT a.answer_id, {BATCH_OF} FROM {_JOIN} WHERE a.system = ?", [system]))


def answer_verdicts(db: sqlite_utils.Database, system: str, *, judge: str | None = None,
                    caller: Caller) -> Iterator[tuple[str, str, str, str, str]]:
    """``(answer_id, task, item_id, who, verdict)`` of every current verdict on ``system``'s
    answer items: people's (``who`` the annotator's name; admin only, as every view of other
    people's work) or, with ``judge``, that judge's parseable verdicts (``who`` the judge)."""
    require_admin(db, caller)
    if judge is None:
        yield from db.conn.execute(
            "SELECT i.answer_id, i.kind, h.item_id, n.name, h.verdict FROM current_human_verdicts h "
            "JOIN verdict_items i ON i.item_id = h.item_id JOIN answers a ON a.answer_id = i.answer_id "
            "JOIN annotators n ON n.id = h.annotator_id WHERE a.system = ? ORDER BY h.item_id, n.name", [system])
        return
    yield from db.conn.execute(
        "SELECT i.answer_id, i.kind, v.item_id, v.judge, v.verdict FROM current_judge_verdicts v "
        "JOIN verdict_items i ON i.item_id = v.item_id JOIN answers a ON a.answer_id = i.answer_id "
        "WHERE a.system = ? AND v.judge = ? AND v.verdict IS NOT NULL ORDER BY v.item_id", [system, judge])


