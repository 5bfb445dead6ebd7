"""A rate over a population of answers, composed in one call: from the values people (or a judge)
gave, with the members whose value is known without a label joining by their share, and, with a
judge's values on every member, by PPI++.

A population is given member by member, in one order: a value (None where none was given), the
member's cluster (its question) and whether its value is *known* (fixed without a label: an
empty response is incorrect and does not address its question). Known members are no part of
the sample people label: a rate over members of which people labelled a sample would otherwise
hold every known one and only a sample of the others. So the labelled values estimate the
mean of the members not known, and the known ones join by their share of the population
(:func:`calibration.clustered.with_known_part`, its variance by the delta method).

- :func:`labelled_rate`: one source's values, the design-effect Wilson interval
  (:func:`calibration.clustered.stratified_rate`).
- :func:`ppi_rate`: people on some members, a judge on all: the PPI++ mean of the members not
  known (:func:`calibration.clustered.clustered_ppi`), the known ones joined by their share, a
  normal interval kept inside [0, 1]; with λ = 0 (the judge ignored) the people's own rate
  among the known ones.
- :func:`sampled_rate` and :func:`sampled_ppi_rate`: the same with people's values on a sample
  drawn with unequal inclusion probabilities (a judge-uncertain one): each labelled member
  weighs 1/π (:mod:`calibration.weighted`); a labelled member outside the sample is left out,
  and the known members join by their share, which is known exactly (the population is the
  answers imported), so the interval moves with the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace

from calibration import CalibrationError
from calibration.bootstrap import Estimate
from calibration.clustered import clustered_ppi, stratified_rate, with_known_part
from calibration.stats import z_for
from calibration.weighted import hajek_ppi, hajek_rate


@dataclass(frozen=True, slots=True)
class ComposedRate:
    """A rate and what it is composed of.

    Attributes:
        estimate: the rate, its interval and method; ``n`` the members with a value counted,
            ``n_groups`` their clusters (NaN, with ``why``, when no member has a usable value).
        n_known: known members that joined by their share (0 when none did; a rate of known
            members alone is their plain mean, and counts none).
        lam: PPI++'s λ (None for one source's rate).
        n_labelled, n_unlabelled: PPI++'s members with a people's value, and with the judge's alone.
    """

    estimate: Estimate
    n_known: int = 0
    lam: float | None = None
    n_labelled: int = 0
    n_unlabelled: int = 0


def _undefined(n: int, ci: float, why: str) -> ComposedRate:
    return ComposedRate(Estimate("mean", math.nan, math.nan, math.nan, n, ci, "none", why=why))


def _counted(e: Estimate, units: Sequence[Hashable]) -> Estimate:
    """``e`` with ``n`` and ``n_groups`` those of the members counted (``units``: theirs)."""
    return replace(e, n=len(units), n_groups=len(set(map(str, units))))


def _known_mean(values: Sequence[float | None], known: Sequence[bool]) -> tuple[list[int], float]:
    fixed = [i for i, k in enumerate(known) if k]
    if any(values[i] is None for i in fixed):
        raise CalibrationError("a member whose value is known needs that value")
    return fixed, sum(values[i] for i in fixed) / len(fixed) if fixed else 0.0  # type: ignore[misc]


def labelled_rate(values: Sequence[float | None], units: Sequence[Hashable], known: Sequence[bool], *,
                  ci: float = 0.95) -> ComposedRate:
    """The rate of a population from one source's ``values`` (see the module): the labelled
    members estimate the rest of the members not ``known``, the known ones join by their share.

    Undefined when no member has a value, or when only known members do while others lack one
    (nothing estimates those). When every member with a value is known and none lacks one, the
    rate is their plain mean.

    Two of four members labelled (1 and 0), one known 0 and one unlabelled: the labelled
    estimate 0.5 stands for the three members not known, the known one joins by its share,
    ``3/4 · 0.5 + 1/4 · 0``:

    >>> r = labelled_rate([1.0, 0.0, None, 0.0], ["a", "b", "c", "d"], [False, False, False, True])
    >>> r.estimate.value, r.estimate.n, r.n_known
    (0.375, 3, 1)
    """
    if not len(values) == len(units) == len(known):
        raise CalibrationError("one value (or None), one unit and one known flag per member")
    fixed, known_mean = _known_mean(values, known)
    labelled = [i for i, v in enumerate(values) if v is not None and not known[i]]
    counted = [units[i] for i, v in enumerate(values) if v is not None]
    if not counted or (not labelled and len(fixed) < len(values)):
        return _undefined(len(counted), ci, "no member with a value to estimate the others")
    estimated = [not k for k in known]
    if not labelled:  # every member is known: their plain mean
        labelled, fixed, estimated = fixed, [], [True] * len(values)
    e = stratified_rate([values[i] for i in labelled], [units[i] for i in labelled],  # type: ignore[misc]
                        units, estimated, known_mean, ci=ci)
    return ComposedRate(_counted(e, counted), n_known=len(fixed))


def ppi_rate(people: Sequence[float | None], judge: Sequence[float], units: Sequence[Hashable],
             known: Sequence[bool], *, ci: float = 0.95) -> ComposedRate:
    """The PPI++ rate of a population the judge gave a value on every member of (``judge``),
    people on some (``people``, None elsewhere); a known member's value is its ``judge`` entry.

    Raises:
        CalibrationError: fewer than 2 members with both values or fewer than 1 with the
            judge's alone among those not known; lengths that differ.

    On members none of which is known it is :func:`calibration.clustered.clustered_ppi`; a
    known member (value 0) among ten joins by its share, ``10/11 · 0.4296875``:

    >>> from calibration.clustered import clustered_ppi
    >>> people, judge = [0, 1, 1, 0] + [None] * 6, [0, 1, 1, 1, 0, 1, 0, 1, 1, 0]
    >>> r = ppi_rate(people, judge, "abcdefghij", [False] * 10)
    >>> r.estimate.value == clustered_ppi(people[:4], judge[:4], "abcd", judge[4:], "efghij").estimate.value, r.lam
    (True, 0.28125)
    >>> ppi_rate(people + [None], judge + [0], "abcdefghijk", [False] * 10 + [True]).estimate.value
    0.390625
    """
    if not len(people) == len(judge) == len(units) == len(known):
        raise CalibrationError("one people's value (or None), one judge's value, one unit and one known flag per member")
    if not units:
        return _undefined(0, ci, "no member with a judge's value")
    fixed, known_mean = _known_mean(judge, known)
    labelled = [i for i, k in enumerate(known) if not k and people[i] is not None]
    unlabelled = [i for i, k in enumerate(known) if not k and people[i] is None]
    r = clustered_ppi([people[i] for i in labelled], [judge[i] for i in labelled],  # type: ignore[misc]
                      [units[i] for i in labelled], [judge[i] for i in unlabelled], [units[i] for i in unlabelled], ci=ci)
    e = r.estimate
    if fixed:
        estimated = [not k for k in known]
        if r.lam == 0.0:  # the people's own rate (λ = 0 ignores the judge), placed among the known ones
            e = stratified_rate([people[i] for i in labelled], [units[i] for i in labelled],  # type: ignore[misc]
                                units, estimated, known_mean, ci=ci)
        else:
            value, variance = with_known_part(r.value, r.se ** 2, units, estimated, known_mean)
            half = z_for(ci) * math.sqrt(variance)
            value, low, high = (min(max(v, 0.0), 1.0) for v in (value, value - half, value + half))
            e = replace(e, value=value, low=low, high=high)
    return ComposedRate(_counted(e, units), len(fixed), r.lam, r.n_labelled, r.n_unlabelled)


def _joined(e: Estimate, share: float, known_mean: float) -> Estimate:
    """``e`` (the members not known) placed among the known ones, whose share ``1 − share`` of
    the population and mean are known: every number ``share · x + (1 − share) · known_mean``."""
    move = lambda x: share * x + (1.0 - share) * known_mean
    return replace(e, value=move(e.value), low=move(e.low), high=move(e.high))


def sampled_rate(values: Sequence[float | None], probabilities: Sequence[float | None], units: Sequence[Hashable],
                 known: Sequence[bool], *, ci: float = 0.95) -> ComposedRate:
    """The rate of a population from people's ``values`` on a sample (``probabilities``: each
    member's inclusion probability, None outside the sample): the Hájek mean of the labelled
    sampled members not ``known`` (:func:`calibration.weighted.hajek_rate`), the known ones joined
    by their share (see the module).

    Two sampled members, 1 at π = 1/2 and 0 at π = 1/4, one known 0 among four:
    ``3/4 · (2 · 1 + 4 · 0) / 6 + 1/4 · 0``:

    >>> r = sampled_rate([1.0, 0.0, None, 0.0], [0.5, 0.25, None, None], "abcd", [False, False, False, True])
    >>> round(r.estimate.value, 4), r.estimate.n, r.n_known
    (0.25, 2, 1)
    """
    if not len(values) == len(probabilities) == len(units) == len(known):
        raise CalibrationError("one value (or None), one probability (or None), one unit and one known flag per member")
    fixed, known_mean = _known_mean(values, known)
    labelled = [i for i, v in enumerate(values) if v is not None and probabilities[i] is not None and not known[i]]
    if not labelled:
        if fixed and len(fixed) == len(values):
            known_all = Estimate("mean", known_mean, known_mean, known_mean, len(fixed), ci, "none")
            return ComposedRate(known_all, n_known=len(fixed))  # every member known: nothing sampled
        return _undefined(0, ci, "no labelled member in the sample")
    e = hajek_rate([values[i] for i in labelled], [probabilities[i] for i in labelled],  # type: ignore[misc]
                   [units[i] for i in labelled], ci=ci)
    if fixed:
        e = _joined(e, 1.0 - len(fixed) / len(values), known_mean)
    return ComposedRate(e, n_known=len(fixed))


def sampled_ppi_rate(people: Sequence[float | None], probabilities: Sequence[float | None], judge: Sequence[float],
                     units: Sequence[Hashable], known: Sequence[bool], *, ci: float = 0.95) -> ComposedRate:
    """The PPI++ rate of a population the judge gave a value on every member of, people on a
    sample drawn with ``probabilities`` (None outside it): the design-weighted PPI++ mean of the
    members not known (:func:`calibration.weighted.hajek_ppi`), the known ones (their value the
    ``judge`` entry) joined by their share.

    Raises:
        CalibrationError: fewer than 2 labelled members in the sample; lengths that differ.
    """
    if not len(people) == len(probabilities) == len(judge) == len(units) == len(known):
        raise CalibrationError("one people's value (or None), one probability (or None), one judge's value, one unit "
                               "and one known flag per member")
    if not units:
        return _undefined(0, ci, "no member with a judge's value")
    fixed, known_mean = _known_mean(judge, known)
    labelled = [i for i, k in enumerate(known) if not k and people[i] is not None and probabilities[i] is not None]
    rest = [i for i, k in enumerate(known) if not k]
    if not rest:
        return sampled_rate(judge, [None] * len(judge), units, known, ci=ci)
    r = hajek_ppi([people[i] for i in labelled], [judge[i] for i in labelled],  # type: ignore[misc]
                  [probabilities[i] for i in labelled], [units[i] for i in labelled], [judge[i] for i in rest], ci=ci)
    e = r.estimate if not fixed else _joined(r.estimate, len(rest) / len(units), known_mean)
    return ComposedRate(_counted(e, units), len(fixed), r.lam, r.n_labelled, r.n_unlabelled)
