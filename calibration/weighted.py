"""Rates from a sample drawn with unequal inclusion probabilities: each labelled member weighs
1/π, so a sample drawn where the judge is least sure still estimates the whole population's
rate without bias.

The population is finite (the answers imported): its ``N`` members, of which a sample was drawn
with inclusion probabilities ``π_i`` (``sample-answers``), and people labelled the sampled ones.

- **The design.** :func:`pps_probabilities` turns sizes into inclusion probabilities
  ``π_i ∝ size_i`` summing to ``n`` (those that would pass 1 are taken with certainty, the rest
  rescaled), and :func:`systematic_pps` draws exactly ``n`` members with exactly those
  probabilities (systematic sampling on a random order; Madow 1949).
- **A rate** (:func:`hajek_rate`): the Hájek mean ``Σ y_i/π_i / Σ 1/π_i`` over the labelled
  sampled members; it equals the Horvitz-Thompson mean ``Σ y_i/π_i / N`` when the weights sum to
  ``N`` (a simple random or a proportional stratified sample), and unlike it stays a mean when
  some sampled members are not labelled yet.
- **PPI++** (:func:`hajek_ppi`): the judge's value ``f`` on every member, people's ``y`` on the
  sample: ``λ·mean_N(f) + Σ w_i (y_i − λ f_i) / Σ w_i`` with ``w = 1/π``. The judge's mean over
  the population is known exactly (the population is the answers imported), so the sampling
  variance is the rectifier's alone; λ minimises it (the weighted covariance of ``y`` and ``f``
  over the weighted variance of ``f``, clipped to [0, 1]), and λ = 0 is :func:`hajek_rate`.

The variance of a Hájek mean is its linearisation, clustered by question (two answers to one
question move together), each term scaled by ``1 − π_i`` (a member drawn with certainty adds
nothing) and by ``n / (n − 1)``::

    V = n/(n − 1) · Σ_g (Σ_{i∈g} w_i √(1 − π_i) (e_i − ē))² / (Σ_i w_i)²

which for a simple random sample without clusters is the textbook ``(1 − n/N) s²/n``.
A rate's interval is the Wilson interval at the effective sample size ``p(1 − p)/V`` (as
:mod:`calibration.clustered`'s rates); PPI++'s is normal, clipped to [0, 1].
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from calibration import CalibrationError
from calibration.bootstrap import Estimate
from calibration.stats import wilson, z_for

__all__ = ["WeightedPPI", "hajek_ppi", "hajek_rate", "hajek_variance", "pps_probabilities", "systematic_pps"]


def pps_probabilities(sizes: Sequence[float], n: int) -> list[float]:
    """Inclusion probabilities proportional to ``sizes`` (all positive) summing to ``n``; a
    member whose share would pass 1 is taken with certainty and the rest rescaled.

    >>> pps_probabilities([1, 1, 2, 4], 2)
    [0.25, 0.25, 0.5, 1.0]
    >>> pps_probabilities([1, 1, 1, 97], 2)
    [0.3333333333333333, 0.3333333333333333, 0.3333333333333333, 1.0]
    """
    if any(not (s > 0 and math.isfinite(s)) for s in sizes):
        raise CalibrationError("every size must be a positive number")
    n = min(n, len(sizes))
    certain: set[int] = set()
    while True:
        rest = [i for i in range(len(sizes)) if i not in certain]
        total = sum(sizes[i] for i in rest)
        left = n - len(certain)
        over = [i for i in rest if left * sizes[i] / total >= 1.0]
        if not over or left <= 0:
            break
        certain.update(over)
    return [1.0 if i in certain else min(1.0, left * sizes[i] / total) for i in range(len(sizes))]


def systematic_pps(probabilities: Sequence[float], rng: random.Random) -> list[int]:
    """The indices of a sample drawn with exactly ``probabilities`` (which sum to a whole
    number n): the members in a random order, their probabilities laid end to end on [0, n),
    and the members under ``u, u + 1, ..., u + n − 1`` for one uniform ``u`` in [0, 1)."""
    total = sum(probabilities)
    if abs(total - round(total)) > 1e-6 or any(not 0.0 < p <= 1.0 for p in probabilities):
        raise CalibrationError("inclusion probabilities in (0, 1] summing to a whole number")
    order = list(range(len(probabilities)))
    rng.shuffle(order)
    u = rng.random()
    chosen, cumulative, k = [], 0.0, 0
    for i in order:
        cumulative += probabilities[i]
        while k < round(total) and u + k < cumulative - 1e-12:
            chosen.append(i)
            k += 1
    return sorted(set(chosen))


def _arrays(values: Sequence[float], probabilities: Sequence[float],
            units: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, p = np.asarray(values, dtype=np.float64), np.asarray(probabilities, dtype=np.float64)
    if not len(y) == len(p) == len(units):
        raise CalibrationError("one value, one inclusion probability and one unit per labelled member")
    if len(p) and not ((p > 0).all() and (p <= 1).all()):
        raise CalibrationError("inclusion probabilities lie in (0, 1]")
    _, index = np.unique(np.asarray([str(u) for u in units]), return_inverse=True)
    return y, p, index


def hajek_variance(residuals: Sequence[float], probabilities: Sequence[float], units: Sequence[Hashable]) -> float:
    """The linearised variance of a Hájek mean whose residuals ``e_i − ē`` are ``residuals``
    (see the module); 0 for fewer than 2 members.

    A simple random sample of 4 of 8 (π = 1/2), one member a question: ``(1 − n/N) s²/n``:

    >>> e = [1 - 0.5, 0 - 0.5, 1 - 0.5, 0 - 0.5]
    >>> round(hajek_variance(e, [0.5] * 4, "abcd"), 12), round((1 - 4 / 8) * (1 / 3) / 4, 12)
    (0.041666666667, 0.041666666667)
    """
    e, p, index = _arrays(residuals, probabilities, units)
    if len(e) < 2:
        return 0.0
    w = 1.0 / p
    sums = np.bincount(index, weights=w * np.sqrt(1.0 - p) * e)
    return float(len(e) / (len(e) - 1) * np.sum(sums * sums) / w.sum() ** 2)


def hajek_rate(values: Sequence[float], probabilities: Sequence[float], units: Sequence[Hashable], *,
               ci: float = 0.95) -> Estimate:
    """The Hájek mean of ``values`` in [0, 1] (labelled sampled members, each of inclusion
    probability ``probabilities[i]``, in question ``units[i]``) with the Wilson interval at its
    effective sample size; NaN with no value.

    >>> e = hajek_rate([1.0, 0.0, 0.0], [0.5, 0.25, 0.25], "abc")  # weights 2, 4, 4
    >>> round(e.value, 4), e.n
    (0.2, 3)
    """
    y, p, _ = _arrays(values, probabilities, units)
    if len(y) == 0:
        return Estimate("mean", math.nan, math.nan, math.nan, 0, ci, "none", why="no labelled member in the sample")
    if not (np.isfinite(y).all() and (y >= 0).all() and (y <= 1).all()):
        raise CalibrationError("a rate averages values between 0 and 1")
    w = 1.0 / p
    value = float(np.sum(w * y) / w.sum())
    variance = hajek_variance(y - value, p, units)
    groups = len(set(map(str, units)))
    spread = value * (1.0 - value)
    n_eff = groups if spread <= 0.0 or variance <= 1e-15 * spread else spread / variance
    low, high = wilson(value, n_eff, z_for(ci))
    return Estimate("mean", value, low, high, len(y), ci, "wilson (weighted)", n_groups=groups)


@dataclass(frozen=True, slots=True)
class WeightedPPI:
    """A design-weighted PPI++ mean: ``estimate`` (normal interval clipped to [0, 1]), its
    standard error ``se``, λ, and how many members people and the judge alone stand for."""

    estimate: Estimate
    se: float
    lam: float
    n_labelled: int
    n_unlabelled: int


def _weighted_lambda(y: np.ndarray, f: np.ndarray, p: np.ndarray, units: Sequence[Hashable]) -> float:
    """The λ minimising the rectifier's variance, ``C(y, f) / V(f)`` in the weighted,
    clustered linearisation, clipped to [0, 1]."""
    w = 1.0 / p
    ey, ef = y - np.sum(w * y) / w.sum(), f - np.sum(w * f) / w.sum()
    _, index = np.unique(np.asarray([str(u) for u in units]), return_inverse=True)
    scale = w * np.sqrt(1.0 - p)
    sy, sf = np.bincount(index, weights=scale * ey), np.bincount(index, weights=scale * ef)
    var = float(np.sum(sf * sf))
    return 0.0 if var <= 0.0 else float(np.clip(np.sum(sy * sf) / var, 0.0, 1.0))


def hajek_ppi(people: Sequence[float], judge_labelled: Sequence[float], probabilities: Sequence[float],
              units: Sequence[Hashable], judge_everyone: Sequence[float], *, ci: float = 0.95,
              lam: float | None = None) -> WeightedPPI:
    """PPI++ over a population the judge gave a value on every member of (``judge_everyone``),
    people on a sample (``people``, the judge's values on the same members ``judge_labelled``,
    their inclusion ``probabilities`` and questions ``units``); λ tuned unless given.

    Raises:
        CalibrationError: fewer than 2 labelled members, or lengths that differ.

    With every π equal and λ = 1 it is the judge's mean plus the people's mean correction:

    >>> r = hajek_ppi([1.0, 0.0], [1.0, 1.0], [0.5, 0.5], "ab", [1.0, 1.0, 0.0, 0.0], lam=1.0)
    >>> r.estimate.value
    0.0
    """
    y, p, _ = _arrays(people, probabilities, units)
    f = np.asarray(judge_labelled, dtype=np.float64)
    everyone = np.asarray(judge_everyone, dtype=np.float64)
    if len(f) != len(y):
        raise CalibrationError("one judge's value per labelled member")
    if len(y) < 2:
        raise CalibrationError("PPI++ needs at least 2 labelled members in the sample")
    lam = _weighted_lambda(y, f, p, units) if lam is None else float(lam)
    w = 1.0 / p
    g = y - lam * f
    rectifier = float(np.sum(w * g) / w.sum())
    value = lam * float(everyone.mean()) + rectifier
    se = math.sqrt(hajek_variance(g - rectifier, p, units))
    half = z_for(ci) * se
    low, high = (min(max(v, 0.0), 1.0) for v in (value - half, value + half))
    estimate = Estimate("mean", min(max(value, 0.0), 1.0), low, high, len(everyone), ci, "analytic (weighted)",
                        n_groups=None)
    return WeightedPPI(estimate, se, lam, len(y), len(everyone) - len(y))
