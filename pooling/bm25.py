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
term after term in query order, so each document's sum is built exactly as rank-bm25 builds it
(rank-bm25 also adds 0.0 for every document lacking the term, which changes no sum): the
scores are bit-identical (``tests/test_bm25.py`` checks them against rank-bm25 on real text,
repeated and negative-IDF query terms included), and a query costs the length of its terms'
postings instead of the size of the corpus. ``bench/pooling.py`` compares it with rank-bm25,
rank-bm25-rs and bm25s.

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

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
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
#: at a time (about 1 GB per shard of chunks of 40-160 words while it is built).
SHARD_DOCS = 500_000
#: Documents tokenised together before their terms are counted in one vectorised pass.
_BLOCK = 8192
#: Bytes of score rows a batch of queries shares in :func:`_search_shard`.
_ACC_BYTES = 16 << 20
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
    """IDFs exactly as rank-bm25 computes them (same functions, same summation order)."""
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
    """Postings of the documents ``start`` to ``start + size``: CSR by term id."""

    start: int
    size: int
    indptr: np.ndarray  # term id -> first posting (one more entry than terms)
    docs: np.ndarray  # local document index of each posting (int32)
    weights: np.ndarray  # w(q, D) of each posting (float64)


def _build_shard(start: int, blocks: list[tuple[np.ndarray, np.ndarray]], stats: CollectionStats) -> _Shard:
    """One shard from its documents' token ids, weighted with the global ``stats``."""
    lengths = np.concatenate([b[0] for b in blocks]) if blocks else np.zeros(0, np.int64)
    ids = np.concatenate([b[1] for b in blocks]) if blocks else np.zeros(0, np.int64)
    del blocks[:]  # the caller's list: its arrays are freed as soon as they are joined
    size = lengths.shape[0]
    term, doc, tf = _pairs(lengths, ids, max(size, 1))
    del ids
    weights = _weights(term, doc, tf, stats.lengths[start : start + size], stats)
    indptr = np.zeros(len(stats.terms) + 1, dtype=np.int64)
    np.cumsum(np.bincount(term, minlength=len(stats.terms)), out=indptr[1:])
    return _Shard(start, size, indptr, doc.astype(np.int32), weights)


