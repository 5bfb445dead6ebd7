"""Judge-assisted estimates of run metrics: coverage, width, ordering, over repeated samples.

    python bench/judge_assisted.py                               # every collection, 500 repetitions
    python bench/judge_assisted.py --collections dl19 --reps 100  # one collection, quicker
    python bench/judge_assisted.py --external DIR                # where ../shared/external is

People's labels are the full labels of a collection (the truth: every run's nDCG@10 under them,
computed by ir-measures); each repetition hides all but a designed sample of them, at 5%, 10%
and 20% of the pool, and estimates every run's nDCG@10 and every paired difference three ways:
judge-assisted (``calibration.judge_assisted``: PPI++ over queries for the ``queries``
design, the difference estimator with a design bootstrap for ``stratified``), people only (the
same sample; under ``stratified`` Horvitz-Thompson sums over relevant counts of the best rank) and judge only (the judge's labels
everywhere, by ir-measures). Reported per collection, design and budget: coverage of the 95%
intervals of runs and of pairs, the mean width against people only on the same sample
(``width``) and against people labelling whole queries at the same budget (``w/q``), the spread
of the combined estimates over the repetitions against the spread of people-only ones (``sd``: the
width ratio two exact intervals would have, whatever either bootstrap makes of its own), Kendall's
τ between the estimated and the true ordering of runs (mean over repetitions), and where the
judge-tuned runs are placed (true rank / median estimated rank / judge-only rank, 1 = best; each
collection's first lines give their full-label values and the gap to the nearest other run), and
the share of run intervals not given (``no-ci``: under ``queries``, where the labelled queries
show no spread; such a repetition counts as not covering).

Collections and runs:

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
  the first half of each query's words stands in for dense, and says so): BM25, dense, their RRF fusion, BM25 and dense
  with the top 10 reversed (degraded), BM25 with its ranks 1-5 pushed below 15 (degraded), the
  fusion with 3 of its top 10 swapped for random pool entries (degraded), and 2 judge-tuned runs
  (BM25's top 30 reranked by the judge's grade plus noise of SD 0.3 and 1.0). The pool is the
  union of every run's top 20; people = the qrels (Cranfield's codes 1, 2, 3, 4 as grades 3,
  2, 1, 1; binary relevant as grade 2 for the judge's sake, gain 1; unjudged = 0). The judge
  is **simulated**: each entry's judge grade is drawn from DL19's real UMBRELA-given-NIST
  confusion by grade. Queries without a relevant document are left out.

``--true-counts`` is a diagnosis, not an estimator: the ``stratified`` estimates take each
query's true numbers of entries by grade (the ideal DCG) instead of estimating them from the
sample, everything else unchanged, to show how much of a shortfall those counts cause.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

# One BLAS thread: the sums are small, and on a shared 2-core machine more threads only contend.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))  # after the checkout: bench/pooling.py must not hide the package

from calibration.judge_assisted import poisson_sample, query_level_columns, stratified_probabilities  # noqa: E402
from calibration.stratified_estimation import Design, Metric, run_positions, stratified_estimates  # noqa: E402
from calibration.metrics import evaluate_many  # noqa: E402

METRIC = "nDCG@10"
SHARES = (0.05, 0.10, 0.20)
GRADED_NOISE = (0.5, 0.8, 1.2, 1.7, 2.4, 3.4, 5.0)
TUNED_NOISE = (0.3, 1.0)
Qrels = dict[str, dict[str, int]]


def read_qrels(path: Path) -> Qrels:
    out: Qrels = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    return out


def load_dl(external: Path, year: int) -> tuple[Qrels, Qrels]:
    folder = external / "trec_dl_llm_vs_nist_qrels"
    name = {19: "qrels.dl19-passage.txt", 20: "qrels.dl20-passage.txt", 21: "qrels.dl21-passage.txt"}[year]
    people = read_qrels(folder / "nist_qrels" / name)
    judge = read_qrels(folder / "llm_qrels" / f"umbrela_zeroshot_gpt-4.dl{year}.txt")
    return people, judge


def load_dl23(external: Path, judge_name: str) -> tuple[Qrels, Qrels]:
    folder = external / "llmjudge_trec_dl23"
    people = read_qrels(folder / "human" / "llmjudge_test_qrel_idx.txt")
    judge = read_qrels(folder / "llm_labels" / f"{judge_name}.txt")
    return people, judge


def clip_grades(qrels: Qrels) -> Qrels:
    return {q: {d: min(3, max(0, g)) for d, g in docs.items()} for q, docs in qrels.items()}


def confusion(people: Qrels, judge: Qrels) -> np.ndarray:
    """P(judge grade | people grade), 4 x 4, over the pairs both graded."""
    counts = np.zeros((4, 4))
    for q, docs in people.items():
        for d, g in docs.items():
            if d in judge.get(q, {}):
                counts[min(3, max(0, g)), min(3, max(0, judge[q][d]))] += 1
    return counts / counts.sum(axis=1, keepdims=True)


def graded_runs(people: Qrels, judge: Qrels, rng: np.random.Generator) -> tuple[dict[str, dict[str, list[str]]], list[str]]:
    """7 runs of graded quality (people's grade + noise) and 2 tuned to the judge (judge's grade + noise)."""
    runs: dict[str, dict[str, list[str]]] = {}
    for family, labels, noises in (("graded", people, GRADED_NOISE), ("tuned", judge, TUNED_NOISE)):
        for sd in noises:
            ranking = {}
            for q, docs in people.items():
                ids = sorted(docs)
                score = np.array([labels.get(q, {}).get(d, 0) for d in ids]) + rng.normal(0, sd, len(ids))
                ranking[q] = [ids[i] for i in np.argsort(-score, kind="stable")]
            runs[f"{family}-{sd:g}"] = ranking
    return runs, [f"tuned-{sd:g}" for sd in TUNED_NOISE]


def bm25_rankings(docs: dict[str, str], queries: dict[str, str], *, half: bool) -> dict[str, list[str]]:
    """goldpool's BM25 top 200 per query (``half``: with the first half of each query's words only)."""
    from pooling.retrieve import retrieve
    from pooling.types import content_hash

    doc_ids = sorted(docs)
    texts = [docs[d] for d in doc_ids]
    asked = [(q, " ".join(t.split()[: max(1, len(t.split()) // 2)]) if half else t) for q, t in sorted(queries.items())]
    result = retrieve(asked, doc_ids, [content_hash("", t) for t in texts], lambda: iter(texts),
                      lambda positions: [texts[p] for p in positions], bm25_depth=200, dense_depth=0, progress=False)
    return result.rankings["bm25"]


def classic(name: str, external: Path, dl19: np.ndarray, rng: np.random.Generator, dense: bool):
    """People's qrels over the pool, the simulated judge's, the runs and the judge-tuned names."""
    import pooling_strategies as ps

    ps.EXTERNAL = external
    docs, queries, binary = ps.LOADERS[name]()
    if dense or (ps.OUT / f"{name}-rankings-{ps.CANDIDATE_DEPTH}.json").exists():
        rankings = ps.rankings_for(name, docs, queries)
    else:  # without dense retrieval: BM25 with the whole query and with half of it
        rankings = {"bm25": bm25_rankings(docs, queries, half=False), "dense": bm25_rankings(docs, queries, half=True)}
        print(f"{name}: no cached dense ranking (--dense computes it): the 'dense' runs are BM25 over the first half "
              "of each query's words", flush=True)
    grades: dict[str, dict[str, int]] = {}
    if name == "cranfield":
        for line in (external / "cranfield" / "cranqrel").read_text().splitlines():
            if line.strip():
                q, d, code = line.split()
                grades.setdefault(q, {})[d] = {1: 3, 2: 2, 3: 1, 4: 1}.get(int(code), 0)
    else:
        grades = {q: {d: 1 for d in ds} for q, ds in binary.items()}
    queries_used = sorted(q for q in queries if any(g > 0 for g in grades.get(q, {}).values()))
    bm25, dense = rankings["bm25"], rankings["dense"]

    def rrf(q: str) -> list[str]:
        score: dict[str, float] = {}
        for ranking in (bm25[q], dense[q]):
            for i, d in enumerate(ranking):
                score[d] = score.get(d, 0.0) + 1.0 / (60 + i + 1)
        return sorted(score, key=lambda d: (-score[d], d))

    runs: dict[str, dict[str, list[str]]] = {"bm25": {}, "dense": {}, "rrf": {}, "bm25-reversed10": {},
                                              "dense-reversed10": {}, "bm25-pushed5": {}, "rrf-swapped3": {}}
    for q in queries_used:
        runs["bm25"][q] = bm25[q]
        runs["dense"][q] = dense[q]
        fused = rrf(q)
        runs["rrf"][q] = fused
        runs["bm25-reversed10"][q] = bm25[q][:10][::-1] + bm25[q][10:]
        runs["dense-reversed10"][q] = dense[q][:10][::-1] + dense[q][10:]
        runs["bm25-pushed5"][q] = bm25[q][5:15] + bm25[q][:5] + bm25[q][15:]
        swapped = list(fused)
        outside = [d for d in fused[50:200]]
        for slot, pick in zip(rng.choice(10, 3, replace=False), rng.choice(len(outside), 3, replace=False), strict=True):
            swapped[slot] = outside[pick]
        runs["rrf-swapped3"][q] = list(dict.fromkeys(swapped))
    # People's grade of every pooled entry (the union of the runs' top 20), then the simulated judge.
    people: Qrels = {}
    for q in queries_used:
        pooled = dict.fromkeys(d for r in runs.values() for d in r[q][:20])
        people[q] = {d: grades.get(q, {}).get(d, 0) for d in pooled}
    as_nist = {0: 0, 1: 2, 2: 2, 3: 3} if name != "cranfield" else {0: 0, 1: 1, 2: 2, 3: 3}
    judge: Qrels = {q: {d: int(rng.choice(4, p=dl19[as_nist[g]])) for d, g in ds.items()} for q, ds in people.items()}
    tuned = []
    for sd in TUNED_NOISE:
        name_ = f"tuned-{sd:g}"
        ranking = {}
        for q in queries_used:
            top = list(dict.fromkeys(bm25[q][:30]))
            score = np.array([judge[q].get(d, 0) for d in top]) + rng.normal(0, sd, len(top))
            ranking[q] = [top[i] for i in np.argsort(-score, kind="stable")] + bm25[q][30:]
        runs[name_] = ranking
        tuned.append(name_)
    # Re-pool with the tuned runs' top 20 too, so every top-10 entry of every run has both labels.
    for q in queries_used:
        for r in tuned:
            for d in runs[r][q][:20]:
                if d not in people[q]:
                    people[q][d] = grades.get(q, {}).get(d, 0)
                    judge[q][d] = int(rng.choice(4, p=dl19[as_nist[people[q][d]]]))
    return people, judge, runs, tuned


def kendall(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


def ranks(values: np.ndarray) -> np.ndarray:
    """1 = best."""
    order = np.argsort(-values, kind="stable")
    out = np.empty(len(values), dtype=int)
    out[order] = np.arange(1, len(values) + 1)
    return out


def bench(label: str, people: Qrels, judge: Qrels, runs: Mapping[str, Mapping[str, list[str]]], tuned: list[str],
          reps: int, replicates: int, seed: int, designs: list[str]) -> list[dict]:
    queries = sorted(q for q, ds in people.items() if any(g > 0 for g in ds.values()))
    people = {q: people[q] for q in queries}
    judge_full = {q: {d: judge.get(q, {}).get(d, 0) for d in people[q]} for q in queries}
    names = list(runs)
    ranked = {r: {q: list(runs[r][q]) for q in queries if q in runs[r]} for r in names}
    truth_scores = evaluate_many(people, ranked, [METRIC])
    judge_scores = evaluate_many(judge_full, ranked, [METRIC])
    truth = np.array([truth_scores[r].metrics[METRIC] for r in names])
    judge_only = np.array([judge_scores[r].metrics[METRIC] for r in names])
    per_q_people = np.array([[truth_scores[r].per_query[q][METRIC] for q in queries] for r in names])
    per_q_judge = np.array([[judge_scores[r].per_query.get(q, {}).get(METRIC, 0.0) for q in queries] for r in names])
    pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    truth_pairs = np.array([truth[i] - truth[j] for i, j in pairs])
    pair_people = np.array([per_q_people[i] - per_q_people[j] for i, j in pairs])
    pair_judge = np.array([per_q_judge[i] - per_q_judge[j] for i, j in pairs])
    entries = [(q, d) for q in queries for d in sorted(people[q])]
    qi = {q: i for i, q in enumerate(queries)}
    index = {(qi[q], d): i for i, (q, d) in enumerate(entries)}
    grade_people = np.array([people[q][d] for q, d in entries])
    grade_judge = np.clip(np.array([judge_full[q][d] for q, d in entries]), 0, 3)
    positions = {r: run_positions(Design(np.array([qi[q] for q, _ in entries]), grade_judge, np.zeros(len(entries), bool),
                                         np.ones(len(entries)), grade_people, len(queries)),
                                  index, {qi[q]: docs for q, docs in ranked[r].items()}, 10) for r in names}
    best = np.zeros(len(entries), dtype=int)
    for e, rk in positions.values():
        current = best[e]
        best[e] = np.where((current == 0) | (rk < current), rk, current)
    rng = np.random.default_rng(seed)
    true_rank = ranks(truth)
    tuned_idx = [names.index(t) for t in tuned]
    # How far each tuned run is from the nearest other run under full labels: a rank no sample
    # can be expected to resolve when the gap is a fraction of the estimates' spread.
    for k in tuned_idx:
        near = min((j for j in range(len(names)) if j != k), key=lambda j: abs(truth[j] - truth[k]))
        print(f"{label}: {names[k]} {truth[k]:.4f} under full labels, {abs(truth[k] - truth[near]):.4f} from "
              f"{names[near]}", flush=True)
    rows = []
    n_entries, n_queries = len(entries), len(queries)
    query_of = np.array([qi[q] for q, _ in entries])
    for share in SHARES:
        budget = share * n_entries
        people_query_width = None
        for design in designs:
            started = time.perf_counter()
            cover_runs, cover_pairs, cover_people = [], [], []
            widths, widths_people = [], []
            tau_c, tau_p = [], []
            tuned_ranks = []
            refused_ = []
            estimates, estimates_people = [], []
            if design == "stratified":
                probability = stratified_probabilities(grade_judge, best, budget)
            for _ in range(reps):
                if design == "queries":
                    m = min(n_queries, max(2, round(share * n_queries)))
                    chosen = np.zeros(n_queries, dtype=bool)
                    chosen[rng.choice(n_queries, m, replace=False)] = True
                    est, low, high, p_est, p_low, p_high = query_level_columns(
                        per_q_people[:, chosen].T, per_q_judge[:, chosen].T, per_q_judge[:, ~chosen].T)
                    pl, ph = query_level_columns(pair_people[:, chosen].T, pair_judge[:, chosen].T,
                                                 pair_judge[:, ~chosen].T, bounds=(-1.0, 1.0))[1:3]
                    pair_hit = (pl <= truth_pairs) & (truth_pairs <= ph)
                else:
                    sampled = poisson_sample(probability, rng)
                    design_ = Design(query_of, grade_judge, sampled, probability, grade_people, n_queries, rank=best)
                    spec = Metric(METRIC, "nDCG", 10)
                    seed_ = int(rng.integers(1 << 31))
                    combined = stratified_estimates(design_, positions, spec, replicates=replicates, seed=seed_)
                    alone = stratified_estimates(design_, positions, spec, replicates=replicates, seed=seed_, judge=False)
                    c_mat = np.array([combined[r] for r in names])  # (R, B+1)
                    h_mat = np.array([alone[r] for r in names])
                    z = 1.959964
                    sd_c = np.std(c_mat[:, 1:], axis=1, ddof=1)
                    sd_h = np.std(h_mat[:, 1:], axis=1, ddof=1)
                    est = np.clip(c_mat[:, 0], 0, 1)
                    low, high = np.clip(c_mat[:, 0] - z * sd_c, 0, 1), np.clip(c_mat[:, 0] + z * sd_c, 0, 1)
                    p_est = np.clip(h_mat[:, 0], 0, 1)
                    p_low, p_high = np.clip(h_mat[:, 0] - z * sd_h, 0, 1), np.clip(h_mat[:, 0] + z * sd_h, 0, 1)
                    diff = np.array([c_mat[i] - c_mat[j] for i, j in pairs])  # (pairs, B+1)
                    half = z * np.std(diff[:, 1:], axis=1, ddof=1)
                    pair_hit = (diff[:, 0] - half <= truth_pairs) & (truth_pairs <= diff[:, 0] + half)
                cover_runs.append(np.mean((low <= truth) & (truth <= high)))
                cover_pairs.append(np.mean(pair_hit))
                cover_people.append(np.mean((p_low <= truth) & (truth <= p_high)))
                # An interval the estimator cannot give (nan: no spread among the labelled queries)
                # counts as not covering; widths are those of the intervals given.
                refused_.append(np.mean(np.isnan(low)))
                widths.append(np.nanmean(high - low) if not np.isnan(low).all() else np.nan)
                widths_people.append(np.nanmean(p_high - p_low) if not np.isnan(p_low).all() else np.nan)
                estimates.append(est)
                estimates_people.append(p_est)
                tau_c.append(kendall(est, truth))
                tau_p.append(kendall(p_est, truth))
                tuned_ranks.append(ranks(est)[tuned_idx])
            width_people = float(np.nanmean(widths_people))
            if design == "queries":
                people_query_width = width_people
            rows.append({
                "collection": label, "design": design, "share": share, "queries": n_queries, "entries": n_entries,
                "coverage_runs": float(np.mean(cover_runs)), "coverage_pairs": float(np.mean(cover_pairs)),
                "coverage_people": float(np.mean(cover_people)), "width": float(np.mean(widths)),
                "width_ratio": float(np.nanmean(widths)) / width_people if width_people else math.nan,
                "sd_ratio": float(np.nanmean(np.nanstd(estimates, axis=0) / np.nanstd(estimates_people, axis=0))),
                "width_vs_query_people": (float(np.nanmean(widths)) / people_query_width) if people_query_width else math.nan,
                "no_interval": float(np.mean(refused_)),
                "tau": float(np.mean(tau_c)), "tau_people": float(np.nanmean(tau_p)),
                "tau_judge": kendall(judge_only, truth),
                "tuned": "; ".join(f"{int(true_rank[k])}/{int(np.median([t[n] for t in tuned_ranks]))}/"
                                   f"{int(ranks(judge_only)[k])}" for n, k in enumerate(tuned_idx)),
                "seconds": time.perf_counter() - started,
            })
            r = rows[-1]
            print(f"{label:<10}{design:<11}{share:>5.0%}{r['coverage_runs']:>7.3f}{r['coverage_pairs']:>7.3f}"
                  f"{r['coverage_people']:>7.3f}{r['width_ratio']:>7.2f}{r['width_vs_query_people']:>7.2f}{r['sd_ratio']:>7.2f}"
                  f"{r['tau']:>7.2f}{r['tau_people']:>7.2f}{r['tau_judge']:>7.2f}  {r['tuned']:<16}{r['no_interval']:>7.3f}"
                  f"{r['seconds']:>6.0f}s",
                  flush=True)
    return rows


HEADER = (f"{'collection':<10}{'design':<11}{'budget':>5}{'cov':>7}{'cov-pr':>7}{'cov-pp':>7}{'width':>7}{'w/q':>7}{'sd':>7}"
          f"{'tau':>7}{'tau-pp':>7}{'tau-j':>7}  {'tuned true/est/judge':<16}{'no-ci':>7}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--external", type=Path, default=ROOT.parent / "shared" / "external")
    parser.add_argument("--collections", nargs="*",
                        default=["dl19", "dl20", "dl21", "dl23", "vaswani", "cranfield", "cisi"])
    parser.add_argument("--designs", nargs="*", default=["queries", "stratified"])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--replicates", type=int, default=200, help="Design-bootstrap replicates per estimate.")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--dl23-judge", default="willia-umbrela1")
    parser.add_argument("--true-counts", action="store_true",
                        help="Diagnosis: stratified estimates with each query's true relevant counts (see above).")
    parser.add_argument("--dense", action="store_true",
                        help="Compute the dense rankings of Vaswani, Cranfield, CISI when not cached (minutes of CPU).")
    args = parser.parse_args()
    if args.true_counts:
        import calibration.stratified_estimation as estimators

        def true_counts(totals, h):  # noqa: ANN001, ANN202 - stands in for _Totals.poststratified
            # The bench gives every entry its people grade, so the pool's true sums are at hand.
            summed = np.bincount(totals.d.query, weights=h[totals.d.people], minlength=totals.q_count)
            return np.repeat(summed[None, :], totals.weights.shape[0], axis=0)

        estimators._Totals.poststratified = true_counts
    rng = np.random.default_rng(args.seed)
    dl19_people, dl19_judge = load_dl(args.external, 19)
    dl19 = confusion(dl19_people, dl19_judge)
    print(f"{args.reps} repetitions per figure, metric {METRIC}; cov = coverage of runs, cov-pr = of paired differences, "
          "cov-pp = people only; width = mean width / people only on the same sample; w/q = / people labelling whole "
          "queries; sd = spread of the estimates over repetitions / people only's; tau = Kendall's tau to the "
          "full-label order (combined, people only, judge only); tuned = the "
          "judge-tuned runs' ranks (true / median estimated / judge only); no-ci = share of run intervals not given "
          "(no spread among the labelled queries; counted as not covering)")
    print(f"dl23's judge: {args.dl23_judge}; *-sim: a judge simulated from DL19's UMBRELA-given-NIST confusion")
    print(HEADER)
    for name in args.collections:
        if name.startswith("dl"):
            year = int(name[2:])
            people, judge = load_dl23(args.external, args.dl23_judge) if year == 23 else load_dl(args.external, year)
            people, judge = clip_grades(people), clip_grades(judge)
            runs, tuned = graded_runs(people, judge, rng)
            label = name
        else:
            people, judge, runs, tuned = classic(name, args.external, dl19, rng, args.dense)
            label = name[:5] + "-sim"  # the judge is simulated
        bench(label, people, judge, runs, tuned, args.reps, args.replicates,
              int(rng.integers(1 << 31)), args.designs)


if __name__ == "__main__":
    main()
