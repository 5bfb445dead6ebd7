"""goldpool eval against trec_eval's own expected outputs: every shared metric, per query and mean.

Reads ``../shared/external/trec_eval_reference`` (trec_eval's test data): ``qrels.test`` and
``results.test`` scored against ``out.test.aq`` (``trec_eval -m all_trec -q``), and the graded
``qrels.rel_level`` against ``out.test.aql`` (``-l2``: relevance level 2). Every trec_eval
measure that ir-measures can name (``ir_measures.parse_trec_measure``) is scored through
goldpool's own path (its run reader and ranking, then :func:`calibration.metrics.evaluate_many`)
and compared with the printed value (trec_eval prints 4 decimals: equal means within 5e-5).
Both the trec_eval 10.0 outputs and the 9.0.4 ones are checked: 10.0 changed
``iprec_at_recall`` rounding, which pytrec_eval (9.0.x based) does not have.

    python bench/trec_eval_check.py
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
REFERENCE = ROOT.parent / "shared" / "external" / "trec_eval_reference"

#: trec_eval measures whose "all" line is not a per-query mean but a count or a sum.
_COUNTS = {"num_q", "num_ret", "num_rel", "num_rel_ret"}


def read_expected(path: Path) -> dict[str, dict[str, str]]:
    """trec_eval -q output as measure -> query_id (or 'all') -> printed value."""
    expected: dict[str, dict[str, str]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            expected[parts[0]][parts[1]] = parts[2]
    return expected


def check(qrels_name: str, expected_name: str, rel_level: int | None) -> tuple[int, int, list[str], list[str]]:
    """Compare every shared measure; return (values compared, equal, mismatches, measures used)."""
    import ir_measures

    from calibration.metrics import evaluate_many
    from pooling.ranked_runs import read_ranked_run
    from pooling.qrels import read_qrels

    expected = read_expected(REFERENCE / expected_name)
    names: dict[str, str] = {}
    for trec_name in expected:
        try:
            parsed = ir_measures.parse_trec_measure(trec_name)
        except ValueError:
            continue
        if len(parsed) != 1:
            continue
        measure = parsed[0]
        # NumRet without rel is num_ret; with rel it would become num_rel_ret.
        counts_all = measure.NAME == "NumRet" and "rel" not in measure.params
        if rel_level is not None and "rel" in measure.SUPPORTED_PARAMS and not counts_all:
            measure = measure(rel=rel_level)
        try:  # skip what no installed ir-measures provider computes (e.g. NumRel(rel=2))
            ir_measures.evaluator([measure], {"q": {"d": 1}})
        except ValueError:
            continue
        names[trec_name] = str(measure)
    qrels = read_qrels(REFERENCE / qrels_name)
    ranked = read_ranked_run(REFERENCE / "results.test")
    scores = evaluate_many(qrels, {"STANDARD": ranked}, list(names.values()))["STANDARD"]
    compared = equal = 0
    mismatches = []
    for trec_name, name in sorted(names.items()):
        for query_id, printed in sorted(expected[trec_name].items()):
            if query_id == "all":
                got = scores.metrics[name]
            else:
                got = scores.per_query.get(query_id, {}).get(name, math.nan)
            compared += 1
            want = float(printed)
            same = abs(got - want) <= 5e-5 + 1e-9 if "." in printed else round(got) == int(want)
            equal += same
            if not same:
                mismatches.append(f"{trec_name} ({name}) {query_id}: trec_eval {printed}, goldpool {got:.6f}")
    return compared, equal, mismatches, sorted(names)


def main() -> int:
    if not REFERENCE.is_dir():
        print(f"no reference data at {REFERENCE}: nothing to check")
        return 1
    status = 0
    for qrels_name, out_name, level in (
        ("qrels.test", "out.test.aq", None),
        ("qrels.test", "outputs_v9.0.4/out.test.aq", None),
        ("qrels.rel_level", "out.test.aql", 2),
        ("qrels.rel_level", "outputs_v9.0.4/out.test.aql", 2),
    ):
        compared, equal, mismatches, measures = check(qrels_name, out_name, level)
        print(f"{qrels_name} vs {out_name}: {len(measures)} shared measures, {equal}/{compared} values equal "
              "(per query and 'all')")
        for line in mismatches:
            print("  differs:", line)
        if out_name.startswith("outputs_v9") and mismatches:
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
