"""Means of per-answer values when answers come in clusters (the questions), kept inside [0, 1].

A system's answers are grouped by the question they answer; two answers to one question move
together, so the question is the unit of every interval here. The variance of a mean over
``n`` values in ``G`` clusters is the cluster-robust one (Liang & Zeger 1986, without the
small-sample factor ``G/(G-1)``)::

    V = Σ_g (Σ_{i∈g} (x_i − x̄))² / n²

which, when every cluster holds one value, is ``var(x) / n`` with the population variance:
the variance ``ppi-python`` uses, so the prediction-powered numbers below equal its numbers
on unclustered data.

**Rates in [0, 1]** (a share of correct answers, a mean of per-answer faithfulness) get a
Wilson score interval at the effective sample size ``n_eff = p(1 − p) / V`` (the design-effect
Wilson interval of survey statistics; Korn & Graubard 1998). Why Wilson and not a normal or a
bootstrap percentile interval: it never leaves [0, 1], it is not of zero width when every value
is 1 (or 0), where a normal interval or a bootstrap of identical values claims certainty, and
it is deterministic and costs nothing for 25,000 answers. ``n_eff`` carries the clustering
(fewer effective values when answers to one question agree) and the spread of a non-binary
value (a mean of faithfulness values near 0.8 varies less than a 0/1 rate of 0.8, so ``n_eff``
exceeds ``n``, and the interval is the normal one where no bound is near). When every value is
0 or every value is 1, ``V`` is 0 and says nothing of the spread: ``n_eff`` is then the number
of questions, the conservative choice (each question counts once).

**Prediction-powered means** (people on some answers, a judge on all): the PPI++ estimate and
λ of ``calibration.ppi`` (``ppi_lambda``), with both variance terms cluster-robust; a normal
interval clipped to the bounds, as ``calibration.ppi.ppi_mean`` does. λ = 0 ignores the judge,
and the estimate is then the people's own, with its Wilson interval. PPI assumes the labelled
answers are a random sample; label whole questions at a time, so that a question's answers are
all labelled or none are (the two terms are then independent).

**Paired differences** of two systems: per question, the mean of each system's values on it,
and their difference; the mean difference over the questions both answered, a normal interval
from the SD of the per-question differences (the questions are the independent units), kept
inside [−1, 1], and the minimum detectable difference from that SD (``calibration.power``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from calibration import CalibrationError
from calibration.bootstrap import Estimate
from calibration.power import minimum_detectable_difference, per_query_sd
from calibration.ppi import ppi_lambda
from calibration.stats import normal_quantile, wilson, z_for


def cluster_variance(values: Sequence[float], units: Sequence[Hashable]) -> float:
    """The cluster-robust variance of the mean of ``values``, ``units`` the cluster of each.

    One value per cluster gives the population variance over n:

    >>> cluster_variance([0.0, 1.0, 1.0, 0.0], ["a", "b", "c", "d"])
    0.0625
    >>> cluster_variance([0.0, 0.0, 1.0, 1.0], ["a", "a", "b", "b"])  # two clusters of two
    0.125
    """
    x = np.asarray(values, dtype=np.float64)
    if len(x) != len(units):
        raise CalibrationError(f"one unit per value: {len(x)} values, {len(units)} units")
    if len(x) == 0:
        return float("nan")
    _, index = np.unique(np.asarray([str(u) for u in units]), return_inverse=True)
    sums = np.bincount(index, weights=x - x.mean())
    return float(np.sum(sums * sums) / (len(x) ** 2))


def effective_n(values: Sequence[float], units: Sequence[Hashable]) -> float:
    """``p(1 − p) / V``: how many independent 0/1 values the clustered ``values`` are worth;
    the number of clusters when every value is 0 or every value is 1."""
    x = np.asarray(values, dtype=np.float64)
    p = float(x.mean())
    variance = cluster_variance(x, units)
    if p * (1.0 - p) <= 0.0 or variance <= 1e-15 * max(p * (1.0 - p), 1e-300):
        return float(len(set(map(str, units))))
    return p * (1.0 - p) / variance


def clustered_rate(values: Sequence[float], units: Sequence[Hashable], *, ci: float = 0.95,
                   statistic: str = "mean") -> Estimate:
    """Mean of ``values`` in [0, 1] with the design-effect Wilson interval (see the module).

    NaN (``why`` says so) with no value; every interval stays inside [0, 1]:

    >>> e = clustered_rate([1.0] * 5, ["q1", "q1", "q2", "q3", "q3"])
    >>> e.value, round(e.low, 4), e.high, e.n, e.n_groups
    (1.0, 0.4385, 1.0, 5, 3)
    """
    z = z_for(ci)
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return Estimate(statistic, float("nan"), float("nan"), float("nan"), 0, ci, "none",
                        why="no value to average")
    if not (np.isfinite(x).all() and (x >= 0).all() and (x <= 1).all()):
        raise CalibrationError("a rate averages values between 0 and 1")
    groups = len(set(map(str, units)))
    low, high = wilson(float(x.mean()), effective_n(x, units), z)
    return Estimate(statistic, float(x.mean()), low, high, len(x), ci, "wilson", n_groups=groups)


def with_known_part(estimate: float, variance: float, units: Sequence[Hashable], estimated: Sequence[bool],
                    known: float) -> tuple[float, float]:
    """A mean over a population of which a part has a known mean ``known`` and the rest is
    estimated (``estimate``, of variance ``variance``): ``w·estimate + (1 − w)·known``, ``w``
    the estimated part's share (``estimated``: per member of the population, its cluster in
    ``units``). Its variance (delta method) counts the share as sampled with the questions:
    ``w²·variance + (estimate − known)²·V(w)``. Returns (mean, variance).

    With one member per cluster and the estimate a plain mean of 0/1 values over the whole
    estimated part, the variance is ``θ(1 − θ)/N``, that of the plain mean over everything:

    >>> mean, var = with_known_part(0.5, 0.25 / 4, "abcdef", [True] * 4 + [False] * 2, 0.0)
    >>> round(mean, 4), round(var, 6), round(mean * (1 - mean) / 6, 6)
    (0.3333, 0.037037, 0.037037)
    """
    share = float(np.mean(np.asarray(estimated, dtype=np.float64)))
    mean = share * estimate + (1.0 - share) * known
    return mean, share * share * variance + (estimate - known) ** 2 * cluster_variance(
        np.asarray(estimated, dtype=np.float64), units)


def stratified_rate(values: Sequence[float], units: Sequence[Hashable], population_units: Sequence[Hashable],
                    estimated: Sequence[bool], known: float, *, ci: float = 0.95) -> Estimate:
    """A rate over a population whose members marked not ``estimated`` have a value known
    without a label (mean ``known``), the others estimated by the labelled ``values`` (a random
    sample of them): the mean and variance of :func:`with_known_part`, with the design-effect
    Wilson interval. Without a known part it is :func:`clustered_rate`.

    >>> e = stratified_rate([1.0, 0.0], ["a", "b"], ["a", "b", "c", "d"], [True, True, True, False], 0.0)
    >>> e.value, e.n
    (0.375, 2)
    """
    if all(estimated):
        return clustered_rate(values, units, ci=ci)
    if len(values) == 0:
        return Estimate("mean", float("nan"), float("nan"), float("nan"), 0, ci, "none", why="no value to average")
    x = np.asarray(values, dtype=np.float64)
    mean, variance = with_known_part(float(x.mean()), cluster_variance(x, units), population_units, estimated, known)
    mean = min(max(mean, 0.0), 1.0)
    groups = len(set(map(str, population_units)))
    n_eff = mean * (1.0 - mean) / variance if mean * (1.0 - mean) > 0 and variance > 1e-15 else float(groups)
    low, high = wilson(mean, n_eff, z_for(ci))
    return Estimate("mean", mean, low, high, len(x), ci, "wilson", n_groups=len(set(map(str, units))))


@dataclass(frozen=True, slots=True)
class PPIEstimate:
    """A prediction-powered mean: the estimate with its interval, its standard error and λ."""

    estimate: Estimate
    se: float
    lam: float
    n_labelled: int
    n_unlabelled: int
    value: float  # the estimate before clipping to the bounds


def clustered_ppi(
    y: Sequence[float], f_labelled: Sequence[float], units_labelled: Sequence[Hashable],
    f_unlabelled: Sequence[float], units_unlabelled: Sequence[Hashable], *,
    ci: float = 0.95, tuned: bool = True, bounds: tuple[float, float] = (0.0, 1.0),
) -> PPIEstimate:
    """PPI++ (or classic PPI) mean with cluster-robust variance, clipped to ``bounds``.

    On one value per cluster it equals ``calibration.ppi.ppi_mean`` (and ``ppi-python``):

    >>> r = clustered_ppi([0, 1, 1, 0], [0, 1, 1, 1], "abcd", [0, 1, 0, 1, 1, 0], "efghij", tuned=False)
    >>> r.estimate.value, r.lam
    (0.25, 1.0)

    Raises:
        CalibrationError: fewer than two labelled or one unlabelled value, unequal lengths.
    """
    yl, fl, fu = (np.asarray(v, dtype=np.float64) for v in (y, f_labelled, f_unlabelled))
    if yl.shape != fl.shape or len(yl) != len(units_labelled) or len(fu) != len(units_unlabelled):
        raise CalibrationError("one judge value and one unit per labelled value, one unit per unlabelled value")
    if len(yl) < 2 or len(fu) < 1:
        raise CalibrationError(f"PPI needs at least 2 answers people and the judge both labelled and 1 the judge "
                               f"alone labelled (got {len(yl)} and {len(fu)})")
    z = z_for(ci)
    lam = ppi_lambda(yl, fl, fu) if tuned else 1.0
    value = float(np.mean(lam * fu) + np.mean(yl - lam * fl))
    se = math.sqrt(cluster_variance(lam * fu, units_unlabelled) + cluster_variance(yl - lam * fl, units_labelled))
    n = len(yl) + len(fu)
    groups = len(set(map(str, units_labelled)) | set(map(str, units_unlabelled)))
    if lam == 0.0 and bounds == (0.0, 1.0):
        people = clustered_rate(yl, units_labelled, ci=ci, statistic="ppi_mean")
        estimate = Estimate("ppi_mean", people.value, people.low, people.high, n, ci, "wilson", n_groups=groups)
    else:
        low_bound, high_bound = bounds
        clip = lambda v: min(max(v, low_bound), high_bound)  # noqa: E731
        estimate = Estimate("ppi_mean", clip(value), clip(value - z * se), clip(value + z * se), n, ci, "analytic",
                            n_groups=groups)
    return PPIEstimate(estimate, se, lam, len(yl), len(fu), value)


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Mean per-question difference ``a − b`` with its interval and minimum detectable difference."""

    difference: float
    low: float
    high: float
    mdd: float
    n: int  # questions both systems have a value on
    sd: float  # SD (n − 1) of the per-question differences


