"""BM25: scores identical to rank-bm25's BM25Okapi on real text; a deterministic top-k; shards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from pooling import PoolingError
from pooling.bm25 import BM25Index, top_k
from pooling.tokenize import tokenize
from pooling.types import search_text

DEMO = Path(__file__).resolve().parent.parent / "data" / "demo"


def _real_corpus() -> tuple[list[str], list[str], list[str]]:
    """(doc_ids, texts, queries) from the demo corpus, or Python's own documentation topics."""
    corpus, queries = DEMO / "corpus.jsonl", DEMO / "queries.jsonl"
    if corpus.exists() and queries.exists():
        docs = [json.loads(line) for line in corpus.open(encoding="utf-8")]
        texts = [search_text(d.get("title", ""), d["text"]) for d in docs]
        qs = [json.loads(line)["text"] for line in queries.open(encoding="utf-8")]
        return [d["doc_id"] for d in docs], texts, qs
    from pydoc_data.topics import topics

    ids = sorted(topics)
    return ids, [topics[i] for i in ids], [i.replace("-", " ") for i in ids[:40]]


@pytest.fixture(scope="module")
def real() -> tuple[BM25Index, BM25Okapi, list[str]]:
    doc_ids, texts, queries = _real_corpus()
    assert len(doc_ids) >= 80
    oracle = BM25Okapi([tokenize(t) for t in texts], k1=1.5, b=0.75, epsilon=0.25)
    return BM25Index(doc_ids, texts), oracle, queries


def test_scores_identical_to_rank_bm25_on_real_text(real: tuple[BM25Index, BM25Okapi, list[str]]) -> None:
    index, oracle, queries = real
    # Query words that are rare, common (negative IDF, floored by epsilon), repeated (also
    # after other words, where adding twice differs from adding double), absent.
    extra = ["the the the", "is a of in", "zzzunknownzzz", "dict dict get default", "get the dict dict the get"]
    floored = oracle.epsilon * oracle.average_idf
    assert any(oracle.idf.get(t) == floored for t in tokenize(" ".join(extra))), "no negative-IDF term tried"
    for query in queries + extra:
        ours = index.scores(query)
        theirs = oracle.get_scores(tokenize(query))
        assert ours.dtype == np.float64
        assert np.array_equal(ours, theirs), query
        assert np.array_equal(np.signbit(ours), np.signbit(theirs)), query


def test_sharded_scores_identical_to_rank_bm25(real: tuple[BM25Index, BM25Okapi, list[str]]) -> None:
    # Collection statistics come from the whole corpus, so a shard scores as one index does.
    index, oracle, queries = real
    texts = _real_corpus()[1]
    for sharded in (BM25Index(index.doc_ids, texts, shard_docs=7), BM25Index(index.doc_ids, lambda: iter(texts), shard_docs=7)):
        for query in queries[:10] + ["the the dict"]:
            assert np.array_equal(sharded.scores(query), oracle.get_scores(tokenize(query))), query


def test_search_ranks_by_rank_bm25_scores(real: tuple[BM25Index, BM25Okapi, list[str]]) -> None:
    index, oracle, queries = real
    hits = index.search([(str(n), q) for n, q in enumerate(queries)], 20)
    for n, query in enumerate(queries):
        theirs = oracle.get_scores(tokenize(query))
        matching = [i for i in range(len(theirs)) if theirs[i] > 0]
        # Two stable sorts: doc_id descending, then score descending.
        by_id = sorted(matching, key=lambda i: index.doc_ids[i], reverse=True)
        expected = sorted(by_id, key=lambda i: -theirs[i])[:20]
        got = hits[str(n)]
        assert [d.doc_id for d in got] == [index.doc_ids[i] for i in expected]
        assert [d.score for d in got] == [float(theirs[i]) for i in expected]
        assert [d.rank for d in got] == list(range(1, len(got) + 1))


def test_documents_without_a_query_term_are_not_retrieved() -> None:
    index = BM25Index(["a", "b", "c"], ["red apple", "green pear", "red red cherry"])
    hits = index.search([("q", "Red!")], 10)["q"]
    assert [d.doc_id for d in hits] == ["c", "a"]


def test_empty_corpus_retrieves_nothing() -> None:
    assert BM25Index([], []).search([("q", "anything")], 5) == {"q": []}


@given(
    scores=st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, -0.25]), min_size=0, max_size=40),
    k=st.integers(min_value=0, max_value=45),
    seed=st.integers(min_value=0, max_value=1000),
)
def test_top_k_equals_a_full_sort(scores: list[float], k: int, seed: int) -> None:
    ties = np.random.default_rng(seed).permutation(len(scores))
    array = np.array(scores, dtype=np.float64)
    expected = sorted((i for i in range(len(scores)) if scores[i] > 0), key=lambda i: (-scores[i], -ties[i]))[:k]
    assert top_k(array, k, ties).tolist() == expected


