"""A judge model's proposed nuggets, and what people made of them: every SQL statement for them.

A proposal (``nugget_proposals``) is what a judge model wrote as a question's nugget, with its
importance, never changed. People accept it as proposed (kept), accept it with another text or
importance (edited), or drop it: either way it becomes a nugget of origin ``proposal``
(:mod:`labeler.store.nuggets`), active or dropped, one per proposal, so a proposal is decided
once and its fate is read from the nugget: kept, edited (also when merged into another nugget
later), dropped, or pending while no nugget refers to it. Changing admin work: ``caller``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import sqlite_utils

from labeler.store import judge_calls
from labeler.store.access import require_admin
from labeler.store.connection import transaction
from labeler.store.errors import StoreError, shown
from labeler.store.nuggets import (
    Importance,
    Nugget,
    check_docs,
    check_importance,
    check_text,
    get_nugget,
    insert_nugget,
    next_nugget_id,
)
from labeler.store.schema import now
from labeler.store.verdicts import CallResult
from labeler.store.vocabulary import Caller

#: What became of a judge's proposal: nobody decided yet, accepted unchanged, accepted with
#: another text or importance (or merged into another nugget), or dropped.
Fate = Literal["pending", "kept", "edited", "dropped"]


@dataclass(frozen=True, slots=True)
class Proposal:
    """One nugget a judge model proposed, and what people made of it."""

    proposal_id: int
    query_id: str
    judge: str
    model: str
    prompt_hash: str
    n: int  # its place in the model's reply
    text: str
    importance: Importance
    nugget_id: str | None  # the nugget people made of it (None: pending)
    fate: Fate


_PROPOSALS = """
SELECT p.id, p.query_id, p.judge, p.model, p.prompt_hash, p.n, p.text, p.importance, c.nugget_id, c.status, c.text,
       c.importance
FROM nugget_proposals p
LEFT JOIN nuggets n ON n.proposal_id = p.id
LEFT JOIN current_nuggets c ON c.nugget_id = n.nugget_id
"""


def _fate(row: Sequence[Any]) -> Fate:
    nugget_id, status, text, importance = row[8:12]
    if nugget_id is None:
        return "pending"
    if status == "dropped":
        return "dropped"
    if status == "merged" or (text, importance) != (row[6], row[7]):
        return "edited"
    return "kept"


def list_proposals(db: sqlite_utils.Database, query_id: str | None = None, *, judge: str | None = None) -> list[Proposal]:
    """A judge's proposed nuggets (every judge's when None; of ``query_id`` when given), each with
    what people made of it, by query, judge and place."""
    where, args = [], []
    for column, value in (("p.query_id", query_id), ("p.judge", judge)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    sql = _PROPOSALS + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY p.query_id, p.judge, p.id"
    return [Proposal(*r[:8], r[8], _fate(r)) for r in db.conn.execute(sql, args)]


def _proposal(db: sqlite_utils.Database, proposal_id: int) -> Proposal:
    row = db.conn.execute(_PROPOSALS + " WHERE p.id = ?", [proposal_id]).fetchone()
    if row is None:
        raise StoreError(f"no nugget proposal {shown(proposal_id)} in the project")
    proposal = Proposal(*row[:8], row[8], _fate(row))
    if proposal.nugget_id is not None:
        raise StoreError(f"proposal {proposal_id} was decided already (nugget {proposal.nugget_id}); edit or drop that nugget")
    return proposal


def accept_proposal(db: sqlite_utils.Database, proposal_id: int, *, text: str | None = None,
                    importance: Importance | None = None, doc_ids: Sequence[str] = (), caller: Caller) -> Nugget:
    """Make a judge's proposal a nugget, as proposed or with another ``text`` or ``importance``
    (counted as kept or edited); it goes last in its question's order (admin only).

    Raises:
        StoreError: no such proposal, one decided already, a blank text; nothing is written.
    """
    require_admin(db, caller)
    p = _proposal(db, proposal_id)
    text = p.text if text is None else check_text(text)
    importance = p.importance if importance is None else check_importance(importance)
    docs = check_docs(db, doc_ids)
    with transaction(db):
        nugget_id = next_nugget_id(db, p.query_id)
        insert_nugget(db, nugget_id, p.query_id, text, importance, caller=caller, origin="proposal", proposal_id=p.proposal_id,
                doc_ids=docs)
    return get_nugget(db, nugget_id)


def drop_proposal(db: sqlite_utils.Database, proposal_id: int, *, caller: Caller) -> Nugget:
    """Refuse a judge's proposal: it is kept as a dropped nugget, counted as dropped (admin only).

    Raises:
        StoreError: no such proposal, or one decided already.
    """
    require_admin(db, caller)
    p = _proposal(db, proposal_id)
    with transaction(db):
        nugget_id = next_nugget_id(db, p.query_id)
        insert_nugget(db, nugget_id, p.query_id, p.text, p.importance, caller=caller, origin="proposal",
                proposal_id=p.proposal_id, status="dropped")
    return get_nugget(db, nugget_id)


def record_proposals(db: sqlite_utils.Database, query_id: str, proposals: Sequence[tuple[str, str]] | None, *,
                     judge: str, model: str, prompt_hash: str, item_hash: str, result: CallResult | None) -> int:
    """Store what a judge model proposed as ``query_id``'s nuggets, ``(text, importance)`` in its
    order (None: its reply could not be parsed, nothing stored), and cache the reply
    (``result``; None when it came from the cache), in one transaction. Returns the number added:
    a rerun adds nothing where the same judge, model and prompt already proposed."""
    at = now()
    with transaction(db):
        added = 0
        for n, (text, importance) in enumerate(proposals or (), start=1):
            cursor = db.conn.execute(
                "INSERT OR IGNORE INTO nugget_proposals (query_id, judge, model, prompt_hash, n, text, importance, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [query_id, judge, model, prompt_hash, n, text, importance, at])
            added += cursor.rowcount
        if result is not None:
            judge_calls.cache_reply(db, replace(result, verdict=None, parseable=proposals is not None))
    return added


def cache_reply(db: sqlite_utils.Database, result: CallResult, *, parseable: bool) -> None:
    """Cache one reply of a call that stores nothing by itself (a nuggetizer's first call), under
    its key (``result.key``: the endpoint, model, prompt and settings it was made with)."""
    with transaction(db):
        judge_calls.cache_reply(db, replace(result, verdict=None, parseable=parseable))


def proposed_queries(db: sqlite_utils.Database, judge: str, model: str, prompt_hash: str) -> set[str]:
    """The queries ``judge`` already proposed nuggets for with this model and prompt."""
    return {r[0] for r in db.conn.execute("SELECT DISTINCT query_id FROM nugget_proposals WHERE judge = ? AND model = ? "
                                          "AND prompt_hash = ?", [judge, model, prompt_hash])}
