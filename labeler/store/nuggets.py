"""A question's nuggets: made by people, proposed by a judge model, frozen with a version.

A nugget is one atomic fact a good answer to a query must contain, ``vital`` or ``okay``
(TREC 2024-2025 RAG; Pradeep et al. 2024), with the chunks it came from. People write, edit,
merge, order and drop them (admin work: every function that changes one takes the required
keyword ``caller`` and refuses anyone but an active admin); a judge model may propose them
(``goldpool nuggetize``), and people accept a proposal as it is, accept it edited, or drop it
(:mod:`labeler.store.nugget_proposals`). What the judge proposed (``nugget_proposals``) and what
people kept (``nuggets`` and their revisions) are stored apart, so the nuggetizer itself can be
measured.

A nugget's id is ``QUERY_ID/nN`` (N the next free number of the query) unless an import gives
one. Its text is fixed once an answer's support of it was labelled (by a person or a judge) or
a golden version froze it: the labels and the version were given on that text. To say
something else, drop it and add a new nugget (merging makes a new nugget too). Its importance
and place may change at any time: a version keeps its own copy.

Every change is a new row of ``nugget_revisions``; the latest row per nugget counts (view
``current_nuggets``), the history is the audit trail.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import sqlite_utils

from labeler.store.access import caller_id, require_admin
from labeler.store.connection import transaction
from labeler.store.errors import InputError, StoreError, shown
from labeler.store.nugget_support import add_support_items
from labeler.store.schema import VISIBLE_DOCUMENTS, now
from labeler.store.vocabulary import IMPORTANCES, Caller

Importance = Literal["vital", "okay"]
Status = Literal["active", "dropped", "merged"]
Origin = Literal["person", "proposal", "merge"]


@dataclass(frozen=True, slots=True)
class Nugget:
    """One nugget as it stands now (its latest revision)."""

    nugget_id: str
    query_id: str
    text: str
    importance: Importance
    position: int  # its place among the query's nuggets, from 1
    status: Status
    doc_ids: tuple[str, ...]  # the chunks it came from
    origin: Origin
    proposal_id: int | None  # the judge's proposal it comes from (origin "proposal")
    merged_from: tuple[str, ...]  # the nuggets it was merged from (origin "merge")
    merged_into: str | None  # status "merged": the nugget it went into
    text_fixed: bool  # labelled or frozen: its text can no longer change


@dataclass(frozen=True, slots=True)
class NuggetImport:
    """What one import of nuggets did."""

    path: str
    added: int
    unchanged: int
    queries: int  # queries the file gave nuggets for


_SELECT = ("SELECT c.nugget_id, c.query_id, c.text, c.importance, c.position, c.status, c.doc_ids, c.origin, "
           "c.proposal_id, c.merged_from, c.merged_into, "
           "EXISTS (SELECT 1 FROM nugget_items i JOIN human_verdicts h ON h.item_id = i.item_id "
           "        WHERE i.nugget_id = c.nugget_id) "
           "OR EXISTS (SELECT 1 FROM nugget_items i JOIN judge_verdicts v ON v.item_id = i.item_id "
           "           WHERE i.nugget_id = c.nugget_id) "
           "OR EXISTS (SELECT 1 FROM golden_nuggets g WHERE g.nugget_id = c.nugget_id) "
           "FROM current_nuggets c")


def _nugget(row: Sequence[Any]) -> Nugget:
    return Nugget(row[0], row[1], row[2], row[3], int(row[4]), row[5], tuple(json.loads(row[6])), row[7], row[8],
                  tuple(json.loads(row[9])), row[10], bool(row[11]))


def list_nuggets(db: sqlite_utils.Database, query_id: str | None = None, *, include_inactive: bool = False) -> list[Nugget]:
    """The nuggets of ``query_id`` (every query's when None), by query and place; dropped and
    merged ones only with ``include_inactive``. Nuggets hold no label: anyone may read them."""
    where = [] if include_inactive else ["c.status = 'active'"]
    args: list[Any] = []
    if query_id is not None:
        where.append("c.query_id = ?")
        args.append(query_id)
    sql = _SELECT + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY c.query_id, c.position, c.nugget_id"
    return [_nugget(r) for r in db.conn.execute(sql, args)]


def get_nugget(db: sqlite_utils.Database, nugget_id: str) -> Nugget:
    """The nugget ``nugget_id``, whatever its status.

    Raises:
        StoreError: no such nugget.
    """
    row = db.conn.execute(_SELECT + " WHERE c.nugget_id = ?", [nugget_id]).fetchone()
    if row is None:
        raise StoreError(f"no nugget {shown(nugget_id)} in the project (import nuggets with `goldpool import-nuggets`)")
    return _nugget(row)


def nugget_queries(db: sqlite_utils.Database) -> dict[str, int]:
    """query_id -> how many active nuggets it has, for the queries that have any."""
    return dict(db.conn.execute("SELECT query_id, count(*) FROM current_nuggets WHERE status = 'active' "
                                "GROUP BY query_id ORDER BY query_id"))


# --- checks ----------------------------------------------------------------------------------


def check_importance(value: object, where: str = "") -> Importance:
    """``value`` as an importance (``vital`` or ``okay``, any case), else StoreError."""
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in IMPORTANCES:
        raise StoreError(f"{where}importance {shown(value)}: give {' or '.join(map(repr, IMPORTANCES))}")
    return text  # type: ignore[return-value]


def check_text(text: object) -> str:
    """``text`` stripped, if it can be a nugget's: non-blank, without NUL; else StoreError."""
    if not isinstance(text, str) or not text.strip() or "\x00" in text:
        raise StoreError(f"nugget text {shown(text)}: give a non-blank text without NUL")
    return text.strip()


def _check_query(db: sqlite_utils.Database, query_id: str) -> None:
    if db.conn.execute("SELECT 1 FROM queries WHERE query_id = ?", [query_id]).fetchone() is None:
        raise StoreError(f"no query {shown(query_id)} in the project; import the queries first")


def check_docs(db: sqlite_utils.Database, doc_ids: Iterable[str]) -> tuple[str, ...]:
    """``doc_ids`` without repeats, if each is a document of the corpus; else StoreError."""
    ids = tuple(dict.fromkeys(doc_ids))
    for doc in ids:
        if db.conn.execute(f"SELECT 1 FROM documents WHERE doc_id = ? AND {VISIBLE_DOCUMENTS}", [doc]).fetchone() is None:
            raise StoreError(f"{shown(doc)} is not a document of the project's corpus")
    return ids


def next_nugget_id(db: sqlite_utils.Database, query_id: str) -> str:
    """``QUERY_ID/nN``, N one more than the highest such number the query's nuggets use."""
    pattern = re.compile(re.escape(query_id) + r"/n(\d+)")
    taken = [int(m[1]) for (nid,) in db.conn.execute("SELECT nugget_id FROM nuggets WHERE query_id = ?", [query_id])
             if (m := pattern.fullmatch(nid))]
    return f"{query_id}/n{max(taken, default=0) + 1}"


def _next_position(db: sqlite_utils.Database, query_id: str) -> int:
    row = db.conn.execute("SELECT max(position) FROM current_nuggets WHERE query_id = ? AND status = 'active'",
                          [query_id]).fetchone()
    return int(row[0] or 0) + 1


# --- writing ---------------------------------------------------------------------------------


def _revise(db: sqlite_utils.Database, n: Nugget, caller: Caller, *, source: str = "app", **changes: Any) -> None:
    """Append the revision of ``n`` with ``changes`` (inside the caller's transaction)."""
    new = {"text": n.text, "importance": n.importance, "position": n.position, "status": n.status,
           "doc_ids": n.doc_ids, "merged_into": n.merged_into, **changes}
    db.conn.execute(
        "INSERT INTO nugget_revisions (nugget_id, text, importance, position, status, doc_ids, merged_into, "
        "annotator_id, at, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [n.nugget_id, new["text"], new["importance"], new["position"], new["status"],
         json.dumps(list(new["doc_ids"]), ensure_ascii=False), new["merged_into"], caller_id(caller), now(), source])


