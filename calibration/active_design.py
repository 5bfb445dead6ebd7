"""Active sampling of pool entries for people (Zrnic & Candès 2024, "Active statistical
inference"): label where the judge is least certain and where a label moves the metrics most,
with every entry's inclusion probability recorded so the estimate stays unbiased.

An estimate's variance under Poisson sampling is ``Σ_e (1 − π_e)/π_e · a_e² · v_e``: ``v_e`` the
variance of people's gain given what is known (the judge's grade), ``a_e`` how much the entry's
gain moves the mean over queries of nDCG@k. For a fixed budget ``Σ π_e = n`` it is smallest
with ``π_e ∝ |a_e| √v_e`` (Neyman allocation), capped at 1 and floored so every entry can be
drawn:

- ``v_e``: the variance of the people's gain under ``P(people grade | judge grade)``: from a
  pilot of people's labels where there is one (shrunk toward :data:`PRIOR` by
  :data:`PILOT_PSEUDO` entries a judge grade), else :data:`PRIOR`, a judge of middling quality.
  A second opinion (a second judge, or the judge's other order or repeat) that disagrees adds
  to it: the entry's grade is then a mixture of the two readings.
- ``a_e``: ``(d_e + θ · m_q) / I_q``: ``d_e`` the best discount any run gives the entry within
  the top ``k`` (what it adds to a run's DCG; entries at the very top of the runs, where runs
  differ most, reach certainty), ``m_q`` the discount at which one more relevant entry would
  enter the query's ideal ranking (0 once the query's expected relevant count fills the top
  ``k``; an entry no run ranks still moves the ideal DCG), ``θ`` a typical nDCG
  (:data:`TYPICAL_NDCG`), and ``I_q`` the query's expected ideal DCG: queries with few
  relevant entries, whose ratio moves most with one label, get more of the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calibration.judge_assisted import capped_probabilities

#: ``P(people grade | judge grade)`` without a pilot: rows judge grade 0-3, columns people's.
PRIOR = np.array([
    [0.85, 0.10, 0.04, 0.01],
    [0.45, 0.30, 0.18, 0.07],
    [0.25, 0.25, 0.30, 0.20],
    [0.15, 0.15, 0.30, 0.40],
])
#: How many pilot-like entries per judge grade :data:`PRIOR` counts for against a pilot.
PILOT_PSEUDO = 5.0
#: The nDCG an entry's weight in the ideal DCG is scaled by (a middling run's).
TYPICAL_NDCG = 0.5
#: The floor of an inclusion probability, as a share of the mean probability.
FLOOR = 0.3


def calibration_table(pilot_judge: NDArray[np.int_] | None = None, pilot_people: NDArray[np.int_] | None = None,
                      pilot_probability: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """``P(people grade | judge grade)`` (4 x 4): :data:`PRIOR`, or the pilot's ``1/π``-weighted
    shares shrunk toward it.

    >>> calibration_table().round(2)[0].tolist()
    [0.85, 0.1, 0.04, 0.01]
    """
    if pilot_judge is None or pilot_people is None or len(pilot_judge) == 0:
        return PRIOR.copy()
    f = np.clip(np.asarray(pilot_judge), 0, 3)
    y = np.clip(np.asarray(pilot_people), 0, 3)
    w = np.ones(len(f)) if pilot_probability is None else 1.0 / np.asarray(pilot_probability)
    mass = np.zeros((4, 4))
    np.add.at(mass, (f, y), w)
    count = np.bincount(f, minlength=4)[:, None]
    mean_w = np.where(count > 0, mass.sum(axis=1, keepdims=True) / np.maximum(count, 1), 1.0)
    return (mass + PILOT_PSEUDO * mean_w * PRIOR) / (mass.sum(axis=1, keepdims=True) + PILOT_PSEUDO * mean_w)


def gain_moments(judge_grade: NDArray[np.int_], table: NDArray[np.float64], gains: NDArray[np.float64],
                 second: NDArray[np.int_] | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per entry, the mean and variance of people's gain given the judge's grade (and, where
    given, the second opinion's: an even mixture of the two readings)."""
    p = table[np.clip(judge_grade, 0, 3)]
    if second is not None:
        p = 0.5 * (p + table[np.clip(second, 0, 3)])
    mean = p @ gains
    return mean, np.maximum(p @ (gains * gains) - mean * mean, 0.0)


