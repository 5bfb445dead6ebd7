"""The pool: union of every source's top-k per query, with provenance and labelling order.

Priority is reciprocal-rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009)::

    priority(d) = sum over sources s that retrieved d of  1 / (60 + rank_s(d))

so a document found by several sources, or high by one, is labelled first. A source's own
order never decides on its own. Within a query, ``position`` is 1-based labelling order:
priority descending, ties by doc_id ascending.

Merging into an existing pool keeps every existing entry and its position, and only adds:
new entries are ordered among themselves and placed after the query's existing ones, so
annotators' work and the order they saw stay valid. An existing entry that a new source also
retrieved gains that source in its provenance (ranks already recorded never change) and its
priority is recomputed; its position stays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pooling.types import PoolEntry, frozen_meta

RRF_K = 60

#: source name -> query_id -> doc_ids, best first (already cut to the source's depth)
Rankings = Mapping[str, Mapping[str, Sequence[str]]]


def rrf_priority(sources: Mapping[str, int], k: int = RRF_K) -> float:
    """Reciprocal-rank fusion of 1-based ranks, summed in source-name order.

    >>> rrf_priority({"bm25": 1, "dense": 3}) == 1 / (60 + 1) + 1 / (60 + 3)
    True
    """
    return sum(1.0 / (k + sources[name]) for name in sorted(sources))


def provenance(rankings: Rankings) -> dict[str, dict[str, dict[str, int]]]:
    """query_id -> doc_id -> {source: rank} over every source's ranking."""
    found: dict[str, dict[str, dict[str, int]]] = {}
    for source in sorted(rankings):
        for query_id, doc_ids in rankings[source].items():
            per_query = found.setdefault(query_id, {})
            for rank, doc_id in enumerate(doc_ids, start=1):
                per_query.setdefault(doc_id, {}).setdefault(source, rank)
    return found


def merge(
    rankings: Rankings,
    existing: Mapping[str, Mapping[str, int]] | None = None,
    k: int = RRF_K,
) -> list[PoolEntry]:
    """The entries to add to a pool so it holds the union of ``rankings``.

    Args:
        rankings: source -> query_id -> ranked doc_ids.
        existing: query_id -> {doc_id: position} already in the pool; kept as they are.
        k: the RRF constant.

    Returns:
        New entries only, ordered by query_id then position.
    """
    existing = existing or {}
    added: list[PoolEntry] = []
    for query_id, docs in sorted(provenance(rankings).items()):
        have = existing.get(query_id, {})
        fresh = [(rrf_priority(src, k), doc_id, src) for doc_id, src in docs.items() if doc_id not in have]
        fresh.sort(key=lambda item: (-item[0], item[1]))
        start = max(have.values(), default=0)
        added.extend(
            PoolEntry(query_id, doc_id, frozen_meta(src), priority, start + offset)
            for offset, (priority, doc_id, src) in enumerate(fresh, start=1)
        )
    return added


def grown(
    rankings: Rankings,
    existing: Mapping[str, Mapping[str, tuple[Mapping[str, int], int]]],
    k: int = RRF_K,
) -> list[PoolEntry]:
    """Existing entries that a source not yet in their provenance has also retrieved.

    Args:
        rankings: source -> query_id -> ranked doc_ids.
        existing: query_id -> doc_id -> (recorded sources, position).
        k: the RRF constant.

    Returns:
        The entries with their provenance extended (recorded ranks kept), priority
        recomputed and position unchanged, ordered by query_id then position.

    >>> [grown({"run": {"q": ["a"]}}, {"q": {"a": ({"bm25": 2}, 1)}})[0].priority == 1 / (60 + 2) + 1 / (60 + 1)]
    [True]
    """
    changed: list[PoolEntry] = []
    for query_id, docs in sorted(provenance(rankings).items()):
        have = existing.get(query_id, {})
        for doc_id, found in docs.items():
            if doc_id not in have:
                continue
            recorded, position = have[doc_id]
            extra = {s: r for s, r in found.items() if s not in recorded}
            if extra:
                sources = {**recorded, **extra}
                changed.append(PoolEntry(query_id, doc_id, frozen_meta(sources), rrf_priority(sources, k), position))
    changed.sort(key=lambda e: (e.query_id, e.position))
    return changed
