"""Candidate lists deeper than the pool: `build-pool --candidate-depth`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlite_utils

from labels_fixtures import write_jsonl
from labeler.retrieval import build
from labeler.store import candidates, init_db
from pooling import PoolingError

WORDS = ["cat mat mat", "cat mat", "cat sat", "dog mat", "dog run", "fish swim", "bird fly", "tree grow"]
DOCS = [{"doc_id": f"d{i}", "text": w} for i, w in enumerate(WORDS, start=1)]
QUERIES = [{"query_id": "q1", "text": "cat mat"}]
RUN = "q1 Q0 d6 1 9.0 r\nq1 Q0 d5 2 8.0 r\nq1 Q0 d4 3 7.0 r\nq1 Q0 d3 4 6.0 r\n"


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    store = init_db(tmp_path / "p.db")
    build.import_corpus(store, write_jsonl(tmp_path / "corpus.jsonl", DOCS))
    build.import_queries(store, write_jsonl(tmp_path / "queries.jsonl", QUERIES))
    (tmp_path / "run.trec").write_text(RUN, encoding="utf-8")
    build.import_run(store, tmp_path / "run.trec", "sys")
    return store


def test_candidates_go_deeper_than_the_pool(db: sqlite_utils.Database) -> None:
    result = build.build_pool(db, bm25_depth=2, dense_depth=0, run_depth=1, candidate_depth=3, progress=False)
    ranked = candidates.query_rankings(db, "q1")
    # The run keeps its first 3 of 4 rows as candidates, only its first in the pool.
    assert ranked["sys"] == ["d6", "d5", "d4"]
    assert len(ranked["bm25"]) == 3
    pool = {r[0]: json.loads(r[1]) for r in db.execute("SELECT doc_id, sources FROM pool")}
    assert {d for d, s in pool.items() if "sys" in s} == {"d6"}
    assert sum("bm25" in s for s in pool.values()) == 2
    assert ranked["bm25"][:2] == sorted((d for d, s in pool.items() if "bm25" in s), key=lambda d: pool[d]["bm25"])
    assert result.candidates == 6


def test_a_shallow_candidate_depth_still_covers_the_pool_and_a_rebuild_replaces(db: sqlite_utils.Database) -> None:
    build.build_pool(db, bm25_depth=0, dense_depth=0, run_depth=2, candidate_depth=1, progress=False)
    assert candidates.query_rankings(db, "q1") == {"sys": ["d6", "d5"]}
    build.build_pool(db, bm25_depth=0, dense_depth=0, run_depth=1, candidate_depth=4, progress=False)
    assert candidates.query_rankings(db, "q1") == {"sys": ["d6", "d5", "d4", "d3"]}


def test_a_negative_candidate_depth_is_refused(db: sqlite_utils.Database) -> None:
    with pytest.raises(PoolingError, match="candidate_depth"):
        build.build_pool(db, dense_depth=0, candidate_depth=-1, progress=False)
    assert db.execute("SELECT count(*) FROM candidates").fetchone()[0] == 0
