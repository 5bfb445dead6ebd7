"""Judge-assisted estimates of run metrics: coverage, width, ordering, over repeated samples.

    python bench/judge_assisted.py                                # every collection, 500 repetitions
    python bench/judge_assisted.py --collections dl19 --reps 100  # one collection, quicker
    python bench/judge_assisted.py --collections sim --designs stratified active
    python bench/judge_assisted.py --estimator difference         # the stratified difference estimator
    python bench/judge_assisted.py --external DIR                 # where ../shared/external is
    python bench/judge_assisted.py --designs stratified active --reps 8 --replicates 60 --spread-replicates 3  # README
    python bench/judge_assisted.py --collections dl19 --shares 0.2 # one budget

People's labels are the full labels of a collection (the truth: every run's nDCG@10, P@10 and
R@100 under them, computed by ir-measures); each repetition hides all but a designed sample of
them, at 5%, 10% and 20% of the pool, and estimates every run's metrics and every paired
difference three ways: judge-assisted, people only (the same sample, the judge's grades
unread) and judge only (the judge's labels everywhere, by ir-measures). Designs:

- ``queries``: people label every entry of a share of the queries; PPI++ over queries.
- ``stratified``: Poisson sampling within (query, judge grade, best rank) strata
  (``calibration.judge_assisted.stratified_probabilities``).
- ``active``: Poisson sampling with ``π ∝ |a_e| √v_e`` (``calibration.active_design``: where
  the judge is unsure and a label moves the metrics most), from the pool and the judge alone.

Under ``stratified`` and ``active`` the estimator is ``--estimator envelope`` (default; what
``eval --judge --sample`` does: a run's interval the union of the difference and the ratio
estimator's, its estimate the difference estimator's; pairs from the ratio estimator),
``ratio`` (``calibration.ratio_estimates``: draws of the unlabelled labels, DCG and ideal DCG
together), ``difference`` (``calibration.judge_assisted.stratified_estimates``, relevant counts
plugged into the ideal DCG) or ``hybrid`` (a run's interval the difference estimator's, pairs
the ratio estimator's). Reported per collection, metric, design and budget: coverage of
the 95% intervals of runs (``cov``) and of pairs (``cov-pr``), of people only (``cov-pp``),
the mean width against people only on the same sample (``width``) and against people
labelling whole queries at the same budget (``w/q``), the spread of the estimates over the
repetitions against people only's (``sd``), Kendall's τ to the full-label order (combined,
people only, judge only), where the judge-tuned runs are placed (true rank / median estimated
rank / judge-only rank, 1 = best), the share of run intervals not given (``no-ci``: under
``queries``, where the labelled queries show no spread; counted as not covering) and, for
nDCG@10 under a designed sample, the planner's expected width (``plan-sample``'s) over the
mean width the intervals had (``plan/w``).

Collections (``bench/judge_assisted_collections.py``):

- **TREC DL 2019, 2020, 2021** (``trec_dl_llm_vs_nist_qrels``): people = NIST grades 0-3, judge
  = UMBRELA GPT-4 zero-shot grades on the same pairs. **DL 2023** (``llmjudge_trec_dl23``):
  people = NIST grades of the 4,423 LLMJudge test pairs, judge = one of the 33 label sets
  (``--dl23-judge``, default willia-umbrela1). The pool is every judged pair. Runs are not
  public, so two families are built over the pool, with a fixed seed: 7 runs of graded
  quality (each query's pool ranked by the NIST grade plus Gaussian noise of SD 0.5, 0.8, 1.2,
  1.7, 2.4, 3.4, 5) and 2 runs tuned to the judge (ranked by the judge's grade plus noise of SD
  0.3 and 1.0): judge-only evaluation ranks these too high.
- **Vaswani, Cranfield, CISI**: real runs built with goldpool's BM25 and dense retrieval
  (``bench/pooling_strategies.py`` caches them; without that cache and ``--dense``, BM25 over
  the first half of each query's words stands in for dense, and says so): BM25, dense, their
  RRF fusion, BM25 and dense with the top 10 reversed, BM25 with its ranks 1-5 pushed below 15,
  the fusion with 3 of its top 10 swapped for random pool entries, and 2 judge-tuned runs
  (BM25's top 30 reranked by the judge's grade plus noise of SD 0.3 and 1.0). The pool is the
  union of every run's top 20; people = the qrels (Cranfield's codes 1, 2, 3, 4 as grades 3,
  2, 1, 1; binary relevant as grade 1, read as NIST's 2 by the judge; unjudged = 0). The judge
  is **simulated**: each entry's judge grade is drawn from DL19's real UMBRELA-given-NIST
  confusion by grade. Queries without a relevant document are left out.
- **sim**: 60 queries of 200 entries, relevant counts from 2 to 100 a query (even on a log
  scale), grades 1-3, the judge simulated from DL19's confusion, runs as for TREC DL.

``--true-counts`` is a diagnosis of the ``difference`` estimator: its estimates take each
query's true numbers of entries by grade (the ideal DCG, and which queries have a relevant
entry) instead of estimating them.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# One BLAS thread: the sums are small, and on a shared 2-core machine more threads only contend.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))  # after the checkout: bench/pooling.py must not hide the package

import judge_assisted_collections as collections  # noqa: E402

from calibration import active_design, ratio_estimates  # noqa: E402
from calibration.judge_assisted import poisson_sample, query_level_columns, stratified_probabilities  # noqa: E402
from calibration.stratified_estimation import Design, Metric, run_positions, stratified_estimates  # noqa: E402
from calibration.metrics import evaluate_many, parse_metrics  # noqa: E402

METRICS = ("nDCG@10", "P@10", "R@100")
SHARES = (0.05, 0.10, 0.20)
Z = 1.959964


@dataclass
class Collection:
    """A collection's pool and runs as arrays, and the full-label truth per metric."""

    label: str
    names: list[str]
    tuned: list[int]
    truth: dict[str, np.ndarray]  # metric -> (runs,)
    judge_only: dict[str, np.ndarray]
    per_query_people: dict[str, np.ndarray]  # metric -> (runs, queries)
    per_query_judge: dict[str, np.ndarray]
    pairs: list[tuple[int, int]]
    query: np.ndarray
    people: np.ndarray
    judge: np.ndarray
    best: np.ndarray
    positions: dict[str, tuple[np.ndarray, np.ndarray]]
    n_queries: int


