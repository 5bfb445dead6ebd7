"""How many relevant candidates of a query are still unfound, and the recall that leaves.

The quantile method of Yang, Lewis and Frieder ("Heuristic stopping rules for
technology-assisted review", DocEng 2021): a model gives every unjudged candidate i a
probability p_i of being relevant; the number still unfound is then a sum of independent
Bernoulli(p_i), a Poisson-binomial variable R with mean sum p_i and variance
sum p_i (1 - p_i). With f relevant found so far::

    recall = f / (f + R)
    stop   when  P(recall >= target) = P(R <= f (1 - target) / target) >= confidence

The interval is R's central ``confidence`` interval from its exact distribution (computed by
convolution, no normal approximation), turned into a recall interval.

The model is strategy-independent: a Bayesian logistic regression of relevance on each
source's log rank, fitted to the query's judged candidates, so it works whatever chose the
judged chunks (it assumes that, given the ranks, what was judged is like what was not). Its
posterior is the Laplace approximation at the MAP fit (Gaussian priors: ``INTERCEPT_SD`` on
the intercept, ``SLOPE_SD`` on each slope), widened ``INFLATION`` times to allow for a model
that is only roughly right; ``DRAWS`` coefficient draws each give a vector p, and R's
distribution is the mixture of their Poisson-binomials (the draws are quasi-random, so
the answer is the same on every call). Without that parameter uncertainty
(one fitted p, as before) the 90% interval held the true recall for 45-75% of queries on
Vaswani, Cranfield and CISI; with it, for the shares ``bench/pooling_strategies.py`` prints.

It speaks of the candidates only: relevant chunks that no source retrieved to the candidate
depth are invisible to it, so "recall" is recall within the candidates. The stopping rules
built on it (the quantile rule, the check sample, the knee) are in :mod:`pooling.stopping`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pooling import PoolingError
from pooling.strategies import Candidates

TARGET = 0.8
CONFIDENCE = 0.9
#: Prior standard deviations of the intercept and of each source's slope on -log(rank).
#: The slopes' prior is centred on 0, not on the fall of relevance with rank that complete
#: qrels show: the model fitted on the judged candidates over-predicts the relevant left
#: below them (``bench/stopping_rules.py --calibration``: 2-58 times at the fit alone where
#: the oracle stops), and centred on CISI's mean slope (0.47, sd 0.42) the posterior mean
#: still did under ``rrf`` on Vaswani and Cranfield (3.7 and 37 times) while the true number
#: rose above its interval for 37 of 76 CISI queries, which would stop them short of the
#: target.
INTERCEPT_SD, SLOPE_SD = 5.0, 2.0
#: How many times the Laplace posterior's standard deviations are widened.
INFLATION = 2.0
#: Coefficient draws whose Poisson-binomials are mixed (quasi-random: a scrambled Sobol
#: sequence, so 64 cover the posterior about as evenly as several hundred random ones).
DRAWS = 64


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
        rule: the stopping rule that decided ``stop`` (:data:`pooling.stopping.RULES`); the interval is the
            check sample's where that rule has one, else the quantile model's.
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
    rule: str = "quantile"


def poisson_binomial(p: Sequence[float]) -> np.ndarray:
    """P(R = r), r = 0..n, for R a sum of independent Bernoulli(p_i): :func:`mixture` of one draw.

    >>> [round(float(x), 4) for x in poisson_binomial([0.5, 0.5])]
    [0.25, 0.5, 0.25]
    >>> [round(float(x), 4) for x in poisson_binomial([0.2, 1.0])]  # 0.8*[0,1] + 0.2*[0,0,1]
    [0.0, 0.8, 0.2]
    """
    return mixture(np.atleast_2d(np.asarray(p, dtype=float)).reshape(1, -1))


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


def fit_logistic(x: np.ndarray, y: np.ndarray, prior_sd: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """MAP logistic regression under independent N(0, prior_sd²) priors, by Newton's method.

    Returns the coefficients and the Laplace covariance, the inverse of the negative Hessian
    of the log posterior at the MAP: (Xᵀ W X + Λ)⁻¹ with W = diag(p (1 - p)), Λ = diag(1 / sd²).
    ``x`` includes the intercept column.

    >>> theta, cov = fit_logistic(np.array([[1.0], [1.0], [1.0], [1.0]]), np.array([1.0, 1, 1, 0]), [100.0])
    >>> round(float(theta[0]), 3), round(float(cov[0, 0]), 3)  # log(3/1); 1 / (4 * 3/4 * 1/4)
    (1.098, 1.333)
    """
    precision = 1.0 / np.asarray(prior_sd, dtype=float) ** 2
    theta = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ theta)))
        hessian = (x * (p * (1 - p))[:, None]).T @ x + np.diag(precision)
        step = np.linalg.solve(hessian, x.T @ (y - p) - precision * theta)
        theta = theta + step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    p = 1.0 / (1.0 + np.exp(-(x @ theta)))
    hessian = (x * (p * (1 - p))[:, None]).T @ x + np.diag(precision)
    return theta, np.linalg.inv(hessian)


def unfound_draws(
    candidates: Candidates,
    labels: Mapping[str, bool],
    *,
    draws: int = DRAWS,
    seed: int = 0,
    scores: Mapping[str, float] | None = None,
) -> np.ndarray | None:
    """P(relevant) of each unjudged candidate under ``draws`` posterior draws (draws x unjudged).

    ``scores`` (doc_id -> the strategy's logit of relevance, for every candidate; see
    :func:`pooling.stopping.strategy_scores`) is one more feature beside the ranks, with the slopes' prior.
    None until both kinds are judged; an empty matrix when nothing is left.
    """
    every = sorted(candidates.doc_ids)
    judged = [d for d in every if d in labels]
    y = np.array([float(bool(labels[d])) for d in judged])
    if len(set(y.tolist())) < 2:
        return None
    rest = [d for d in every if d not in labels]
    if not rest:
        return np.zeros((draws, 0))
    features = rank_features(candidates, every)
    if scores is not None:
        features = np.hstack([features, np.array([[scores[d]] for d in every], dtype=float)])
    x = np.hstack([np.ones((len(every), 1)), features])
    inside = np.array([d in labels for d in every])
    theta, cov = fit_logistic(x[inside], y, [INTERCEPT_SD] + [SLOPE_SD] * features.shape[1])
    from scipy.stats import qmc

    sobol = qmc.MultivariateNormalQMC(mean=theta, cov=cov * INFLATION**2, seed=seed)
    coefficients = sobol.random(draws)
    return 1.0 / (1.0 + np.exp(-(coefficients @ x[~inside].T)))


def unfound_probabilities(candidates: Candidates, labels: Mapping[str, bool], seed: int = 0) -> dict[str, float] | None:
    """Posterior mean P(relevant) of each unjudged candidate; None until both kinds are judged."""
    draws = unfound_draws(candidates, labels, seed=seed)
    if draws is None:
        return None
    rest = sorted(d for d in candidates.doc_ids if d not in labels)
    return dict(zip(rest, draws.mean(axis=0).tolist()))


def mixture(p: np.ndarray, upto: int | None = None) -> np.ndarray:
    """P(R = r) for r = 0..upto, R a Poisson-binomial whose p is a row of ``p``, row drawn at random.

    The mean over the rows of each row's Poisson-binomial, by one convolution over the
    columns for all rows at once. With ``upto`` below the columns, mass above it is dropped
    (the values up to it are exact, as mass only moves up).

    >>> [round(float(v), 4) for v in mixture(np.array([[0.5, 0.5], [0.0, 1.0]]))]
    [0.125, 0.75, 0.125]
    """
    rows, n = p.shape
    top = n if upto is None else min(n, upto)
    # One row per count r, one column per draw: each step updates contiguous memory, and
    # only the counts reachable so far (those above are exactly 0 and stay so).
    dist = np.zeros((top + 1, rows))
    dist[0] = 1.0
    columns = np.ascontiguousarray(p.T, dtype=float)
    complements = 1 - columns
    for column in range(n):
        pi, qi = columns[column], complements[column]
        reach = min(column + 1, top)
        dist[1 : reach + 1] = dist[1 : reach + 1] * qi + dist[:reach] * pi
        dist[0] *= qi
    # The mean over the draws in the draws-by-counts layout, so it sums in the same order
    # whatever layout computed it.
    return np.ascontiguousarray(dist.T).mean(axis=0)


def estimate(
    candidates: Candidates,
    labels: Mapping[str, bool],
    *,
    target: float = TARGET,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    scores: Mapping[str, float] | None = None,
) -> Estimate:
    """The quantile-method estimate and stop decision for one query (see the module doc).

    ``scores``: the strategy's own view of relevance (:func:`pooling.stopping.strategy_scores`), a feature of
    the model beside the ranks; with them the interval is one-sided: recall at least
    ``recall_low``, at most 1.

    Every candidate judged means nothing is left: stop. Before a relevant and a
    non-relevant chunk are both judged there is no model: no estimate, no stop.
    """
    if not 0 < target <= 1 or not 0 < confidence < 1:
        raise PoolingError(f"target must be in (0, 1] and confidence in (0, 1), got {target}, {confidence}")
    ids = candidates.doc_ids
    inside = {d: bool(r) for d, r in labels.items() if d in ids}
    found = sum(inside.values())
    draws = unfound_draws(candidates, inside, seed=seed, scores=scores)
    if draws is None:
        done = len(inside) == len(ids)
        zero = 0 if done else None
        return Estimate(candidates.query_id, len(inside), found, zero, zero, zero,
                        1.0 if done and found else None, None, None, done, target, confidence)
    e = estimate_from_draws(candidates.query_id, len(inside), found, draws, target, confidence)
    if scores is not None and e.recall is not None:
        # Judgments chosen by the strategy's classifier: the model over-predicts what is left
        # (replayed under ``active``, the true recall was above its two-sided interval for
        # 4-25% of the queries and never below it), so it makes no claim on how high recall
        # may be. The lower end, which the stop decision reads, stays.
        e = dataclasses.replace(e, remaining_low=0, recall_high=1.0 if found else None)
    return e


def estimate_from_draws(query_id: str, judged: int, found: int, p: Sequence[float] | np.ndarray, target: float, confidence: float) -> Estimate:
    """The estimate from unjudged probabilities ``p``: one vector, or one row per posterior draw."""
    draws = np.atleast_2d(np.asarray(p, dtype=float))
    totals = draws.sum(axis=1)
    spread = np.sqrt((draws * (1 - draws)).sum(axis=1))
    allowed = math.floor(found * (1 - target) / target + 1e-9)
    tail = (1 - confidence) / 2
    # P(R = r) is exact for every r computed, so compute only as far as every draw's bulk
    # reaches, and all of it should the top quantile lie beyond.
    bulk = float(np.max(totals + 6 * spread)) if draws.size else 0.0
    cdf = np.cumsum(mixture(draws, max(allowed, math.ceil(bulk)) + 5))
    if cdf[-1] < 1 - tail - 1e-12 and len(cdf) <= draws.shape[1]:
        cdf = np.cumsum(mixture(draws))
    low = int(np.searchsorted(cdf, tail - 1e-12))
    high = int(np.searchsorted(cdf, 1 - tail - 1e-12))
    mean = float(totals.mean())
    stop = found > 0 and float(cdf[min(allowed, len(cdf) - 1)]) >= confidence

    def recall(r: float) -> float | None:
        return found / (found + r) if found + r > 0 else None

    return Estimate(query_id, judged, found, mean, low, high, recall(mean), recall(high), recall(low), stop, target, confidence)


__all__ = [
    "CONFIDENCE",
    "DRAWS",
    "INFLATION",
    "INTERCEPT_SD",
    "SLOPE_SD",
    "TARGET",
    "Estimate",
    "estimate",
    "estimate_from_draws",
    "fit_logistic",
    "mixture",
    "poisson_binomial",
    "rank_features",
    "unfound_draws",
    "unfound_probabilities",
]
