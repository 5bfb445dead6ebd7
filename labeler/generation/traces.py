"""A RAG system's traces in as its answers: ``import-traces``.

:func:`pooling.trace_readers.read_traces` reads OTLP JSON or Phoenix's span export into one
answer per trace (OpenInference's question, response, retrieved documents, model, session,
user, metadata). Here the retrieved ids are linked to the project's corpus: those that are
documents of it become the answer's ``retrieved_ids`` (in rank order), the others stay only
in the answer's metadata (``retrieved``, with every id and score); the contexts are kept as
text either way. The answers then take the path of ``import-answers``
(:func:`labeler.generation.answers.import_records`): linked to project queries by their
question, checked, and written in one transaction, so a bad trace leaves the database as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import sqlite_utils

from labeler.generation.answers import import_records
from labeler.store import answers as store
from labeler.store.access import require_admin
from labeler.store.answer_records import corpus_ids
from labeler.store.vocabulary import Caller
from pooling.trace_readers import TraceReading, read_traces

_CHUNK = 500


@dataclass(frozen=True, slots=True)
class TraceImport:
    """What ``import-traces`` did."""

    file: str
    system: str
    batch: str  # the batch the new answers went into
    spans: int
    traces: int
    added: int
    unchanged: int
    linked: int  # answers whose question is a project query
    skipped: int  # traces with no answer span (root or CHAIN span with input.value and output.value)
    no_retriever: int  # answers read without contexts
    several_retrievers: int  # answers whose documents merge several RETRIEVER spans
    documents: int  # retrieved documents read
    in_corpus: int  # of them, documents of the project's corpus (linked as retrieved_ids)
    first_skipped: tuple[str, ...]
    first_no_retriever: tuple[str, ...]
    first_several_retrievers: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def import_traces(db: sqlite_utils.Database, path: str | Path, system: str, *, caller: Caller,
                  batch: str | None = None) -> TraceImport:
    """Add system ``system``'s answers from a traces file, one per trace (admin only).

    Raises:
        PoolingError: malformed OTLP JSON or Parquet, an attribute of the wrong type (file,
            line, field and trace id named).
        StoreError: a trace stored for another system, in another batch or with other
            content; the caller is not an admin. Either way nothing is written.
    """
    require_admin(db, caller)  # before the file is read: its errors would tell a non-admin about it
    store.check_system_name(system)
    if batch is not None:
        store.check_batch_name(batch)
    reading = TraceReading()
    counts = [0, 0]  # documents, in the corpus
    records = _in_corpus(db, read_traces(path, reading), counts)
    result, linked = import_records(db, path, system, records, caller=caller, batch=batch)
    return TraceImport(str(path), system, result.batch, reading.spans, reading.traces, result.added, result.unchanged,
                       linked, reading.skipped, reading.no_retriever, reading.several_retrievers, counts[0], counts[1],
                       tuple(reading.first_skipped), tuple(reading.first_no_retriever),
                       tuple(reading.first_several_retrievers))


def _in_corpus(db: sqlite_utils.Database, answers: Iterator[tuple[int | None, dict[str, Any]]],
               counts: list[int]) -> Iterator[tuple[int | None, dict[str, Any]]]:
    """The answers with only the retrieved ids that are documents of the corpus, a chunk of
    answers looked up at a time."""
    while chunk := list(islice(answers, _CHUNK)):
        found = corpus_ids(db, (doc for _, a in chunk for doc in a["retrieved_ids"]))
        for line, answer in chunk:
            counts[0] += len(answer["meta"].get("retrieved", ()))
            answer["retrieved_ids"] = [doc for doc in answer["retrieved_ids"] if doc in found]
            counts[1] += sum(1 for d in answer["meta"].get("retrieved", ()) if d["id"] in found)
            yield line, answer
