"""A generating system's answers and their claims into the project: :mod:`pooling` reads, the
store writes.

``import-answers`` reads its file with :func:`pooling.answer_readers.read_answers` (JSONL, CSV or
Parquet told apart by their content; ids, NUL, lists, empty files, RAGAS's column names), then, record by record as the file streams:

- links a record to a project query: its ``query_id`` if it gives one (it must be a project
  query), else the one query whose text equals the question after :func:`normalise_question`
  (Unicode NFC, whitespace runs made one space, ends stripped; case kept). A question that
  matches no query, or several, stays unlinked (``query_id`` NULL);
- gives a record without ``answer_id`` the id :func:`derived_answer_id` (system and query_id,
  or system and normalised question), so importing the same file again finds the same ids;
- refuses two records of the file with the same answer_id, which for records without one
  means the same question twice: one system gives one answer per question unless the file
  names the answers apart with their own answer_ids.

:mod:`labeler.store.answers` checks the retrieved doc_ids against the corpus and writes
everything in one transaction. ``split-claims --sentences`` cuts the responses of a system's
answers that have no claims yet with :func:`labeler.generation.sentences.split_sentences`.

Errors: :class:`pooling.PoolingError` for a bad file, :class:`labeler.store.StoreError` for
what the project refuses; either way nothing is written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import sqlite_utils

from labeler.generation.abstention import is_abstention
from labeler.generation.sentences import SPLITTER, split_sentences
from labeler.store import StoreError
from labeler.store import answers as store
from labeler.store.access import require_admin
from labeler.store.answer_records import answer_records
from labeler.store.answers import AnswerImport
from labeler.store.vocabulary import Caller
from pooling import PoolingError, shown
from pooling.answer_readers import read_answers


def normalise_question(text: str) -> str:
    """``text`` as questions are matched to queries: NFC, whitespace runs one space, stripped.

    >>> normalise_question("  What is\\tRAG?\\n")
    'What is RAG?'
    """
    return " ".join(unicodedata.normalize("NFC", text).split())


def derived_answer_id(system: str, query_id: str | None, question: str, batch: str | None = None) -> str:
    """The answer_id of a record that gives none: ``a`` and 16 hex digits of the sha256 of the
    system and the record's query_id (if the file gives one) or its normalised question, and
    of its batch when the file or the import names one (so a question asked again in a later
    batch is a new answer).

    Stable across imports of the same file, and blind: it shows neither the system nor the
    question to the people who label the answer.

    >>> derived_answer_id("rag-1", "q7", "ignored when a query_id is given")
    'a025dfe72714e2e87'
    """
    key = f"query_id\x1f{query_id}" if query_id is not None else f"question\x1f{normalise_question(question)}"
    if batch is not None:
        key += f"\x1fbatch\x1f{batch}"
    return "a" + hashlib.sha256(f"{system}\x1f{key}".encode()).hexdigest()[:16]


def import_answers(db: sqlite_utils.Database, path: str | Path, system: str, *, caller: Caller,
                   batch: str | None = None) -> tuple[AnswerImport, int]:
    """Add system ``system``'s answers from a JSONL, CSV or Parquet file (admin only), in
    ``batch`` (default: each record's own ``batch``, else the import's date).

    Returns:
        What the store did (with the reader's warnings: columns that look like an answer's
        field but are kept as metadata), and how many of the file's answers are linked to a
        project query.

    Raises:
        PoolingError: a malformed record, a bad id or text, the same answer_id (or, without
            one, the same question) twice, an empty file.
        StoreError: an unknown query_id or retrieved doc_id, an answer_id stored for another
            system, in another batch or with different content; a record of another system,
            or of another batch than ``batch``; the caller is not an admin.
    """
    require_admin(db, caller)  # before the file is read: its errors would tell a non-admin about it
    store.check_system_name(system)
    if batch is not None:
        store.check_batch_name(batch)
    warnings: list[str] = []
    result, linked = import_records(db, path, system, read_answers(path, warnings=warnings), caller=caller, batch=batch)
    return dataclasses.replace(result, warnings=tuple(warnings)), linked


def import_records(db: sqlite_utils.Database, path: str | Path, system: str,
                   records: Iterable[tuple[int, dict[str, Any]]], *, caller: Caller,
                   batch: str | None = None) -> tuple[AnswerImport, int]:
    """Store ``(line, answer)`` records as :func:`pooling.answer_readers.read_answers` yields them
    (from an answers file or a traces file): linked to project queries, given their ids, in one
    transaction. Returns what the store did and how many records are project queries."""
    texts: dict[str, str] = {}
    by_text: dict[str, str | None] = {}
    for query_id, text in store.query_texts(db):
        texts[query_id] = text
        key = normalise_question(text)
        by_text[key] = None if key in by_text else query_id  # two queries with one text: ambiguous
    linked = [0]
    records = _linked(records, Path(path), system, texts, by_text, linked, batch)
    result = store.add_answers(db, path, system, records, caller=caller, batch=batch)
    return result, linked[0]


def _batched(answer: dict[str, Any], path: Path, line: int, system: str, batch: str | None) -> None:
    """Check a record's own system and batch against the import's; give it the import's batch."""
    if answer.get("system") is not None and answer["system"] != system:
        raise StoreError(f"an answer of system {shown(answer['system'])}, imported as {shown(system)}; import it with "
                         f"--system {answer['system']}, or drop the column", path=path, line=line, field="system")
    own = answer.get("batch")
    if own is not None:
        store.check_batch_name(own, path=path, line=line, field="batch")
        if batch is not None and own != batch:
            raise StoreError(f"an answer of batch {shown(own)}, imported as batch {shown(batch)}; leave --batch out "
                             "to keep each record's own batch", path=path, line=line, field="batch")
    answer["batch"] = own if own is not None else batch


