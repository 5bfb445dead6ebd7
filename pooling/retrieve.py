"""Run every automatic source over a corpus: BM25 and dense top-k per query, with timings.

The caller supplies the corpus as ids, content hashes and a text stream, plus a way to fetch
texts by position, so a corpus held in a database never has to sit in memory whole.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
import numpy as np

from pooling import PoolingError
from pooling.bm25 import BM25Index, tie_ranks
from pooling.dense import DenseRetriever
from pooling.ray_engine import RayOptions, check, encode_missing, search_sharded


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Rankings of the automatic sources and what producing them cost.

    Attributes:
        rankings: source -> query_id -> doc_ids, best first.
        seconds: wall time per stage (``bm25_index``, ``bm25_search``, ``encode``,
            ``dense_search``). A corpus BM25 searches shard by shard (more chunks than
            :data:`pooling.bm25.SHARD_DOCS`) builds its shards during ``bm25_search``.
        encoded: texts the model encoded (0 when the cache had them all).
        model: the dense model directory, if dense ran.
        model_identity: its cache identity.
    """

    rankings: dict[str, dict[str, list[str]]]
    seconds: dict[str, float]
    encoded: int
    model: str | None
    model_identity: str | None


def query_key(text: str) -> str:
    """Embedding-cache key of a query text (distinct from any chunk's content hash)."""
    return "query:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def retrieve(
    queries: Sequence[tuple[str, str]],
    doc_ids: Sequence[str],
    doc_keys: Sequence[str],
    texts: Callable[[], Iterable[str]],
    fetch: Callable[[Sequence[int]], Sequence[str]],
    *,
    bm25_depth: int = 50,
    dense_depth: int = 50,
    model: str | Path | None = None,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    ray: RayOptions | None = None,
) -> Retrieval:
    """BM25 and dense top-k of every query over the corpus.

    Args:
        queries: ``(query_id, text)`` pairs.
        doc_ids: the corpus ids, in corpus order (ties break by this order's doc_id).
        doc_keys: each document's content hash, same order.
        texts: returns a fresh stream of the documents' search texts, same order.
        fetch: search texts of the documents at given positions.
        bm25_depth, dense_depth: documents per query from each source; 0 turns it off.
        model: sentence-transformers model directory (default model when ``None``).
        cache_dir: embedding cache directory (required when ``dense_depth`` > 0).
        progress: show progress bars.
        ray: encode the chunks and queries the cache lacks on Ray (see
            :mod:`pooling.ray_engine`) instead of in this process; search is the same.
    """
    if ray is not None and dense_depth > 0:
        check(ray)  # a missing Ray fails now, not after the BM25 stage
    rankings: dict[str, dict[str, list[str]]] = {}
    seconds: dict[str, float] = {}
    if bm25_depth > 0:
        clock = time.perf_counter()
        # Given the text source itself, a corpus beyond one shard is searched shard by shard.
        index = BM25Index(doc_ids, texts, progress=progress)
        seconds["bm25_index"] = time.perf_counter() - clock
        clock = time.perf_counter()
        rankings["bm25"] = index.ranked_ids(queries, bm25_depth, progress=progress)
        seconds["bm25_search"] = time.perf_counter() - clock
        del index  # free the index before the dense stage
    if dense_depth <= 0 or not queries or not doc_ids:
        return Retrieval(rankings, seconds, 0, None, None)
    if cache_dir is None:
        raise PoolingError("dense retrieval needs a cache_dir")
    retriever = DenseRetriever(cache_dir, model, progress=progress)
    encoded = _encode_on_ray(retriever, ray, queries, doc_keys, fetch, seconds) if ray is not None else 0
    search = ray if ray is not None and ray.search else None
    rankings["dense"] = _dense(retriever, queries, doc_ids, doc_keys, fetch, dense_depth, seconds, search)
    return Retrieval(rankings, seconds, encoded + retriever.encoded, retriever.model_path, retriever.identity)


def _encode_on_ray(
    retriever: DenseRetriever,
    options: RayOptions,
    queries: Sequence[tuple[str, str]],
    doc_keys: Sequence[str],
    fetch: Callable[[Sequence[int]], Sequence[str]],
    seconds: dict[str, float],
) -> int:
    """Fill the cache on Ray, so the local stage after it finds every vector cached."""
    clock = time.perf_counter()
    q_texts = [text for _, text in queries]
    jobs = [
        (doc_keys, fetch, "encode chunks on Ray"),
        ([query_key(t) for t in q_texts], lambda ps: [q_texts[p] for p in ps], "encode queries on Ray"),
    ]
    encoded = encode_missing(retriever.cache, jobs, retriever.model_path, options, progress=retriever.progress)
    seconds["encode_ray"] = time.perf_counter() - clock
    return encoded


def _dense(
    retriever: DenseRetriever,
    queries: Sequence[tuple[str, str]],
    doc_ids: Sequence[str],
    doc_keys: Sequence[str],
    fetch: Callable[[Sequence[int]], Sequence[str]],
    depth: int,
    seconds: dict[str, float],
    on_ray: RayOptions | None = None,
) -> dict[str, list[str]]:
    clock = time.perf_counter()
    doc_rows = retriever.embed(doc_keys, fetch, desc="encode chunks")
    q_texts = [text for _, text in queries]
    q_keys = [query_key(t) for t in q_texts]
    q_rows = retriever.embed(q_keys, lambda ps: [q_texts[p] for p in ps], desc="encode queries")
    seconds["encode"] = time.perf_counter() - clock
    clock = time.perf_counter()
    ties = np.arange(len(doc_ids)) if _sorted(doc_ids) else tie_ranks(doc_ids)
    if on_ray is None:
        best, _ = retriever.search(q_rows, doc_rows, depth, ties)
    else:
        queries_m = np.asarray(retriever.cache.matrix()[q_rows], dtype=np.float32)
        best, _ = search_sharded(queries_m, retriever.cache, doc_rows, depth, ties, on_ray)
    seconds["dense_search"] = time.perf_counter() - clock
    return {q: [doc_ids[i] for i in row] for (q, _), row in zip(queries, best.tolist())}


def _sorted(ids: Sequence[str]) -> bool:
    return all(a < b for a, b in zip(ids, ids[1:]))
