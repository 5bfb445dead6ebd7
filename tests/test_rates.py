"""Rates composed in one call (calibration.rates): each against the estimator it reduces to, and
against the plain mean written as arithmetic where every member has a value."""

from __future__ import annotations

import math

import pytest

from calibration import CalibrationError
from calibration.clustered import clustered_ppi, clustered_rate, stratified_rate
from calibration.rates import labelled_rate, ppi_rate

UNITS = ["q1", "q1", "q2", "q3", "q3", "q4", "q5", "q6"]


def test_without_known_members_it_is_the_clustered_rate() -> None:
    values = [1.0, 0.0, 1.0, None, 1.0, 0.5, None, 0.0]
    r = labelled_rate(values, UNITS, [False] * 8)
    kept = [i for i, v in enumerate(values) if v is not None]
    e = clustered_rate([values[i] for i in kept], [UNITS[i] for i in kept])
    assert (r.estimate.value, r.estimate.low, r.estimate.high, r.estimate.method) == (e.value, e.low, e.high, e.method)
    assert (r.estimate.n, r.estimate.n_groups, r.n_known) == (6, 5, 0)


def test_every_member_labelled_gives_the_plain_mean_of_all() -> None:
    # Six labelled (three 1s), two known 0s: 3/4 · 3/6 + 1/4 · 0 = 3/8, the mean of all eight.
    values = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    known = [False] * 6 + [True] * 2
    r = labelled_rate(values, UNITS, known)
    assert r.estimate.value == pytest.approx(3 / 8) == pytest.approx(sum(values) / len(values))
    assert (r.estimate.n, r.n_known) == (8, 2)
    assert 0.0 <= r.estimate.low <= 3 / 8 <= r.estimate.high <= 1.0


def test_the_known_part_joins_as_stratified_rate_places_it() -> None:
    values = [1.0, None, 1.0, 0.0, None, 1.0, 1.0, 1.0]
    known = [False, False, False, False, False, False, True, True]
    e = stratified_rate([1.0, 1.0, 0.0, 1.0], ["q1", "q2", "q3", "q4"], UNITS, [not k for k in known], 1.0)
    r = labelled_rate(values, UNITS, known)
    assert (r.estimate.value, r.estimate.low, r.estimate.high) == (e.value, e.low, e.high)
    assert (r.estimate.n, r.estimate.n_groups, r.n_known) == (6, 6, 2)


def test_known_members_alone_are_their_plain_mean() -> None:
    r = labelled_rate([1.0, 0.0, 0.0], ["a", "b", "c"], [True] * 3)
    assert r.estimate.value == pytest.approx(1 / 3) and r.n_known == 0 and r.estimate.n == 3


@pytest.mark.parametrize("values, known", [
    ([None, None], [False, False]),  # nobody gave a value
    ([None, 1.0], [False, True]),  # only a known one: nothing estimates the other
])
def test_undefined_without_a_labelled_value_to_estimate_the_others(values, known) -> None:
    r = labelled_rate(values, ["a", "b"], known)
    assert math.isnan(r.estimate.value) and r.estimate.why and r.estimate.n == sum(v is not None for v in values)


def test_bad_populations_are_refused() -> None:
    with pytest.raises(CalibrationError, match="known needs that value"):
        labelled_rate([1.0, None], ["a", "b"], [False, True])
    with pytest.raises(CalibrationError, match="one value"):
        labelled_rate([1.0], ["a", "b"], [False])


PEOPLE = [1.0, 0.0, 1.0, 1.0, None, None, None, None]
JUDGE = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]


def test_ppi_without_known_members_is_clustered_ppi() -> None:
    r = ppi_rate(PEOPLE, JUDGE, UNITS, [False] * 8)
    p = clustered_ppi(PEOPLE[:4], JUDGE[:4], UNITS[:4], JUDGE[4:], UNITS[4:])
    assert (r.estimate.value, r.estimate.low, r.estimate.high, r.lam) == (p.estimate.value, p.estimate.low,
                                                                           p.estimate.high, p.lam)
    assert (r.n_labelled, r.n_unlabelled, r.n_known, r.estimate.n, r.estimate.n_groups) == (4, 4, 0, 8, 6)


def test_ppi_with_known_members_weighs_them_by_their_share() -> None:
    base = clustered_ppi(PEOPLE[:4], JUDGE[:4], UNITS[:4], JUDGE[4:], UNITS[4:])
    r = ppi_rate([*PEOPLE, None, None], [*JUDGE, 0.0, 0.0], [*UNITS, "q7", "q8"], [False] * 8 + [True] * 2)
    if base.lam == 0.0:  # the people's own rate among the known ones
        expected = labelled_rate([*PEOPLE, 0.0, 0.0], [*UNITS, "q7", "q8"], [False] * 8 + [True] * 2).estimate.value
    else:
        expected = min(max(8 / 10 * base.value + 2 / 10 * 0.0, 0.0), 1.0)
    assert r.estimate.value == pytest.approx(expected)
    assert r.n_known == 2 and r.estimate.n == 10 and r.estimate.low <= r.estimate.value <= r.estimate.high


def test_ppi_needs_two_labelled_members() -> None:
    with pytest.raises(CalibrationError, match="at least 2"):
        ppi_rate([1.0, None, None], [1.0, 0.0, 1.0], ["a", "b", "c"], [False] * 3)
    assert math.isnan(ppi_rate([], [], [], []).estimate.value)
