"""BM25 retrieval with rank-bm25's BM25Okapi scoring, from rank-bm25-rs's compiled core.

Score of document D for query Q (Robertson et al., 1994; rank-bm25's ``BM25Okapi``)::

    score(D, Q) = sum over q in Q of  IDF(q) * f(q, D) * (k1 + 1)
                                      / (f(q, D) + k1 * (1 - b + b * |D| / avgdl))
    IDF(q) = ln((N - n(q) + 0.5) / (n(q) + 0.5)),  and where that is negative,
             epsilon * (mean IDF over the vocabulary)

with k1 = 1.5, b = 0.75, epsilon = 0.25, terms from :func:`pooling.tokenize.tokenize`. Each
occurrence of a term in the query counts. rank-bm25-rs gives bit-identical scores to
rank-bm25 (``tests/test_bm25.py`` checks this on real text) at a few thousand queries/s over
100k chunks; ``bench/pooling.py`` compares it with rank-bm25 and bm25s.

Only documents with a positive score are retrieved (a document sharing no term with the query
scores 0). Ranking is score descending,
ties broken by doc_id descending, as trec_eval ranks runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
from tqdm.auto import tqdm

from pooling import PoolingError
from pooling.tokenize import Interner, tokenize
from pooling.types import ScoredDoc

K1 = 1.5
B = 0.75
EPSILON = 0.25


def tie_ranks(doc_ids: Sequence[str]) -> np.ndarray:
    """Each document's place in doc_id order (0 = smallest), for breaking score ties."""
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)
    ranks = np.empty(len(doc_ids), dtype=np.int64)
    ranks[np.asarray(order, dtype=np.int64)] = np.arange(len(doc_ids), dtype=np.int64)
    return ranks


def top_k(scores: np.ndarray, k: int, ties: np.ndarray) -> np.ndarray:
    """Indices of the ``k`` best positive scores: score descending, then ``ties`` descending.

    Every document tied with the k-th score is considered, so the cut is deterministic.
    Only the (usually few) positive scores are partitioned, which is what makes a top-50
    over 100k chunks cost less than scoring them.

    >>> top_k(np.array([0.0, 2.0, 1.0, 2.0]), 2, np.arange(4)).tolist()
    [3, 1]
    """
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    candidates = np.flatnonzero(scores > 0)
    if candidates.shape[0] > k:
        found = scores[candidates]
        cut = found.shape[0] - k
        kth = found[np.argpartition(found, cut)[cut:]].min()
        candidates = candidates[found >= kth]
    order = np.lexsort((-ties[candidates], -scores[candidates]))
    return candidates[order[:k]]


class BM25Index:
    """A BM25Okapi index over a fixed list of documents.

    Args:
        doc_ids: the documents' ids, in index order.
        texts: their texts (title and body as they should be matched), same order.
        progress: show a progress bar while tokenising.
    """

    def __init__(self, doc_ids: Sequence[str], texts: Iterable[str], *, progress: bool = False) -> None:
        from rank_bm25_rs import BM25Okapi

        self.doc_ids = list(doc_ids)
        intern = Interner()
        corpus = [intern(text) for text in tqdm(texts, total=len(self.doc_ids), desc="BM25 index", unit="doc", disable=not progress)]
        if len(corpus) != len(self.doc_ids):
            raise PoolingError(f"{len(self.doc_ids)} doc_ids but {len(corpus)} texts")
        self.ties = tie_ranks(self.doc_ids)
        # rank-bm25 cannot index an empty corpus (its average length divides by zero).
        self._model = BM25Okapi(corpus, k1=K1, b=B, epsilon=EPSILON) if corpus else None

    def __len__(self) -> int:
        return len(self.doc_ids)

    def scores(self, text: str) -> np.ndarray:
        """BM25 score of every document for the query ``text`` (float64, index order)."""
        if self._model is None:
            return np.zeros(0)
        return self._model.get_scores(tokenize(text))

    def top(self, queries: Sequence[tuple[str, str]], k: int, *, progress: bool = False) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """Yield ``(query_id, indices, scores)`` of each query's top ``k``, best first."""
        if self._model is None:
            yield from ((query_id, np.empty(0, np.int64), np.empty(0)) for query_id, _ in queries)
            return
        # Score a batch of queries at once (rank-bm25-rs spreads it over the cores), with
        # the batch's score matrix kept near 64 MB.
        batch = max(1, (64 << 20) // (8 * len(self.doc_ids)))
        with tqdm(total=len(queries), desc="BM25 search", unit="query", disable=not progress) as bar:
            for start in range(0, len(queries), batch):
                chunk = queries[start : start + batch]
                matrix = self._model.get_scores_many([tokenize(text) for _, text in chunk])
                for (query_id, _), scores in zip(chunk, matrix):
                    best = top_k(scores, k, self.ties)
                    yield query_id, best, scores[best]
                bar.update(len(chunk))

    def search(self, queries: Sequence[tuple[str, str]], k: int, *, progress: bool = False) -> dict[str, list[ScoredDoc]]:
        """The top ``k`` documents of each ``(query_id, text)``, best first."""
        return {
            query_id: [
                ScoredDoc(query_id, self.doc_ids[i], rank, score)
                for rank, (i, score) in enumerate(zip(best.tolist(), scores.tolist()), start=1)
            ]
            for query_id, best, scores in self.top(queries, k, progress=progress)
        }

    def ranked_ids(self, queries: Sequence[tuple[str, str]], k: int, *, progress: bool = False) -> dict[str, list[str]]:
        """Like :meth:`search`, doc_ids only: what the pool needs."""
        ids = self.doc_ids
        return {query_id: [ids[i] for i in best.tolist()] for query_id, best, _ in self.top(queries, k, progress=progress)}
