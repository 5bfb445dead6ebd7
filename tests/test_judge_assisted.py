"""Judge-assisted evaluation: designed samples, their hand-out, and the estimates of run metrics."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

ppi_py = pytest.importorskip("ppi_py")
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate  # noqa: E402

from calibration.judge_assisted import poisson_sample, query_level, stratified_probabilities  # noqa: E402
from calibration.stratified_estimation import Design, Metric, interval, run_positions, stratified_estimates  # noqa: E402
from calibration.metrics import evaluate_many  # noqa: E402
from labels_fixtures import label_all, make_project, query_ids, write_jsonl  # noqa: E402
from labeler.retrieval import scheduling  # noqa: E402
from labeler.cli import cli  # noqa: E402
from labeler.retrieval.judge_assisted import plan_sample  # noqa: E402
from labeler.store import access, labels  # noqa: E402
from labeler.store.access import OWNER  # noqa: E402
from labeler.store.errors import StoreError  # noqa: E402
from labeler.judges.verdict_files import import_verdicts  # noqa: E402

KEYS = {"value", "low", "high", "judge_only", "people_only", "n_people", "n_judge"}


def _project(tmp_path: Path, n_queries: int = 8, per_query: int = 12, seed: int = 3):
    """A project whose pool people and a judge (who errs by one grade a third of the time)
    have both graded in full, and three runs of decreasing quality over it."""
    db = make_project(tmp_path / "p.db", n_queries=n_queries, per_query=per_query)
    rng = random.Random(seed)
    pool = db.execute("SELECT query_id, doc_id FROM pool ORDER BY query_id, doc_id").fetchall()
    people = {(q, d): rng.choice([0, 0, 0, 1, 2, 3]) for q, d in pool}
    judge = {k: max(0, min(3, g + rng.choice([-1, 0, 0, 1]))) for k, g in people.items()}
    runs = []
    for r in range(3):
        lines = []
        for q in query_ids(n_queries):
            docs = sorted((d for qq, d in pool if qq == q), key=lambda d: -(people[(q, d)] + rng.gauss(0, 1 + 2 * r)))
            lines += [f"{q} Q0 {d} {i + 1} {100 - i} run{r}\n" for i, d in enumerate(docs)]
        path = tmp_path / f"run{r}.trec"
        path.write_text("".join(lines), encoding="utf-8")
        runs.append(str(path))
    import_verdicts(db, write_jsonl(tmp_path / "j.jsonl", [{"query_id": q, "doc_id": d, "relevance": g}
                                                           for (q, d), g in judge.items()]), judge="j1", caller=OWNER)
    return db, people, judge, runs


def _label_and_freeze(tmp_path: Path, db, people, items) -> str:
    """People label exactly ``items`` (as imported labels), then the project is frozen as v1."""
    access.add_annotator(db, "ann")
    import_verdicts(db, write_jsonl(tmp_path / "h.jsonl", [{"query_id": q, "doc_id": d, "relevance": people[(q, d)]}
                                                           for q, d in items]), annotator="ann", caller=OWNER)
    result = CliRunner().invoke(cli, ["freeze", str(tmp_path / "p.db"), "--version", "v1"])
    assert result.exit_code == 0, result.output
    return f"{tmp_path / 'p.db'}@v1"


def test_query_design_equals_ppi_python_on_per_query_metrics(tmp_path: Path) -> None:
    db, people, judge, runs = _project(tmp_path)
    planned = plan_sample(db, "s1", design="queries", share=0.5, seed=1, caller=OWNER)
    assert planned.labelled_queries == 4 and {p for _, _, p in planned.items} == {0.5}
    golden = _label_and_freeze(tmp_path, db, people, [(q, d) for q, d, _ in planned.items])
    result = CliRunner().invoke(cli, ["eval", golden, *runs, "--judge", "j1", "--sample", "s1", "--metric",
                                      "nDCG@10", "--metric", "P@5", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["design"] == "queries" and set(out["runs"]) == {"run0.trec", "run1.trec", "run2.trec"}
    assert len(out["warnings"]) == 1 and out["warnings"][0].startswith("only 4 labelled queries")
    assert "--design stratified" in out["warnings"][0]
    labelled = {q for q, _, _ in planned.items}
    people_qrels: dict = {}
    for q, d, _ in planned.items:
        people_qrels.setdefault(q, {})[d] = people[(q, d)]
    judge_qrels: dict = {}
    for (q, d), g in judge.items():
        judge_qrels.setdefault(q, {})[d] = g
    ranked = {Path(r).name: {q: [line.split()[2] for line in Path(r).read_text().splitlines() if line.split()[0] == q]
                             for q in query_ids(8)} for r in runs}
    by_people = evaluate_many(people_qrels, ranked, ["nDCG@10", "P@5"])
    by_judge = evaluate_many(judge_qrels, ranked, ["nDCG@10", "P@5"])
    compared = 0
    for run in ranked:
        for metric in ("nDCG@10", "P@5"):
            y = np.array([by_people[run].per_query[q][metric] for q in sorted(labelled)])
            f = np.array([by_judge[run].per_query[q][metric] for q in sorted(labelled)])
            fu = np.array([by_judge[run].per_query[q][metric] for q in sorted(set(query_ids(8)) - labelled)])
            cell = out["runs"][run][metric]
            assert set(cell) >= KEYS and (cell["n_people"], cell["n_judge"]) == (48, 96)
            if y.std() == 0:  # every labelled query scores the same: λ is 0, the interval the people's own
                if set(y) <= {0.0, 1.0}:  # the Wilson interval of 0/1 values
                    assert cell["low"] < cell["high"]
                else:  # no spread to size an interval with
                    assert cell["value"] is None and "no interval" in cell["why"]
                continue
            compared += 1
            # The estimate of PPI++ (power-tuned λ) as ppi-python computes it; its interval
            # widened by t_df / z, clipped to [0, 1].
            assert cell["value"] == pytest.approx(float(np.ravel(ppi_mean_pointestimate(y, f, fu))[0]))
            low, high = (float(v[0]) for v in ppi_mean_ci(y, f, fu, alpha=0.05))
            half = (high - low) / 2 * _t_over_z(y, f, fu, cell.get("lambda", 0.0))
            assert (low + high) / 2 == pytest.approx(cell["value"])
            assert (cell["low"], cell["high"]) == pytest.approx((max(cell["value"] - half, 0.0),
                                                                 min(cell["value"] + half, 1.0)))
            assert cell["people_only"] == pytest.approx(float(y.mean()))
            assert cell["judge_only"] == pytest.approx(by_judge[run].metrics[metric])
    assert compared >= 4


def _t_over_z(y: np.ndarray, f: np.ndarray, fu: np.ndarray, lam: float) -> float:
    """Student's t quantile with the Welch-Satterthwaite degrees of freedom of PPI's two
    variance terms, over the normal quantile: how much wider than ppi-python's our interval is."""
    from scipy.stats import norm, t

    n, big_n = len(y), len(fu)
    a, b = np.var(lam * fu) / big_n, np.var(y - lam * f) / n
    df = (a + b) ** 2 / (a**2 / (big_n - 1) + b**2 / (n - 1))
    return float(t.ppf(0.975, df) / norm.ppf(0.975))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [3, 12, 400])
