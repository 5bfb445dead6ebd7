"""BM25 retrieval with rank-bm25's BM25Okapi scores, from an inverted index of term weights.

Score of document D for query Q (Robertson et al., 1994; rank-bm25's ``BM25Okapi``)::

    score(D, Q) = sum over q in Q of  w(q, D)
    w(q, D)     = IDF(q) * f(q, D) * (k1 + 1) / (f(q, D) + k1 * (1 - b + b * |D| / avgdl))
    IDF(q)      = ln((N - n(q) + 0.5) / (n(q) + 0.5)),  and where that is negative,
                  epsilon * (mean IDF over the vocabulary)

with k1 = 1.5, b = 0.75, epsilon = 0.25, terms from :func:`pooling.tokenize.tokenize`. Each
occurrence of a term in the query counts.

The index stores, per term, the documents holding it (its postings) and each one's weight
``w(q, D)``, computed once with the same floating-point operations, in the same order, as
rank-bm25 computes them. A query adds its terms' weights into the documents of their postings,
term after term in query order (a sparse product of query rows and the terms x documents
weights, done by scipy), so each document's sum is built exactly as rank-bm25 builds it
(rank-bm25 also adds 0.0 for every document lacking the term, which changes no sum): the
scores are bit-identical (``tests/test_bm25.py`` checks them against rank-bm25 on real text,
repeated and negative-IDF query terms included), and a query costs the length of its terms'
postings instead of the size of the corpus. The top k of each query is then selected among
the documents it reached. ``bench/pooling.py`` compares it with rank-bm25, rank-bm25-rs and
bm25s.

Sharding. The statistics that make a document's score depend on the rest of the corpus (the
number of documents N, the average length avgdl, the document frequencies n(q) and hence the
IDFs with their epsilon floor) are computed over the whole corpus first; each shard (a run of
consecutive documents) then stores its own postings with weights from those global statistics,
so a document scores the same in its shard as in one index. Each shard's top k is exact, and
the top k of their union is the top k of one index, ties at the cut included. Given a
re-readable text source (a callable) and more documents than a shard holds, the index reads
the texts once for the statistics and, at each search, once more, building one shard at a
time and dropping it after use: memory is then bounded by one shard, not by the corpus.

Only documents with a positive score are retrieved (a document sharing no term with the query
scores 0). Ranking is score descending, ties broken by doc_id descending, as trec_eval ranks
runs.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from pooling import PoolingError
from pooling.tokenize import tokenize
from pooling.types import ScoredDoc

K1 = 1.5
B = 0.75
EPSILON = 0.25
#: Documents per shard: larger corpora given as a re-readable source are searched one shard
#: at a time (a shard of 200,000 chunks of 40-160 words takes about 0.6 GB while it is built).
SHARD_DOCS = 200_000
#: Documents tokenised together before their terms are counted in one vectorised pass.
_BLOCK = 8192
#: Queries scored together in :func:`_search_shard`.
_QUERIES = 256
_WORD = re.compile(r"\w+")

Texts = Iterable[str] | Callable[[], Iterable[str]]


def tie_ranks(doc_ids: Sequence[str]) -> np.ndarray:
    """Each document's place in doc_id order (0 = smallest), for breaking score ties."""
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)
    ranks = np.empty(len(doc_ids), dtype=np.int64)
    ranks[np.asarray(order, dtype=np.int64)] = np.arange(len(doc_ids), dtype=np.int64)
    return ranks


def top_k(scores: np.ndarray, k: int, ties: np.ndarray) -> np.ndarray:
    """Indices of the ``k`` best positive scores: score descending, then ``ties`` descending.

    Every document tied with the k-th score is considered, so the cut is deterministic.

    >>> top_k(np.array([0.0, 2.0, 1.0, 2.0]), 2, np.arange(4)).tolist()
    [3, 1]
    """
    candidates = np.flatnonzero(scores > 0)
    best, _ = _best(candidates, scores[candidates], k, ties)
    return best


