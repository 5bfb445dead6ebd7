"""Small labelling projects written straight into a fresh database, for the store tests.

Independent of the pooling code on purpose: rows are inserted as the schema describes them.
Pool positions are a fixed permutation of the doc numbers, so "first by position" and "first
by doc id" differ and a test can tell which one the store used.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import sqlite_utils

from labeler.retrieval import scheduling
from labeler.store import connect, init_db, now
from labeler.store import labels
from labeler.store.vocabulary import OWNER


def query_ids(n_queries: int) -> list[str]:
    return [f"q{n:03d}" for n in range(1, n_queries + 1)]


def position_of(n: int, per_query: int) -> int:
    """The pool position of doc number ``n`` (1-based): a permutation that is not the identity."""
    return (n * 7) % per_query + 1 if per_query % 7 else per_query + 1 - n


def add_pool(db: sqlite_utils.Database, query_id: str, doc_numbers: range, per_query: int, build_id: int) -> None:
    """Documents ``<query_id>-d<n>`` and their pool rows (sources and priority as pooling writes them)."""
    at = now()
    docs = [(f"{query_id}-d{n:03d}", n) for n in doc_numbers]
    db["documents"].insert_all(
        {
            "doc_id": doc_id,
            "title": f"Title {doc_id}",
            "text": f"Text of {doc_id} about {query_id}.",
            "meta": "{}",
            "content_hash": hashlib.sha256(doc_id.encode()).hexdigest(),
        }
        for doc_id, _ in docs
    )
    db["pool"].insert_all(
        {
            "query_id": query_id,
            "doc_id": doc_id,
            "sources": json.dumps({"bm25": position_of(n, per_query)}),
            "priority": 1 / (60 + position_of(n, per_query)),
            "position": position_of(n, per_query),
            "added_at": at,
            "build_id": build_id,
        }
        for doc_id, n in docs
    )


def make_project(path: Path, n_queries: int = 3, per_query: int = 10, **settings: object) -> sqlite_utils.Database:
    """A project of ``n_queries`` queries with ``per_query`` pool entries each, settings applied."""
    db = init_db(path)
    db["queries"].insert_all(
        {"query_id": q, "text": f"query text {q}", "meta": "{}", "content_hash": hashlib.sha256(q.encode()).hexdigest()}
        for q in query_ids(n_queries)
    )
    db["pool_builds"].insert({"id": 1, "at": now(), "params": "{}"})
    for query_id in query_ids(n_queries):
        add_pool(db, query_id, range(1, per_query + 1), per_query, 1)
    if settings:
        labels.set_settings(db, settings, caller=OWNER)
    return db


def label_all(db: sqlite_utils.Database, annotator_ids: list[int], relevance: int = 1) -> int:
    """Annotators take turns labelling one item each until none has work; return labels made."""
    made, idle = 0, set()
    while len(idle) < len(annotator_ids):
        for annotator_id in annotator_ids:
            item = scheduling.next_item(db, annotator_id)
            if item is None:
                idle.add(annotator_id)
                continue
            idle.discard(annotator_id)
            labels.record_judgment(db, annotator_id, item.query_id, item.doc_id, relevance, 1.0)
            made += 1
    return made


def label_worker(path: str, annotator_id: int, n_labels: int, start: object) -> tuple[list[int], int, list[float]]:
    """One annotator's process: wait for the others, then label ``n_labels`` items as fast as it can.

    Returns the judgment row ids it got back, how many "database is locked" errors it met (it
    does not retry), and the seconds from each label to the next item being ready.
    """
    import time

    db = connect(path)
    start.wait()  # type: ignore[attr-defined]
    ids: list[int] = []
    locked = 0
    waits: list[float] = []
    item = scheduling.next_item(db, annotator_id)
    while item is not None and len(ids) < n_labels:
        began = time.perf_counter()
        try:
            ids.append(labels.record_judgment(db, annotator_id, item.query_id, item.doc_id, len(ids) % 4, 2.0))
            item = scheduling.next_item(db, annotator_id)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            locked += 1
            continue
        waits.append(time.perf_counter() - began)
    db.close()
    return ids, locked, waits


def run_workers(path: str, annotator_ids: list[int], n_labels: int) -> list[tuple[list[int], int, list[float]]]:
    """``label_worker`` for each annotator, in separate processes started together; their results in order."""
    import multiprocessing

    # Never a plain fork: the test process runs other threads (app scripts, checkpointers), and a
    # child forked while one of them holds a lock (an import's, a logger's) waits on it forever.
    # A fork server forks from a clean single-threaded process; each child opens its own connection.
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    start = context.Barrier(len(annotator_ids))
    queue = context.Queue()
    workers = [
        context.Process(target=_report, args=(queue, n, path, a, n_labels, start)) for n, a in enumerate(annotator_ids)
    ]
    # A started child re-runs the parent's __main__, which an app test may have left pointing at
    # its own throwaway script: the children start under a bare __main__ instead.
    import sys
    import types

    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        for worker in workers:
            worker.start()
    finally:
        sys.modules["__main__"] = main
    results = dict(queue.get(timeout=600) for _ in workers)
    for worker in workers:
        worker.join()
    failed = [r for r in results.values() if isinstance(r, str)]
    if failed:
        raise RuntimeError(failed[0])
    return [results[n] for n in range(len(annotator_ids))]


def _report(queue: object, n: int, *args: object) -> None:
    import traceback

    try:
        queue.put((n, label_worker(*args)))  # type: ignore[attr-defined, arg-type]
    except BaseException:
        queue.put((n, traceback.format_exc()))  # type: ignore[attr-defined]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """``records`` written to ``path`` as JSONL, one object a line; returns ``path``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def dump(db: sqlite_utils.Database) -> list[str]:
    """The whole database as SQL statements: equal dumps, an unchanged database."""
    return list(db.conn.iterdump())