def _search_shard(
    shard: _Shard, queries: Sequence[list[int]], k: int, ties: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Each query's top ``k`` in the shard: global document indices and scores.

    Queries go in batches whose score rows (one per query, as long as the shard) fill about
    16 MB, reused from batch to batch: only the entries a query's postings touch are written,
    read back and cleared.
    """
    batch = max(1, min(64, _ACC_BYTES // (8 * max(shard.size, 1))))
    acc = np.zeros(batch * shard.size, dtype=np.float64)
    shard_ties = ties[shard.start : shard.start + shard.size]
    for first in range(0, len(queries), batch):
        found = _search_batch(shard, queries[first : first + batch], k, shard_ties, acc)
        for best, scores in found:
            yield best + shard.start, scores


def _postings_of(shard: _Shard, queries: Sequence[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every query term's postings, queries one after the other, terms in query order.

    Returns ``(positions, rows, distinct, terms)``: each posting's position in the shard's
    arrays, its query's row in the batch, whether its term occurs for the first time in the
    query (the candidates), and each query's number of distinct terms.
    """
    terms, rows, new, counts = [], [], [], []
    for row, term_ids in enumerate(queries):
        seen: set[int] = set()
        for term in term_ids:
            terms.append(term)
            rows.append(row)
            new.append(term not in seen)
            seen.add(term)
        counts.append(len(seen))
    term = np.array(terms, dtype=np.int64)
    starts, ends = shard.indptr[term], shard.indptr[term + 1]
    lengths = ends - starts
    total = int(lengths.sum())
    offsets = np.cumsum(lengths) - lengths
    positions = np.repeat(starts - offsets, lengths) + np.arange(total, dtype=np.int64)
    return positions, np.repeat(np.array(rows, np.int64), lengths), np.repeat(np.array(new, bool), lengths), np.array(counts, np.int64)


def _search_batch(
    shard: _Shard, queries: Sequence[list[int]], k: int, ties: np.ndarray, acc: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Top ``k`` (shard-local indices, scores) of each query of a batch, all in a few array passes.

    1. Every (query, term occurrence)'s weights are added into the query's score row with
       ``np.add.at``, which adds in input order: per document, term after term in query
       order, the order of rank-bm25's sum, so the scores are bit-identical.
    2. The candidates are the postings of each query's distinct terms (a document appears
       at most once per distinct term). A histogram of their scores per query (positive
       float64 bit patterns sort as the floats do) gives each query a bucket above which at
       least k x (distinct terms) candidates lie, hence at least k documents: every
       document of the top k is at or above it.
    3. Those few are ordered by score descending, then ``ties`` descending (a document's
       copies side by side), and deduplicated.
    """
    n = shard.size
    empty = [(np.empty(0, np.int64), np.empty(0, np.float64))] * len(queries)
    if k <= 0 or n == 0:
        return empty
    positions, rows, distinct, terms = _postings_of(shard, queries)
    keys = rows * n + shard.docs[positions]
    np.add.at(acc, keys, shard.weights[positions])
    keys, rows = keys[distinct], rows[distinct]
    scores = acc[keys]
    acc[keys] = 0.0
    positive = scores > 0
    keys, rows, scores = keys[positive], rows[positive], scores[positive]
    if keys.shape[0] == 0:
        return empty
    keep = _above_cut(scores, rows, k * terms)
    keys, rows, scores = keys[keep], rows[keep], scores[keep]
    docs = keys - rows * n
    order = np.lexsort((-ties[docs], -scores, rows))  # a document's copies end up side by side
    rows, docs, scores = rows[order], docs[order], scores[order]
    single = np.empty(rows.shape[0], dtype=bool)
    single[0] = True
    np.not_equal(docs[1:], docs[:-1], out=single[1:])
    single[1:] |= rows[1:] != rows[:-1]
    rows, docs, scores = rows[single], docs[single], scores[single]
    starts = np.searchsorted(rows, np.arange(len(queries) + 1))
    kept = np.arange(rows.shape[0]) - starts[rows] < k
    cuts = np.minimum(np.diff(starts), k).cumsum()[:-1]
    return list(zip(np.split(docs[kept], cuts), np.split(scores[kept], cuts)))


def _above_cut(scores: np.ndarray, rows: np.ndarray, need: np.ndarray) -> np.ndarray:
    """Mask of the entries in or above each row's highest score bucket reached by ``need[row]`` entries."""
    bits = scores.view(np.int64) >> 45  # sign (0), exponent, 7 mantissa bits: monotone
    low = bits.min()
    buckets = bits - low
    width = int(buckets.max()) + 1
    shift = max(0, (width - 1).bit_length() - 12)  # at most 4,096 buckets per row
    buckets >>= shift
    width = ((width - 1) >> shift) + 1
    counts = np.bincount(rows * width + buckets, minlength=need.shape[0] * width).reshape(need.shape[0], width)
    from_top = counts[:, ::-1].cumsum(axis=1) >= need[:, None]
    cut = np.where(from_top.any(axis=1), width - 1 - from_top.argmax(axis=1), 0)
    return buckets >= cut[rows]


def _merge(found: tuple[np.ndarray, np.ndarray], more: tuple[np.ndarray, np.ndarray], k: int, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k`` of two disjoint top-k lists (different shards), as one index ranks them."""
    if more[0].shape[0] == 0:
        return found
    if found[0].shape[0] == 0:
        return more
    return _best(np.concatenate([found[0], more[0]]), np.concatenate([found[1], more[1]]), k, ties)


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
            blocks = list(tokens.blocks(stream, limit))
            if sum(b[0].shape[0] for b in blocks) != limit or len(tokens.terms) != len(self.stats.terms):
                raise PoolingError("the texts changed between two readings")
            yield _build_shard(start, blocks, self.stats)

    def __len__(self) -> int:
        return len(self.doc_ids)

    def scores(self, text: str) -> np.ndarray:
        """BM25 score of every document for the query ``text`` (float64, index order)."""
        scores = np.zeros(len(self.doc_ids))
        term_ids = self.stats.query_terms(text)
        for shard in self._each_shard():
            part = scores[shard.start : shard.start + shard.size]
            for term in term_ids:
                lo, hi = shard.indptr[term], shard.indptr[term + 1]
                part[shard.docs[lo:hi]] += shard.weights[lo:hi]
        return scores

    def top(self, queries: Sequence[tuple[str, str]], k: int, *, progress: bool = False) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """Yield ``(query_id, indices, scores)`` of each query's top ``k``, best first."""
        term_ids = [self.stats.query_terms(text) for _, text in queries]
        if len(self._shards) == 1 and self._texts is None:  # one shard: nothing to merge
            found = _search_shard(self._shards[0], term_ids, k, self.ties)
            bar = tqdm(found, total=len(queries), desc="BM25 search", unit="query", disable=not progress)
            for (query_id, _), (best, scores) in zip(queries, bar):
                yield query_id, best, scores
            return
        empty = (np.empty(0, np.int64), np.empty(0, np.float64))
        merged = [empty] * len(queries)
        with tqdm(total=len(self.doc_ids), desc="BM25 search", unit="doc", disable=not progress) as bar:
            for shard in self._each_shard():
                for n, more in enumerate(_search_shard(shard, term_ids, k, self.ties)):
                    merged[n] = _merge(merged[n], more, k, self.ties)
                bar.update(shard.size)
        for (query_id, _), (best, scores) in zip(queries, merged):
            yield query_id, best, scores

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
