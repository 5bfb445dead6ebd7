"""The demo ships its embeddings, so ``goldpool demo`` starts without encoding the corpus.

They must be what the default model gives for today's demo texts: a sample is re-encoded and
compared. The corpus may change (a chunk removed or edited): the vectors are keyed by content
hash, so only the changed chunks are encoded, and these tests look only at what is shipped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from labeler.retrieval import demo
from pooling.dense import DenseRetriever, EmbeddingCache, default_model_path, model_identity
from pooling.readers import read_corpus, read_queries
from pooling.retrieve import query_key
from pooling.types import search_text

SHIPPED = demo.DATA_DIR / "embeddings"


def _shipped() -> tuple[str, list[str], np.ndarray]:
    (folder,) = [p for p in SHIPPED.iterdir() if p.is_dir()]
    cache = EmbeddingCache(SHIPPED, folder.name, "")
    keys = (folder / "keys.txt").read_text(encoding="utf-8").splitlines()
    assert len(keys) == len(cache)
    return folder.name, keys, np.asarray(cache.matrix())


def test_shipped_embeddings_are_for_the_default_model() -> None:
    identity, keys, vectors = _shipped()
    assert identity == model_identity(default_model_path())
    assert vectors.shape == (len(keys), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert SHIPPED.joinpath(identity, "meta.json").read_text().find("/") == -1  # no machine's path


def test_shipped_embeddings_cover_the_demo_texts() -> None:
    _, keys, _ = _shipped()
    have = set(keys)
    documents = list(read_corpus(demo.DATA_DIR / "corpus.jsonl"))
    missing = [d.doc_id for d in documents if d.content_hash not in have]
    assert len(missing) <= len(documents) // 100, f"re-run data/build_demo.py --embeddings: {missing[:5]}"
    queries = list(read_queries(demo.DATA_DIR / "queries.jsonl"))
    assert all(query_key(q.text) in have for q in queries)


def test_a_sample_re_encodes_to_the_shipped_vectors(tmp_path: Path) -> None:
    _, keys, vectors = _shipped()
    row = {k: i for i, k in enumerate(keys)}
    documents = [d for d in read_corpus(demo.DATA_DIR / "corpus.jsonl") if d.content_hash in row]
    queries = list(read_queries(demo.DATA_DIR / "queries.jsonl"))
    sample = documents[:: max(1, len(documents) // 6)][:6]
    texts = [search_text(d.title, d.text) for d in sample] + [q.text for q in queries[:2]]
    wanted = [row[d.content_hash] for d in sample] + [row[query_key(q.text)] for q in queries[:2]]
    fresh = DenseRetriever(tmp_path, progress=False).encode(texts)
    assert np.abs(fresh - vectors[wanted]).max() < 1e-5


def test_demo_build_encodes_nothing_with_the_shipped_embeddings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_model(self: DenseRetriever) -> None:
        raise AssertionError("the demo's first build loaded the model")

    monkeypatch.setattr(DenseRetriever, "_load", no_model)
    # Every text the demo encodes must come from the shipped cache; texts changed since it was
    # built are the exception: give the build exactly those, nothing else.
    _, keys, _ = _shipped()
    have = set(keys)
    changed = [d for d in read_corpus(demo.DATA_DIR / "corpus.jsonl") if d.content_hash not in have]
    if changed:
        pytest.skip(f"{len(changed)} demo chunk(s) changed since the embeddings were built")
    project = demo.build_demo_project(tmp_path / "demo", progress=False)
    assert project.n_pool > project.n_queries * 50  # BM25 and dense both contributed
