"""Run metrics from a judge's labels on the whole pool and people's labels on a designed sample.

Two designs decide which pool entries people label:

- ``queries``: a simple random sample of ``m`` of the ``Q`` queries, every pool entry of each
  labelled (Oosterhuis et al. 2024). Every entry's inclusion probability is ``m / Q``. The unit
  is the query: per query, the metric with the people's labels (``y``) and with the judge's
  (``f``) are the pairs of a prediction-powered mean (:func:`calibration.ppi.ppi_mean`, PPI++
  with its power-tuning λ), valid for any per-query metric whatever the judge.
- ``stratified``: Poisson sampling of pool entries with inclusion probabilities ``π`` that are
  constant within strata of (query, the judge's grade, the best rank any run gives the entry):
  larger where the runs' metrics are sensitive (a top rank's discount ``1/log2(rank + 1)``) and
  where the judge is unsure (its middle grades), never below a floor (a share of the mean
  probability), so every entry can be drawn (statAP-like; Pavlu & Aslam; Yilmaz & Aslam).

Under ``stratified`` a metric that is a sum of per-entry terms (DCG@k, P@k, the relevant
entries in a run's top k) is estimated by a **difference estimator** (the judge as control
variate): the judge's calibrated prediction summed over every entry, plus the ``1/π``-weighted
people-minus-prediction residuals of the sampled entries. The prediction of an entry is the
``1/π``-weighted mean of the people's labels among sampled entries with the same judge grade
(over the whole pool: four classes, so in-sample fitting costs a bias of order ``1/n``). Whatever
the judge, the estimator stays nearly unbiased; a good judge makes the residuals small. Ratio
metrics are ratios: nDCG@k divides DCG by the ideal DCG built from each query's counts per
grade, R@k the relevant in the top k by the query's relevant count. Those counts are
**model-assisted and post-stratified**: a model of the people's grade given the judge's grade
and the entry's best rank (the sampling design's own strata, pooled over queries) predicts
every entry, and per (query, judge grade) stratum its size times the ``1/π``-weighted mean
residual of its sampled entries corrects the prediction; a count is never below what people
saw. They keep the ideal DCG from collapsing or exploding as Horvitz-Thompson counts do
(weights of 30 and more). With a few labels a query the ratio is still biased (a query's count
is pulled toward the pooled model, and a query whose estimated relevant count is below 0.5 is
left out of nDCG's and R's mean): ``bench/judge_assisted.py`` measures it. P@k's mean leaves
out no query: it is P@k summed over every query over the expected number of queries with a
relevant entry (:func:`~calibration.stratified_estimation.stratified_estimates`). RR and AP depend on the order of labels in
a way no sum of per-entry terms captures: under ``stratified`` they are refused
(:data:`calibration.stratified_estimation.STRATIFIED_METRICS`).

People-only estimates use the same sample: under ``queries`` the mean of the labelled queries;
under ``stratified`` Horvitz-Thompson sums (``1/π``-weighted, no judge) over relevant counts
estimated as above with no judge grade: the model's cells are the best rank alone, and its
strata (query, whether some run ranks the entry within the top
:data:`~calibration.stratified_estimation.RANK_CELLS`). Per-query
Horvitz-Thompson counts would be 0 for most queries when each has a few labels, and the mean
would run over the queries where people happened to see a relevant entry (biased up).
Intervals under ``stratified`` come from a design bootstrap: each replicate perturbs every
sampled entry's weight to ``w · (1 + ε √(1 − π))`` with ε = ±1 at random (its variance is the
Poisson design's Horvitz-Thompson variance) and refits the calibration, and the interval is
normal with the replicates' standard deviation. The query set is fixed (it is the golden set),
so queries are not resampled. Per-query values are not clipped (clipping a noisy value near 1
would bias the mean down); the mean over queries and its interval are clipped to [0, 1].

This module samples (both designs) and estimates under ``queries``; the stratified design's
estimators are in :mod:`calibration.stratified_estimation`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calibration import CalibrationError
from calibration.ppi import SAME, ppi_mean

# The stratified design's estimators live in their own module; labeler.retrieval.judge_assisted
# reads them here, beside the sampling that feeds them.
from calibration.stratified_estimation import (  # noqa: F401
    Design,
    Metric,
    interval,
    run_positions,
    stratified_estimates,
    stratified_metric,
)

DESIGNS = ("queries", "stratified")
#: The judge grades whose entries are sampled at full weight: the middle grades, where
#: relevance judges disagree with people most often. Grades 0 and 3 get ``_SURE``.
_UNSURE = (1, 2)
_SURE = 0.5
#: The floor of an entry's inclusion probability, as a share of the mean probability.
FLOOR = 0.3


def best_discount(best_rank: NDArray[np.int_], depth: int = 10) -> NDArray[np.float64]:
    """``1/log2(rank + 1)`` of the best rank any run gives an entry within ``depth``, else 0.

    >>> best_discount(np.array([1, 3, 0, 11])).round(3).tolist()
    [1.0, 0.5, 0.0, 0.0]
    """
    rank = np.asarray(best_rank, dtype=np.float64)
    inside = (rank >= 1) & (rank <= depth)
    return np.where(inside, 1.0 / np.log2(np.maximum(rank, 1) + 1), 0.0)


def stratified_probabilities(
    judge_grade: NDArray[np.int_] | None, best_rank: NDArray[np.int_], budget: float, *, depth: int = 10,
    floor: float = FLOOR,
) -> NDArray[np.float64]:
    """Inclusion probabilities summing to ``budget`` (expected judgments), each in
    [``floor · budget / N``, 1], proportional within that range to an entry's best discount
    (:func:`best_discount`; entries no run ranks within ``depth`` get the floor) times the
    judge's uncertainty (1 for grades 1 and 2, 0.5 for 0 and 3; 1 without a judge).

    Entries with the same judge grade and best rank get the same probability: these are the
    strata. ``budget >= N`` gives every entry probability 1.

    >>> p = stratified_probabilities(np.array([0, 1, 2, 3]), np.array([1, 1, 5, 0]), 2.0)
    >>> round(float(p.sum()), 6), bool(p[1] > p[0] > 0), bool(p[3] == p.min())
    (2.0, True, True)
    """
    rank = np.asarray(best_rank)
    score = best_discount(rank, depth)
    if judge_grade is not None:
        g = np.asarray(judge_grade)
        score = score * np.where(np.isin(g, _UNSURE), 1.0, _SURE)
    return capped_probabilities(score, budget, floor=floor)


def capped_probabilities(score: NDArray[np.float64], budget: float, *, floor: float = FLOOR) -> NDArray[np.float64]:
    """Inclusion probabilities ``min(1, max(floor · budget / N, c · score))``, ``c`` found by
    bisection so that they sum to ``budget`` (expected judgments); ``budget >= N`` gives every
    entry 1, and scores all 0 give every entry ``budget / N``.

    >>> p = capped_probabilities(np.array([4.0, 2.0, 1.0, 0.0]), 2.0)
    >>> round(float(p.sum()), 6), bool(p[0] > p[1] > p[2] > p[3] > 0)
    (2.0, True)
    """
    score = np.asarray(score, dtype=np.float64)
    n = len(score)
    if n == 0:
        raise CalibrationError("the pool is empty: nothing to sample")
    if budget <= 0:
        raise CalibrationError(f"budget {budget}: give a positive number of judgments")
    if budget >= n:
        return np.ones(n)
    low = floor * budget / n
    if not (score > 0).any():
        return np.full(n, budget / n)

    def total(c: float) -> float:
        return float(np.clip(np.maximum(low, c * score), 0.0, 1.0).sum())

    lo, hi = 0.0, 1.0
    while total(hi) < budget and hi < 1e15:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) < budget else (lo, mid)
    p = np.clip(np.maximum(low, hi * score), 0.0, 1.0)
    # Every entry at the floor except those at 1 cannot reach the budget exactly: spread the rest.
    return np.minimum(1.0, p * budget / p.sum()) if abs(p.sum() - budget) > 1e-6 else p


def poisson_sample(probability: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.bool_]:
    """Each entry drawn independently with its probability."""
    return rng.random(len(probability)) < probability


def query_sample(n_queries: int, labelled: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """A simple random sample of ``labelled`` of ``n_queries`` queries, as a mask."""
    if not 1 <= labelled <= n_queries:
        raise CalibrationError(f"{labelled} queries to label out of {n_queries}: give 1 to {n_queries}")
    mask = np.zeros(n_queries, dtype=bool)
    mask[rng.choice(n_queries, size=labelled, replace=False)] = True
    return mask


@dataclass(frozen=True, slots=True)
class Combined:
    """One metric (or one paired difference) of one run three ways, with intervals.

    ``value``/``low``/``high``: the judge-assisted estimate and its interval; ``people_only``
    (``people_low``, ``people_high``): the people's sample alone; ``judge_only``: the judge's
    labels everywhere (no interval: its bias is unknown). ``method`` names the estimator,
    ``lam`` the PPI++ weight (query design), ``why`` says why no value could be given.
    """

    value: float
    low: float
    high: float
    judge_only: float
    people_only: float
    people_low: float
    people_high: float
    n_people: int
    n_judge: int
    method: str
    lam: float | None = None
    why: str | None = None

    def as_dict(self) -> dict[str, object]:
        clean = lambda x: None if x is None or (isinstance(x, float) and math.isnan(x)) else x  # noqa: E731
        out: dict[str, object] = {
            "value": clean(self.value), "low": clean(self.low), "high": clean(self.high),
            "judge_only": clean(self.judge_only), "people_only": clean(self.people_only),
            "n_people": self.n_people, "n_judge": self.n_judge,
            "people_low": clean(self.people_low), "people_high": clean(self.people_high), "method": self.method,
        }
        if self.lam is not None:
            out["lambda"] = self.lam
        if self.why:
            out["why"] = self.why
        return out


def refused(why: str, judge_only: float, n_people: int, n_judge: int, method: str) -> Combined:
    """A metric the design cannot estimate validly: no number, the reason instead."""
    nan = math.nan
    return Combined(nan, nan, nan, judge_only, nan, nan, nan, n_people, n_judge, method, why=why)


# --- the query design ------------------------------------------------------------------------


def query_level(
    people: Sequence[float], judge_labelled: Sequence[float], judge_unlabelled: Sequence[float], *,
    bounds: tuple[float, float] | None = (0.0, 1.0), ci: float = 0.95, n_people: int = 0, n_judge: int = 0,
) -> Combined:
    """PPI++ over queries: ``people``/``judge_labelled`` are the per-query values of the
    labelled queries (people's labels, the judge's), ``judge_unlabelled`` the judge's values on
    the other queries. The estimate and its standard error are ``ppi_py.ppi_mean_ci``'s with its
    tuned λ (clipped to [0, 1]); the interval takes Student's t quantile with Welch-Satterthwaite
    degrees of freedom instead of the normal one (:func:`calibration.ppi.ppi_mean`,
    ``small_sample``), as a handful of labelled queries cannot size a normal interval, so it is
    ``t_df / z`` times ppi-python's width. Where the labelled queries all give the same people's
    value less λ times the judge's, the spread that sizes the interval is unknown: no number is
    given, the reason instead.

    With every query labelled the people's mean is exact (a zero-width interval).
    """
    y = np.asarray(people, dtype=np.float64)
    fl = np.asarray(judge_labelled, dtype=np.float64)
    fu = np.asarray(judge_unlabelled, dtype=np.float64)
    judge_only = float(np.concatenate([fl, fu]).mean()) if len(fl) + len(fu) else math.nan
    if len(y) == 0:
        return refused("no labelled query", judge_only, n_people, n_judge, "ppi++ over queries")
    if len(fu) == 0:
        m = float(y.mean())
        return Combined(m, m, m, judge_only, m, m, m, n_people, n_judge, "every query labelled")
    if len(y) < 2:
        return refused("one labelled query: no interval can be made from one", judge_only, n_people, n_judge,
                       "ppi++ over queries")
    r = ppi_mean(y, fl, fu, ci=ci, tuned=True, bounds=bounds, small_sample=True)
    h = r.human_only
    if math.isnan(r.ppi.low):
        what = "value" if r.lam == 0 else f"people's value less {r.lam:.2f} times the judge's"
        return refused(f"no interval: the {len(y)} labelled queries all give the same {what} "
                       f"({float(np.mean(y - r.lam * fl)):.4f}), so the spread that sizes the interval is unknown; "
                       "label more queries, or use --design stratified", judge_only, n_people, n_judge,
                       "ppi++ over queries")
    return Combined(r.ppi.value, r.ppi.low, r.ppi.high, judge_only, h.value, h.low, h.high, n_people, n_judge,
                    "ppi++ over queries", lam=r.lam)


def query_level_columns(
    people: NDArray[np.float64], judge_labelled: NDArray[np.float64], judge_unlabelled: NDArray[np.float64], *,
    bounds: tuple[float, float] | None = (0.0, 1.0), ci: float = 0.95,
) -> tuple[NDArray[np.float64], ...]:
    """:func:`query_level` for many columns at once (runs, or pairs of runs), for repeated
    simulations: ``people``/``judge_labelled`` are (n, K), ``judge_unlabelled`` (N, K).
    Returns (value, low, high, people_only, people_low, people_high), each (K,). The same
    numbers as :func:`calibration.ppi.ppi_mean` (PPI++, ``small_sample``) where the people's
    values are not all 0 or 1 (there :func:`query_level` gives the Wilson interval for people
    alone); ``nan`` bounds where no interval can be given.
    """
    y, fl, fu = (np.asarray(a, dtype=np.float64) for a in (people, judge_labelled, judge_unlabelled))
    n, big_n = y.shape[0], fu.shape[0]
    cov = np.mean((y - y.mean(axis=0)) * (fl - fl.mean(axis=0)), axis=0)
    var = np.var(np.concatenate([fl, fu]), axis=0, ddof=1)
    lam = np.where(var > 0, np.clip(cov / ((1 + n / big_n) * np.where(var > 0, var, 1.0)), 0.0, 1.0), 0.0)
    value = np.mean(lam * fu, axis=0) + np.mean(y - lam * fl, axis=0)
    a, b = np.var(lam * fu, axis=0) / big_n, np.var(y - lam * fl, axis=0) / n
    se = np.sqrt(a + b)
    from scipy.stats import t

    den = (a * a / (big_n - 1) if big_n > 1 else 0.0) + b * b / (n - 1)
    df = np.where(lam == 0, n - 1.0, (a + b) ** 2 / np.where(den > 0, den, 1.0))
    spread = np.ptp(y - lam * fl, axis=0) > SAME
    q = np.where(spread, t.ppf(0.5 + ci / 2, np.where(spread, df, 1.0)), np.nan)
    human = y.mean(axis=0)
    human_se = np.std(y, axis=0) / math.sqrt(n)
    human_q = np.where(np.ptp(y, axis=0) > SAME, t.ppf(0.5 + ci / 2, n - 1.0), np.nan)
    out = [value, value - q * se, value + q * se, human, human - human_q * human_se, human + human_q * human_se]
    if bounds is not None:
        out = [np.clip(a, bounds[0], bounds[1]) for a in out]
    return tuple(out)
