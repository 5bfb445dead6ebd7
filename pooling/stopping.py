"""When to stop judging a query: how many relevant candidates are still unfound.

The quantile method of Yang, Lewis and Frieder ("Heuristic stopping rules for
technology-assisted review", DocEng 2021): a model gives every unjudged candidate i a
probability p_i of being relevant; the number still unfound is then a sum of independent
Bernoulli(p_i), a Poisson-binomial variable R with mean sum p_i and variance
sum p_i (1 - p_i). With f relevant found so far::

    recall = f / (f + R)
    stop   when  P(recall >= target) = P(R <= f (1 - target) / target) >= confidence

The interval is R's central ``confidence`` interval from its exact distribution (computed by
convolution, no normal approximation), turned into a recall interval.

The model here is strategy-independent: a logistic regression (scikit-learn) of relevance on
each source's log rank, fitted to the query's judged candidates, so it works whatever chose
the judged chunks (it assumes that, given the ranks, what was judged is like what was not).
It speaks of the candidates only: relevant chunks that no source retrieved to the candidate
depth are invisible to it, so "recall" is recall within the candidates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pooling import PoolingError
from pooling.strategies import Candidates

TARGET = 0.8
CONFIDENCE = 0.9


@dataclass(frozen=True, slots=True)
class Estimate:
    """Where a query stands.

    Attributes:
        query_id: the query.
        judged: candidates judged.
        found: relevant among them.
        remaining: expected relevant candidates still unfound (None without a model yet).
        remaining_low, remaining_high: R's central ``confidence`` interval.
        recall, recall_low, recall_high: estimated recall within the candidates and its
            interval (recall_low from remaining_high).
        stop: whether ``target`` recall is reached with probability >= ``confidence``.
        target, confidence: the rule's settings.
    """

    query_id: str
    judged: int
    found: int
    remaining: float | None
    remaining_low: int | None
    remaining_high: int | None
    recall: float | None
    recall_low: float | None
    recall_high: float | None
    stop: bool
    target: float
    confidence: float


def poisson_binomial(p: Sequence[float]) -> np.ndarray:
    """P(R = r), r = 0..n, for R a sum of independent Bernoulli(p_i), by convolution.

    >>> [round(float(x), 4) for x in poisson_binomial([0.5, 0.5])]
    [0.25, 0.5, 0.25]
    >>> [round(float(x), 4) for x in poisson_binomial([0.2, 1.0])]  # 0.8*[0,1] + 0.2*[0,0,1]
    [0.0, 0.8, 0.2]
    """
    dist = np.zeros(len(p) + 1)
    dist[0] = 1.0
    for n, pi in enumerate(p, start=1):
        dist[1 : n + 1] = dist[1 : n + 1] * (1 - pi) + dist[:n] * pi
        dist[0] *= 1 - pi
    return dist


def rank_features(candidates: Candidates, doc_ids: Sequence[str]) -> np.ndarray:
    """One column per source (by name): -log(rank), -log(2 N) when the source lacks it.

    N is the longest ranking's length.
    """
    depth = max((len(r) for r in candidates.rankings.values()), default=1)
    columns = []
    for source in sorted(candidates.rankings):
        ranks = {d: r for r, d in enumerate(candidates.rankings[source], start=1)}
        columns.append([-math.log(ranks.get(d, 2 * depth)) for d in doc_ids])
    return np.array(columns, dtype=float).T.reshape(len(doc_ids), len(columns))


def unfound_probabilities(candidates: Candidates, labels: Mapping[str, bool], seed: int = 0) -> dict[str, float] | None:
    """P(relevant) of each unjudged candidate; None until both kinds are judged."""
    from sklearn.linear_model import LogisticRegression

    every = sorted(candidates.doc_ids)
    judged = [d for d in every if d in labels]
    y = [int(bool(labels[d])) for d in judged]
    if len(set(y)) < 2:
        return None
    rest = [d for d in every if d not in labels]
    if not rest:
        return {}
    model = LogisticRegression(C=1.0, solver="liblinear", max_iter=1000, random_state=seed)
    model.fit(rank_features(candidates, judged), y)
    return dict(zip(rest, model.predict_proba(rank_features(candidates, rest))[:, 1].tolist()))


def estimate(
    candidates: Candidates,
    labels: Mapping[str, bool],
    *,
    target: float = TARGET,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Estimate:
    """The quantile-method estimate and stop decision for one query (see the module doc).

    Every candidate judged means nothing is left: stop. Before a relevant and a
    non-relevant chunk are both judged there is no model: no estimate, no stop.
    """
    if not 0 < target <= 1 or not 0 < confidence < 1:
        raise PoolingError(f"target must be in (0, 1] and confidence in (0, 1), got {target}, {confidence}")
    ids = candidates.doc_ids
    inside = {d: bool(r) for d, r in labels.items() if d in ids}
    found = sum(inside.values())
    probabilities = unfound_probabilities(candidates, inside, seed)
    if probabilities is None:
        done = len(inside) == len(ids)
        zero = 0 if done else None
        return Estimate(candidates.query_id, len(inside), found, zero, zero, zero,
                        1.0 if done and found else None, None, None, done, target, confidence)
    return _decide(candidates.query_id, len(inside), found, list(probabilities.values()), target, confidence)


def _decide(query_id: str, judged: int, found: int, p: list[float], target: float, confidence: float) -> Estimate:
    dist = poisson_binomial(p)
    cdf = np.cumsum(dist)
    tail = (1 - confidence) / 2
    low = int(np.searchsorted(cdf, tail - 1e-12))
    high = int(np.searchsorted(cdf, 1 - tail - 1e-12))
    mean = float(np.dot(np.arange(len(dist)), dist))
    allowed = math.floor(found * (1 - target) / target + 1e-9)
    stop = found > 0 and float(cdf[min(allowed, len(cdf) - 1)]) >= confidence

    def recall(r: float) -> float | None:
        return found / (found + r) if found + r > 0 else None

    return Estimate(query_id, judged, found, mean, low, high, recall(mean), recall(high), recall(low), stop, target, confidence)


__all__ = ["CONFIDENCE", "TARGET", "Estimate", "estimate", "poisson_binomial"]
