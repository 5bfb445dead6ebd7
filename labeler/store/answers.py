"""Answers of generating systems and their claims: every SQL statement for them.

An answer is one system's response to one question (linked to a project query when it is
one), with the contexts the generator was given, the documents it retrieved and a reference
answer. Its claims are the atomic statements its faithfulness is measured on, each an item
``ANSWER_ID#N`` (N from 1, in answer order), from the file, a sentence splitter or a judge
model. Neither ever changes once stored: people label the stored text.

Imports receive records already read, checked and given their ids by the service
(:mod:`labeler.generation.answers`); the store checks them against the project (documents, stored
answers) and writes them in one transaction, so a bad record anywhere leaves the database as it
was, and importing the same file again adds nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

import sqlite_utils

from labeler.store.access import require_admin
from labeler.store.answer_records import BATCH_OF, check_batch_name, default_batch
from labeler.store.connection import transaction
from labeler.store.errors import StoreError, shown
from labeler.store.judge_calls import cache_reply
from labeler.store.nugget_support import add_support_items
from labeler.store.schema import VISIBLE_DOCUMENTS, now
from labeler.store.verdicts import CallResult
from labeler.store.vocabulary import PER_ANSWER_TASKS, Caller, answer_item

#: Where a claim comes from: the answers file, a judge model, or the sentence splitter.
CLAIM_SOURCES = ("file", "judge", "sentence")

#: Records checked and written together: one query per batch for the stored answers and the
#: retrieved documents, instead of one per record.
_BATCH = 500

_COLUMNS = ("answer_id", "system", "query_id", "question", "response", "contexts", "retrieved_ids", "reference",
            "content_hash", "meta")


@dataclass(frozen=True, slots=True)
class AnswerImport:
    """What one import of answers did."""

    path: str
    system: str
    added: int
    unchanged: int
    claims: int  # claims added with the new answers
    warnings: tuple[str, ...] = ()  # what the file gave that was not read as given (columns kept as metadata)
    batch: str = ""  # the batch of answers whose record named none


@dataclass(frozen=True, slots=True)
class Answer:
    """One stored answer."""

    answer_id: str
    system: str
    query_id: str | None
    question: str
    response: str
    contexts: tuple[str, ...]
    retrieved_ids: tuple[str, ...]
    reference: str | None


@dataclass(frozen=True, slots=True)
class Claim:
    """One stored claim of an answer."""

    claim_id: str
    answer_id: str
    n: int
    text: str
    source: str
    method: str
    meta: Mapping[str, Any]


def answer_hash(answer: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of what an answer says: the texts labels are given on,
    its query, ranking and the claims its file gave."""
    values = [answer.get(k) for k in ("query_id", "question", "response", "contexts", "retrieved_ids", "reference",
                                      "claims")]
    return hashlib.sha256(json.dumps(values, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def _row(system: str, answer: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        answer["answer_id"], system, answer.get("query_id"), answer["question"], answer["response"],
        json.dumps(list(answer.get("contexts") or []), ensure_ascii=False),
        json.dumps(list(answer.get("retrieved_ids") or []), ensure_ascii=False),
        answer.get("reference"), answer_hash(answer),
        json.dumps(dict(answer.get("meta") or {}), ensure_ascii=False, sort_keys=True, default=str),
    )


def _field(answer: Mapping[str, Any], name: str) -> str:
    """The name the file gave field ``name`` under (``user_input`` for ``question``...)."""
    return dict(answer.get("fields") or {}).get(name, name)


def check_system_name(system: str) -> str:
    """``system`` if it can name a system: non-empty, visible characters only (no space, no ``#``).

    Raises:
        StoreError: otherwise.
    """
    if not system or any(ch.isspace() or not ch.isprintable() or ch == "#" for ch in system):
        raise StoreError(f"system name {shown(system)}: give a non-empty name of visible characters, without '#'")
    return system


def add_answers(
    db: sqlite_utils.Database, path: str | Path, system: str,
    answers: Iterable[tuple[int, Mapping[str, Any]]], *, caller: Caller, batch: str | None = None,
) -> AnswerImport:
    """Add one system's answers read from the file ``path`` (admin only), in one transaction.

    ``answers`` are ``(line, answer)`` as :func:`pooling.answer_readers.read_answers` yields them,
    each with its ``answer_id`` set and its ``query_id`` (if any) a project query. It is read
    once, inside the transaction, so a file streams through. An answer already stored with
    the same content for the same system counts as unchanged; its claims are not touched.

    Each answer is stored in its ``batch`` (a key of the answer, set when the file or the
    import named one), else in ``batch``, else in the import's date (:func:`default_batch`).
    An answer stored in another batch than the one its record names is refused; one whose
    batch was named by nobody is unchanged, whatever day it is imported again.

    Raises:
        StoreError: a retrieved doc_id that is not in the corpus, an answer_id already stored
            for another system, in another batch or with different content (file, line and
            field named); nothing is written.
    """
    require_admin(db, caller)
    check_system_name(system)
    batch = default_batch() if batch is None else check_batch_name(batch)
    path = str(path)
    added = unchanged = claims = 0
    at = now()
    with transaction(db):
        db.conn.execute("INSERT OR IGNORE INTO systems (name, added_at) VALUES (?, ?)", [system, at])
        iterator = iter(answers)
        while chunk := list(islice(iterator, _BATCH)):
            counts = _write_batch(db, path, system, chunk, at, batch)
            added, unchanged, claims = added + counts[0], unchanged + counts[1], claims + counts[2]
    return AnswerImport(path, system, added, unchanged, claims, batch=batch)


def _write_batch(db: sqlite_utils.Database, path: str, system: str, batch: Sequence[tuple[int, Mapping[str, Any]]],
                 at: str, answer_batch: str) -> tuple[int, int, int]:
    """Check and write one batch of answers inside the caller's transaction: (added, unchanged, claims)."""
    insert = f"INSERT INTO answers ({', '.join(_COLUMNS)}, added_at) VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})"
    insert_claim = ("INSERT INTO claims (claim_id, answer_id, n, text, source, method, added_at) "
                    "VALUES (?, ?, ?, ?, 'file', '', ?)")
    _check_documents(db, path, batch)
    stored = _stored(db, [a["answer_id"] for _, a in batch])
    new_rows, new_claims, batches = [], [], []
    unchanged = 0
    where: dict[str, tuple[int, Mapping[str, Any]]] = {}
    for line, answer in batch:
        row = _row(system, answer)
        before = stored.get(row[0])
        if before is not None:
            _check_same(path, line, system, answer, row, before)
            unchanged += 1
            continue
        new_rows.append((*row, at))
        batches.append((row[0], answer.get("batch") or answer_batch))
        where[row[0]] = (line, answer)
        for n, text in enumerate(answer.get("claims") or [], start=1):
            new_claims.append((f"{row[0]}#{n}", row[0], n, text, at))
    _check_item_ids(db, path, where, new_rows, new_claims)
    db.conn.executemany(insert, new_rows)
    db.conn.executemany("INSERT INTO answer_batches (answer_id, batch) VALUES (?, ?)", batches)
    db.conn.executemany(insert_claim, new_claims)
    _add_answer_items(db, new_rows, new_claims)
    add_support_items(db, sorted({row[2] for row in new_rows if row[2] is not None}))  # with its question's nuggets
    return len(new_rows), unchanged, len(new_claims)


def _check_item_ids(db: sqlite_utils.Database, path: str, where: Mapping[str, tuple[int, Mapping[str, Any]]],
                    rows: Sequence[tuple[Any, ...]], claims: Sequence[tuple[Any, ...]]) -> None:
    """Refuse new answers whose items (``ANSWER_ID@TASK``, claims ``ANSWER_ID#N``) would take an
    item_id the project already holds (an item of ``import-items``), naming file, line and field."""
    wanted: dict[str, tuple[str, str]] = {}  # item_id -> (answer_id, field)
    empty = set()
    for row in rows:
        answer = dict(zip(_COLUMNS, row))
        if answer["response"] == "":
            empty.add(answer["answer_id"])
            continue
        for task in PER_ANSWER_TASKS:
            if task != "correctness" or answer["reference"]:
                wanted[answer_item(task, row[0])] = (row[0], "answer_id")
    for claim_id, answer_id, n, _text, _at in claims:
        if answer_id not in empty:
            wanted[claim_id] = (answer_id, f"{_field(where[answer_id][1], 'claims')}[{n - 1}]")
    ids = sorted(wanted)
    for start in range(0, len(ids), _BATCH):
        chunk = ids[start:start + _BATCH]
        taken = db.conn.execute(f"SELECT item_id, kind FROM verdict_items WHERE item_id IN ({','.join('?' * len(chunk))}) "
                                "ORDER BY item_id", chunk).fetchone()
        if taken is not None:
            answer_id, field = wanted[taken[0]]
            raise StoreError(f"answer {shown(answer_id)} would make item {shown(taken[0])}, which the project already "
                             f"holds as a {taken[1]} item; give the answer another answer_id",
                             path=path, line=where[answer_id][0], field=field)


def record_generated_answer(db: sqlite_utils.Database, system: str, answer: Mapping[str, Any] | None, *, source: str,
                            model: str, prompt_hash: str, item_hash: str, result: CallResult | None) -> int:
    """Store one answer a model just generated (``answer`` None: the call failed or its reply
    was cut short, nothing to store) and cache the call's reply, in one transaction, so a killed run keeps every answer
    stored before it and a rerun finds them. ``source`` names where the answer came from in
    error messages (as a file's path does for an import). Returns the answers added (0 or 1).

    ``result`` is the call to cache, under its key (``result.key``: the endpoint, model, prompt
    and settings it was made with); None when the reply came from the cache, or the call failed:
    a failed call is tried again by the next run.

    Raises:
        StoreError: as :func:`add_answers` (a retrieved doc_id not in the corpus, the
            answer_id stored for another system or with other content).
    """
    check_system_name(system)
    at = now()
    added = 0
    with transaction(db):
        if answer is not None:
            db.conn.execute("INSERT OR IGNORE INTO systems (name, added_at) VALUES (?, ?)", [system, at])
            added = _write_batch(db, source, system, [(1, answer)], at, default_batch())[0]
        if result is not None:
            cache_reply(db, replace(result, verdict=None, parseable=answer is not None))
    return added


def item_hash(answer_hash: str, task: str, claim: str = "") -> str:
    """Content hash of the verdict item of ``task`` on an answer (and claim): what a judge's
    cached reply is keyed on. The migration that made these items computes the same in SQL."""
    return hashlib.sha256(f"{answer_hash}\x1f{task}\x1f{claim}".encode()).hexdigest()


# An answer's item holds no copy of the answer's texts (verdicts.get_item reads them from it).
_INSERT_ITEM = ("INSERT INTO verdict_items (item_id, kind, question, content_hash, added_at, answer_id, claim) "
                "VALUES (?, ?, '', ?, ?, ?, ?)")


def _add_answer_items(db: sqlite_utils.Database, rows: Sequence[tuple[Any, ...]],
                      claims: Sequence[tuple[Any, ...]]) -> None:
    """The verdict items of new answers (whole-answer faithfulness, answer relevance;
    correctness when there is a reference) and of their claims. An empty response is an
    abstention: nothing to judge."""
    items = []
    by_id = {}
    for row in rows:
        answer = dict(zip(_COLUMNS, row))
        by_id[answer["answer_id"]] = answer
        if answer["response"] == "":
            continue
        for task in PER_ANSWER_TASKS:
            if task == "correctness" and not answer["reference"]:
                continue
            items.append((answer_item(task, answer["answer_id"]), task, item_hash(answer["content_hash"], task),
                          row[-1], answer["answer_id"], None))
    for claim_id, answer_id, _n, text, at in claims:
        answer = by_id[answer_id]
        if answer["response"] != "":
            items.append((claim_id, "claims", item_hash(answer["content_hash"], "claims", text), at, answer_id, text))
    _insert_items(db, items)


def _insert_items(db: sqlite_utils.Database, items: Sequence[tuple[Any, ...]]) -> None:
    # The ids taken are looked up before the insert: after a failed executemany, the rows it
    # wrote before the failing one are in the table too, and would be named instead.
    taken = [i[0] for i in items if db.conn.execute("SELECT 1 FROM verdict_items WHERE item_id = ?", [i[0]]).fetchone()]
    if taken:
        raise StoreError(f"item {shown(taken[0])} is already a verdict item of the project; give the answer another "
                         "answer_id")
    db.conn.executemany(_INSERT_ITEM, items)


def _check_documents(db: sqlite_utils.Database, path: str, batch: Sequence[tuple[int, Mapping[str, Any]]]) -> None:
    wanted = {doc for _, a in batch for doc in a.get("retrieved_ids") or []}
    if not wanted:
        return
    found: set[str] = set()
    ids = sorted(wanted)
    for start in range(0, len(ids), _BATCH):
        chunk = ids[start:start + _BATCH]
        sql = f"SELECT doc_id FROM documents WHERE doc_id IN ({','.join('?' * len(chunk))}) AND {VISIBLE_DOCUMENTS}"
        found.update(r[0] for r in db.conn.execute(sql, chunk))
    if found == wanted:
        return
    for line, answer in batch:
        for i, doc in enumerate(answer.get("retrieved_ids") or []):
            if doc not in found:
                raise StoreError(f"{shown(doc)} is not a document of the project's corpus; import the corpus the "
                                 "system retrieved from first, or leave the id out",
                                 path=path, line=line, field=f"{_field(answer, 'retrieved_ids')}[{i}]")


def _stored(db: sqlite_utils.Database, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The stored answers among ``ids``, with their batch."""
    sql = (f"SELECT {', '.join('a.' + c for c in _COLUMNS)}, {BATCH_OF} FROM answers a "
           f"LEFT JOIN answer_batches b ON b.answer_id = a.answer_id WHERE a.answer_id IN ({','.join('?' * len(ids))})")
    return {r[0]: dict(zip((*_COLUMNS, "batch"), r)) for r in db.conn.execute(sql, list(ids))}


def _check_same(path: str, line: int, system: str, answer: Mapping[str, Any], row: tuple[Any, ...],
                stored: dict[str, Any]) -> None:
    if stored["system"] != system:
        raise StoreError(f"answer {shown(row[0])} is already in the project as an answer of system "
                         f"{shown(stored['system'])}; answer_ids are unique across systems",
                         path=path, line=line, field="answer_id")
    new = dict(zip(_COLUMNS, row))
    if answer.get("batch") is not None and answer["batch"] != stored["batch"]:
        raise StoreError(f"answer {shown(row[0])} is already in the project in batch {shown(stored['batch'])}; an answer "
                         "belongs to one batch: give the new batch's answers their own answer_ids",
                         path=path, line=line, field=_field(answer, "batch"))
    if new["meta"] == stored["meta"] and (new["content_hash"] == stored["content_hash"] or _same_text(answer, new, stored)):
        return
    changed = next((c for c in ("query_id", "question", "response", "contexts", "retrieved_ids", "reference", "meta")
                    if new[c] != stored[c]), "claims")
    raise StoreError(f"answer {shown(row[0])} is already in the project with different content; labels are given "
                     "on the stored text: import the new text under a new answer_id",
                     path=path, line=line, field=_field(answer, changed))


def _same_text(answer: Mapping[str, Any], new: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """The record says what the stored answer says, column by column, and gives no claims: an
    answer written out by ``export-answers`` and read back (which gives ``[]`` for a list
    the first file left out, so the hash of what the file gave differs)."""
    return answer.get("claims") is None and all(
        new[c] == stored[c] for c in ("query_id", "question", "response", "contexts", "retrieved_ids", "reference"))


def add_claims(db: sqlite_utils.Database, claims: Iterable[tuple[str, Sequence[str]]], *, source: str, method: str,
               meta: Mapping[str, Any] | None = None, caller: Caller) -> tuple[int, int]:
    """Give answers that have no claims yet their claims, in one transaction (admin only).

    ``claims`` are ``(answer_id, texts)``, the texts in answer order. An answer that already
    has claims keeps them (one decomposition per answer); so does one given no text.

    Returns:
        ``(answers, claims)``: how many answers got claims, and how many claims were added.

    Raises:
        StoreError: an unknown source or answer_id; nothing is written.
    """
    require_admin(db, caller)
    if source not in CLAIM_SOURCES:
        raise StoreError(f"claim source {shown(source)}: give {' or '.join(map(repr, CLAIM_SOURCES))}")
    at = now()
    meta_json = json.dumps(dict(meta or {}), ensure_ascii=False, sort_keys=True)
    answers = added = 0
    with transaction(db):
        for answer_id, texts in claims:
            added_here = _insert_claims(db, answer_id, texts, source, method, meta_json, at)
            answers += added_here > 0
            added += added_here
    return answers, added


def _insert_claims(db: sqlite_utils.Database, answer_id: str, texts: Sequence[str], source: str, method: str,
                   meta_json: str, at: str) -> int:
    if db.conn.execute("SELECT 1 FROM answers WHERE answer_id = ?", [answer_id]).fetchone() is None:
        raise StoreError(f"answer {shown(answer_id)} is not in the project")
    if not texts or db.conn.execute("SELECT 1 FROM claims WHERE answer_id = ? LIMIT 1", [answer_id]).fetchone():
        return 0
    db.conn.executemany(
        "INSERT INTO claims (claim_id, answer_id, n, text, source, method, meta, added_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(f"{answer_id}#{n}", answer_id, n, text, source, method, meta_json, at) for n, text in enumerate(texts, start=1)],
    )
    response, answer_hash = db.conn.execute(
        "SELECT response, content_hash FROM answers WHERE answer_id = ?", [answer_id]).fetchone()
    if response != "":
        _insert_items(db, [(f"{answer_id}#{n}", "claims", item_hash(answer_hash, "claims", text), at, answer_id, text)
                           for n, text in enumerate(texts, start=1)])
    return len(texts)


def record_judge_split(db: sqlite_utils.Database, answer_id: str, texts: Sequence[str] | None, *, model: str,
                       prompt_hash: str, item_hash: str, result: CallResult | None, judge: str) -> int:
    """Store what a judge model split an answer into, and cache its reply: one transaction.

    ``texts`` None: the reply could not be parsed (no claims are stored). ``result`` is the
    call to cache, under its key (``result.key``); None when the reply came from the cache, or
    the call failed: a failed call is tried again by the next run. Returns the number of claims
    added.
    """
    at = now()
    with transaction(db):
        added = 0
        if texts:
            added = _insert_claims(db, answer_id, texts, "judge", prompt_hash,
                                   json.dumps({"judge": judge, "model": model}, ensure_ascii=False, sort_keys=True), at)
        if result is not None:
            cache_reply(db, replace(result, verdict=None, parseable=texts is not None))
    return added


def query_texts(db: sqlite_utils.Database) -> Iterator[tuple[str, str]]:
    """``(query_id, text)`` of every project query, by query_id."""
    yield from db.conn.execute("SELECT query_id, text FROM queries ORDER BY query_id")


def systems(db: sqlite_utils.Database) -> list[str]:
    """The names of the systems whose answers were imported, sorted."""
    return [r[0] for r in db.conn.execute("SELECT name FROM systems ORDER BY name")]


def list_answers(db: sqlite_utils.Database, system: str | None = None) -> list[Answer]:
    """Every answer (of ``system``), by answer_id."""
    sql = "SELECT answer_id, system, query_id, question, response, contexts, retrieved_ids, reference FROM answers"
    rows = db.conn.execute(sql + " ORDER BY answer_id") if system is None else \
        db.conn.execute(sql + " WHERE system = ? ORDER BY answer_id", [system])
    return [Answer(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), tuple(json.loads(r[6])), r[7]) for r in rows]


def count_answers(db: sqlite_utils.Database, system: str) -> int:
    """How many answers of ``system`` are stored."""
    return int(db.conn.execute("SELECT count(*) FROM answers WHERE system = ?", [system]).fetchone()[0])


def answers_without_claims(db: sqlite_utils.Database, system: str) -> Iterator[tuple[str, str, str]]:
    """``(answer_id, question, response)`` of ``system``'s answers that have no claims yet, by answer_id."""
    yield from db.conn.execute(
        "SELECT a.answer_id, a.question, a.response FROM answers a WHERE a.system = ? "
        "AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.answer_id = a.answer_id) ORDER BY a.answer_id", [system])


def list_claims(db: sqlite_utils.Database, system: str | None = None) -> list[Claim]:
    """Every claim (of ``system``'s answers), by answer_id and number."""
    sql = "SELECT c.claim_id, c.answer_id, c.n, c.text, c.source, c.method, c.meta FROM claims c"
    if system is None:
        rows = db.conn.execute(sql + " ORDER BY c.answer_id, c.n")
    else:
        rows = db.conn.execute(sql + " JOIN answers a ON a.answer_id = c.answer_id WHERE a.system = ? "
                               "ORDER BY c.answer_id, c.n", [system])
    return [Claim(*r[:6], json.loads(r[6])) for r in rows]


def require_system(db: sqlite_utils.Database, system: str) -> str:
    """``system`` if answers of it were imported.

    Raises:
        StoreError: no such system (the known ones named).
    """
    if db.conn.execute("SELECT 1 FROM systems WHERE name = ?", [system]).fetchone() is None:
        known = systems(db)
        raise StoreError(f"no system {shown(system)} in the project; "
                         + (f"known: {', '.join(known)}" if known else "import its answers with `goldpool import-answers`"))
    return system


def answer_rows(db: sqlite_utils.Database, system: str) -> Iterator[tuple[str, str | None, str, str, str | None]]:
    """``(answer_id, query_id, question, response, reference)`` of ``system``'s answers, by answer_id."""
    yield from db.conn.execute(
        "SELECT answer_id, query_id, question, response, reference FROM answers WHERE system = ? ORDER BY answer_id",
        [system])


def claim_counts(db: sqlite_utils.Database, system: str) -> dict[str, int]:
    """answer_id -> how many claims it has, for ``system``'s answers that have claims."""
    return dict(db.conn.execute(
        "SELECT c.answer_id, count(*) FROM claims c JOIN answers a ON a.answer_id = c.answer_id "
        "WHERE a.system = ? GROUP BY c.answer_id", [system]))
