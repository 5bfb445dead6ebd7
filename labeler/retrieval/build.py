"""Building a project's pool: files and the store in, :mod:`pooling` in between.

An application service: it reads input files through :mod:`pooling`'s readers and the
project through plain :mod:`labeler.store.corpus` and :mod:`labeler.store.runs` functions, runs retrieval and the merge in
:mod:`pooling`, and writes the result back through the store. A build walks
store → service → pooling → service → store once.

Errors: :class:`pooling.PoolingError` for bad input files and impossible requests (a
negative depth, nothing to pool, an unusable model), :class:`labeler.store.StoreError` for
what the database refuses (changed content, unknown ids, a run name taken).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils

from labeler.store import candidates, corpus, runs
from labeler.store import versions as store
from labeler.store.access import require_admin
from labeler.store.connection import transaction
from labeler.store.corpus import ImportResult
from labeler.store.errors import StoreError
from labeler.store.records import Recorded
from labeler.store.versions import PoolExtension
from labeler.store.vocabulary import Caller
from pooling import PoolingError
from pooling.dense import model_package
from pooling.pool import RRF_K, Rankings, grown, merge, rrf_priority
from pooling.ray_engine import RayOptions
from pooling.readers import read_corpus, read_queries
from pooling.retrieve import Retrieval, retrieve
from pooling.trec import rank_run, read_run
from pooling.types import PoolEntry, RunRow, ScoredDoc, search_text

__all__ = [
    "PoolBuildResult",
    "add_run",
    "build_pool",
    "default_cache_dir",
    "import_corpus",
    "import_queries",
    "import_run",
]


def import_corpus(db: sqlite_utils.Database, path: str | Path, *, replace: bool = False) -> ImportResult:
    """Add the documents of a corpus file (see :mod:`pooling.readers` for formats).

    Raises:
        PoolingError: bad input; nothing is written.
        StoreError: changed content under an existing doc_id without ``replace``, or a
            change to a document that already has judgments; nothing is written.
    """
    path = Path(path)
    return corpus.add_documents(db, path, lambda: read_corpus(path), replace=replace)


def import_queries(db: sqlite_utils.Database, path: str | Path, *, replace: bool = False) -> ImportResult:
    """Add the queries of a query file (JSONL, CSV, TSV or TREC topics).

    Raises:
        PoolingError: bad input; nothing is written.
        StoreError: as :func:`import_corpus`, for query_id.
    """
    path = Path(path)
    return corpus.add_queries(db, path, read_queries(path), replace=replace)


def import_run(db: sqlite_utils.Database, path: str | Path, name: str) -> ImportResult:
    """Add a TREC run under ``name``, ranked as trec_eval ranks it.

    Importing the same file under the same name again is a no-op; a different file under a
    name already taken is refused.

    Raises:
        PoolingError: bad input.
        StoreError: unknown query or document, or a name reserved or already taken.
    """
    path = Path(path)

    def read() -> tuple[list[RunRow], dict[str, list[ScoredDoc]]]:
        rows = list(read_run(path))
        return rows, rank_run(rows)

    return runs.add_run(db, path, name, _file_hash(path), read)


def remove_run(db: sqlite_utils.Database, name: str) -> runs.RunRemoval:
    """Remove the run ``name`` (see :func:`labeler.store.runs.remove_run`); the pool entries
    it leaves get the reciprocal-rank fusion of their remaining sources as priority.

    Raises:
        StoreError: no run of that name.
    """
    return runs.remove_run(db, name, priority=rrf_priority)


def add_run(
    db: sqlite_utils.Database, path: str | Path, name: str, depth: int, *, caller: Caller
) -> tuple[ImportResult, PoolExtension]:
    """Import a run and add its unjudged top-``depth`` to the pool (they join the labelling queue).

    Raises:
        PoolingError: a bad run file, unknown ids. StoreError: a bad depth, not an admin.
    """
    require_admin(db, caller)
    if depth < 1:
        raise StoreError(f"depth {depth}: give 1 or more")
    imported = import_run(db, path, name)

    def plan(ranking: dict[str, list[str]], recorded: Recorded) -> tuple[list[PoolEntry], list[PoolEntry]]:
        return pool_plan({name: ranking})(recorded)

    return imported, store.extend_pool(db, name, depth, caller=caller, plan=plan)


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise PoolingError(f"cannot open: {exc.strerror}", path=path) from exc
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class PoolBuildResult:
    """What one pool build did.

    Attributes:
        build_id: row of ``pool_builds`` recording the parameters.
        queries: queries pooled.
        added: pool entries added by this build.
        kept: entries that were already in the pool (left untouched).
        per_source: documents each source put forward (summed over queries).
        encoded: texts the dense model encoded (0 on a warm cache).
        seconds: wall time per stage, and ``total``.
        candidates: candidate rows kept (each source's ranking to the candidate depth).
    """

    build_id: int
    queries: int
    added: int
    kept: int
    per_source: dict[str, int] = field(default_factory=dict)
    encoded: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    candidates: int = 0


def default_cache_dir(db: sqlite_utils.Database) -> Path:
    """``<database file>.cache``, beside the project database.

    Raises:
        PoolingError: the database is in memory.
    """
    main = corpus.database_file(db)
    if main is None:
        raise PoolingError("an in-memory database has no default cache directory; pass cache_dir")
    return Path(f"{main}.cache")


def _fetcher(db: sqlite_utils.Database, doc_ids: Sequence[str]) -> Callable[[Sequence[int]], list[str]]:
    def fetch(positions: Sequence[int]) -> list[str]:
        wanted = [doc_ids[p] for p in positions]
        found = corpus.documents_by_id(db, wanted)
        return [search_text(*found[d]) for d in wanted]

    return fetch


def pool_plan(rankings: Rankings) -> Callable[[Recorded], tuple[list[PoolEntry], list[PoolEntry]]]:
    """The plan of a pool change: the pool as recorded -> (entries that ``rankings`` add, existing
    entries whose provenance they extend)."""

    def plan(recorded: Recorded) -> tuple[list[PoolEntry], list[PoolEntry]]:
        positions = {q: {d: pos for d, (_, pos) in docs.items()} for q, docs in recorded.items()}
        return merge(rankings, positions), grown(rankings, recorded)

    return plan


def build_pool(
    db: sqlite_utils.Database,
    *,
    bm25_depth: int = 50,
    dense_depth: int = 50,
    run_depth: int = 50,
    candidate_depth: int = 200,
    model: str | Path | None = None,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    ray: RayOptions | None = None,
) -> PoolBuildResult:
    """Pool every query: union of BM25, dense and every run's top-k, ordered by RRF.

    Existing pool entries are kept exactly as they are; only new (query, doc) pairs are
    added, after the query's existing positions (see :mod:`pooling.pool`). A depth of 0
    turns a source off. With ``ray``, the chunks and queries the embedding cache lacks are
    encoded on Ray (:mod:`pooling.ray_engine`); the pool is the same.

    Beside the pool, each source's ranking is kept to ``candidate_depth`` (or its pool depth,
    if deeper) in the ``candidates`` table: what an adaptive pooling strategy may draw from
    (:mod:`labeler.retrieval.adaptive`). They are written just after the pool, replacing the rankings
    those sources had from an earlier build.

    Raises:
        PoolingError: no queries or documents, a negative depth, or an unusable model.
    """
    depths = {"bm25_depth": bm25_depth, "dense_depth": dense_depth, "run_depth": run_depth, "candidate_depth": candidate_depth}
    for name, depth in depths.items():
        if depth < 0:
            raise PoolingError(f"{name} must be 0 (off) or more, not {depth}")
    started = time.perf_counter()
    queries, ids_keys = corpus.pool_queries(db), corpus.document_keys(db)
    if not queries or not ids_keys:
        raise PoolingError("nothing to pool: import a corpus and queries first")
    doc_ids, doc_keys = [row[0] for row in ids_keys], [row[1] for row in ids_keys]
    del ids_keys
    found = retrieve(
        queries,
        doc_ids,
        doc_keys,
        lambda: (search_text(title, text) for title, text in corpus.document_texts(db)),
        _fetcher(db, doc_ids),
        bm25_depth=_deeper(bm25_depth, candidate_depth),
        dense_depth=_deeper(dense_depth, candidate_depth),
        model=model,
        cache_dir=(cache_dir if cache_dir is not None else default_cache_dir(db)) if dense_depth > 0 else None,
        progress=progress,
        ray=ray,
    )
    deep = {**found.rankings, **runs.run_rankings(db, _deeper(run_depth, candidate_depth))}
    cut = {"bm25": bm25_depth, "dense": dense_depth}
    rankings = {s: {q: list(d[: cut.get(s, run_depth)]) for q, d in r.items()} for s, r in deep.items()}
    build_id, added, kept = corpus.add_pool_build(db, pool_plan(rankings), _build_params(depths, found, rankings))
    with transaction(db):
        kept_candidates = candidates.replace_rankings(db, deep)
    per_source = {s: sum(len(d) for d in r.values()) for s, r in sorted(rankings.items())}
    seconds = {**found.seconds, "total": time.perf_counter() - started}
    return PoolBuildResult(build_id, len(queries), added, kept, per_source, found.encoded, seconds, kept_candidates)


def _build_params(depths: dict[str, int], found: Retrieval, rankings: Rankings) -> dict[str, object]:
    """What a pool build records of itself: its depths, the dense model, its sources, RRF's k."""
    package = None if found.model is None else model_package(found.model)
    return {**depths, "model": found.model, "model_identity": found.model_identity,
            "model_package": package, "sources": sorted(rankings), "rrf_k": RRF_K}


def _deeper(depth: int, candidate_depth: int) -> int:
    """How deep to retrieve a source: 0 stays off, else the deeper of pool and candidate depth."""
    return max(depth, candidate_depth) if depth > 0 else 0