def insert_nugget(db: sqlite_utils.Database, nugget_id: str, query_id: str, text: str, importance: str, *, caller: Caller,
            origin: str = "person", proposal_id: int | None = None, merged_from: Sequence[str] = (),
            doc_ids: Sequence[str] = (), status: str = "active", position: int | None = None,
            source: str = "app") -> None:
    """A new nugget and its first revision, inside the caller's write transaction (checked by the caller)."""
    at = now()
    db.conn.execute(
        "INSERT INTO nuggets (nugget_id, query_id, origin, proposal_id, merged_from, created_at, annotator_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [nugget_id, query_id, origin, proposal_id, json.dumps(list(merged_from)), at, caller_id(caller)])
    db.conn.execute(
        "INSERT INTO nugget_revisions (nugget_id, text, importance, position, status, doc_ids, merged_into, "
        "annotator_id, at, source) VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)",
        [nugget_id, text, importance, position or _next_position(db, query_id), status,
         json.dumps(list(doc_ids), ensure_ascii=False), caller_id(caller), at, source])
    if status == "active":
        add_support_items(db, [query_id])


def create_nugget(db: sqlite_utils.Database, query_id: str, text: str, importance: Importance = "okay", *,
                  doc_ids: Sequence[str] = (), caller: Caller) -> Nugget:
    """Write a new nugget for ``query_id`` (last in its order) and return it (admin only).

    Raises:
        StoreError: an unknown query or document, a blank text, an importance other than
            vital or okay; nothing is written.
    """
    require_admin(db, caller)
    _check_query(db, query_id)
    text, importance = check_text(text), check_importance(importance)
    docs = check_docs(db, doc_ids)
    with transaction(db):
        nugget_id = next_nugget_id(db, query_id)
        insert_nugget(db, nugget_id, query_id, text, importance, caller=caller, doc_ids=docs)
    return get_nugget(db, nugget_id)


def edit_nugget(db: sqlite_utils.Database, nugget_id: str, *, text: str | None = None,
                importance: Importance | None = None, doc_ids: Sequence[str] | None = None,
                caller: Caller) -> Nugget:
    """Change an active nugget's text, importance or chunks (admin only); None keeps each.

    Raises:
        StoreError: no such nugget, one dropped or merged, a new text for a nugget whose text
            is fixed (support labels were given on it, or a version froze it); nothing is written.
    """
    require_admin(db, caller)
    n = get_nugget(db, nugget_id)
    if n.status != "active":
        raise StoreError(f"nugget {shown(nugget_id)} is {n.status}; restore it before editing it")
    changes: dict[str, Any] = {}
    if text is not None and check_text(text) != n.text:
        if n.text_fixed:
            raise StoreError(f"nugget {shown(nugget_id)}: its text is fixed, since answers' support of it was labelled "
                             "or a golden version froze it; drop it and add a new nugget to say something else")
        changes["text"] = check_text(text)
    if importance is not None and check_importance(importance) != n.importance:
        changes["importance"] = check_importance(importance)
    if doc_ids is not None and tuple(dict.fromkeys(doc_ids)) != n.doc_ids:
        changes["doc_ids"] = check_docs(db, doc_ids)
    if changes:
        with transaction(db):
            _revise(db, n, caller, **changes)
    return get_nugget(db, nugget_id)


def drop_nugget(db: sqlite_utils.Database, nugget_id: str, *, caller: Caller) -> Nugget:
    """Drop an active nugget: it leaves its question's list, its labels stay (admin only).

    Raises:
        StoreError: no such nugget, or one not active.
    """
    require_admin(db, caller)
    n = get_nugget(db, nugget_id)
    if n.status != "active":
        raise StoreError(f"nugget {shown(nugget_id)} is {n.status} already")
    with transaction(db):
        _revise(db, n, caller, status="dropped")
    return get_nugget(db, nugget_id)


def restore_nugget(db: sqlite_utils.Database, nugget_id: str, *, caller: Caller) -> Nugget:
    """Bring a dropped nugget back, last in its question's order (admin only).

    Raises:
        StoreError: no such nugget, or one not dropped (a merged nugget lives on in the merge).
    """
    require_admin(db, caller)
    n = get_nugget(db, nugget_id)
    if n.status != "dropped":
        raise StoreError(f"nugget {shown(nugget_id)} is {n.status}, not dropped")
    with transaction(db):
        _revise(db, n, caller, status="active", position=_next_position(db, n.query_id))
        add_support_items(db, [n.query_id])
    return get_nugget(db, nugget_id)


def merge_nuggets(db: sqlite_utils.Database, nugget_ids: Sequence[str], text: str, importance: Importance | None = None,
                  *, caller: Caller) -> Nugget:
    """Merge two or more active nuggets of one question into a new nugget with ``text`` (admin only).

    The new nugget takes the first one's place, the union of their chunks, and ``importance``
    (default: vital if any of them is); the merged ones get status ``merged`` and keep their
    labels. Returns the new nugget.

    Raises:
        StoreError: fewer than two distinct nuggets, one not active, nuggets of two questions,
            a blank text; nothing is written.
    """
    require_admin(db, caller)
    ids = list(dict.fromkeys(nugget_ids))
    if len(ids) < 2:
        raise StoreError("give two or more nuggets to merge")
    parts = [get_nugget(db, i) for i in ids]
    if any(p.status != "active" for p in parts):
        raise StoreError(f"nugget {shown(next(p.nugget_id for p in parts if p.status != 'active'))} is not active")
    if len({p.query_id for p in parts}) > 1:
        raise StoreError("nuggets of different questions cannot be merged")
    text = check_text(text)
    importance = check_importance(importance) if importance is not None else (
        "vital" if any(p.importance == "vital" for p in parts) else "okay")
    docs = tuple(dict.fromkeys(d for p in parts for d in p.doc_ids))
    with transaction(db):
        new_id = next_nugget_id(db, parts[0].query_id)
        insert_nugget(db, new_id, parts[0].query_id, text, importance, caller=caller, origin="merge", merged_from=ids,
                doc_ids=docs, position=min(p.position for p in parts))
        for p in parts:
            _revise(db, p, caller, status="merged", merged_into=new_id)
    return get_nugget(db, new_id)


def reorder_nuggets(db: sqlite_utils.Database, query_id: str, nugget_ids: Sequence[str], *, caller: Caller) -> list[Nugget]:
    """Put a question's active nuggets in the order ``nugget_ids`` (every one, once; admin only).

    Raises:
        StoreError: the ids are not exactly the question's active nuggets.
    """
    require_admin(db, caller)
    current = {n.nugget_id: n for n in list_nuggets(db, query_id)}
    if sorted(nugget_ids) != sorted(current) or len(set(nugget_ids)) != len(nugget_ids):
        raise StoreError(f"give every active nugget of {shown(query_id)} once: {', '.join(sorted(current)) or 'none'}")
    with transaction(db):
        for place, nugget_id in enumerate(nugget_ids, start=1):
            if current[nugget_id].position != place:
                _revise(db, current[nugget_id], caller, position=place)
    return list_nuggets(db, query_id)


# --- imports -----------------------------------------------------------------------------------


def add_nuggets(db: sqlite_utils.Database, path: str | Path, records: Iterable[tuple[int, Mapping[str, Any]]], *,
                caller: Caller) -> NuggetImport:
    """Add people's nuggets read from the file ``path`` (admin only), in one transaction.

    ``records`` are ``(line, record)`` as :func:`pooling.nugget_readers.read_nuggets` yields
    them, each with its ``nugget_id``, ``query_id``, ``text``, ``importance`` and ``doc_ids``.
    A nugget already stored with the same query, text, importance and chunks is unchanged;
    new ones join their question's order in file order.

    Raises:
        StoreError: an unknown query or document, a nugget_id already stored with other
            content or for another query (file, line and field named); nothing is written.
    """
    require_admin(db, caller)
    path = str(path)
    added = unchanged = 0
    queries: set[str] = set()
    with transaction(db):
        for line, r in records:
            queries.add(r["query_id"])
            if _import_one(db, path, line, r, caller):
                added += 1
            else:
                unchanged += 1
    return NuggetImport(path, added, unchanged, len(queries))


def _import_one(db: sqlite_utils.Database, path: str, line: int, r: Mapping[str, Any], caller: Caller) -> bool:
    try:
        _check_query(db, r["query_id"])
    except StoreError as exc:
        raise InputError(str(exc), path, line, "query_id") from None
    for i, doc in enumerate(r.get("doc_ids") or ()):
        try:
            check_docs(db, [doc])
        except StoreError as exc:
            raise InputError(f"{exc}; import the corpus first, or leave the id out", path, line, f"doc_ids[{i}]") from None
    row = db.conn.execute(_SELECT + " WHERE c.nugget_id = ?", [r["nugget_id"]]).fetchone()
    if row is None:
        insert_nugget(db, r["nugget_id"], r["query_id"], r["text"], r["importance"], caller=caller,
                doc_ids=tuple(r.get("doc_ids") or ()), source="import")
        return True
    stored = _nugget(row)
    for field, value in (("query_id", stored.query_id), ("text", stored.text), ("importance", stored.importance),
                         ("doc_ids", stored.doc_ids)):
        given = tuple(r.get(field) or ()) if field == "doc_ids" else r[field]
        if given != value:
            raise InputError(f"nugget {shown(r['nugget_id'])} is already in the project with {field} {shown(value)}; "
                             "change it on the nugget page, or give the new nugget another nugget_id", path, line, field)
    return False


# --- golden versions ---------------------------------------------------------------------------


def nuggets_hash(nuggets: Iterable[Nugget]) -> str:
    """sha256 of the canonical JSON of the sorted (query_id, nugget_id, text, importance) rows:
    the same nuggets give the same hash wherever they were made."""
    rows = sorted([n.query_id, n.nugget_id, n.text, n.importance] for n in nuggets)
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def write_version_nuggets(db: sqlite_utils.Database, version: str, nuggets: Sequence[Nugget]) -> None:
    """Freeze ``nuggets`` with version ``version``, inside the freeze's transaction (its rows
    are written before the version's row, as the golden rows are)."""
    db.conn.executemany(
        "INSERT INTO golden_nuggets (version, nugget_id, query_id, text, importance, position, doc_ids) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(version, n.nugget_id, n.query_id, n.text, n.importance, n.position, json.dumps(list(n.doc_ids)))
         for n in nuggets])