def _discounts(n: int) -> NDArray[np.float64]:
    return 1.0 / np.log2(np.arange(1, n + 1) + 1.0)


@dataclass(frozen=True, slots=True)
class Sensitivity:
    """Per entry ``a_e`` (see the module docstring) and ``v_e``; per query its expected ideal DCG."""

    weight: NDArray[np.float64]
    variance: NDArray[np.float64]
    ideal: NDArray[np.float64]


def sensitivity(query: NDArray[np.int_], judge_grade: NDArray[np.int_], best_rank: NDArray[np.int_], *,
                table: NDArray[np.float64] | None = None, k: int = 10, second: NDArray[np.int_] | None = None,
                gains: NDArray[np.float64] | None = None) -> Sensitivity:
    """``a_e`` and ``v_e`` of every entry from the pool, the judge and (``table``) a calibration."""
    table = PRIOR if table is None else table
    gains = np.arange(4, dtype=np.float64) if gains is None else np.asarray(gains, dtype=np.float64)
    query = np.asarray(query)
    mean, variance = gain_moments(np.asarray(judge_grade), table, gains, second)
    rank = np.asarray(best_rank)
    d = np.where((rank >= 1) & (rank <= k), 1.0 / np.log2(np.maximum(rank, 1) + 1.0), 0.0)
    n_q = int(query.max()) + 1 if len(query) else 0
    relevant = np.bincount(query, weights=table[np.clip(judge_grade, 0, 3)][:, 1:].sum(axis=1), minlength=n_q)
    disc = np.concatenate([_discounts(k), [0.0]])
    filled = np.minimum(relevant, k)
    # The ideal DCG of the expected gains, best first, within the top k (a fractional count).
    ideal = np.zeros(n_q)
    for q in range(n_q):
        top = np.sort(mean[query == q])[::-1][:k]
        ideal[q] = float(top @ _discounts(len(top))) if len(top) else 0.0
    ideal = np.maximum(ideal, gains[1] if len(gains) > 1 else 1.0)
    margin = disc[np.minimum(np.floor(filled).astype(int), k)]
    weight = (d + TYPICAL_NDCG * margin[query]) / ideal[query]
    return Sensitivity(weight, variance, ideal)


def active_probabilities(score: NDArray[np.float64], budget: float, *, floor: float = FLOOR) -> NDArray[np.float64]:
    """Inclusion probabilities ``min(1, max(floor · budget / N, c · score))`` with ``c`` such
    that they sum to ``budget`` (expected judgments); ``budget >= N`` gives every entry 1
    (:func:`calibration.judge_assisted.capped_probabilities`, the stratified design's solver).

    >>> p = active_probabilities(np.array([4.0, 2.0, 1.0, 0.0]), 2.0)
    >>> round(float(p.sum()), 6), bool(p[0] > p[1] > p[2] > p[3] > 0)
    (2.0, True)
    """
    return capped_probabilities(score, budget, floor=floor)


def neyman_score(s: Sensitivity) -> NDArray[np.float64]:
    """``|a_e| √v_e``: the score :func:`active_probabilities` makes the probabilities proportional to."""
    return np.abs(s.weight) * np.sqrt(s.variance)


def expected_half_width(s: Sensitivity, probability: NDArray[np.float64], n_queries: int,
                        z: float = 1.959964) -> float:
    """The expected half-width of a 95% interval of a run's mean nDCG@k over ``n_queries``
    queries: ``z · √(Σ_e (1 − π_e)/π_e · a_e² · v_e) / Q``, the Poisson design's variance with
    the judge's calibration as the model of people's gains."""
    p = np.asarray(probability, dtype=np.float64)
    var = float(np.sum((1.0 - p) / p * s.weight**2 * s.variance)) / max(n_queries, 1) ** 2
    return z * var**0.5
