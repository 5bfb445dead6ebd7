"""The replay: counts worked out by hand on a two-query collection."""

from __future__ import annotations

import pytest

from pooling import PoolingError
from pooling.replay import found_at, judgments_to, replay, replay_query, round_robin, to_json
from pooling.strategies import Candidates

# q1: bm25 finds r1 at 1 and r2 at 3, dense finds r3 at 3 (beyond depth 2)
Q1 = Candidates("q1", {"bm25": ["r1", "a", "r2"], "dense": ["b", "c", "r3"]}, pool_depth=2)
# q2: one relevant, deep in bm25 only
Q2 = Candidates("q2", {"bm25": ["x", "y", "r4"], "dense": ["x", "z"]}, pool_depth=2)
QRELS = {"q1": {"r1", "r2", "r3", "unretrieved"}, "q2": {"r4"}}


def test_the_baseline_is_the_depth_union_judged_in_full():
    result = replay([Q2, Q1], QRELS, ["depth"], stop_every=0)
    # q1 union {r1, a, b, c}: 4 judged, 1 relevant; q2 union {x, y, z}: 3 judged, 0 relevant
    assert (result.baseline_judgments, result.baseline_found) == (7, 1)
    depth = result.strategies["depth"]
    # q1: r1 = b = 1/61 (tie by id: b first), a = c = 1/62; q2: x = 2/61, y = z = 1/62.
    # Round robin q1, q2: b x r1 y a z c
    assert [t.query_id for t in depth.traces] == ["q1", "q2"]
    assert depth.traces[0].judged == ("b", "r1", "a", "c")
    assert depth.curve == ((1, 0), (2, 0), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1))
    assert depth.judgments_to_90 == 3  # 0.9 * 1 relevant: first reached at judgment 3
    assert depth.found_at_baseline_budget == 1


def test_mtf_finds_more_than_depth_at_its_budget():
    result = replay([Q1, Q2], QRELS, ["mtf"], stop_every=0)
    mtf = result.strategies["mtf"]
    # q1: bm25 (first by name) r1 relevant: stays; a miss: bm25 -1; dense b miss: -1; tie ->
    # bm25 r2 relevant, then bm25 is exhausted: dense c, r3.
    assert mtf.traces[0].judged == ("r1", "a", "b", "r2", "c", "r3")
    # q2: bm25 x miss charges dense too (x tops both): -1/-1, bm25 y miss: -2, dense z: -2
    # and exhausted, bm25 r4.
    assert mtf.traces[1].judged == ("x", "y", "z", "r4")
    # 7 judgments: q1 r1 a b r2 and q2 x y z -> 2 relevant against depth's 1
    assert found_at(mtf.curve, 7) == mtf.found_at_baseline_budget == 2
    assert mtf.judgments_to_90 == 1


def test_findable_counts_only_candidates():
    t = replay_query("rrf", Q1, QRELS["q1"], stop_every=0)
    assert t.findable == 3  # "unretrieved" is in the qrels but in no candidate list
    assert sum(t.relevant) == 3 and len(t.judged) == 6


def test_round_robin_skips_exhausted_queries():
    a = replay_query("depth", Q1, QRELS["q1"], stop_every=0)  # b r1 a c
    b = replay_query("rrf", Q2, QRELS["q2"], stop_every=0)  # x y z r4 (r4 = 1/63 last)
    assert b.judged == ("x", "y", "z", "r4")
    curve = round_robin([a, b])
    assert curve == [(1, 0), (2, 0), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1), (8, 2)]
    assert judgments_to(curve, 2) == len(curve)


def test_budget_caps_the_curve():
    result = replay([Q1, Q2], QRELS, ["rrf"], budget=4, stop_every=0)
    assert len(result.strategies["rrf"].curve) == 4
    assert all(len(t.judged) <= 2 for t in result.strategies["rrf"].traces)


