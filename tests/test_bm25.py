"""BM25: scores identical to rank-bm25's BM25Okapi on real text; a deterministic top-k."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from pooling.bm25 import BM25Index, top_k, top_k_rows
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
    # Query words that are rare, common (negative IDF, floored by epsilon), repeated, absent.
    extra = ["the the the", "is a of in", "zzzunknownzzz", "dict dict get default"]
    for query in queries + extra:
        ours = index.scores(query)
        theirs = oracle.get_scores(tokenize(query))
        assert ours.dtype == np.float64
        assert np.array_equal(ours, theirs), query


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


@given(
    shape=st.tuples(st.integers(1, 6), st.integers(0, 90)),
    k=st.integers(min_value=0, max_value=14),
    group=st.integers(min_value=1, max_value=7),
    seed=st.integers(min_value=0, max_value=1000),
)
def test_top_k_rows_equals_top_k_of_each_row(shape: tuple[int, int], k: int, group: int, seed: int) -> None:
    # Few distinct values: ties at the cut, zeros and negatives (never retrieved) are common.
    rng = np.random.default_rng(seed)
    matrix = rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, -0.25], size=shape)
    ties = rng.permutation(shape[1])
    best, scores = top_k_rows(matrix, k, ties, group=group)
    assert len(best) == len(scores) == shape[0]
    for row, got, got_scores in zip(matrix, best, scores):
        expected = top_k(row, k, ties)
        assert got.tolist() == expected.tolist()
        assert got_scores.tolist() == row[expected].tolist()


def test_batched_search_equals_one_query_at_a_time(real: tuple[BM25Index, BM25Okapi, list[str]]) -> None:
    # A depth of at most n // 64 takes the lane path of top_k_rows (the demo corpus: 19).
    index, oracle, queries = real
    depth = max(1, min(20, len(index) // 64))
    hits = index.search([(str(n), q) for n, q in enumerate(queries)], depth)
    for n, query in enumerate(queries):
        theirs = oracle.get_scores(tokenize(query))
        expected = top_k(theirs, depth, index.ties)
        assert [d.doc_id for d in hits[str(n)]] == [index.doc_ids[i] for i in expected.tolist()]
        assert [d.score for d in hits[str(n)]] == theirs[expected].tolist()


def test_tokenizer_is_casefolded_word_runs() -> None:
    assert tokenize("Straße: dict.get(key, Default)  x_1") == ["strasse", "dict", "get", "key", "default", "x_1"]
