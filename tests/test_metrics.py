"""Run metrics: hand-computed values, trec_eval's tie order, counts, and pytrec_eval on random data."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from calibration import CalibrationError
from calibration.metrics import default_metrics, evaluate, evaluate_many, parse_metrics
from pooling import PoolingError
from pooling.ranked_runs import read_ranked_run
from pooling.qrels import read_qrels
from pooling.trec import rank_run, read_run

QRELS = {
    "q1": {"d1": 3, "d2": 0, "d3": 1, "d4": 2},  # d4 is never retrieved
    "q2": {"d5": 0},  # no relevant document: left out of the means
    "q4": {"d1": 1},  # relevant, but the run does not answer q4
}
# q1 ties d1, d3 and dZ at 1.0: trec_eval ranks them by doc_id descending, dZ, d3, d1.
RUN_LINES = """q1 Q0 d1 1 1.0 r
q1 Q0 d2 2 2.0 r
q1 Q0 d3 3 1.0 r
q1 Q0 dZ 4 1.0 r
q2 Q0 d5 1 1.0 r
q3 Q0 d9 1 1.0 r
"""
LOG2_3, LOG2_5 = math.log2(3), math.log2(5)
IDCG = 3 + 2 / LOG2_3 + 1 / 2  # grades 3, 2, 1 at ranks 1-3
IDCG_EXP = 7 + 3 / LOG2_3 + 1 / 2  # gains 2^g - 1: 7, 3, 1
EXPECTED = {
    "P@3": 1 / 3,  # ranking d2(0) dZ(unjudged) d3(1) d1(3)
    "P@4": 2 / 4,
    "R@3": 1 / 3,  # 3 relevant: d1, d3, d4
    "R@4": 2 / 3,
    "RR": 1 / 3,
    "AP": (1 / 3 + 2 / 4) / 3,
    "nDCG@10": (1 / 2 + 3 / LOG2_5) / IDCG,  # d3 at rank 3 (log2 4 = 2), d1 at rank 4
    "nDCG(dcg='exp-log2')@10": (1 / 2 + 7 / LOG2_5) / IDCG_EXP,
    "Judged@2": 1 / 2,  # d2 judged, dZ not
    "Judged@4": 3 / 4,
}


@pytest.fixture()
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.trec"
    path.write_text(RUN_LINES)
    return path


def test_hand_computed_values_and_counts(run_file: Path) -> None:
    scores = evaluate(QRELS, read_ranked_run(run_file), list(EXPECTED))
    assert list(scores.per_query) == ["q1"]
    for name, value in EXPECTED.items():
        assert scores.per_query["q1"][name] == pytest.approx(value, abs=1e-12), name
        assert scores.metrics[name] == pytest.approx(value, abs=1e-12), name
    assert (scores.excluded, scores.missing, scores.unknown, scores.scored) == (1, 1, ("q3",), 1)


def test_ties_follow_trec_eval_not_the_rank_column(run_file: Path) -> None:
    assert read_ranked_run(run_file)["q1"] == ["d2", "dZ", "d3", "d1"]


def test_means_leave_out_queries_without_relevant_documents() -> None:
    qrels = {"a": {"x": 1}, "b": {"y": 1}, "c": {"z": 0}}
    ranked = {"a": ["x"], "b": ["n", "y"], "c": ["z"]}
    scores = evaluate(qrels, ranked, ["RR"])
    assert scores.metrics["RR"] == pytest.approx((1 + 1 / 2) / 2)
    assert scores.excluded == 1 and set(scores.per_query) == {"a", "b"}


def test_json_shape(run_file: Path) -> None:
    data = evaluate(QRELS, read_ranked_run(run_file), ["RR"]).as_dict()
    assert set(data) >= {"metrics", "per_query", "excluded"}
    assert data["per_query"] == {"q1": {"RR": pytest.approx(1 / 3)}} and data["excluded"] == 1


def test_default_set_and_bad_names() -> None:
    assert default_metrics(20) == ("nDCG@10", "nDCG(dcg='exp-log2')@10", "R@20", "RR", "P@20", "Judged@20")
    with pytest.raises(CalibrationError, match="nDCG@@"):
        parse_metrics(["nDCG@@"])
    with pytest.raises(CalibrationError):
        default_metrics(0)


def _random_case(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(40):
        docs = [f"d{n}" for n in rng.sample(range(200), 60)]
        qrels[f"q{q}"] = {d: rng.choice([0, 0, 0, 1, 2, 3]) for d in docs[:25]}
        # One decimal: many ties, broken by doc_id (descending) as in trec_eval.
        run[f"q{q}"] = {d: round(rng.random(), 1) for d in docs[5:]}
    return qrels, run


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equal_to_pytrec_eval_on_random_runs(tmp_path: Path, seed: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = _random_case(seed)
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q} Q0 {d} 1 {s} x\n" for q, docs in run.items() for d, s in docs.items()))
    ours = evaluate(qrels, read_ranked_run(path), ["P@5", "R@10", "RR", "AP", "nDCG@10", "nDCG(dcg='exp-log2')@10"])
    relevant = {q for q, d in qrels.items() if any(r > 0 for r in d.values())}
    reference = pytrec_eval.RelevanceEvaluator(
        {q: qrels[q] for q in relevant}, {"P_5", "recall_10", "recip_rank", "map", "ndcg_cut_10"}
    ).evaluate(run)
    exp_gains = {q: {d: 2**r - 1 for d, r in qrels[q].items()} for q in relevant}
    reference_exp = pytrec_eval.RelevanceEvaluator(exp_gains, {"ndcg_cut_10"}).evaluate(run)
    names = {"P@5": "P_5", "R@10": "recall_10", "RR": "recip_rank", "AP": "map", "nDCG@10": "ndcg_cut_10"}
    assert set(ours.per_query) == relevant
    for q in relevant:
        for name, trec_name in names.items():
            assert ours.per_query[q][name] == pytest.approx(reference[q][trec_name], abs=1e-12)
        assert ours.per_query[q]["nDCG(dcg='exp-log2')@10"] == pytest.approx(reference_exp[q]["ndcg_cut_10"], abs=1e-12)


def test_fast_reader_ranks_as_the_line_reader(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = [
        f"q{q} Q0 D{d} {rng.randint(1, 9)} {rng.choice([1.0, 2.0, 0.5, 1.0000000001, -3e38, 7e38])} t"
        for q in range(15) for d in rng.sample(range(300), 40)
    ]
    rng.shuffle(lines)
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    expected = {q: [d.doc_id for d in docs] for q, docs in rank_run(read_run(path)).items()}
    assert read_ranked_run(path) == expected


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("q1 Q0 d1 1 x t", "field 'score'"),
        ("q1 Q0 d1 1.5 2 t", "field 'rank'"),
        ("q1 Q0 d1 1 2", "expected 6 fields"),
        ("q1 Q0 d1 1 2 t extra", "expected 6 fields"),
        ("q1 Q0 d1 1 nan t", "field 'score'"),
        ("q0 Q0 d0 2 1 t", "field 'doc_id'"),
    ],
)
def test_malformed_run_line_names_file_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "bad.trec"
    path.write_text("q0 Q0 d0 1 1 t\n" + line + "\n")
    with pytest.raises(PoolingError) as info:
        read_ranked_run(path)
    assert f"{path}, line 2" in str(info.value) and field in str(info.value)


def test_qrels_reader_errors(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 high\n")
    with pytest.raises(PoolingError, match=r"line 2, field 'relevance'"):
        read_qrels(path)
    path.write_text("q1 0 d1 1\nq1 0 d1 2\n")
    with pytest.raises(PoolingError, match=r"line 2, field 'doc_id'"):
        read_qrels(path)
    path.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    assert read_qrels(path) == {"q1": {"d1": 1, "d2": 0}}


def test_several_runs_share_one_qrels() -> None:
    out = evaluate_many({"a": {"x": 1, "y": 2}}, {"r1": {"a": ["x", "y"]}, "r2": {"a": ["y", "x"]}}, ["RR", "P@1"])
    assert out["r1"].metrics == {"RR": 1.0, "P@1": 1.0}
    assert out["r2"].metrics == {"RR": 1.0, "P@1": 1.0}


def test_exp_gain_ndcg_beside_linear_ndcg_keeps_both_values() -> None:
    # One relevant grade-2 chunk at rank 2: linear 2/log2(3) / 2, exponential 3/log2(3) / 3.
    qrels = {"q": {"a": 0, "b": 2}}
    scores = evaluate(qrels, {"q": ["a", "b"]}, ["nDCG(dcg='exp-log2')@10", "nDCG@10", "RR"])
    assert scores.metrics["nDCG@10"] == pytest.approx((2 / math.log2(3)) / 2)
    assert scores.metrics["nDCG(dcg='exp-log2')@10"] == pytest.approx((3 / math.log2(3)) / 3)
    qrels = {"q": {"a": 1, "b": 3}}
    scores = evaluate(qrels, {"q": ["a", "b"]}, ["nDCG@10", "nDCG(dcg='exp-log2')@10"])
    assert scores.metrics["nDCG@10"] == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    assert scores.metrics["nDCG(dcg='exp-log2')@10"] == pytest.approx((1 + 7 / math.log2(3)) / (7 + 1 / math.log2(3)))


def test_whitespace_variants_and_signed_zero(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 0.0 t\nq1\tQ0\tb\t2\t-0.0\tt\nq1 Q0  c 3 1 t\n")
    # 0.0 and -0.0 tie (broken by doc_id descending); the tab and double space are read.
    assert read_ranked_run(path) == {"q1": ["c", "b", "a"]}
    assert read_ranked_run(path) == {q: [d.doc_id for d in v] for q, v in rank_run(read_run(path)).items()}


# One query graded 0-3, ranked b(2) a(1) c(0) d(3). At level 2 only b and d are relevant:
# P@1 1, P@4 2/4, RR 1, AP (1/1 + 2/4) / 2, R@2 1/2, Rprec (R = 2) 1/2, bpref (1 + (1 - 2/2)) / 2
# (b has no judged non-relevant above it, d has a and c, out of min(R, N) = 2).
# At level 1 a counts too: AP (1/1 + 2/2 + 3/4) / 3. nDCG reads grades and ignores the level.
LEVEL_QRELS = {"q": {"a": 1, "b": 2, "c": 0, "d": 3}, "low": {"x": 1, "y": 0}}
LEVEL_RUN = {"q": ["b", "a", "c", "d"], "low": ["x", "y"]}
LEVEL_TREC = {"AP": "map", "P@1": "P_1", "P@4": "P_4", "RR": "recip_rank", "R@2": "recall_2", "Rprec": "Rprec",
              "Bpref": "bpref", "nDCG@10": "ndcg_cut_10"}
BY_HAND = {
    2: {"AP": (1 + 2 / 4) / 2, "P@1": 1.0, "P@4": 2 / 4, "RR": 1.0, "R@2": 1 / 2, "Rprec": 1 / 2, "Bpref": 1 / 2},
    1: {"AP": (1 + 1 + 3 / 4) / 3, "P@1": 1.0, "P@4": 3 / 4, "RR": 1.0, "R@2": 2 / 3, "Rprec": 2 / 3, "Bpref": 2 / 3},
}


@pytest.mark.parametrize("level", [1, 2])
def test_relevance_level_is_trec_evals_l_by_hand_and_by_pytrec_eval(level: int) -> None:
    import pytrec_eval

    names = [*BY_HAND[level], "nDCG@10"]
    scores = evaluate(LEVEL_QRELS, LEVEL_RUN, names, relevance_level=level)
    assert scores.relevance_level == level and scores.as_dict()["relevance_level"] == level
    for name, value in BY_HAND[level].items():
        assert scores.per_query["q"][name] == pytest.approx(value, abs=1e-12), name
    # Query "low" has no grade >= 2: relevant nowhere at level 2, so left out of the means there.
    assert (scores.excluded, sorted(scores.per_query)) == ((1, ["q"]) if level == 2 else (0, ["low", "q"]))
    evaluator = pytrec_eval.RelevanceEvaluator(LEVEL_QRELS, set(LEVEL_TREC.values()), relevance_level=level)
    ranked = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in LEVEL_RUN.items()}
    theirs = evaluator.evaluate(ranked)
    for query, values in scores.per_query.items():
        for name, value in values.items():
            assert value == pytest.approx(theirs[query][LEVEL_TREC[name]], abs=1e-12), (query, name)


def test_trec_eval_names_are_read_as_ir_measures_names_at_the_level() -> None:
    parsed = parse_metrics(["map", "P_5", "ndcg_cut_10", "recall_100", "recip_rank", "Rprec", "bpref", "P_5,10"],
                           relevance_level=2)
    assert [str(m) for m in parsed.values()] == ["AP(rel=2)", "P(rel=2)@5", "nDCG@10", "R(rel=2)@100", "RR(rel=2)",
                                                 "Rprec(rel=2)", "Bpref(rel=2)", "P(rel=2)@10"]
    assert list(parsed) == ["AP", "P@5", "nDCG@10", "R@100", "RR", "Rprec", "Bpref", "P@10"]
    # A measure that names its own rel keeps it; the default level is trec_eval's, 1.
    assert str(parse_metrics(["P(rel=3)@5"], relevance_level=2)["P(rel=3)@5"]) == "P(rel=3)@5"
    assert str(parse_metrics(["map"])["AP"]) in {"AP", "AP(rel=1)"}
    same = evaluate(LEVEL_QRELS, LEVEL_RUN, ["map", "P_4", "recip_rank"], relevance_level=2)
    assert same.per_query["q"] == pytest.approx({"AP": BY_HAND[2]["AP"], "P@4": 2 / 4, "RR": 1.0})


@pytest.mark.parametrize("name", ["P_x", "foo", "official", "ndcg_rel"])
def test_an_unknown_metric_name_says_how_to_spell_one(name: str) -> None:
    with pytest.raises(CalibrationError) as info:
        parse_metrics([name])
    message = str(info.value)
    assert message.startswith(f"metric {name!r}: not a measure name") and "\n" not in message
    assert "P@5" in message and "P_5" in message and "ndcg_cut_10" in message
