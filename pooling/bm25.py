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

import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.lib.stride_tricks import as_strided
from tqdm.auto import tqdm

from pooling import PoolingError
from pooling.tokenize import Interner, tokenize
from pooling.types import ScoredDoc

K1 = 1.5
B = 0.75
EPSILON = 0.25
#: Documents per lane group in :func:`top_k_rows`.
GROUP = 64
_TINY = float(np.nextafter(0.0, 1.0))


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


def top_k_rows(matrix: np.ndarray, k: int, ties: np.ndarray, *, group: int = GROUP) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """:func:`top_k` of every row of ``matrix`` at once, without a pass per row in Python.

    The corpus is cut into ``group`` lanes of ``n // group`` documents; the element-wise
    maximum over the lanes (one vectorised pass) gives, per column, the best score among
    ``group`` documents. The k-th best of those column maxima is a lower bound of the row's
    k-th best score (k distinct documents reach it), so only the columns at or above it, and
    within them the documents at or above it, can be in the top k. Those few candidates are
    ordered by score descending, then ``ties`` descending, as :func:`top_k` orders them, so
    the result is the same, ties at the cut included.

    Returns:
        ``(indices, scores)``: one array per row, best first, at most ``k`` long.

    >>> m = np.array([[0.0, 2.0, 1.0, 2.0], [0.5, 0.0, 0.0, 0.0]])
    >>> [i.tolist() for i in top_k_rows(m, 2, np.arange(4), group=2)[0]]
    [[3, 1], [0]]
    """
    rows_n, n = matrix.shape
    width = n // group
    if k <= 0 or rows_n == 0:
        return [np.empty(0, np.int64)] * rows_n, [np.empty(0, matrix.dtype)] * rows_n
    if width >= k:
        row_stride, col_stride = matrix.strides
        lanes = as_strided(matrix, (rows_n, group, width), (row_stride, col_stride * width, col_stride), writeable=False)
        column_max = lanes.max(axis=1)
        bound = np.maximum(np.partition(column_max, width - k, axis=1)[:, width - k], _TINY)
        rows, cols = np.nonzero(column_max >= bound[:, None])
        blocks = lanes[rows, :, cols]  # (columns kept, group)
        hit, lane = np.nonzero(blocks >= bound[rows][:, None])
        row, index, score = rows[hit], lane * width + cols[hit], blocks[hit, lane]
        done = group * width
    else:
        bound = np.full(rows_n, _TINY)
        row, index, score = np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, matrix.dtype)
        done = 0
    if done < n:  # the documents after the last whole lane
        tail_row, tail_col = np.nonzero(matrix[:, done:] >= bound[:, None])
        row = np.concatenate([row, tail_row])
        index = np.concatenate([index, tail_col + done])
        score = np.concatenate([score, matrix[tail_row, tail_col + done]])
    order = np.lexsort((-ties[index], -score, row))
    row, index, score = row[order], index[order], score[order]
    starts = np.searchsorted(row, np.arange(rows_n + 1))
    kept = np.arange(row.shape[0]) - starts[row] < k
    cuts = np.minimum(np.diff(starts), k).cumsum()[:-1]
    return np.split(index[kept], cuts), np.split(score[kept], cuts)


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
        # A batch of queries is scored at once (rank-bm25-rs spreads it over the cores) and
        # its top k selected by as many threads (NumPy releases the GIL), so selection does
        # not leave the cores idle. A small score matrix (about 16 MB) stays in cache and
        # reuses its memory; a large one costs more in page faults than it saves in calls.
        threads = max(1, min(os.cpu_count() or 1, 8))
        batch = max(threads, min(8 * threads, (16 << 20) // (8 * len(self.doc_ids))))
        with (
            ThreadPoolExecutor(threads) as pool,
            tqdm(total=len(queries), desc="BM25 search", unit="query", disable=not progress) as bar,
        ):
            for start in range(0, len(queries), batch):
                chunk = queries[start : start + batch]
                matrix = self._model.get_scores_many([tokenize(text) for _, text in chunk])
                parts = np.array_split(np.arange(len(chunk)), min(threads, len(chunk)))
                found = pool.map(lambda rows: top_k_rows(matrix[rows[0] : rows[-1] + 1], k, self.ties), parts)
                ids = iter(query_id for query_id, _ in chunk)
                for part_best, part_scores in found:
                    for query_best, query_scores in zip(part_best, part_scores):
                        yield next(ids), query_best, query_scores
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
