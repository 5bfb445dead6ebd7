"""Pooling strategies: hand-made runs whose next chunk is worked out by hand, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pooling import PoolingError
from pooling.strategies import (
    STRATEGIES,
    Candidates,
    hedge_loss,
    hedge_weights,
    mmns_mean,
    next_chunks,
    rank_value,
)


def judge_all(strategy: str, candidates: Candidates, relevant: set[str], limit: int = 100) -> list[str]:
    """The order a strategy judges in, one chunk at a time, the qrels answering."""
    labels: dict[str, bool] = {}
    order: list[str] = []
    while len(order) < limit and (picked := next_chunks(strategy, candidates, labels)):
        labels[picked[0]] = picked[0] in relevant
        order.append(picked[0])
    return order


# --------------------------------------------------------------------------- depth and rrf


def test_depth_is_the_rrf_ordered_union_at_the_pool_depth_and_stops_there():
    c = Candidates("q", {"bm25": ["a", "b", "c"], "dense": ["c", "d", "b"]}, pool_depth=2)
    # depth 2: bm25 {a:1, b:2}, dense {c:1, d:2}; b's dense rank 3 is beyond the depth, so
    # a = c = 1/61 (tie by id), b = d = 1/62.
    assert judge_all("depth", c, set()) == ["a", "c", "b", "d"]


def test_rrf_uses_the_whole_candidate_lists():
    c = Candidates("q", {"bm25": ["a", "b", "c"], "dense": ["c", "d", "b"]}, pool_depth=2)
    # c = 1/63 + 1/61, b = 1/62 + 1/63, a = 1/61, d = 1/62
    assert judge_all("rrf", c, set()) == ["c", "b", "a", "d"]


# --------------------------------------------------------------------------- move-to-front


def test_mtf_stays_on_a_run_while_it_yields_relevant_and_moves_on_after_a_miss():
    c = Candidates("q", {"a": ["r1", "r2", "n1", "x"], "b": ["b1", "b2"]})
    # a (first by name) gives r1, r2 (relevant: stays), n1 (miss: a drops to -1), then b
    # at 0 gives b1 (miss: -1), tie at -1 goes to a by name: x, then b's b2.
    assert judge_all("mtf", c, {"r1", "r2"}) == ["r1", "r2", "n1", "b1", "x", "b2"]


def test_mtf_charges_a_shared_miss_to_every_run_that_ranks_it_on_top():
    c = Candidates("q", {"a": ["n1", "x"], "b": ["n1", "y"]})
    # n1 is in both runs' judged prefix: both at -1, tie by name gives a's x.
    assert next_chunks("mtf", c, {"n1": False}) == ["x"]


# --------------------------------------------------------------------------- bandit


def test_mmns_posterior_mean_discounts_older_evidence():
    # weights 0.9^2, 0.9^1, 0.9^0: alpha = 1 + 0.81 + 0.9, beta = 1 + 1
    assert mmns_mean([True, True, False], discount=0.9) == pytest.approx(2.71 / 4.71)
    # without discount it would be 3/5; recent misses weigh more
    assert mmns_mean([True, True, False], discount=1.0) == pytest.approx(3 / 5)
    assert mmns_mean([False, True, True], discount=0.9) == pytest.approx((1 + 0.9 + 1) / (2 + 2.71))


def test_bandit_pulls_the_arm_with_the_larger_posterior_mean():
    c = Candidates("q", {"a": ["a1", "a2", "a3"], "b": ["b1", "b2", "b3"]})
    # a: [T, F] -> (1 + 0.9) / (2 + 1.9) = 0.487; b: [F, T] -> (1 + 1) / (2 + 1.9) = 0.513
    labels = {"a1": True, "a2": False, "b1": False, "b2": True}
    assert next_chunks("bandit", c, labels) == ["b3"]
    # with no evidence both are at 1/2: tie by name
    assert next_chunks("bandit", c, {}) == ["a1"]


# --------------------------------------------------------------------------- hedge


def test_hedge_rank_values_losses_and_weights():
    c = Candidates("q", {"a": ["x", "y"], "b": ["z", "x"]})
    # N = 2, H_2 = 1.5: u(1) = 1.5 / 1.5 = 1, u(2) = 0.5 / 1.5 = 1/3
    assert rank_value(2, 2) == pytest.approx(1 / 3)
    # x relevant: loss_a = (1 - 1) / 2 = 0, loss_b = (1 - 1/3) / 2 = 1/3
    assert hedge_loss(True, 1 / 3) == pytest.approx(1 / 3)
    weights = hedge_weights(c, {"x": True}, beta=0.5)
    assert weights["a"] == pytest.approx(1 / (1 + 0.5 ** (1 / 3)))
    assert weights["b"] == pytest.approx(0.5 ** (1 / 3) / (1 + 0.5 ** (1 / 3)))
    # next: z scores w_b * 1 = 0.443 > y's w_a * 1/3 = 0.186
    assert next_chunks("hedge", c, {"x": True}) == ["z"]


def test_hedge_turns_to_the_run_that_ranks_relevant_chunks_high():
    c = Candidates("q", {"a": ["x", "y"], "b": ["z", "x"]})
    # x relevant, z not: loss_a = 0 + 1/2 (z unranked by a), loss_b = 1/3 + (1 + 1) / 2 = 4/3
    weights = hedge_weights(c, {"x": True, "z": False}, beta=0.5)
    ratio = 0.5 ** (4 / 3 - 1 / 2)
    assert weights["a"] == pytest.approx(1 / (1 + ratio))
    assert next_chunks("hedge", c, {"x": True, "z": False}) == ["y"]


# --------------------------------------------------------------------------- active


def _solar() -> Candidates:
    texts = {
        "c1": "slow cooking a stew with onions and garlic",
        "c2": "baking bread with yeast and flour",
        "c3": "roasting vegetables in a hot oven",
        "s1": "solar panel efficiency rises with cooler photovoltaic cells",
        "s2": "photovoltaic solar panel efficiency under partial shading",
    }
    # both sources put the cooking chunks first, the second solar chunk last
    rankings = {"bm25": ["c1", "s1", "c2", "c3", "s2"], "dense": ["c1", "s1", "c3", "c2", "s2"]}
    return Candidates("q", rankings, "solar panel efficiency", texts)


def test_active_follows_rrf_until_it_has_labels_of_both_kinds():
    c = _solar()
    assert next_chunks("active", c, {"c1": False}, k=2) == next_chunks("rrf", c, {"c1": False}, k=2) == ["s1", "c2"]


def test_active_ranks_the_relevant_looking_chunk_first_once_seeded():
    c = _solar()
    assert next_chunks("rrf", c, {"c1": False, "s1": True}) == ["c2"]
    assert next_chunks("active", c, {"c1": False, "s1": True}) == ["s2"]


def test_active_needs_every_candidate_text():
    c = Candidates("q", {"bm25": ["a", "b"]}, "query", {"a": "text"})
    with pytest.raises(PoolingError, match="no text for candidate b"):
        next_chunks("active", c, {})


def test_unknown_strategy_is_a_pooling_error():
    with pytest.raises(PoolingError, match="unknown strategy 'best'"):
        next_chunks("best", Candidates("q", {}), {})


# --------------------------------------------------------------------------- properties

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]


@st.composite
def scenarios(draw):
    docs = [f"d{i}" for i in range(draw(st.integers(1, 12)))]
    rankings = {
        source: draw(st.lists(st.sampled_from(docs), unique=True, max_size=len(docs)))
        for source in draw(st.lists(st.sampled_from(["bm25", "dense", "run"]), min_size=1, unique=True))
    }
    present = sorted({d for r in rankings.values() for d in r})
    texts = {d: " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))) for d in present}
    c = Candidates("q", rankings, "alpha beta", texts, pool_depth=draw(st.integers(1, 5)))
    labels = {d: draw(st.booleans()) for d in draw(st.lists(st.sampled_from(docs), unique=True))}
    pending = set(draw(st.lists(st.sampled_from(docs), unique=True, max_size=3)))
    return c, labels, pending, draw(st.integers(0, 15))


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(max_examples=25, deadline=None)
@given(scenario=scenarios())
def test_a_strategy_returns_fresh_candidates_only_and_the_same_ones_every_time(strategy, scenario):
    c, labels, pending, k = scenario
    picked = next_chunks(strategy, c, labels, k, pending=pending, seed=3)
    assert len(picked) == len(set(picked)) <= k
    assert set(picked) <= c.doc_ids - set(labels) - pending
    assert picked == next_chunks(strategy, c, dict(labels), k, pending=set(pending), seed=3)


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(max_examples=20, deadline=None)
@given(scenario=scenarios(), relevant=st.sets(st.sampled_from([f"d{i}" for i in range(12)])))
def test_judging_one_by_one_exhausts_the_candidates(strategy, scenario, relevant):
    c = scenario[0]
    order = judge_all(strategy, c, relevant)
    assert len(order) == len(set(order))
    if strategy == "depth":
        assert set(order) == {d for r in c.rankings.values() for d in r[: c.pool_depth]}
    else:
        assert set(order) == c.doc_ids


def test_active_rank_features_are_one_over_log2_of_one_plus_rank():
    from pooling.strategies import tfidf_features, with_rank_features

    c = _solar()
    matrix, row = tfidf_features(c.query_text, tuple(sorted(c.texts.items())))
    ranks = with_rank_features(matrix, c, row).toarray()[:, -2:]  # bm25, dense
    assert ranks[0].tolist() == [1.0, 1.0]  # the query: a perfect rank in both
    # s1: bm25 rank 2 -> 1 / log2(3) = 0.6309, dense rank 2 -> the same
    assert ranks[row["s1"]] == pytest.approx([0.63093, 0.63093], abs=1e-5)
    # c3: bm25 rank 4 -> 1 / log2(5) = 0.43068, dense rank 3 -> 1 / log2(4) = 0.5
    assert ranks[row["c3"]] == pytest.approx([0.43068, 0.5], abs=1e-5)
