"""A labelling project with candidate lists deeper than its pool (adaptive pooling tests)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from app_fixtures import QUERIES, Project, build_project
from labeler.store import connect

#: Chunks per query beyond the pool's five, present only in the candidate lists.
DEEP = 3


def build_adaptive_project(directory: Path) -> Project:
    """:func:`app_fixtures.build_project` plus candidate lists of 8 chunks per query.

    ``bm25`` ranks d1..d8 in order; ``dense-minilm`` ranks them in reverse (d8 first), so a
    strategy that follows a source's hits reaches the chunks outside the pool.
    """
    project = build_project(directory)
    db = connect(project.path)
    rows, docs = [], []
    for query_id, query in QUERIES.items():
        for n in range(6, 6 + DEEP):
            text = f"Deeper chunk {n} on the {query}. More prose for {query_id} number {n}."
            docs.append({"doc_id": f"{query_id}-d{n}", "title": "", "text": text, "meta": "{}",
                         "content_hash": hashlib.sha256(f"\n{text}".encode()).hexdigest()})
        ids = [f"{query_id}-d{n}" for n in range(1, 6 + DEEP)]
        rows += [(query_id, "bm25", d, r) for r, d in enumerate(ids, start=1)]
        rows += [(query_id, "dense-minilm", d, r) for r, d in enumerate(reversed(ids), start=1)]
    db["documents"].insert_all(docs)
    with db.conn:
        db.conn.executemany("INSERT INTO candidates (query_id, source, doc_id, rank) VALUES (?, ?, ?, ?)", rows)
    db.close()
    return project