def unit_means(values: Mapping[Hashable, float], unit_of: Mapping[Hashable, Hashable]) -> dict[str, float]:
    """Per unit, the mean of the values of its answers: ``values`` by answer, ``unit_of`` its unit.

    >>> unit_means({"a1": 1.0, "a2": 0.0, "a3": 1.0}, {"a1": "q1", "a2": "q1", "a3": "q2"})
    {'q1': 0.5, 'q2': 1.0}
    """
    sums: dict[str, list[float]] = {}
    for answer, value in values.items():
        sums.setdefault(str(unit_of[answer]), []).append(value)
    return {unit: sum(v) / len(v) for unit, v in sums.items()}


def paired_difference(a: Mapping[str, float], b: Mapping[str, float], *, ci: float = 0.95, alpha: float = 0.05,
                      power: float = 0.8) -> PairedDifference | None:
    """``mean_q (a_q − b_q)`` over the units both map, with a normal interval from the SD of the
    differences (clipped to [−1, 1]) and the MDD at ``power``; None with fewer than 2 common units.

    >>> d = paired_difference({"q1": 1.0, "q2": 1.0, "q3": 0.0}, {"q1": 0.0, "q2": 1.0, "q3": 0.0, "q4": 1.0})
    >>> round(d.difference, 4), d.n, round(d.sd, 4)
    (0.3333, 3, 0.5774)
    """
    common = sorted(set(a) & set(b))
    if len(common) < 2:
        return None
    diffs = [a[u] - b[u] for u in common]
    mean = sum(diffs) / len(diffs)
    sd = per_query_sd([a[u] for u in common], [b[u] for u in common])
    half = z_for(ci) * sd / math.sqrt(len(common))
    mdd = minimum_detectable_difference(len(common), "per_query", sd=sd, alpha=alpha, power=power)
    return PairedDifference(mean, max(-1.0, mean - half), min(1.0, mean + half), mdd, len(common), sd)