def test_query_level_equals_ppi_python_but_for_the_t_quantile(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    y = rng.uniform(0.3, 0.7, n)
    f = np.clip(y + rng.normal(0, 0.05, n), 0, 1)
    fu = rng.uniform(0.3, 0.7, 60 + n)
    c = query_level(y, f, fu)
    low, high = (float(v[0]) for v in ppi_mean_ci(y, f, fu, alpha=0.05))
    # The estimate and standard error are ppi-python's (PPI++); only the quantile differs.
    assert c.value == pytest.approx(float(np.ravel(ppi_mean_pointestimate(y, f, fu))[0]))
    assert (c.low + c.high) / 2 == pytest.approx((low + high) / 2)
    ratio = _t_over_z(y, f, fu, c.lam)
    assert (c.high - c.low) / (high - low) == pytest.approx(ratio, rel=1e-9)
    assert ratio > {3: 1.5, 12: 1.01, 400: 1.0}[n] and (n < 400 or ratio < 1.003)
    # λ = 1 is classic PPI; ppi-python's estimate at the λ used equals ours.
    assert c.value == pytest.approx(float(np.ravel(ppi_mean_pointestimate(y, f, fu, lam=c.lam))[0]))


@pytest.mark.parametrize(("people", "judge", "bounds"), [
    ([0.5, 0.5, 0.5], [0.4, 0.7, 0.6], (0.0, 1.0)),  # the same nDCG on every labelled query
    ([0.0, 0.0, 0.0, 0.0], [0.1, -0.2, 0.0, 0.3], (-1.0, 1.0)),  # two runs tied on every labelled query
    ([0.2, 0.5, 0.8], [0.1, 0.4, 0.7], (0.0, 1.0)),  # λ 1, the judge off by the same on every labelled query
])
def test_query_level_gives_no_interval_where_the_labelled_queries_show_no_spread(people, judge, bounds) -> None:
    from calibration.judge_assisted import query_level_columns

    unlabelled = [0.4] * 6 if people[0] == 0.2 else [0.2, 0.9, 0.4, 0.6, 0.1, 0.8]
    c = query_level(people, judge, unlabelled, bounds=bounds)
    assert math.isnan(c.value) and math.isnan(c.low) and math.isnan(c.high) and c.low != c.high
    assert c.why.startswith(f"no interval: the {len(people)} labelled queries all give the same")
    many = query_level_columns(np.array([people]).T, np.array([judge]).T, np.array([unlabelled]).T, bounds=bounds)
    assert math.isnan(many[1][0]) and math.isnan(many[2][0])


def test_horvitz_thompson_and_difference_estimator_by_hand() -> None:
    """One query, four pool entries ranked d1..d4 by the run; P@4 at relevance level 1.

    People labelled d1 (π 0.8, grade 1) and d2 (π 0.5, grade 0); the judge graded d1, d2, d4
    relevant and d3 not. Horvitz-Thompson: relevant in the top 4 = 1/0.8 = 1.25, so P@4 =
    1.25/4 = 0.3125. Difference estimator: P(relevant | judge says relevant) =
    1.25 / (1.25 + 2) = 5/13 (no sampled entry has judge grade 0: the overall weighted share, also
    5/13, stands in); the four predictions sum to 20/13 and the weighted residuals
    1.25·(1 − 5/13) + 2·(0 − 5/13) are 0, so P@4 = (20/13)/4 = 5/13.
    """
    design = Design(query=np.zeros(4, dtype=int), judge=np.array([1, 1, 0, 1]),
                    sampled=np.array([True, True, False, False]), probability=np.array([0.8, 0.5, 1.0, 1.0]),
                    people=np.array([1, 0, 0, 0]), n_queries=1)
    runs = {"r": (np.arange(4), np.arange(1, 5))}
    metric = Metric("P@4", "P", 4)
    ht = stratified_estimates(design, runs, metric, replicates=50, judge=False)["r"]
    assert ht[0] == pytest.approx(0.3125)
    # Each design-bootstrap replicate weighs d1 by 1.25·(1 ± √0.2): two values only.
    assert set(np.round(ht[1:], 9)) <= {round(0.3125 * (1 + s * math.sqrt(0.2)), 9) for s in (-1, 1)}
    combined = stratified_estimates(design, runs, metric, replicates=50, judge=True)["r"]
    assert combined[0] == pytest.approx(5 / 13)


def test_p_at_k_keeps_a_query_whose_sampled_entries_came_out_not_relevant_by_hand() -> None:
    """Two queries of four entries, ranked 1-4 by the run, every judge grade 1 (one class);
    P@4 at relevance level 1. People labelled query 0's e0 (π 1, relevant) and query 1's e4 and
    e5 (π 0.5 each, not relevant); the other entries are unlabelled.

    P(relevant | judge 1) = 1 / (1 + 2 + 2) = 1/5. Relevant in the top 4 by the difference
    estimator: query 0 4·(1/5) + (1 − 1/5) = 8/5, query 1 4·(1/5) + 2·2·(0 − 1/5) = 0. Query 1's
    post-stratified relevant count is 0 too, so leaving it out (as nDCG and R do) gives
    (8/5)/4 = 2/5. P@4's mean is instead the sum over both queries over the expected number of
    queries with a relevant entry: 1 for query 0 (people saw one), 1 − (1 − 1/5)² = 9/25 for
    query 1 (two unlabelled entries), so (2/5 + 0) / (1 + 9/25) = 5/17.
    """
    query = np.repeat([0, 1], 4)
    sampled = np.array([1, 0, 0, 0, 1, 1, 0, 0], dtype=bool)
    probability = np.array([1.0] + [0.5] * 7)
    people = np.array([1, 0, 0, 0, 0, 0, 0, 0])
    design = Design(query, np.ones(8, dtype=int), sampled, probability, people, 2)
    runs = {"r": (np.arange(8), np.array([1, 2, 3, 4] * 2))}
    found = stratified_estimates(design, runs, Metric("P@4", "P", 4), replicates=0, judge=True)["r"]
    assert found[0] == pytest.approx(5 / 17)


def test_relevant_counts_by_hand_with_the_best_rank_in_the_model() -> None:
    """Two queries of four entries, the judge grading every one 1: each query's top-ranked
    entry is drawn for sure (π 1), the three deeper ones with π 0.5. People found both top
    entries relevant and query 1's two deeper sampled entries (weight 2 each) not relevant.

    The model P(relevant | judge 1, best rank): rank 1 → 2/2 = 1, unranked → 0/4 = 0. Query 0:
    predictions 1 + 0 + 0 + 0 = 1, and its one sampled entry's residual 1 − 1 = 0, so 1.
    Query 1: predictions 1, residuals 0, so 1. Without the rank, query 0's one top-ranked label
    stands for its three deeper entries and its count is 4.
    """
    from calibration.stratified_estimation import _Totals

    query = np.repeat([0, 1], 4)
    sampled = np.array([1, 0, 0, 0, 1, 1, 1, 0], dtype=bool)
    probability = np.array([1.0, 0.5, 0.5, 0.5] * 2)
    people = np.array([1, 0, 0, 0, 1, 0, 0, 0])
    rank = np.array([1, 0, 0, 0] * 2)
    relevant = np.array([0.0, 1.0, 1.0, 1.0])
    with_rank = Design(query, np.ones(8, dtype=int), sampled, probability, people, 2, rank=rank)
    assert _Totals(with_rank, 0, None).poststratified(relevant)[0].tolist() == pytest.approx([1.0, 1.0])
    alone = Design(query, np.ones(8, dtype=int), sampled, probability, people, 2)
    # The judge grade alone: P = (1 + 1) / (1 + 1 + 2 + 2) = 1/3; query 0: 4/3 + (1 − 1/3) · 4 = 4;
    # query 1: 4/3 + 4 · ((1 − 1/3) + 2 · (−1/3) · 2) / 5 = 4/5, below the 1 people saw, so 1.
    assert _Totals(alone, 0, None).poststratified(relevant)[0].tolist() == pytest.approx([4.0, 1.0])


def test_people_only_ndcg_by_hand_from_relevant_counts_of_the_best_rank() -> None:
    """Two queries of four entries; every run ranks the first entry of each first, the others
    below the top 10; people labelled the first entries (π 1, relevant) and query 1's e5
    (relevant) and e6 (not), each with π 0.5 (weight 2).

    People-only relevant counts: the model P(relevant | best rank) is 2/2 = 1 at rank 1 and
    (2·1 + 2·0)/4 = 1/2 below the top 10, so each query's prediction is 1 + 3/2 = 2.5; the
    residuals, per (query, ranked within the top 10 or not), are 0 (query 1's below: weights
    2·(1 − 1/2) + 2·(0 − 1/2) = 0). Ideal DCG@10 of 2.5 relevant entries: 1 + 1/log2 3 + 0.5/2.
    The run ranks e0..e3 and e4..e7 at 1..4; Horvitz-Thompson DCG@10: query 0 finds e0 (1),
    query 1 e4 (1) and e5 at rank 2 (2/log2 3). The judge's grades play no part.
    """
    query = np.repeat([0, 1], 4)
    sampled = np.array([1, 0, 0, 0, 1, 1, 1, 0], dtype=bool)
    probability = np.array([1.0, 0.5, 0.5, 0.5] * 2)
    people = np.array([1, 0, 0, 0, 1, 1, 0, 0])
    rank = np.array([1, 0, 0, 0] * 2)
    runs = {"r": (np.arange(8), np.array([1, 2, 3, 4] * 2))}
    ideal = 1 + 1 / math.log2(3) + 0.5 / 2
    expected = (1 / ideal + (1 + 2 / math.log2(3)) / ideal) / 2
    metric = Metric("nDCG@10", "nDCG", 10)
    for judge in (np.array([3, 0, 1, 2, 0, 3, 2, 1]), np.zeros(8, dtype=int)):
        design = Design(query, judge, sampled, probability, people, 2, rank=rank)
        assert stratified_estimates(design, runs, metric, replicates=0, judge=False)["r"][0] == pytest.approx(expected)


def test_people_only_intervals_cover_where_few_labels_a_query_see_no_relevant_entry() -> None:
    """A pool of 40 queries of 20 entries, relevance falling with the rank and varying by query,
    every query with a relevant entry; people label a fifth of it (about 4 entries a query,
    mostly the top-ranked). Over 100 samples (fixed seeds) the people-only 95% intervals of two
    runs' nDCG@10 cover the full-label value in at least 80% of them and the estimates are
    within 0.06 of it on average: counted per query by Horvitz-Thompson, most queries' relevant
    count would be 0 or one deep label's weight, and a query would count only where people
    happened to find a relevant entry."""
    rng = np.random.default_rng(7)
    n_q, per = 40, 20
    query = np.repeat(np.arange(n_q), per)
    position = np.tile(np.arange(1, per + 1), n_q)
    rank = np.where(position <= 10, position, 0)
    share_relevant = rng.uniform(0.1, 1.0, n_q)[query] / np.sqrt(position)
    people = (rng.random(len(query)) < share_relevant).astype(int)
    for q in range(n_q):
        if not people[query == q].any():
            people[q * per + rng.integers(per)] = 1
    judge = np.clip(people * 2 + rng.integers(-1, 2, len(query)), 0, 3)
    runs = {"a": (np.arange(len(query)), position),
            "b": (np.arange(len(query)), np.where(position <= 10, 11 - position, position))}
    qrels = {str(q): {str(e): int(people[e]) for e in np.flatnonzero(query == q)} for q in range(n_q)}
    rankings = {name: {str(q): [str(e) for e in sorted(np.flatnonzero(query == q), key=lambda e: ranks[e])]
                       for q in range(n_q)} for name, (_, ranks) in runs.items()}
    truth = evaluate_many(qrels, rankings, ["nDCG@10"])
    probability = stratified_probabilities(judge, rank, 0.2 * len(query))
    sample_rng = np.random.default_rng(1)
    hits = {name: 0 for name in runs}
    values: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(100):
        design = Design(query, judge, poisson_sample(probability, sample_rng), probability, people, n_q, rank=rank)
        found = stratified_estimates(design, runs, Metric("nDCG@10", "nDCG", 10), replicates=100, seed=i, judge=False)
        for name in runs:
            value, low, high = interval(found[name])
            values[name].append(value)
            hits[name] += low <= truth[name].metrics["nDCG@10"] <= high
    for name in runs:
        assert hits[name] >= 80, (name, hits[name])
        assert abs(np.mean(values[name]) - truth[name].metrics["nDCG@10"]) < 0.06, name


def test_stratified_estimates_equal_ir_measures_when_everything_is_labelled() -> None:
    rng = np.random.default_rng(4)
    n_q, per = 5, 14
    entries = [(q, f"d{i}") for q in range(n_q) for i in range(per)]
    index = {e: i for i, e in enumerate(entries)}
    people = rng.integers(0, 4, len(entries))
    judge = np.clip(people + rng.integers(-1, 2, len(entries)), 0, 3)
    design = Design(np.array([q for q, _ in entries]), judge, np.ones(len(entries), bool), np.ones(len(entries)),
                    people, n_q)
    rankings = {f"r{r}": {q: list(rng.permutation([d for qq, d in entries if qq == q])) for q in range(n_q)}
                for r in range(2)}
    qrels = {str(q): {d: int(people[index[(q, d)]]) for qq, d in entries if qq == q} for q in range(n_q)}
    truth = evaluate_many(qrels, {n: {str(q): v for q, v in r.items()} for n, r in rankings.items()},
                          ["nDCG@10", "nDCG(dcg='exp-log2')@10", "P@5", "R@5"])
    positions = {n: run_positions(design, index, r, 10) for n, r in rankings.items()}
    for metric, key in [(Metric("nDCG@10", "nDCG", 10), "nDCG@10"), (Metric("e", "nDCG", 10, gains=(0, 1, 3, 7)),
                        "nDCG(dcg='exp-log2')@10"), (Metric("P@5", "P", 5), "P@5"), (Metric("R@5", "R", 5), "R@5")]:
        for judge in (True, False):
            found = stratified_estimates(design, positions, metric, replicates=20, judge=judge)
            for name in rankings:
                assert found[name][0] == pytest.approx(truth[name].metrics[key])
                assert interval(found[name])[1:] == pytest.approx((truth[name].metrics[key],) * 2)


def test_probabilities_sum_to_the_budget_and_never_reach_zero() -> None:
    rank = np.array([1, 2, 3, 10, 11, 0] * 20)
    grade = np.array([0, 1, 2, 3, 1, 0] * 20)
    p = stratified_probabilities(grade, rank, 24.0)
    assert p.sum() == pytest.approx(24.0) and p.min() > 0 and p.max() <= 1
    # The same (grade, best rank) stratum gets the same probability; high ranks and unsure grades more.
    assert len({round(float(x), 12) for x in p[rank == 2]}) == 1
    assert p[1] > p[0] and p[0] > p[4]


def test_stratified_eval_json_and_a_metric_it_cannot_estimate(tmp_path: Path) -> None:
    db, people, judge, runs = _project(tmp_path)
    planned = plan_sample(db, "s2", design="stratified", share=0.4, judge="j1", seed=2, caller=OWNER)
    golden = _label_and_freeze(tmp_path, db, people, [(q, d) for q, d, _ in planned.items])
    result = CliRunner().invoke(cli, ["eval", golden, *runs, "--judge", "j1", "--sample", "s2", "--metric",
                                      "nDCG@10", "--metric", "RR", "--metric", "R@5", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    cell = out["runs"]["run1.trec"]["nDCG@10"]
    assert set(cell) >= KEYS and cell["low"] <= cell["value"] <= cell["high"]
    assert cell["people_low"] <= cell["people_only"] <= cell["people_high"]
    assert (cell["n_people"], cell["n_judge"]) == (len(planned.items), 96)
    assert len(out["warnings"]) == 1 and "labelled entries per query" in out["warnings"][0]  # ~5 of 12 per query
    rr = out["runs"]["run1.trec"]["RR"]
    assert rr["value"] is None and rr["low"] is None and "not a sum of per-entry terms" in rr["why"]
    assert rr["judge_only"] is not None
    text = CliRunner().invoke(cli, ["eval", golden, *runs, "--judge", "j1", "--sample", "s2", "--metric", "RR"])
    assert "not estimated: RR" in text.output
    compared = CliRunner().invoke(cli, ["compare", golden, *runs, "--judge", "j1", "--sample", "s2", "--json"])
    assert compared.exit_code == 0, compared.output
    diff = json.loads(compared.output)
    assert diff["baseline"] == "run0.trec" and set(diff["runs"]) == {"run1.trec", "run2.trec"}
    assert set(diff["runs"]["run2.trec"]["nDCG@10"]) >= KEYS


def test_compare_with_judge_and_sample_writes_its_html_report(tmp_path: Path) -> None:
    db, people, judge, runs = _project(tmp_path)
    planned = plan_sample(db, "s2", design="stratified", share=0.4, judge="j1", seed=2, caller=OWNER)
    golden = _label_and_freeze(tmp_path, db, people, [(q, d) for q, d, _ in planned.items])
    page = tmp_path / "cmp.html"
    args = ["compare", golden, *runs, "--judge", "j1", "--sample", "s2", "--metric", "nDCG@10"]
    result = CliRunner().invoke(cli, [*args, "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert page.is_file(), "compare --judge --sample --html wrote no file"
    html = page.read_text(encoding="utf-8")
    estimates = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    assert "differences from run0.trec" in html and "sample s2 (stratified" in html
    for run in ("run1.trec", "run2.trec"):
        cell = estimates["runs"][run]["nDCG@10"]
        # every number the text table prints for the run, in the page's row for it
        row = next(r for r in html.split("<tr>") if f"<td>{run}</td>" in r)
        for value in (cell["value"], cell["low"], cell["high"], cell["people_only"], cell["judge_only"]):
            assert f"{value:.4f}" in row
    for line in result.output.splitlines()[:2]:  # the text's first lines, said in the page too
        assert line.replace("&", "&amp;") in html
    assert "labelled entries per query" in html  # its warning too


def test_eval_refuses_a_sample_people_have_not_finished(tmp_path: Path) -> None:
    db, people, judge, runs = _project(tmp_path)
    planned = plan_sample(db, "s1", design="queries", share=0.5, seed=1, caller=OWNER)
    golden = _label_and_freeze(tmp_path, db, people, [(q, d) for q, d, _ in planned.items][:-3])
    result = CliRunner().invoke(cli, ["eval", golden, *runs, "--judge", "j1", "--sample", "s1"])
    assert result.exit_code == 1 and "3 of the 48 entries of sample 's1' have no label" in result.output


def test_eval_names_who_holds_the_unlabelled_sample_entries_and_how_to_release_them(tmp_path: Path) -> None:
    db, people, judge, runs = _project(tmp_path)
    path = str(tmp_path / "p.db")
    planned = plan_sample(db, "s1", design="queries", share=0.5, seed=1, caller=OWNER)
    assert CliRunner().invoke(cli, ["label-settings", path, "sample=s1", "overlap=0", "batch_size=6"]).exit_code == 0
    a, _ = access.add_annotator(db, "ann")
    b, _ = access.add_annotator(db, "bo b")
    for _ in range(4):  # ann labels 4 of her batch of 6, bo b none of his
        item = scheduling.next_item(db, a.id)
        labels.record_judgment(db, a.id, item.query_id, item.doc_id, people[(item.query_id, item.doc_id)], 1.0)
    late = scheduling.next_item(db, b.id)
    assert CliRunner().invoke(cli, ["freeze", path, "--version", "v1"]).exit_code == 0
    labels.record_judgment(db, b.id, late.query_id, late.doc_id, people[(late.query_id, late.doc_id)], 1.0)
    result = CliRunner().invoke(cli, ["eval", f"{path}@v1", *runs, "--judge", "j1", "--sample", "s1"])
    assert result.exit_code == 1
    assert "44 of the 48 entries of sample 's1' have no label in version 'v1'" in result.output
    assert result.output.strip().endswith(
        "label them and freeze a new version. Of them: 7 unlabelled in the queue of bo b (5), ann (2); "
        "1 labelled since v1 was frozen; 36 handed out to nobody yet. To hand an annotator's unlabelled entries to "
        f"whoever asks next: goldpool release {path} 'bo b'"), result.output
    released = CliRunner().invoke(cli, ["release", path, "bo b"])
    assert released.exit_code == 0 and released.output == (
        "bo b: released 5 unlabelled entries; the next annotator who asks gets them\n"), released.output
    label_all(db, [a.id])  # ann alone finishes the sample, bo b's entries included
    assert CliRunner().invoke(cli, ["freeze", path, "--version", "v2"]).exit_code == 0
    result = CliRunner().invoke(cli, ["eval", f"{path}@v2", *runs, "--judge", "j1", "--sample", "s1"])
    assert result.exit_code == 0, result.output
    assert {(q, d) for q, d in db.execute("SELECT query_id, doc_id FROM judgments")} == {
        (q, d) for q, d, _ in planned.items}
    unknown = CliRunner().invoke(cli, ["release", path, "nobody"])
    assert unknown.exit_code == 1 and "nobody" in unknown.output


def test_plan_sample_json_and_bad_input_leaves_the_project_unchanged(tmp_path: Path) -> None:
    db, *_ = _project(tmp_path)
    path = str(tmp_path / "p.db")
    result = CliRunner().invoke(cli, ["plan-sample", path, "--name", "s", "--budget", "30", "--design", "stratified",
                                      "--judge", "j1", "--seed", "5", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) >= {"sample", "design", "judgments", "items"} and out["judgments"] == len(out["items"])
    assert set(out["items"][0]) == {"query_id", "doc_id", "probability"}
    assert all(0 < i["probability"] <= 1 for i in out["items"])
    stored = db.execute("SELECT count(*) FROM sample_items WHERE sample = 's'").fetchone()[0]
    assert stored == out["judgments"]
    few = CliRunner().invoke(cli, ["plan-sample", path, "--name", "q", "--share", "0.25", "--seed", "5"])
    assert few.exit_code == 0 and "warning: only 2 labelled queries" in few.output, few.output
    assert "--design stratified" in few.output
    for bad, message in [(["--name", "s", "--share", "0.2"], "exists already"),
                         (["--name", "t", "--share", "1.5"], "give a share in (0, 1]"),
                         (["--name", "t", "--share", "0.2", "--judge", "nobody"], "judge 'nobody' has no relevance"),
                         (["--name", "t"], "give either a share")]:
        refused = CliRunner().invoke(cli, ["plan-sample", path, *bad])
        assert refused.exit_code == 1 and message in refused.output, refused.output
    assert db.execute("SELECT count(*) FROM samples").fetchone()[0] == 2
    with pytest.raises(sqlite3.IntegrityError, match="a sample does not change"):
        db.execute("DELETE FROM sample_items WHERE sample = 's'")


def test_the_app_hands_out_only_the_sample(tmp_path: Path) -> None:
    db, *_ = _project(tmp_path)
    planned = plan_sample(db, "s", design="stratified", share=0.3, judge="j1", seed=7, caller=OWNER)
    chosen = {(q, d) for q, d, _ in planned.items}
    assert 0 < len(chosen) < 96
    with pytest.raises(StoreError, match="no sample 'nope'"):
        scheduling.set_settings(db, {"sample": "nope"}, caller=OWNER)
    with pytest.raises(StoreError, match="cannot be combined with an adaptive strategy"):
        scheduling.set_settings(db, {"sample": "s", "strategy": "rrf"}, caller=OWNER)
    result = CliRunner().invoke(cli, ["label-settings", str(tmp_path / "p.db"), "sample=s", "overlap=0"])
    assert result.exit_code == 0, result.output
    a, _ = access.add_annotator(db, "a")
    b, _ = access.add_annotator(db, "b")
    assert label_all(db, [a.id, b.id]) == len(chosen)
    labelled = {(q, d) for q, d in db.execute("SELECT query_id, doc_id FROM judgments")}
    assert labelled == chosen
    # Off again: the rest of the pool is handed out.
    scheduling.set_settings(db, {"sample": "off"}, caller=OWNER)
    assert label_all(db, [a.id]) == 96 - len(chosen)


def test_setting_a_sample_releases_batches_handed_out_before_it(tmp_path: Path) -> None:
    db, *_ = _project(tmp_path)
    path = str(tmp_path / "p.db")
    scheduling.set_settings(db, {"overlap": 0.5, "batch_size": 6}, caller=OWNER)
    a, _ = access.add_annotator(db, "a")
    b, _ = access.add_annotator(db, "b")
    first = scheduling.next_item(db, a.id)  # a's batch (and b's overlap copies of it)
    labels.record_judgment(db, a.id, first.query_id, first.doc_id, 1, 1.0)
    scheduling.next_item(db, b.id)
    planned = plan_sample(db, "s", design="stratified", share=0.3, judge="j1", seed=7, caller=OWNER)
    chosen = {(q, d) for q, d, _ in planned.items}
    held = {(q, d, who) for q, d, who in db.execute(
        "SELECT a.query_id, a.doc_id, n.name FROM assignments a JOIN annotators n ON n.id = a.annotator_id "
        "WHERE a.shown_order > 0 AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = a.query_id "
        "AND j.doc_id = a.doc_id AND j.annotator_id = a.annotator_id)")}
    outside = Counter(who for q, d, who in held if (q, d) not in chosen)
    assert outside["a"] > 0 and outside["b"] > 0
    result = CliRunner().invoke(cli, ["label-settings", path, "sample=s"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        f"sample s: released {sum(outside.values())} unlabelled entries outside the sample from the queues they were "
        f"handed out to before it (a {outside['a']}, b {outside['b']}); they go out again when the sample is off")
    before = {(q, d) for q, d in db.execute("SELECT query_id, doc_id FROM judgments")}
    label_all(db, [a.id, b.id])
    labelled = {(q, d) for q, d in db.execute("SELECT query_id, doc_id FROM judgments")}
    assert labelled - before <= chosen and chosen <= labelled  # nobody is left labelling outside the sample
    again = CliRunner().invoke(cli, ["label-settings", path, "sample=s"])
    assert again.output.splitlines()[0].startswith("sample s: released 0 unlabelled entries")
    # Off again: the released entries are handed out once more, none lost.
    scheduling.set_settings(db, {"sample": "off"}, caller=OWNER)
    label_all(db, [a.id, b.id])
    pooled = {(q, d) for q, d in db.execute("SELECT query_id, doc_id FROM pool")}
    assert {(q, d) for q, d in db.execute("SELECT query_id, doc_id FROM judgments")} == pooled


def test_plan_with_a_judge_needs_fewer_judgments_than_people_alone(tmp_path: Path) -> None:
    db, people, judge, runs = _project(tmp_path)
    _label_and_freeze(tmp_path, db, people, list(people)[:60])
    result = CliRunner().invoke(cli, ["plan", "--judge", "j1", "--width", "0.2", "--db", str(tmp_path / "p.db"), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    y = np.array([people[k] for k in list(people)[:60]], dtype=float)
    assert out["pairs"] == 60 and out["people_alone"] == math.ceil((2 * 1.959964 * y.std(ddof=1) / 0.2) ** 2)
    assert out["with_judge"] < out["people_alone"]
    missing = CliRunner().invoke(cli, ["plan", "--judge", "j1", "--width", "0.2"])
    assert missing.exit_code == 2 and "--judge, --width and --db go together" in missing.output


def test_the_app_shows_an_annotator_only_the_sample(project) -> None:
    from app_fixtures import press, sign_in
    from labeler.ui import state
    from labeler.store import connect

    with connect(project.path) as db:
        planned = plan_sample(db, "s", design="stratified", share=0.4, seed=3, caller=OWNER)
        scheduling.set_settings(db, {"sample": "s", "overlap": 0}, caller=OWNER)
    chosen = {(q, d) for q, d, _ in planned.items}
    assert 0 < len(chosen) < project.n_items
    at = sign_in(project.annotator_token)
    shown = []
    while state.CURRENT in at.session_state and at.session_state[state.CURRENT] and len(shown) <= project.n_items:
        shown.append(tuple(at.session_state[state.CURRENT]))
        press(at, state.grade_key(1))
    assert set(shown) == chosen and len(shown) == len(chosen)
    with connect(project.path) as db:
        assert {(q, d) for q, d in db.execute("SELECT query_id, doc_id FROM judgments")} == chosen
    assert not at.exception


def test_with_a_sample_handed_out_the_progress_line_counts_the_samples_entries(project) -> None:
    from app_fixtures import add_judgments, sign_in
    from labeler.ui import state
    from labeler.store import connect

    with connect(project.path) as db:
        planned = plan_sample(db, "s", design="queries", share=0.6, seed=4, caller=OWNER)
        scheduling.set_settings(db, {"sample": "s", "overlap": 0}, caller=OWNER)
    chosen = sorted((q, d) for q, d, _ in planned.items)
    assert len(chosen) == 10 and project.n_items == 15
    outside = next((q, d) for q, d in [(f"q{i}", f"q{i}-d1") for i in (1, 2, 3)] if (q, d) not in chosen)
    # A label outside the sample (given before the sample was set) is no part of the sample's work.
    add_judgments(project.path, project.admin_id, {outside: 1, chosen[0]: 2})
    at = sign_in(project.annotator_token)
    assert [p.proto.text for p in at.get("progress")] == ["Project: 1 of 10 sample items labelled (10%) · you: 0 labelled"]
    at.button(key=state.grade_key(1)).click().run()
    assert [p.proto.text for p in at.get("progress")] == ["Project: 2 of 10 sample items labelled (20%) · you: 1 labelled"]
    assert not at.exception


def test_query_level_columns_equal_query_level_one_by_one() -> None:
    from calibration.judge_assisted import query_level_columns

    rng = np.random.default_rng(8)
    y = rng.uniform(0.2, 0.9, (7, 5))
    fl = np.clip(y + rng.normal(0, 0.1, y.shape), 0, 1)
    fu = rng.uniform(0.2, 0.9, (30, 5))
    many = query_level_columns(y, fl, fu)
    for k in range(5):
        c = query_level(y[:, k], fl[:, k], fu[:, k])
        assert [a[k] for a in many] == pytest.approx([c.value, c.low, c.high, c.people_only, c.people_low, c.people_high])


def test_the_whole_path_plan_label_in_the_app_judge_freeze_eval(project, tmp_path: Path) -> None:
    """Plan a sample, label it in the app, judge the pool from the scripted server, freeze, and
    eval with intervals."""
    import re

    from app_fixtures import QUERIES, press, sign_in
    from judge_server import JudgeServer
    from labeler.ui import state

    path = str(project.path)
    runner = CliRunner()
    server = JudgeServer(answer=lambda message: str(int((re.findall(r"number (\d)", message) or ["0"])[-1]) % 4))
    try:
        judged = runner.invoke(cli, ["run-judge", path, "--judge", "j", "--model", "m", "--base-url", server.url,
                                     "--task", "relevance"], env={"OPENAI_API_KEY": "k"})
    finally:
        server.close()
    assert judged.exit_code == 0, judged.output
    planned = runner.invoke(cli, ["plan-sample", path, "--name", "s", "--share", "0.6", "--seed", "4", "--json"])
    assert planned.exit_code == 0, planned.output
    items = {(i["query_id"], i["doc_id"]) for i in json.loads(planned.output)["items"]}
    assert len({q for q, _ in items}) == 2 and len(items) == 10
    assert runner.invoke(cli, ["label-settings", path, "sample=s", "overlap=0"]).exit_code == 0
    at = sign_in(project.annotator_token)
    shown = []
    while state.CURRENT in at.session_state and at.session_state[state.CURRENT] and len(shown) <= project.n_items:
        query_id, doc_id = at.session_state[state.CURRENT]
        shown.append((query_id, doc_id))
        # People agree with the judge on some entries only, and grade each query differently.
        press(at, state.grade_key((int(doc_id[-1]) + int(query_id[-1])) % 3))
    assert set(shown) == items
    assert runner.invoke(cli, ["freeze", path, "--version", "v1"]).exit_code == 0
    for name, reverse in (("a.trec", False), ("b.trec", True)):
        lines = [f"{q} Q0 {q}-d{n} {i + 1} {10 - i} {name}\n" for q in QUERIES
                 for i, n in enumerate(sorted(range(1, 6), reverse=reverse))]
        (tmp_path / name).write_text("".join(lines), encoding="utf-8")
    result = runner.invoke(cli, ["eval", f"{path}@v1", str(tmp_path / "a.trec"), str(tmp_path / "b.trec"), "--judge", "j",
                                 "--sample", "s", "--metric", "nDCG@5", "--json"])
    assert result.exit_code == 0, result.output
    cell = json.loads(result.output)["runs"]["b.trec"]["nDCG@5"]
    assert set(cell) >= KEYS and (cell["n_people"], cell["n_judge"]) == (10, 15)
    assert cell["low"] <= cell["value"] <= cell["high"]
    assert not at.exception