def version_nuggets(db: sqlite_utils.Database, version: str) -> list[Nugget]:
    """The nuggets version ``version`` froze (none for a version frozen without nuggets)."""
    rows = db.conn.execute(
        "SELECT g.nugget_id, g.query_id, g.text, g.importance, g.position, g.doc_ids, n.origin, n.proposal_id, "
        "n.merged_from FROM golden_nuggets g JOIN nuggets n ON n.nugget_id = g.nugget_id WHERE g.version = ? "
        "ORDER BY g.query_id, g.position, g.nugget_id", [version])
    return [Nugget(r[0], r[1], r[2], r[3], int(r[4]), "active", tuple(json.loads(r[5])), r[6], r[7],
                   tuple(json.loads(r[8])), None, True) for r in rows]


# --- what nuggets are made from ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk a query's nuggets may be made from, with its grade."""

    doc_id: str
    title: str
    text: str
    relevance: int


def relevant_chunks(db: sqlite_utils.Database, query_id: str, level: int, *, version: str | None = None) -> list[Chunk]:
    """The chunks of ``query_id`` graded ``level`` or above, best grade first, then by doc_id:
    the grades of ``version`` when given, else the current labels (an adjudicated grade, else
    the highest grade a person gave: a chunk anyone found relevant is worth reading)."""
    if version is not None:
        grades = dict(db.conn.execute("SELECT doc_id, relevance FROM golden_rows WHERE version = ? AND query_id = ?",
                                      [version, query_id]))
    else:
        grades = dict(db.conn.execute("SELECT doc_id, max(relevance) FROM current_judgments WHERE query_id = ? "
                                      "GROUP BY doc_id", [query_id]))
        grades.update(db.conn.execute("SELECT doc_id, relevance FROM current_adjudications WHERE query_id = ?",
                                      [query_id]))
    wanted = sorted((d for d, g in grades.items() if g >= level), key=lambda d: (-grades[d], d))
    texts = {d: (t, x) for d, t, x in db.conn.execute(
        f"SELECT doc_id, title, text FROM documents WHERE {VISIBLE_DOCUMENTS} AND doc_id IN "
        f"(SELECT value FROM json_each(?))", [json.dumps(wanted)])}
    return [Chunk(d, texts[d][0] or "", texts[d][1], int(grades[d])) for d in wanted if d in texts]


def nugget_questions(db: sqlite_utils.Database) -> list[tuple[str, str, int]]:
    """Every query as (query_id, text, its active nuggets), by query_id: the nugget page's questions."""
    return [(q, t, int(n)) for q, t, n in db.conn.execute(
        "SELECT q.query_id, q.text, (SELECT count(*) FROM current_nuggets c WHERE c.query_id = q.query_id "
        "AND c.status = 'active') FROM queries q ORDER BY q.query_id")]


def query_text(db: sqlite_utils.Database, query_id: str) -> str:
    """The text of query ``query_id``.

    Raises:
        StoreError: no such query.
    """
    row = db.conn.execute("SELECT text FROM queries WHERE query_id = ?", [query_id]).fetchone()
    if row is None:
        raise StoreError(f"no query {shown(query_id)} in the project; import the queries first")
    return row[0]