def prepare(label: str, people, judge, runs, tuned: list[str], metrics: list[str]) -> Collection:
    """The arrays every repetition reads, and the truth (ir-measures over the full labels)."""
    queries = sorted(q for q, ds in people.items() if any(g > 0 for g in ds.values()))
    people = {q: people[q] for q in queries}
    judge_full = {q: {d: judge.get(q, {}).get(d, 0) for d in people[q]} for q in queries}
    names = list(runs)
    ranked = {r: {q: list(runs[r][q]) for q in queries if q in runs[r]} for r in names}
    by_people, by_judge = evaluate_many(people, ranked, metrics), evaluate_many(judge_full, ranked, metrics)

    def per_query(scores, m):
        return np.array([[scores[r].per_query.get(q, {}).get(m, 0.0) for q in queries] for r in names])

    entries = [(q, d) for q in queries for d in sorted(people[q])]
    qi = {q: i for i, q in enumerate(queries)}
    index = {(qi[q], d): i for i, (q, d) in enumerate(entries)}
    query = np.array([qi[q] for q, _ in entries])
    grade_people = np.array([people[q][d] for q, d in entries])
    grade_judge = np.clip(np.array([judge_full[q][d] for q, d in entries]), 0, 3)
    bare = Design(query, grade_judge, np.zeros(len(entries), bool), np.ones(len(entries)), grade_people, len(queries))
    depth = max(int(dict(getattr(m, "params", {})).get("cutoff") or 10) for m in parse_metrics(metrics, 1).values())
    positions = {r: run_positions(bare, index, {qi[q]: docs for q, docs in ranked[r].items()}, depth) for r in names}
    best = np.zeros(len(entries), dtype=int)
    for e, rk in positions.values():
        top = rk <= 10
        current = best[e[top]]
        best[e[top]] = np.where((current == 0) | (rk[top] < current), rk[top], current)
    return Collection(label, names, [names.index(t) for t in tuned],
                      {m: np.array([by_people[r].metrics[m] for r in names]) for m in metrics},
                      {m: np.array([by_judge[r].metrics.get(m, 0.0) for r in names]) for m in metrics},
                      {m: per_query(by_people, m) for m in metrics}, {m: per_query(by_judge, m) for m in metrics},
                      [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))],
                      query, grade_people, grade_judge, best, positions, len(queries))


