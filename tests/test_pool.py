"""The pool: union of every source's top-k, RRF priority, deterministic order, merge only adds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pooling.pool import grown, merge, rrf_priority

DOC = st.sampled_from([f"d{i}" for i in range(12)])
QUERY = st.sampled_from(["q1", "q2", "q3"])
RANKING = st.lists(DOC, unique=True, max_size=8)
RANKINGS = st.dictionaries(
    st.sampled_from(["bm25", "dense", "run-a", "run-b"]), st.dictionaries(QUERY, RANKING), max_size=4
)


def test_rrf_priority_is_the_sum_of_reciprocal_ranks() -> None:
    assert rrf_priority({"bm25": 1, "dense": 3}) == 1 / (60 + 1) + 1 / (60 + 3)
    assert rrf_priority({"run": 2}) == 1 / (60 + 2)
    assert rrf_priority({"a": 1}, k=0) == 1.0


def test_labelling_order_is_fusion_not_one_source() -> None:
    rankings = {
        "bm25": {"q": ["x", "y", "z"]},
        "dense": {"q": ["z", "w"]},
    }
    entries = merge(rankings)
    assert [(e.doc_id, dict(e.sources), e.priority, e.position) for e in entries] == [
        ("z", {"bm25": 3, "dense": 1}, 1 / (60 + 1) + 1 / (60 + 3), 1),
        ("x", {"bm25": 1}, 1 / (60 + 1), 2),
        # w and y tie on 1/(60+2): doc_id ascending.
        ("w", {"dense": 2}, 1 / (60 + 2), 3),
        ("y", {"bm25": 2}, 1 / (60 + 2), 4),
    ]


def test_merge_keeps_existing_and_appends_after_them() -> None:
    rankings = {"bm25": {"q": ["a", "b"]}, "run": {"q": ["c", "a"]}}
    existing = {"q": {"a": 1, "b": 2}}
    entries = merge(rankings, existing)
    assert [(e.doc_id, dict(e.sources), e.position) for e in entries] == [("c", {"run": 1}, 3)]


def test_grown_extends_provenance_of_existing_entries_only() -> None:
    rankings = {"bm25": {"q": ["a", "b"]}, "run": {"q": ["c", "a"]}}
    existing = {"q": {"a": ({"bm25": 1}, 1), "b": ({"bm25": 2}, 2)}}
    changed = grown(rankings, existing)
    # a: BM25 rank 1 was recorded; the run found it at rank 2. b gained nothing; c is new.
    assert [(e.doc_id, dict(e.sources), e.priority, e.position) for e in changed] == [
        ("a", {"bm25": 1, "run": 2}, 1 / (60 + 1) + 1 / (60 + 2), 1)
    ]
    # A recorded rank never changes, even if the source now ranks the entry elsewhere.
    assert grown({"bm25": {"q": ["b", "a"]}}, existing) == []


@given(rankings=RANKINGS)
def test_pool_holds_every_sources_top_k_once(rankings: dict) -> None:
    entries = merge(rankings)
    pairs = [(e.query_id, e.doc_id) for e in entries]
    assert len(pairs) == len(set(pairs))
    for source, per_query in rankings.items():
        for query_id, doc_ids in per_query.items():
            for rank, doc_id in enumerate(doc_ids, start=1):
                entry = next(e for e in entries if (e.query_id, e.doc_id) == (query_id, doc_id))
                assert entry.sources[source] == rank
    for query_id in {e.query_id for e in entries}:
        mine = [e for e in entries if e.query_id == query_id]
        assert sorted(e.position for e in mine) == list(range(1, len(mine) + 1))
        assert all(a.priority >= b.priority for a, b in zip(mine, mine[1:]))


@given(rankings=RANKINGS)
def test_pool_is_deterministic_whatever_the_source_order(rankings: dict) -> None:
    reversed_sources = {s: {q: list(d) for q, d in reversed(per.items())} for s, per in reversed(rankings.items())}
    assert merge(rankings) == merge(reversed_sources)


@given(before=RANKINGS, after=RANKINGS)
def test_merge_only_adds(before: dict, after: dict) -> None:
    first = merge(before)
    existing: dict[str, dict[str, int]] = {}
    for e in first:
        existing.setdefault(e.query_id, {})[e.doc_id] = e.position
    combined = {s: {**before.get(s, {}), **after.get(s, {})} for s in {*before, *after}}
    added = merge(combined, existing)
    assert not {(e.query_id, e.doc_id) for e in added} & {(e.query_id, e.doc_id) for e in first}
    for e in added:
        assert e.position > max(existing.get(e.query_id, {}).values(), default=0)
    covered = {(e.query_id, e.doc_id) for e in first + added}
    assert all((q, d) in covered for per in combined.values() for q, docs in per.items() for d in docs)