def unpaired_difference(a: Mapping[str, float], b: Mapping[str, float], *, ci: float = 0.95, alpha: float = 0.05,
                        power: float = 0.8) -> PairedDifference | None:
    """``mean(a) − mean(b)`` over two sets of units answered apart (Welch's standard error,
    ``SE = sqrt(s_a²/n_a + s_b²/n_b)``, ``s`` the SD (n − 1) of the per-unit values), a normal
    interval clipped to [−1, 1] and the MDD ``(z_{1−α/2} + z_{power}) · SE``; None with fewer
    than 2 units on a side. ``n`` counts the units of both; ``sd`` is ``SE · sqrt(n)``.

    >>> d = unpaired_difference({"q1": 1.0, "q2": 0.0}, {"q3": 0.0, "q4": 0.0, "q5": 1.0, "q6": 0.0})
    >>> round(d.difference, 4), round((d.difference - d.low) / 1.959964, 4), d.n  # SE = sqrt(0.5/2 + 0.25/4)
    (0.25, 0.559, 6)
    """
    if len(a) < 2 or len(b) < 2:
        return None
    xa, xb = np.asarray(list(a.values()), dtype=np.float64), np.asarray(list(b.values()), dtype=np.float64)
    mean = float(xa.mean() - xb.mean())
    se = math.sqrt(float(xa.var(ddof=1)) / len(xa) + float(xb.var(ddof=1)) / len(xb))
    half = z_for(ci) * se
    mdd = (normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power)) * se
    n = len(xa) + len(xb)
    return PairedDifference(mean, max(-1.0, mean - half), min(1.0, mean + half), mdd, n, se * math.sqrt(n))


def ppi_paired_difference(people: Mapping[str, float], judge: Mapping[str, float], *, ci: float = 0.95,
                          alpha: float = 0.05, power: float = 0.8) -> PairedDifference | None:
    """PPI++ on per-unit differences: ``people`` on the units people labelled for both systems,
    ``judge`` on every unit the judge labelled for both; None when PPI is not possible."""
    labelled = sorted(u for u in judge if u in people)
    unlabelled = sorted(u for u in judge if u not in people)
    try:
        r = clustered_ppi([people[u] for u in labelled], [judge[u] for u in labelled], labelled,
                          [judge[u] for u in unlabelled], unlabelled, ci=ci, bounds=(-1.0, 1.0))
    except CalibrationError:
        return None
    mdd = (normal_quantile(1.0 - alpha / 2.0) + normal_quantile(1.0 - 2.0 * (1.0 - power) / 2.0)) * r.se
    e = r.estimate
    return PairedDifference(e.value, e.low, e.high, mdd, len(labelled) + len(unlabelled), r.se * math.sqrt(e.n))