def test_json_has_the_contract_keys():
    out = to_json(replay([Q1, Q2], QRELS, ["depth", "rrf"], stop_every=0))
    assert out["baseline"] == {"judgments": 7, "relevant_found": 1}
    assert set(out["strategies"]) == {"depth", "rrf"}
    for entry in out["strategies"].values():
        assert {"curve", "judgments_to_90", "found_at_baseline_budget"} <= set(entry)
    assert out["strategies"]["depth"]["curve"][-1] == [7, 1]
    assert out["strategies"]["rrf"]["curve"][-1] == [10, 4]  # 6 + 4 candidates, r1 r2 r3 r4


def test_unknown_strategy():
    with pytest.raises(PoolingError, match="unknown strategy 'best'"):
        replay([Q1], QRELS, ["best"])


def test_until_stop_ends_each_query_where_the_rule_first_says_stop():
    docs = [f"d{i:02d}" for i in range(40)]
    c = Candidates("q", {"bm25": docs, "dense": docs[::-1]})
    relevant = {"d00", "d01", "d02", "d39"}
    full = replay_query("rrf", c, relevant, stop_every=5, target=0.5, confidence=0.5)
    assert full.stop_at is not None and full.stop_at < len(full.judged) == 40
    cut = replay_query("rrf", c, relevant, stop_every=5, target=0.5, confidence=0.5, until_stop=True)
    assert cut.stop_at == full.stop_at == len(cut.judged)
    assert cut.judged == full.judged[: cut.stop_at]  # the same order, only shorter


def test_the_oracle_and_the_rule_in_the_json():
    # rrf: q1 b r1 a c r2 r3 (relevant 2nd, 5th, 6th of 3 findable): 80% needs 3 found, at 6;
    # q2 x y z r4: its one relevant at 4. Half needs 2 of q1's (at 5) and q2's one (at 4).
    out = to_json(replay([Q1, Q2], QRELS, ["rrf"], stop_every=1, rule="quantile", also=["knee"]))
    stopping = out["strategies"]["rrf"]["stopping"]
    assert stopping["rule"] == "quantile"
    assert (stopping["oracle_judgments"], stopping["oracle_judgments_mean"], stopping["oracle_queries"]) == (10, 5.0, 2)
    assert {"queries", "stopped", "share_at_or_above_target", "mean_recall_at_stop", "judgments_at_stop",
            "final_interval_covers", "final_intervals", "target", "confidence"} <= set(stopping)
    assert out["strategies"]["rrf"]["stopping_also"]["knee"]["rule"] == "knee"
    half = to_json(replay([Q1, Q2], QRELS, ["rrf"], stop_every=1, target=0.5))["strategies"]["rrf"]["stopping"]
    assert (half["oracle_judgments"], half["oracle_queries"]) == (9, 2)


def test_the_sample_rule_judges_its_draws_in_check_order_and_stops_by_the_test():
    from pooling.stopping import check_order, sample_p_value

    docs = [f"d{i:02d}" for i in range(40)]
    c = Candidates("q", {"bm25": docs, "dense": docs[:20][::-1] + docs[20:]}, pool_depth=10)
    relevant = {f"d{i:02d}" for i in (0, 1, 2, 3, 5, 8, 13, 30)}
    t = replay_query("rrf", c, relevant, stop_every=1, rule="sample")
    assert t.check_at is not None and t.stop_at is not None and t.check_at < t.stop_at
    urn = set(docs) - set(t.judged[: t.check_at])
    drawn = t.judged[t.check_at : t.stop_at]
    assert list(drawn) == check_order("q", urn)[: len(drawn)]  # the draws, in the fixed random order
    found_outside = sum(t.relevant[: t.check_at])
    k = sum(d in relevant for d in drawn)
    # it stopped at the first draw where the test rejected "recall below 0.8" at 0.1
    assert sample_p_value(found_outside, len(urn), len(drawn), k, 0.8) < 0.1
    assert sample_p_value(found_outside, len(urn), len(drawn) - 1, k - (drawn[-1] in relevant), 0.8) >= 0.1
    with pytest.raises(PoolingError, match="cannot replay stopping rule 'sample'"):
        replay_query("rrf", c, relevant, rule="quantile", also=["sample"])
