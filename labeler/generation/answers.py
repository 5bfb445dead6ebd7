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
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from labeler.generation.abstention import is_abstention
from labeler.generation.sentences import SPLITTER, split_sentences
from labeler.store import StoreError
from labeler.store import answers as store
from labeler.store.access import require_admin
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


def derived_answer_id(system: str, query_id: str | None, question: str) -> str:
    """The answer_id of a record that gives none: ``a`` and 16 hex digits of the sha256 of the
    system and the record's query_id (if the file gives one) or its normalised question.

    Stable across imports of the same file, and blind: it shows neither the system nor the
    question to the people who label the answer.

    >>> derived_answer_id("rag-1", "q7", "ignored when a query_id is given")
    'a025dfe72714e2e87'
    """
    key = f"query_id\x1f{query_id}" if query_id is not None else f"question\x1f{normalise_question(question)}"
    return "a" + hashlib.sha256(f"{system}\x1f{key}".encode()).hexdigest()[:16]


def import_answers(db: sqlite_utils.Database, path: str | Path, system: str, *, caller: Caller) -> tuple[AnswerImport, int]:
    """Add system ``system``'s answers from a JSONL, CSV or Parquet file (admin only).

    Returns:
        What the store did (with the reader's warnings: columns that look like an answer's
        field but are kept as metadata), and how many of the file's answers are linked to a
        project query.

    Raises:
        PoolingError: a malformed record, a bad id or text, the same answer_id (or, without
            one, the same question) twice, an empty file.
        StoreError: an unknown query_id or retrieved doc_id, an answer_id stored for another
            system or with different content; the caller is not an admin.
    """
    require_admin(db, caller)  # before the file is read: its errors would tell a non-admin about it
    store.check_system_name(system)
    texts: dict[str, str] = {}
    by_text: dict[str, str | None] = {}
    for query_id, text in store.query_texts(db):
        texts[query_id] = text
        key = normalise_question(text)
        by_text[key] = None if key in by_text else query_id  # two queries with one text: ambiguous
    linked = [0]
    warnings: list[str] = []
    records = _linked(read_answers(path, warnings=warnings), Path(path), system, texts, by_text, linked)
    result = store.add_answers(db, path, system, records, caller=caller)
    return dataclasses.replace(result, warnings=tuple(warnings)), linked[0]


def _linked(answers: Iterator[tuple[int, dict[str, Any]]], path: Path, system: str, texts: dict[str, str],
            by_text: dict[str, str | None], linked: list[int]) -> Iterator[tuple[int, dict[str, Any]]]:
    seen: dict[str, int] = {}
    for line, answer in answers:
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
            answer["answer_id"] = derived_answer_id(system, given_query, answer["question"])
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
