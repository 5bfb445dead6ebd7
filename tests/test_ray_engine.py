"""Encoding on Ray: the same pool as the local engine, a resumable cache, one-line errors."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from labeler.cli import cli

HAS_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAS_RAY, reason="Ray is an optional extra: pip install 'goldpool[ray]' to run this test")

QUESTIONS = [
    ("q1", "How do I append an item to a list?"),
    ("q2", "Open a file for reading"),
    ("q3", "What does a dictionary map?"),
    ("q4", "How are exceptions raised?"),
    ("q5", "Loop over numbers"),
]
CHUNKS = [
    "list.append(x) adds an item to the end of the list.",
    "The open() function returns a file object; mode 'r' opens it for reading.",
    "A dictionary maps hashable keys to arbitrary values.",
    "The raise statement throws an exception object.",
    "The for statement with range() iterates over a sequence of integers.",
    "The def keyword introduces a function definition with its parameters.",
    "The import statement loads a module and binds its name.",
    "sorted() returns a new list with the items in ascending order.",
    "Mount Everest is the highest mountain above sea level.",
    "Bread is made from flour, water, yeast and salt.",
    "The violin has four strings tuned in fifths.",
    "Rain forms when water vapour condenses into droplets.",
    "Chess is played on a board of sixty-four squares.",
    "A list comprehension builds a list from an iterable in one expression.",
    "Files should be closed, best with a with statement.",
    "Keys of a dictionary must be hashable; values may be anything.",
]


def _project(tmp_path: Path, name: str) -> object:
    from labeler.retrieval import build as corpus
    from labeler.store import init_db

    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"doc_id": f"d{i:02d}", "text": t}) + "\n" for i, t in enumerate(CHUNKS)))
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"query_id": q, "text": t}) + "\n" for q, t in QUESTIONS))
    db = init_db(tmp_path / f"{name}.db")
    corpus.import_corpus(db, tmp_path / "c.jsonl")
    corpus.import_queries(db, tmp_path / "q.jsonl")
    return db


def _pool(db: object) -> list[tuple[str, str, dict[str, int], int]]:
    sql = "SELECT query_id, doc_id, sources, position FROM pool ORDER BY query_id, position"
    return [(q, d, json.loads(s), p) for q, d, s, p in db.conn.execute(sql)]  # type: ignore[attr-defined]


@needs_ray
def test_ray_engine_builds_the_local_pool_resumes_and_leaves_a_cache_the_local_engine_reuses(tmp_path: Path) -> None:
    from labeler.retrieval import build as corpus
    from pooling.dense import DenseRetriever
    from pooling.ray_engine import RayOptions
    from pooling.retrieve import query_key
    from pooling.types import content_hash

    local_db = _project(tmp_path, "local")
    local = corpus.build_pool(local_db, bm25_depth=3, dense_depth=4, progress=False)
    assert local.encoded == len(CHUNKS) + len(QUESTIONS)

    # A run killed after writing the first six chunks: those stay cached and are not encoded again.
    ray_db = _project(tmp_path, "ray")
    keys = [content_hash("", t) for t in CHUNKS]
    earlier = DenseRetriever(tmp_path / "ray.db.cache", progress=False)
    earlier.embed(keys[:6], lambda ps: [CHUNKS[p] for p in ps])
    options = RayOptions(num_workers=2, batch_size=4, search=True)  # the dense top-k on Ray too
    on_ray = corpus.build_pool(ray_db, bm25_depth=3, dense_depth=4, progress=False, ray=options)
    assert on_ray.encoded == len(CHUNKS) - 6 + len(QUESTIONS)

    assert _pool(ray_db) == _pool(local_db)
    assert on_ray.per_source == local.per_source
    mine = DenseRetriever(tmp_path / "local.db.cache", progress=False).cache
    theirs = DenseRetriever(tmp_path / "ray.db.cache", progress=False).cache
    all_keys = keys + [query_key(t) for _, t in QUESTIONS]
    a, b = mine.matrix()[mine.rows(all_keys)], theirs.matrix()[theirs.rows(all_keys)]
    assert (theirs.rows(all_keys) >= 0).all()
    np.testing.assert_allclose(np.sum(a * b, axis=1), 1.0, atol=1e-5)  # cosine of each pair
    q = len(CHUNKS)
    np.testing.assert_allclose(a[q:] @ a[:q].T, b[q:] @ b[:q].T, atol=1e-5)  # every query-chunk cosine

    again = corpus.build_pool(ray_db, bm25_depth=3, dense_depth=4, progress=False)
    assert again.encoded == 0 and again.added == 0


def test_engine_ray_without_ray_installed_fails_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, "p")
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    result = CliRunner().invoke(cli, ["build-pool", "p.db", "--engine", "ray", "--no-progress"])
    assert result.exit_code == 1
    assert result.output == "Error: --engine ray needs Ray: pip install 'goldpool[ray]'\n"
    assert not (tmp_path / "p.db.cache").exists()


def test_ray_options_need_engine_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, "p")
    for option in (["--num-workers", "2"], ["--ray-search"]):
        result = CliRunner().invoke(cli, ["build-pool", "p.db", *option, "--no-progress"])
        assert result.exit_code == 1
        assert result.output.splitlines()[-1] == f"Error: {option[0]} needs --engine ray"


@needs_ray
def test_search_sharded_on_ray_equals_the_local_blocked_search_ties_at_the_cut_included(tmp_path: Path) -> None:
    from pooling.dense import EmbeddingCache, top_k_cosine
    from pooling.ray_engine import RayOptions, search_sharded, shard_bounds

    rng = np.random.default_rng(3)
    # Five distinct unit vectors for 60 rows: every score is shared by many documents, so the
    # k-th and (k+1)-th scores tie and only the tie-break keys decide who is kept.
    distinct = rng.standard_normal((5, 16)).astype(np.float32)
    distinct /= np.linalg.norm(distinct, axis=1, keepdims=True)
    cache = EmbeddingCache(tmp_path / "cache", "model", "")
    cache.append([f"r{i}" for i in range(60)], distinct[rng.integers(0, 5, size=60)])
    rows = rng.permutation(60)[:50]  # the corpus: 50 of the cache's rows, out of order
    ties = rng.permutation(50)
    queries = rng.standard_normal((7, 16)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    k, block = 25, 4
    assert shard_bounds(50, 3, block) == [(0, 20), (20, 40), (40, 50)]  # k exceeds the last shard

    local_i, local_s = top_k_cosine(queries, cache.matrix(), rows, k, ties, block=block)
    ray_i, ray_s = search_sharded(queries, cache, rows, k, ties, RayOptions(num_workers=3), block=block)

    full = queries @ np.asarray(cache.matrix()[rows]).T
    kth_ties = [np.sum(np.isclose(row, s[-1])) > np.sum(np.isclose(s, s[-1])) for row, s in zip(full, local_s)]
    assert any(kth_ties)  # documents tied with the k-th score are left out: the tie-break decides
    np.testing.assert_array_equal(ray_i, local_i)
    np.testing.assert_array_equal(ray_s, local_s)