def test_a_query_sums_its_terms_weights_in_query_order() -> None:
    # Float addition is not associative: with weights a = 1e-17 and b = 0.1 of one document,
    # the query "a b a" must give (0 + a + b) + a, as rank-bm25 adds term after term, not
    # b + 2a (repeats merged) or (a + a) + b (terms sorted).
    from scipy.sparse import csr_array

    from pooling.bm25 import _scores, _Shard

    weights = csr_array((np.array([1e-17, 0.1]), np.array([0, 0], np.int32), np.array([0, 1, 2], np.int32)), shape=(2, 1))
    found = _scores(_Shard(0, 1, weights), [[0, 1, 0]])
    in_order = ((0.0 + 1e-17) + 0.1) + 1e-17
    assert in_order != 0.1 + 2e-17 and in_order != (1e-17 + 1e-17) + 0.1
    assert found.data.tolist() == [in_order]


def test_sharded_search_equals_one_index_on_real_text(real: tuple[BM25Index, BM25Okapi, list[str]]) -> None:
    index, _, queries = real
    texts = _real_corpus()[1]
    pairs = [(str(n), q) for n, q in enumerate(queries)]
    for depth in (1, 20, len(index)):
        expected = index.search(pairs, depth)
        kept = BM25Index(index.doc_ids, texts, shard_docs=13)
        streamed = BM25Index(index.doc_ids, lambda: iter(texts), shard_docs=13)
        assert streamed._texts is not None and len(kept._shards) > 1  # really several shards
        assert kept.search(pairs, depth) == expected
        assert streamed.search(pairs, depth) == expected


WORDS = ["red", "green", "blue", "apple", "pear", "the"]


@given(
    docs=st.lists(st.lists(st.sampled_from(WORDS), max_size=6), min_size=1, max_size=30).filter(any),
    queries=st.lists(st.lists(st.sampled_from(WORDS + ["absent"]), min_size=1, max_size=5), min_size=1, max_size=4),
    shard_docs=st.integers(min_value=1, max_value=31),
    k=st.integers(min_value=0, max_value=32),
    seed=st.integers(min_value=0, max_value=1000),
)
def test_sharded_top_k_equals_one_index_and_rank_bm25(
    docs: list[list[str]], queries: list[list[str]], shard_docs: int, k: int, seed: int
) -> None:
    # Few words: identical documents and equal scores (ties at the cut) are common.
    texts = [" ".join(d) for d in docs]
    doc_ids = [f"d{i:02d}" for i in np.random.default_rng(seed).permutation(len(docs)).tolist()]
    pairs = [(str(n), " ".join(q)) for n, q in enumerate(queries)]
    one = BM25Index(doc_ids, texts).search(pairs, k)
    assert BM25Index(doc_ids, texts, shard_docs=shard_docs).search(pairs, k) == one
    assert BM25Index(doc_ids, lambda: iter(texts), shard_docs=shard_docs).search(pairs, k) == one
    oracle = BM25Okapi(docs, k1=1.5, b=0.75, epsilon=0.25)
    for n, query in enumerate(queries):
        theirs = oracle.get_scores(query)
        # Two stable sorts: doc_id descending, then score descending.
        by_id = sorted((i for i in range(len(docs)) if theirs[i] > 0), key=lambda i: doc_ids[i], reverse=True)
        expected = sorted(by_id, key=lambda i: -theirs[i])[:k]
        assert [(d.doc_id, d.score) for d in one[str(n)]] == [(doc_ids[i], float(theirs[i])) for i in expected]


def test_build_pool_searches_a_corpus_beyond_one_shard_shard_by_shard(monkeypatch: pytest.MonkeyPatch) -> None:
    import pooling.bm25
    from pooling.retrieve import retrieve

    doc_ids, texts, queries = _real_corpus()
    pairs = [(str(n), q) for n, q in enumerate(queries)]
    expected = BM25Index(doc_ids, texts).ranked_ids(pairs, 10)
    readings = []

    def source() -> Iterator[str]:
        readings.append(1)
        return iter(texts)

    monkeypatch.setattr(pooling.bm25, "SHARD_DOCS", 17)
    found = retrieve(pairs, doc_ids, doc_ids, source, lambda ps: [texts[p] for p in ps], bm25_depth=10, dense_depth=0, progress=False)
    assert found.rankings["bm25"] == expected
    assert len(readings) == 2  # the collection statistics, then the shards one by one


def test_texts_that_change_between_readings_are_refused() -> None:
    readings = iter([["red apple", "green pear", "blue"], ["red apple", "green pear", "blue sky"]])
    index = BM25Index(["a", "b", "c"], lambda: next(readings), shard_docs=2)
    with pytest.raises(PoolingError, match="changed"):
        index.search([("q", "red")], 5)


def test_tokenizer_is_casefolded_word_runs() -> None:
    assert tokenize("Straße: dict.get(key, Default)  x_1") == ["strasse", "dict", "get", "key", "default", "x_1"]