def specs(metrics: list[str]) -> dict[str, Metric]:
    """ir-measures names -> the designed-sample estimators' :class:`Metric`."""
    from calibration.stratified_estimation import stratified_metric

    return {m: stratified_metric(m, measure, 1) for m, measure in parse_metrics(metrics, 1).items()}


def kendall(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


def ranks(values: np.ndarray) -> np.ndarray:
    """1 = best."""
    order = np.argsort(-values, kind="stable")
    out = np.empty(len(values), dtype=int)
    out[order] = np.arange(1, len(values) + 1)
    return out


def probabilities(col: Collection, design: str, budget: float) -> np.ndarray:
    """The inclusion probabilities of a designed sample of ``budget`` expected judgments."""
    if design == "stratified":
        return stratified_probabilities(col.judge, col.best, budget)
    s = active_design.sensitivity(col.query, col.judge, col.best)
    return active_design.active_probabilities(active_design.neyman_score(s), budget)


def planned_width(col: Collection, probability: np.ndarray) -> float:
    """The planner's expected width of a run's nDCG@10 interval (``plan-sample``'s figure)."""
    s = active_design.sensitivity(col.query, col.judge, col.best)
    return 2 * active_design.expected_half_width(s, probability, col.n_queries)


def query_rep(col: Collection, share: float, rng: np.random.Generator, metrics: list[str]) -> dict:
    """One repetition of the ``queries`` design: per metric (est, low, high, p_est, p_low,
    p_high, pair hits)."""
    m_ = min(col.n_queries, max(2, round(share * col.n_queries)))
    chosen = np.zeros(col.n_queries, dtype=bool)
    chosen[rng.choice(col.n_queries, m_, replace=False)] = True
    out = {}
    for m in metrics:
        y, f = col.per_query_people[m], col.per_query_judge[m]
        runs = query_level_columns(y[:, chosen].T, f[:, chosen].T, f[:, ~chosen].T)
        dy = np.array([y[i] - y[j] for i, j in col.pairs])
        df = np.array([f[i] - f[j] for i, j in col.pairs])
        low, high = query_level_columns(dy[:, chosen].T, df[:, chosen].T, df[:, ~chosen].T, bounds=(-1.0, 1.0))[1:3]
        truth = np.array([col.truth[m][i] - col.truth[m][j] for i, j in col.pairs])
        out[m] = (*runs, (low <= truth) & (truth <= high))
    return out


def designed_rep(col: Collection, probability: np.ndarray, rng: np.random.Generator, replicates: int,
                 estimator: str, metrics: dict[str, Metric], refits: int | None = None) -> dict:
    """One repetition of a designed sample (``stratified`` or ``active``), as :func:`query_rep`."""
    sampled = poisson_sample(probability, rng)
    design = Design(col.query, col.judge, sampled, probability, col.people, col.n_queries, rank=col.best)
    seed = int(rng.integers(1 << 31))
    uses_ratio, uses_difference = estimator != "difference", estimator != "ratio"
    if uses_ratio:
        with_judge = ratio_estimates.draw_labels(design, replicates=replicates, seed=seed, spread_replicates=refits)
        alone = ratio_estimates.draw_labels(design, replicates=replicates, seed=seed, judge=False,
                                            spread_replicates=refits)
    out = {}
    for name, spec in metrics.items():
        ratio = difference = None
        if uses_ratio:
            ratio = tuple(np.array([v[r] for r in col.names]) for v in (
                ratio_estimates.metric_values(design, with_judge, col.positions, spec),
                ratio_estimates.metric_values(design, alone, col.positions, spec)))
        if uses_difference:
            difference = tuple(np.array([v[r] for r in col.names]) for v in (
                stratified_estimates(design, col.positions, spec, replicates=replicates, seed=seed),
                stratified_estimates(design, col.positions, spec, replicates=replicates, seed=seed, judge=False)))
        out[name] = _intervals(col, name, estimator, ratio, difference)
    return out


def _bounds(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, low, high) per row of ``values`` (column 0 the estimate, then replicates), in [0, 1]."""
    sd = np.std(values[:, 1:], axis=1, ddof=1)
    return tuple(np.clip(x, 0, 1) for x in (values[:, 0], values[:, 0] - Z * sd, values[:, 0] + Z * sd))


def _intervals(col: Collection, name: str, estimator: str, ratio, difference) -> tuple:
    """Runs' and pairs' intervals of one metric. ``hybrid``: a run's interval from the difference
    estimator, pairs from the ratio estimator; ``envelope``: a run's interval the union of the two
    estimators' (a conservative bound), its estimate the difference estimator's, pairs from ratio."""
    runs = difference if estimator != "ratio" else ratio
    pairs = ratio if ratio is not None else difference
    c, lo, hi = _bounds(runs[0])
    h, p_lo, p_hi = _bounds(runs[1])
    if estimator == "envelope":
        _, r_lo, r_hi = _bounds(ratio[0])
        _, q_lo, q_hi = _bounds(ratio[1])
        lo, hi, p_lo, p_hi = np.minimum(lo, r_lo), np.maximum(hi, r_hi), np.minimum(p_lo, q_lo), np.maximum(p_hi, q_hi)
    values = pairs[0]
    diff = np.array([values[i] - values[j] for i, j in col.pairs])
    half = Z * np.std(diff[:, 1:], axis=1, ddof=1)
    truth = np.array([col.truth[name][i] - col.truth[name][j] for i, j in col.pairs])
    return c, lo, hi, h, p_lo, p_hi, (diff[:, 0] - half <= truth) & (truth <= diff[:, 0] + half)


def summarise(col: Collection, metric: str, design: str, share: float, reps: list, seconds: float,
              query_width: float | None, plan_width: float | None) -> dict:
    """The row of one (collection, metric, design, budget) from its repetitions."""
    truth = col.truth[metric]
    est, low, high, p_est, p_low, p_high, pair_hit = (np.array([r[i] for r in reps]) for i in range(7))
    width = float(np.nanmean(high - low))
    width_people = float(np.nanmean(p_high - p_low))
    tuned = np.array([ranks(e)[col.tuned] for e in est])
    true_rank, judge_rank = ranks(truth), ranks(col.judge_only[metric])
    return {
        "collection": col.label, "metric": metric, "design": design, "share": share,
        "coverage_runs": float(np.mean((low <= truth) & (truth <= high))),
        "coverage_pairs": float(np.mean(pair_hit)),
        "coverage_people": float(np.mean((p_low <= truth) & (truth <= p_high))),
        "width": width, "width_ratio": width / width_people if width_people else math.nan,
        "width_vs_query_people": width / query_width if query_width else math.nan,
        "sd_ratio": float(np.nanmean(np.nanstd(est, axis=0) / np.nanstd(p_est, axis=0))),
        "tau": float(np.nanmean([kendall(e, truth) for e in est])),
        "tau_people": float(np.nanmean([kendall(e, truth) for e in p_est])),
        "tau_judge": kendall(col.judge_only[metric], truth),
        "tuned": "; ".join(f"{true_rank[k]}/{int(np.median(tuned[:, n]))}/{judge_rank[k]}"
                           for n, k in enumerate(col.tuned)),
        "no_interval": float(np.mean(np.isnan(low))), "plan_ratio": plan_width / width if plan_width else math.nan,
        "seconds": seconds,
    }


HEADER = (f"{'collection':<10}{'metric':<8}{'design':<11}{'budget':>6}{'cov':>7}{'cov-pr':>7}{'cov-pp':>7}"
          f"{'width':>7}{'w/q':>7}{'sd':>7}{'tau':>7}{'tau-pp':>7}{'tau-j':>7}  {'tuned true/est/judge':<21}"
          f"{'no-ci':>6}{'plan/w':>7}{'abs-w':>7}")


def line(r: dict) -> str:
    return (f"{r['collection']:<10}{r['metric']:<8}{r['design']:<11}{r['share']:>6.0%}{r['coverage_runs']:>7.3f}"
            f"{r['coverage_pairs']:>7.3f}{r['coverage_people']:>7.3f}{r['width_ratio']:>7.2f}"
            f"{r['width_vs_query_people']:>7.2f}{r['sd_ratio']:>7.2f}{r['tau']:>7.2f}{r['tau_people']:>7.2f}"
            f"{r['tau_judge']:>7.2f}  {r['tuned']:<21}{r['no_interval']:>6.3f}{r['plan_ratio']:>7.2f}{r['width']:>7.3f}"
            f"{r['seconds']:>6.0f}s")


def bench(col: Collection, reps: int, replicates: int, seed: int, designs: list[str], estimator: str,
          metrics: list[str], refits: int | None = None, shares: tuple[float, ...] = SHARES) -> list[dict]:
    """Every (metric, design, budget) row of one collection."""
    rng = np.random.default_rng(seed)
    spec = specs(metrics)
    n_entries = len(col.query)
    rows = []
    for share in shares:
        query_width: dict[str, float] = {}
        for design in designs:
            started = time.perf_counter()
            plan = None
            if design == "queries":
                results = [query_rep(col, share, rng, metrics) for _ in range(reps)]
            else:
                probability = probabilities(col, design, share * n_entries)
                plan = planned_width(col, probability)
                results = [designed_rep(col, probability, rng, replicates, estimator, spec, refits) for _ in range(reps)]
            seconds = time.perf_counter() - started
            for m in metrics:
                per_metric = [r[m] for r in results]
                if design == "queries":
                    query_width[m] = float(np.nanmean([r[5] - r[4] for r in per_metric]))
                plan_m = plan if m == "nDCG@10" else None
                rows.append(summarise(col, m, design, share, per_metric, seconds, query_width.get(m), plan_m))
                print(line(rows[-1]), flush=True)
    return rows


def load(name: str, args: argparse.Namespace, dl19: np.ndarray, rng: np.random.Generator):
    """(label, people, judge, runs, tuned) of collection ``name``."""
    if name == "sim":
        return ("sim2-100", *collections.simulated(dl19, rng))
    if name.startswith("dl"):
        year = int(name[2:])
        if year == 23:
            people, judge = collections.load_dl23(args.external, args.dl23_judge)
        else:
            people, judge = collections.load_dl(args.external, year)
        people, judge = collections.clip_grades(people), collections.clip_grades(judge)
        return (name, people, judge, *collections.graded_runs(people, judge, rng))
    return (name[:5] + "-sim", *collections.classic(name, args.external, dl19, rng, args.dense))


def _true_counts() -> None:
    """``--true-counts``: the difference estimator's relevant counts replaced by the true ones."""
    import calibration.stratified_estimation as estimators

    def true_counts(totals, h):  # noqa: ANN001, ANN202 - stands in for _Totals.poststratified
        # The bench gives every entry its people grade, so the pool's true sums are at hand.
        summed = np.bincount(totals.d.query, weights=h[totals.d.people], minlength=totals.q_count)
        return np.repeat(summed[None, :], totals.weights.shape[0], axis=0)

    def true_presence(totals, h):  # noqa: ANN001, ANN202 - stands in for _Totals.any_probability
        present = np.bincount(totals.d.query, weights=h[totals.d.people], minlength=totals.q_count) > 0
        return np.repeat(present[None, :].astype(float), totals.weights.shape[0], axis=0)

    estimators._Totals.poststratified = true_counts
    estimators._Totals.any_probability = true_presence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--external", type=Path, default=ROOT.parent / "shared" / "external")
    parser.add_argument("--collections", nargs="*",
                        default=["dl19", "dl20", "dl21", "dl23", "vaswani", "cranfield", "cisi", "sim"])
    parser.add_argument("--designs", nargs="*", default=["queries", "stratified", "active"],
                        choices=["queries", "stratified", "active"])
    parser.add_argument("--estimator", choices=["ratio", "difference", "hybrid", "envelope"], default="envelope",
                        help="The estimator of the designed samples (see above).")
    parser.add_argument("--metrics", nargs="*", default=list(METRICS))
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--replicates", type=int, default=200, help="Design-bootstrap replicates per estimate.")
    parser.add_argument("--spread-replicates", type=int, default=None,
                        help="Replicates that refit the ratio model's query spreads (default: the estimator's).")
    parser.add_argument("--shares", nargs="*", type=float, default=list(SHARES))
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--dl23-judge", default="willia-umbrela1")
    parser.add_argument("--true-counts", action="store_true",
                        help="Diagnosis: difference estimates with each query's true relevant counts (see above).")
    parser.add_argument("--dense", action="store_true",
                        help="Compute the dense rankings of Vaswani, Cranfield, CISI when not cached (minutes of CPU).")
    args = parser.parse_args()
    if args.true_counts:
        _true_counts()
    rng = np.random.default_rng(args.seed)
    dl19 = collections.confusion(*collections.load_dl(args.external, 19))
    print(f"{args.reps} repetitions per figure, estimator {args.estimator}; cov = coverage of runs, cov-pr = of "
          "paired differences, cov-pp = people only; width = mean width / people only on the same sample; w/q = / "
          "people labelling whole queries; sd = spread of the estimates over repetitions / people only's; tau = "
          "Kendall's tau to the full-label order (combined, people only, judge only); tuned = the judge-tuned runs' "
          "ranks (true / median estimated / judge only); no-ci = share of run intervals not given; plan/w = the "
          "planner's expected nDCG@10 width / the mean width; abs-w = the mean width itself")
    print(f"dl23's judge: {args.dl23_judge}; *-sim: a judge simulated from DL19's UMBRELA-given-NIST confusion")
    print(HEADER)
    for name in args.collections:
        label, people, judge, runs, tuned = load(name, args, dl19, rng)
        col = prepare(label, people, judge, runs, tuned, args.metrics)
        for k in col.tuned:  # how far each tuned run is from the nearest other run under full labels
            truth = col.truth[args.metrics[0]]
            near = min((j for j in range(len(col.names)) if j != k), key=lambda j: abs(truth[j] - truth[k]))
            print(f"{label}: {col.names[k]} {truth[k]:.4f} {args.metrics[0]} under full labels, "
                  f"{abs(truth[k] - truth[near]):.4f} from {col.names[near]}", flush=True)
        bench(col, args.reps, args.replicates, int(rng.integers(1 << 31)), args.designs, args.estimator, args.metrics,
              args.spread_replicates, tuple(args.shares))


if __name__ == "__main__":
    main()