def _best(docs: np.ndarray, scores: np.ndarray, k: int, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of distinct ``docs`` with positive ``scores``, as :func:`top_k` orders them."""
    if k <= 0:
        return docs[:0], scores[:0]
    keep = scores > 0
    if not keep.all():
        docs, scores = docs[keep], scores[keep]
    if docs.shape[0] > k:
        cut = docs.shape[0] - k
        kth = scores[np.argpartition(scores, cut)[cut:]].min()
        keep = scores >= kth
        docs, scores = docs[keep], scores[keep]
    order = np.lexsort((-ties[docs], -scores))[:k]
    return docs[order], scores[order]


@dataclass(frozen=True, slots=True)
class CollectionStats:
    """What a BM25 score takes from the whole corpus.

    Attributes:
        terms: term -> term id, in order of first appearance in the corpus.
        idf: each term's IDF (after the epsilon floor), by term id.
        documents: N, the number of documents.
        avgdl: their average length in tokens.
        lengths: each document's length in tokens, corpus order.
    """

    terms: dict[str, int]
    idf: np.ndarray
    documents: int
    avgdl: float
    lengths: np.ndarray

    def query_terms(self, text: str) -> list[int]:
        """Term ids of the query's tokens in query order, repeats kept, unknown terms left out."""
        get = self.terms.get
        return [t for t in map(get, tokenize(text)) if t is not None]


def _idf(df: np.ndarray, n: int) -> np.ndarray:
    """IDFs exactly as rank-bm25 computes them (same functions, same summation order).

    ``ln(N - n + 0.5) - ln(n + 0.5)`` per term (document frequency n, by term id); a negative
    one becomes epsilon times the mean over the vocabulary (Robertson et al., 1994; rank-bm25).
    With N = 3: n = 1 gives ln 2.5 - ln 1.5 = 0.5108; n = 2 gives -0.5108, floored to
    0.25 * (0.5108 - 0.5108) / 2 = 0.

    >>> _idf(np.array([1, 2]), 3).round(4).tolist()
    [0.5108, 0.0]
    """
    log = math.log
    values = [log(n - f + 0.5) - log(f + 0.5) for f in df.tolist()]
    total = 0.0
    for value in values:  # sequential, as rank-bm25 sums them (not sum(): it may compensate)
        total += value
    eps = EPSILON * (total / len(values))
    return np.array([eps if value < 0 else value for value in values], dtype=np.float64)


def _weights(term: np.ndarray, doc: np.ndarray, tf: np.ndarray, lengths: np.ndarray, stats: CollectionStats) -> np.ndarray:
    """w(q, D) of each posting, with rank-bm25's operations in rank-bm25's order."""
    if term.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    norm = K1 * (1 - B + B * lengths / stats.avgdl)  # as rank-bm25 writes it, per document
    return stats.idf[term] * (tf * (K1 + 1) / (tf + norm[doc]))


class _Tokens:
    """Token ids of a stream of texts, block by block, growing one shared vocabulary."""

    def __init__(self, terms: dict[str, int]) -> None:
        self.terms = terms

    def blocks(self, texts: Iterator[str], limit: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(lengths, ids)`` of up to ``limit`` texts, in blocks of :data:`_BLOCK`."""
        terms, findall = self.terms, _WORD.findall
        setdefault = terms.setdefault
        left = limit
        while left > 0:
            ids: list[int] = []
            lengths: list[int] = []
            for text in texts:
                tokens = findall(text.casefold())
                ids += [setdefault(t, len(terms)) for t in tokens]
                lengths.append(len(tokens))
                if len(lengths) == min(_BLOCK, left):
                    break
            if not lengths:
                return
            left -= len(lengths)
            yield np.array(lengths, dtype=np.int64), np.array(ids, dtype=np.int64)


def _pairs(lengths: np.ndarray, ids: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct ``(term, doc)`` pairs of a block, sorted by term then doc, and their counts."""
    docs = np.repeat(np.arange(lengths.shape[0], dtype=np.int64), lengths)
    keys, counts = np.unique(ids * width + docs, return_counts=True)
    term = keys // width
    return term, keys - term * width, counts


@dataclass(frozen=True, slots=True)
class _Shard:
    """Postings of the documents ``start`` to ``start + size``.

    ``matrix`` is terms x documents (scipy CSR): row t lists the shard-local documents
    holding term t (its postings, ascending) and their weights w(t, D) (float64).
    """

    start: int
    size: int
    matrix: object


def _build_shard(start: int, blocks: Iterable[tuple[np.ndarray, np.ndarray]], stats: CollectionStats) -> _Shard:
    """One shard from its documents' token ids (block by block), weighted with the global ``stats``.

    Each block is reduced to its (term, document, frequency) triples at once, so a shard never
    holds its token ids whole; the triples are then ordered by term (blocks are in document
    order and each is sorted by term, then document: a stable sort keeps documents ascending).
    """
    from scipy.sparse import csr_array

    terms, docs, tfs = [np.zeros(0, np.int32)], [np.zeros(0, np.int32)], [np.zeros(0, np.int32)]
    size = 0
    for lengths, ids in blocks:
        term, doc, tf = _pairs(lengths, ids, lengths.shape[0])
        terms.append(term.astype(np.int32))
        docs.append((doc + size).astype(np.int32))
        tfs.append(tf.astype(np.int32))
        size += lengths.shape[0]
    term = np.concatenate(terms)
    del terms
    order = np.argsort(term, kind="stable")
    term, doc, tf = term[order], np.concatenate(docs)[order], np.concatenate(tfs)[order]
    del docs, tfs, order
    weights = _weights(term, doc, tf, stats.lengths[start : start + size], stats)
    index = np.int32 if max(term.shape[0], size, len(stats.terms)) < 2**31 - 1 else np.int64
    indptr = np.zeros(len(stats.terms) + 1, dtype=index)
    np.cumsum(np.bincount(term, minlength=len(stats.terms)), out=indptr[1:])
    matrix = csr_array((weights, doc.astype(index, copy=False), indptr), shape=(len(stats.terms), size))
    return _Shard(start, size, matrix)


def _scores(shard: _Shard, queries: Sequence[list[int]]) -> object:
    """Queries x shard documents: each query's scores (CSR; documents it does not reach left out).

    A query is a row of ones, one per term occurrence in query order, repeats kept (so not
    summed into one entry); the product with the shard's terms x documents weights is
    scipy's SMMP (Bank & Douglas, 1993), which for each row walks the row's entries in
    stored order and adds each term's weights into a dense accumulator: per document, the
    weights are summed term after term in query order, from 0.0, as rank-bm25 sums them
    (``1.0 * w`` is exactly ``w``), so every score is bit-identical to rank-bm25's.
    """
    from scipy.sparse import csr_array

    index = shard.matrix.indptr.dtype
    indptr = np.zeros(len(queries) + 1, dtype=index)
    np.cumsum([len(q) for q in queries], out=indptr[1:])
    terms = np.fromiter(itertools.chain.from_iterable(queries), dtype=index, count=int(indptr[-1]))
    matrix = shard.matrix
    rows = csr_array((np.ones(terms.shape[0]), terms, indptr), shape=(len(queries), matrix.shape[0]))
    return rows @ matrix


def _search_shard(
    shard: _Shard, queries: Sequence[list[int]], k: int, ties: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Each query's top ``k`` in the shard: global document indices and scores.

    Queries go in batches of :data:`_QUERIES`, on as many threads as there are cores (the
    sparse product and NumPy's array passes release the GIL).
    """
    shard_ties = ties[shard.start : shard.start + shard.size]
    batches = range(0, len(queries), _QUERIES)

    def run(first: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return _search_batch(shard, queries[first : first + _QUERIES], k, shard_ties)

    threads = max(1, min(os.cpu_count() or 1, 8, len(batches)))
    with ThreadPoolExecutor(threads) as pool:
        for found in pool.map(run, batches):
            for best, scores in found:
                yield best + shard.start, scores


def _search_batch(shard: _Shard, queries: Sequence[list[int]], k: int, ties: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Top ``k`` (shard-local indices, scores) of each query of a batch.

    The scores come from :func:`_scores`, one row per query holding only the documents it
    reached. In a row longer than ``k``, the k-th best score is found by partitioning, and
    every document at or above it is a candidate (so ties at the cut are all there). The
    candidates of all rows are ordered at once by row, score descending, then ``ties``
    descending, and each row is cut at ``k``.
    """
    empty = [(np.empty(0, np.int64), np.empty(0, np.float64))] * len(queries)
    if k <= 0 or shard.size == 0:
        return empty
    found = _scores(shard, queries)
    docs, scores = found.indices, found.data
    indptr = found.indptr.tolist()
    cuts = [-np.inf] * len(queries)
    for row, (start, end) in enumerate(zip(indptr, indptr[1:])):
        if end - start > k:
            part = scores[start:end].copy()
            part.partition(end - start - k)
            cuts[row] = part[end - start - k]
    rows = np.repeat(np.arange(len(queries)), np.diff(found.indptr))
    where = scores >= np.repeat(np.array(cuts), np.diff(found.indptr))
    rows, docs, scores = rows[where], docs[where].astype(np.int64), scores[where]
    positive = scores > 0  # only a term of negative IDF brings a score to 0 or below
    order = np.lexsort((-ties[docs], -scores, ~positive, rows))
    rows, docs, scores, positive = rows[order], docs[order], scores[order], positive[order]
    starts = np.searchsorted(rows, np.arange(len(queries) + 1))
    kept = (np.arange(rows.shape[0]) - starts[rows] < k) & positive
    rows, docs, scores = rows[kept], docs[kept], scores[kept]
    bounds = np.searchsorted(rows, np.arange(len(queries) + 1)).tolist()
    return [(docs[a:b], scores[a:b]) for a, b in zip(bounds, bounds[1:])]


class BM25Index:
    """A BM25Okapi index over a fixed list of documents, in one shard or several.

    Args:
        doc_ids: the documents' ids, in index order.
        texts: their texts (title and body as they should be matched), same order; or a
            function returning a fresh stream of them, which lets a corpus larger than
            ``shard_docs`` be searched one shard at a time, in bounded memory.
        progress: show progress bars while indexing and searching.
        shard_docs: documents per shard (default :data:`SHARD_DOCS`). Shards built from a
            plain iterable are all kept in memory; from a function, each is built when a
            search needs it and dropped after.
    """

    def __init__(self, doc_ids: Sequence[str], texts: Texts, *, progress: bool = False, shard_docs: int | None = None) -> None:
        self.doc_ids = list(doc_ids)
        self.shard_docs = max(1, shard_docs or SHARD_DOCS)
        self.progress = progress
        self.ties = tie_ranks(self.doc_ids)
        streamed = callable(texts) and len(self.doc_ids) > self.shard_docs
        self._texts = texts if streamed else None
        source = texts() if callable(texts) else texts
        blocks, self.stats = self._statistics(source, keep=not streamed)
        self._shards: list[_Shard] = []
        if not streamed:
            for start in range(0, len(self.doc_ids), self.shard_docs):
                mine = self._take(blocks, self.shard_docs)
                self._shards.append(_build_shard(start, mine, self.stats))

    def _statistics(self, texts: Iterable[str], *, keep: bool) -> tuple[list[tuple[np.ndarray, np.ndarray]], CollectionStats]:
        """Read every text once: N, lengths, document frequencies (and the token ids if ``keep``)."""
        terms: dict[str, int] = {}
        df = np.zeros(0, dtype=np.int64)
        kept, lengths = [], []
        stream = iter(tqdm(texts, total=len(self.doc_ids), desc="BM25 index", unit="doc", disable=not self.progress))
        for block in _Tokens(terms).blocks(stream, 1 << 62):
            term, _, _ = _pairs(*block, block[0].shape[0])
            df = np.concatenate([df, np.zeros(len(terms) - df.shape[0], np.int64)])
            df += np.bincount(term, minlength=len(terms))
            lengths.append(block[0])
            if keep:
                kept.append((block[0], block[1].astype(np.int32)))
        n = sum(len(part) for part in lengths)
        if n != len(self.doc_ids):
            raise PoolingError(f"{len(self.doc_ids)} doc_ids but {n} texts")
        all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        avgdl = int(all_lengths.sum()) / n if n else 0.0
        idf = _idf(df, n) if terms else np.zeros(0)
        return kept, CollectionStats(terms, idf, n, avgdl, all_lengths)

    @staticmethod
    def _take(blocks: list[tuple[np.ndarray, np.ndarray]], count: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Remove and return the first ``count`` documents' blocks (splitting one if needed)."""
        taken: list[tuple[np.ndarray, np.ndarray]] = []
        while blocks and count > 0:
            lengths, ids = blocks.pop(0)
            if lengths.shape[0] > count:
                cut = int(lengths[:count].sum())
                blocks.insert(0, (lengths[count:], ids[cut:]))
                lengths, ids = lengths[:count], ids[:cut]
            taken.append((lengths, ids.astype(np.int64)))
            count -= lengths.shape[0]
        return taken

    def _each_shard(self) -> Iterator[_Shard]:
        """The shards in corpus order: kept ones, or built one at a time from the texts."""
        if self._texts is None:
            yield from self._shards
            return
        stream = iter(self._texts())
        tokens = _Tokens(dict(self.stats.terms))
        for start in range(0, len(self.doc_ids), self.shard_docs):
            limit = min(self.shard_docs, len(self.doc_ids) - start)
            shard = _build_shard(start, self._same_terms(tokens, tokens.blocks(stream, limit)), self.stats)
            if shard.size != limit:
                raise PoolingError("the texts changed between two readings")
            yield shard

    def _same_terms(self, tokens: _Tokens, blocks: Iterator[tuple[np.ndarray, np.ndarray]]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``blocks``, refusing a term the first reading did not have."""
        for block in blocks:
            if len(tokens.terms) != len(self.stats.terms):
                raise PoolingError("the texts changed between two readings")
            yield block

    def __len__(self) -> int:
        return len(self.doc_ids)

    def scores(self, text: str) -> np.ndarray:
        """BM25 score of every document for the query ``text`` (float64, index order)."""
        scores = np.zeros(len(self.doc_ids))
        term_ids = self.stats.query_terms(text)
        for shard in self._each_shard():
            found = _scores(shard, [term_ids])
            scores[shard.start + found.indices] = found.data
        return scores

    def top(self, queries: Sequence[tuple[str, str]], k: int, *, progress: bool = False) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """Yield ``(query_id, indices, scores)`` of each query's top ``k``, best first."""
        term_ids = [self.stats.query_terms(text) for _, text in queries]
        if len(self._shards) == 1 and self._texts is None:  # one shard: nothing to merge
            found = _search_shard(self._shards[0], term_ids, k, self.ties)
            bar = tqdm(found, total=len(queries), desc="BM25 search", unit="query", disable=not progress)
            for (best, scores), (query_id, _) in zip(bar, queries):  # the bar first, so it ends at 100%
                yield query_id, best, scores
            return
        # Each shard's exact top k, then per query the top k of their union, which is one
        # index's top k (the order is total: score, then the doc_id's rank).
        found: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in queries]
        with tqdm(total=len(self.doc_ids), desc="BM25 search", unit="doc", disable=not progress) as bar:
            for shard in self._each_shard():
                for n, (best, scores) in enumerate(_search_shard(shard, term_ids, k, self.ties)):
                    if best.shape[0]:
                        found[n].append((best, scores))
                bar.update(shard.size)
        for (query_id, _), parts in zip(queries, found):
            if len(parts) > 1:
                yield query_id, *_best(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), k, self.ties)
            else:
                yield query_id, *(parts[0] if parts else (np.empty(0, np.int64), np.empty(0, np.float64)))

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