def _linked(answers: Iterable[tuple[int, dict[str, Any]]], path: Path, system: str, texts: dict[str, str],
            by_text: dict[str, str | None], linked: list[int],
            batch: str | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    seen: dict[str, int] = {}
    for line, answer in answers:
        _batched(answer, path, line, system, batch)
        given_query = answer["query_id"]
        if given_query is not None and given_query not in texts:
            raise StoreError(f"{shown(given_query)} is not a query of the project; import the queries first, or "
                             "give the question text instead", path=path, line=line, field="query_id")
        if answer["question"] is None:
            answer["question"] = texts[given_query]
        if given_query is None:
            answer["query_id"] = by_text.get(normalise_question(answer["question"]))
        linked[0] += answer["query_id"] is not None
        if answer["answer_id"] is None:
            answer["answer_id"] = derived_answer_id(system, given_query, answer["question"], answer["batch"])
            first = seen.setdefault(answer["answer_id"], line)
            if first != line:
                what = "query_id" if given_query is not None else answer["fields"]["question"]
                raise PoolingError(
                    f"the same {'query' if given_query is not None else 'question'} as line {first}: one system gives "
                    "one answer per question; give each record its own answer_id to keep both",
                    path=path, line=line, field=what)
        else:
            first = seen.setdefault(answer["answer_id"], line)
            if first != line:  # a derived id of an earlier record, given explicitly here
                raise PoolingError(f"duplicate answer_id {shown(answer['answer_id'])} (first at line {first})",
                                   path=path, line=line, field="answer_id")
        yield line, answer


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What ``import-answers`` did: the store's counts, and how many answers are project queries."""

    file: str
    system: str
    added: int
    unchanged: int
    claims: int  # claims added from the file
    linked: int

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class SplitReport:
    """What ``split-claims`` did, by sentences or by a judge (the call counts stay 0 offline)."""

    system: str
    method: str  # the splitter's version, or the judge prompt's hash
    answers: int  # answers given claims
    claims: int  # claims added
    skipped: int  # answers not given claims (claims already, or none found)
    calls: int = 0
    from_cache: int = 0
    errors: int = 0
    unparseable: int = 0
    cut_short: dict[str, int] = field(default_factory=dict)  # replies cut short, by why (among unparseable)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def split_claims(db: sqlite_utils.Database, system: str, *, caller: Caller) -> dict[str, int]:
    """Cut each answer of ``system`` that has no claims yet into its sentences (admin only).

    A response that declines to answer (empty, or declining by the text rule of
    :mod:`labeler.generation.abstention`) gets no claims: "the documents do not say" states no checkable
    fact, so its claims would make a decline look faithful. Running it again adds nothing.

    Returns:
        ``answers`` (answers given claims), ``claims`` (claims added) and ``skipped``
        (answers that already had claims, or have no sentence).

    Raises:
        StoreError: no such system; the caller is not an admin.
    """
    require_admin(db, caller)
    store.require_system(db, system)
    pending = list(store.answers_without_claims(db, system))
    total = store.count_answers(db, system)
    cut = [(answer_id, [] if is_abstention(response) else split_sentences(response)) for answer_id, _, response in pending]
    answers, claims = store.add_claims(db, cut, source="sentence", method=SPLITTER, caller=caller)
    return {"answers": answers, "claims": claims, "skipped": total - answers}


#: The keys of an exported answer, in order: RAGAS's columns, then goldpool's.
EXPORT_KEYS = ("user_input", "retrieved_contexts", "response", "reference", "answer_id", "system", "batch",
               "retrieved_ids", "meta")


def export_answers(db: sqlite_utils.Database, out: TextIO, *, systems: Sequence[str] = (), batches: Sequence[str] = (),
                   caller: Caller) -> int:
    """Write the stored answers (of ``systems``, in ``batches``; all when empty) to ``out`` as
    JSONL with :data:`EXPORT_KEYS`, by system, batch and answer_id (admin only). Returns how many.

    Raises:
        StoreError: an unknown system; the caller is not an admin.
    """
    import json

    require_admin(db, caller)
    for system in systems:
        store.require_system(db, system)
    wanted_systems, wanted_batches = set(systems), set(batches)
    n = 0
    for a in answer_records(db):
        if (wanted_systems and a["system"] not in wanted_systems) or (wanted_batches and a["batch"] not in wanted_batches):
            continue
        record = {"user_input": a["question"], "retrieved_contexts": a["contexts"], "response": a["response"],
                  "reference": a["reference"], "answer_id": a["answer_id"], "system": a["system"], "batch": a["batch"],
                  "retrieved_ids": a["retrieved_ids"], "meta": a["meta"]}
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        n += 1
    return n
