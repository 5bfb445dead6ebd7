"""What a designed sample will give, said before anyone labels it: the active design's
inclusion probabilities (:mod:`calibration.active_design`), and the planner's report: the
expected width of a run's nDCG@10 interval, whether the budget gives the labels per query the
intervals need to hold their 95%, and the budget that would.

The judge's grades are calibrated to people's by a pilot where the project has one (people's
current labels on judged pool entries, each weighed by its inclusion probability when it came
from an earlier sample), else by :data:`calibration.active_design.PRIOR`; without a pilot the
expected width is an upper bound (the judge's grade is then the only model of people's, while
the estimate also learns from the runs' ranks and each query's labels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlite_utils

from calibration import active_design
from calibration.judge_assisted import stratified_probabilities
from labeler.store import samples as store
from labeler.store.versions import current_labels
from labeler.store.vocabulary import Caller

#: The labels per query from which the benchmark's 95% intervals of paired differences held
#: (coverage >= 0.91 of pairs on every collection, 0.93 on most; bench/judge_assisted.py, ratio
#: estimator). A run's own interval (the difference estimator's united with the ratio
#: estimator's) held 0.90-1.00 for nDCG@10, 0.91-1.00 for P@10: see RUN_CAVEAT.
MIN_PER_QUERY = 2.0
#: What the planner says of a run's own interval, whatever the budget.
RUN_CAVEAT = ("a run's own interval (not a difference) covered 0.90-1.00 of nDCG@10 in the benchmark and 0.91-1.00 "
              "of P@10, below 0.93 on Cranfield (nDCG@10) and CISI (P@10) at 5%, and it is often wider than needed: "
              "compare runs by their differences")
#: The fewest labels in all: the model's cells (rank x judge grade) need some in each.
MIN_LABELS = 60


@dataclass(frozen=True, slots=True)
class PlanReport:
    """The planner's figures for one designed sample of ``budget`` expected judgments."""

    budget: float
    half_width: float
    target_width: float | None
    per_query: float
    pilot: int
    meets_coverage: bool
    meets_width: bool | None
    recommended_budget: int
    basis: str
    needed_per_query: float = MIN_PER_QUERY

    def as_dict(self) -> dict[str, Any]:
        return {"budget": self.budget, "expected_half_width": self.half_width,
                "expected_width": 2 * self.half_width, "target_width": self.target_width,
                "labels_per_query": self.per_query,
                "labels_per_query_needed": self.needed_per_query, "pilot_labels": self.pilot,
                "meets_coverage": self.meets_coverage, "meets_width": self.meets_width,
                "recommended_budget": self.recommended_budget, "basis": self.basis, "run_caveat": RUN_CAVEAT}


def pilot(db: sqlite_utils.Database, entries: Sequence[Any], grades: dict[tuple[str, str], int] | None, *,
          caller: Caller) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(judge grades, people's grades, inclusion probabilities) of the pool entries people and
    the judge have both graded: people's mean grade rounded, the probability of the latest
    sample holding the entry (1 where none does)."""
    if not grades:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0)
    people: dict[tuple[str, str], list[int]] = {}
    for lab in current_labels(db, caller=caller):
        people.setdefault((lab.query_id, lab.doc_id), []).append(lab.relevance)
    held: dict[tuple[str, str], float] = {}
    for name in store.sample_names(db):
        held.update(store.get_sample(db, name, caller=caller).items)
    keys = [(e.query_id, e.doc_id) for e in entries if (e.query_id, e.doc_id) in people and
            (e.query_id, e.doc_id) in grades]
    f = np.array([grades[k] for k in keys], dtype=int)
    y = np.array([min(3, max(0, round(float(np.mean(people[k]))))) for k in keys], dtype=int)
    return f, y, np.array([held.get(k, 1.0) for k in keys])


def sensitivity(entries: Sequence[Any], grades: dict[tuple[str, str], int] | None,
                table: np.ndarray) -> tuple[active_design.Sensitivity, int]:
    """The active design's :class:`calibration.active_design.Sensitivity` of every pool entry
    (an entry the judge has not graded counts as grade 1, unsure), and the number of queries."""
    queries = {q: i for i, q in enumerate(dict.fromkeys(e.query_id for e in entries))}
    query = np.array([queries[e.query_id] for e in entries])
    judge = np.array([(grades or {}).get((e.query_id, e.doc_id), 1) for e in entries])
    rank = np.array([e.best_rank for e in entries])
    return active_design.sensitivity(query, judge, rank, table=table), len(queries)


def active_probabilities(entries: Sequence[Any], grades: dict[tuple[str, str], int] | None, budget: float,
                         table: np.ndarray) -> np.ndarray:
    """Inclusion probabilities of the active design (Neyman allocation, see the module)."""
    s, _ = sensitivity(entries, grades, table)
    return active_design.active_probabilities(active_design.neyman_score(s), budget)


def report(entries: Sequence[Any], grades: dict[tuple[str, str], int] | None, probability: np.ndarray,
           budget: float, table: np.ndarray, n_pilot: int, *, design: str, width: float | None = None) -> PlanReport:
    """The planner's :class:`PlanReport` for ``probability`` (summing to ``budget``)."""
    s, n_queries = sensitivity(entries, grades, table)
    judge = np.array([(grades or {}).get((e.query_id, e.doc_id), 1) for e in entries]) if grades else None
    rank = np.array([e.best_rank for e in entries])

    def probabilities(b: float) -> np.ndarray:
        if design == "active":
            return active_design.active_probabilities(active_design.neyman_score(s), b)
        return stratified_probabilities(judge, rank, b)

    half = active_design.expected_half_width(s, probability, n_queries)
    need = max(MIN_LABELS, math.ceil(MIN_PER_QUERY * n_queries))
    if width is not None:  # the smallest budget whose expected width is within the target
        lo, hi = 1.0, float(len(entries))
        if 2 * active_design.expected_half_width(s, probabilities(hi), n_queries) <= width:
            for _ in range(40):
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if 2 * active_design.expected_half_width(s, probabilities(mid), n_queries) <= width \
                    else (mid, hi)
            need = max(need, math.ceil(hi))
        else:
            need = len(entries)
    basis = (f"the judge's grades calibrated by a pilot of {n_pilot} people's labels" if n_pilot else
             "a prior calibration of the judge's grades (no pilot labels yet: an upper bound)")
    return PlanReport(budget, half, width, budget / max(n_queries, 1), n_pilot,
                      budget >= max(MIN_LABELS, MIN_PER_QUERY * n_queries) or budget >= len(entries),
                      None if width is None else 2 * half <= width, min(need, len(entries)), basis)
