"""Prediction-powered inference for a mean: many judge labels, few human ones.

With judge predictions ``f`` on ``N`` items nobody labelled, and human labels ``y`` with the
judge's predictions on ``n`` other items (a random sample of the same population), the
prediction-powered estimate of the mean of ``y`` is (Angelopoulos et al. 2023, "Prediction-
powered inference", Science 382)::

    θ̂_λ = mean_N(λ f) + mean_n(y − λ f)
    Var  = var_N(λ f) / N + var_n(y − λ f) / n

``λ = 1`` is classic PPI; PPI++ (Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453) picks
``λ = cov_n(y, f) / ((1 + n/N) · var_{n+N}(f))``, clipped to [0, 1], which is never worse than
the human-only mean in large samples (λ = 0 is exactly the human-only estimate). The interval
is normal: ``θ̂ ± z_{1−α/2} · sqrt(Var)``. Variances are population variances (ddof 0),
as in ``ppi-python``, whose values these equal. A good judge makes ``y − f`` small and the
interval narrow; a bad one widens it but never biases it.

With few labelled units (``small_sample``: the query design labels a handful of queries) the
normal quantile claims more than the data hold: the variance of ``y − λf`` is estimated from
``n`` values. The interval then takes Student's t quantile with the Welch-Satterthwaite degrees
of freedom of the two variance terms, ``a = var_N(λf)/N`` and ``b = var_n(y − λf)/n``::

    df = (a + b)² / (a² / (N − 1) + b² / (n − 1))

(``n − 1`` when the people's term dominates, large when the judge's does), so the estimate
and standard error are still ppi-python's and only the width grows, by ``t_df / z``. When
``b`` is 0 (every labelled unit gives the same ``y − λf``, to 1e-12) no interval can be
given: the spread that would size it is unknown, and a zero-width interval would claim
certainty.

A bounded metric (a rate in [0, 1], a grade mean in [0, 3]) passes its ``bounds``: the PPI
estimate and interval are then clipped to them. The normal interval can cross a bound with few
labels (n = 5 gives [-0.18, 1.18]); clipping a valid interval to the parameter space removes
only values the parameter cannot take, so coverage is kept, and clipping the estimate only moves
it nearer the truth. The human-only interval of 0/1 labels is the Wilson score interval, which
stays inside [0, 1] and is not of zero width when every label agrees; other human-only intervals
are clipped like the PPI ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calibration import CalibrationError
from calibration.bootstrap import Estimate, check_interval_args, wilson_interval
from calibration.stats import z_for


@dataclass(frozen=True, slots=True)
class MeanEstimates:
    """A mean three ways, so the judge's worth in human labels is visible.

    Attributes:
        ppi: prediction-powered estimate (λ as in ``lam``) with its interval.
        human_only: the mean of the human labels alone, with its normal interval.
        judge_only: the mean of the judge's labels on every item (no interval: its bias is unknown).
        lam: the λ used (1 for classic PPI).
        n_labelled: items with human labels (and the judge's).
        n_unlabelled: items with the judge's labels only.
        worth: human labels the judge-assisted interval is worth: ``n · (w_human / w_ppi)²``.
        df: the degrees of freedom of the interval's quantile (infinite: the normal one).
    """

    ppi: Estimate
    human_only: Estimate
    judge_only: float
    lam: float
    n_labelled: int
    n_unlabelled: int
    worth: float
    df: float = math.inf


#: Values closer than this are the same value (metric values are sums of float terms).
SAME = 1e-12


def _same(values: np.ndarray) -> bool:
    """Whether every value is the same (their spread, and so a variance from them, is 0)."""
    return float(np.ptp(values)) <= SAME


def _t(ci: float, df: float) -> float:
    """Student's t quantile for a two-sided ``ci`` interval (the normal one for infinite ``df``)."""
    if math.isinf(df):
        return z_for(ci)
    from scipy.stats import t

    return float(t.ppf(0.5 + ci / 2, df))


def welch_df(a: float, b: float, n: int, big_n: int) -> float:
    """Welch-Satterthwaite degrees of freedom of ``a + b``, variance terms estimated from
    ``big_n`` and ``n`` values (infinite when both are 0).

    >>> round(welch_df(0.0, 1.0, 5, 100), 6), round(welch_df(1.0, 1.0, 5, 5), 6)
    (4.0, 8.0)
    """
    num = (a + b) ** 2
    den = (a * a / (big_n - 1) if big_n > 1 else 0.0) + (b * b / (n - 1) if n > 1 else 0.0)
    return num / den if den > 0 else math.inf


def ppi_lambda(y: np.ndarray, f_labelled: np.ndarray, f_unlabelled: np.ndarray) -> float:
    """The PPI++ power-tuning weight for a mean, clipped to [0, 1].

    >>> ppi_lambda(np.array([0., 1, 1, 0]), np.array([0., 1, 1, 1]), np.array([0., 1, 0, 1, 1, 0]))
    0.28125
    """
    n, big_n = len(y), len(f_unlabelled)
    cov = float(np.mean((y - y.mean()) * (f_labelled - f_labelled.mean())))
    var = float(np.var(np.concatenate([f_labelled, f_unlabelled]), ddof=1))
    if var == 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def _clip(numbers: tuple[float, float, float], bounds: tuple[float, float] | None) -> tuple[float, float, float]:
    """``numbers`` (value, low, high) clipped to ``bounds`` (unchanged without bounds)."""
    if bounds is None:
        return numbers
    low, high = bounds
    return tuple(min(max(x, low), high) for x in numbers)  # type: ignore[return-value]


def ppi_mean(
    y: Sequence[float],
    f_labelled: Sequence[float],
    f_unlabelled: Sequence[float],
    *,
    ci: float = 0.95,
    tuned: bool = True,
    bounds: tuple[float, float] | None = None,
    small_sample: bool = False,
) -> MeanEstimates:
    """Prediction-powered mean (PPI++ when ``tuned``, classic PPI otherwise) beside the others.

    Classic PPI on a 4-labelled, 6-unlabelled toy set: mean_N(f) = 0.5, mean_n(y − f) = −0.25,
    so θ̂ = 0.25:

    >>> r = ppi_mean([0, 1, 1, 0], [0, 1, 1, 1], [0, 1, 0, 1, 1, 0], tuned=False)
    >>> r.ppi.value, r.human_only.value, r.judge_only
    (0.25, 0.5, 0.6)

    With ``bounds`` every estimate and interval stays inside them:

    >>> r = ppi_mean([1, 1, 1, 1, 1], [0, 1, 1, 1, 1], [1, 1, 1], tuned=False, bounds=(0.0, 1.0))
    >>> r.ppi.value, r.ppi.high, round(r.human_only.low, 4), r.human_only.method
    (1.0, 1.0, 0.5655, 'wilson')

    ``small_sample``: t quantiles (Welch-Satterthwaite ``df`` for PPI, ``n − 1`` for people
    alone) instead of the normal one, and no interval (``nan`` bounds) where the people's
    variance term is 0, save the Wilson interval of 0/1 labels.

    Raises:
        CalibrationError: fewer than two labelled or one unlabelled item, unequal lengths,
            or a label that is not a finite number.
    """
    check_interval_args(ci, 0)
    yl, fl, fu = _checked_inputs(y, f_labelled, f_unlabelled, bounds)
    n, big_n = len(yl), len(fu)
    lam = ppi_lambda(yl, fl, fu) if tuned else 1.0
    value = float(np.mean(lam * fu) + np.mean(yl - lam * fl))
    judge_term, people_term = float(np.var(lam * fu) / big_n), float(np.var(yl - lam * fl) / n)
    se = math.sqrt(judge_term + people_term)
    df = welch_df(judge_term, people_term, n, big_n) if small_sample else math.inf
    q = _t(ci, df)
    human_se = float(np.std(yl) / math.sqrt(n))
    human = _human_mean(yl, human_se, _t(ci, n - 1.0) if small_sample else q, ci, bounds, small_sample)
    nan = math.nan
    if lam == 0.0:
        # λ = 0 ignores the judge: the estimate is the human-only one, and so is its interval.
        ppi = Estimate("ppi_mean", human.value, human.low, human.high, n + big_n, ci, human.method)
        df = n - 1.0 if small_sample else df
    elif small_sample and _same(yl - lam * fl):
        ppi = Estimate("ppi_mean", *_clip((value, nan, nan), bounds), n + big_n, ci, "no interval")
    else:
        ppi = Estimate("ppi_mean", *_clip((value, value - q * se, value + q * se), bounds), n + big_n, ci, "analytic")
    worth = n * (human_se / se) ** 2 if se > 0 else math.inf
    judge_only = float(np.concatenate([fl, fu]).mean())
    return MeanEstimates(ppi, human, judge_only, lam, n, big_n, worth, df)


def _checked_inputs(
    y: Sequence[float], f_labelled: Sequence[float], f_unlabelled: Sequence[float], bounds: tuple[float, float] | None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """:func:`ppi_mean`'s three label vectors as float arrays, once checked (see its Raises)."""
    yl, fl, fu = (np.asarray(v, dtype=np.float64) for v in (y, f_labelled, f_unlabelled))
    if yl.shape != fl.shape or yl.ndim != 1:
        raise CalibrationError(f"y and f_labelled must give one value per labelled item ({yl.shape} vs {fl.shape})")
    if len(yl) < 2 or len(fu) < 1:
        raise CalibrationError(f"PPI needs at least 2 human-labelled items and 1 judge-only item (got {len(yl)} and {len(fu)})")
    if not (np.isfinite(yl).all() and np.isfinite(fl).all() and np.isfinite(fu).all()):
        raise CalibrationError("labels must be finite numbers")
    if bounds is not None and not (bounds[0] < bounds[1]):
        raise CalibrationError(f"bounds {bounds}: the lower bound must be below the upper one")
    return yl, fl, fu


def _human_mean(yl: NDArray[np.float64], se: float, q: float, ci: float, bounds: tuple[float, float] | None,
                small_sample: bool) -> Estimate:
    """The people's mean alone: Wilson for 0/1 labels in [0, 1], else ± ``q`` standard errors
    ``se`` (no interval under ``small_sample`` when every label is the same)."""
    n, value = len(yl), float(yl.mean())
    if bounds == (0.0, 1.0) and np.isin(yl, (0.0, 1.0)).all():
        return Estimate("human_mean", value, *wilson_interval(int(yl.sum()), n, ci), n, ci, "wilson")
    if small_sample and _same(yl):
        return Estimate("human_mean", *_clip((value, math.nan, math.nan), bounds), n, ci, "no interval")
    return Estimate("human_mean", *_clip((value, value - q * se, value + q * se), bounds), n, ci, "analytic")
