"""goldpool eval against pytrec_eval used directly: 10,000 queries x 1,000-document runs.

Both sides start from the same two files (a TREC run and graded qrels) and end with per-query
values and means of the same five trec_eval measures:

- **pytrec_eval directly**: ``pytrec_eval.parse_run`` / ``parse_qrel`` (the readers it ships),
  ``RelevanceEvaluator(...).evaluate(run)``, means over queries.
- **goldpool eval**: what ``goldpool eval QRELS RUN --metrics ...`` does (validating run reader,
  trec_eval ranking, ir-measures through its pytrec_eval provider), called in-process.

Every query has a relevant document, so both average over the same queries. The values are
compared (largest per-query difference) and the time ratio printed; the goal is <= 1.3x.

    python bench/eval.py [--queries 10000] [--depth 1000] [--dir DIR] [--repeat 2]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METRICS = {"nDCG@10": "ndcg_cut_10", "R@100": "recall_100", "RR": "recip_rank", "P@10": "P_10", "AP": "map"}


def make_data(directory: Path, n_queries: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    """A run of ``depth`` documents per query (3-decimal scores: some ties) and graded qrels."""
    run, qrels = directory / "run.trec", directory / "qrels.txt"
    if run.exists() and qrels.exists():
        return run, qrels
    rng = random.Random(seed)
    with run.open("w") as r, qrels.open("w") as q:
        for n in range(n_queries):
            docs = rng.sample(range(1_000_000), depth)
            r.writelines(f"q{n} Q0 d{d} {i + 1} {rng.random() * 10:.3f} sys\n" for i, d in enumerate(docs))
            judged = rng.sample(docs[:300], 30) + [rng.randrange(1_000_000, 2_000_000)]
            grades = [rng.choice((0, 0, 1, 2, 3)) for _ in judged]
            grades[-1] = 1  # every query has a relevant document (this one unretrieved)
            q.writelines(f"q{n} 0 d{d} {g}\n" for d, g in zip(judged, grades, strict=True))
    return run, qrels


def with_pytrec_eval(run_path: Path, qrels_path: Path) -> tuple[dict[str, dict[str, float]], float]:
    import pytrec_eval

    started = time.perf_counter()
    with qrels_path.open() as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with run_path.open() as handle:
        run = pytrec_eval.parse_run(handle)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(METRICS.values())).evaluate(run)
    means = {m: sum(v[m] for v in per_query.values()) / len(per_query) for m in METRICS.values()}
    seconds = time.perf_counter() - started
    assert means
    return per_query, seconds


def with_goldpool(run_path: Path, qrels_path: Path, metrics: list[str]):
    from labeler.retrieval.golden_set import evaluate_runs, load_golden
    from labeler.store.access import OWNER

    started = time.perf_counter()
    golden = load_golden(str(qrels_path), caller=OWNER)
    scores = evaluate_runs(golden, [run_path], metrics)[run_path.name]
    return scores, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--dir", type=Path, default=None, help="Keep (and reuse) the generated files here.")
    parser.add_argument("--repeat", type=int, default=2, help="Rounds of each side, alternating; the fastest counts.")
    args = parser.parse_args()
    directory = args.dir or Path(tempfile.mkdtemp(prefix="goldpool-eval-bench-"))
    directory.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    run_path, qrels_path = make_data(directory, args.queries, args.depth)
    print(f"data: {args.queries} queries x {args.depth} documents ({time.perf_counter() - started:.1f} s to make)")

    import ir_measures  # noqa: F401 - imported once before timing, as pytrec_eval is
    import pandas  # noqa: F401

    # Alternate the two sides and keep each side's fastest round: the machine is shared, and
    # the minimum is the time least disturbed by other work.
    t_ref = t_ours = float("inf")
    for _ in range(args.repeat):
        reference, seconds = with_pytrec_eval(run_path, qrels_path)
        t_ref = min(t_ref, seconds)
        ours, seconds = with_goldpool(run_path, qrels_path, list(METRICS))
        t_ours = min(t_ours, seconds)
    worst = max(abs(ours.per_query[q][name] - reference[q][trec]) for q in reference for name, trec in METRICS.items())
    assert set(ours.per_query) == set(reference), "different query sets"
    print(f"{'metric':<10}{'pytrec_eval':>14}{'goldpool':>14}")
    for name, trec in METRICS.items():
        mean_ref = sum(v[trec] for v in reference.values()) / len(reference)
        print(f"{name:<10}{mean_ref:>14.6f}{ours.metrics[name]:>14.6f}")
    print(f"largest per-query difference over {len(reference)} queries x {len(METRICS)} metrics: {worst:.2e}")
    print(f"pytrec_eval directly: {t_ref:.1f} s; goldpool eval: {t_ours:.1f} s; ratio {t_ours / t_ref:.2f}x (goal <= 1.3x; "
          f"fastest of {args.repeat} alternating rounds each)")
    default, t_default = with_goldpool(run_path, qrels_path, ["nDCG@10", "nDCG(dcg='exp-log2')@10", "R@10", "RR", "P@10", "Judged@10"])
    print(f"goldpool eval, default metric set (adds exp-gain nDCG and Judged@10): {t_default:.1f} s "
          f"({t_default / t_ref:.2f}x); Judged@10 = {default.metrics['Judged@10']:.4f}")


if __name__ == "__main__":
    main()
