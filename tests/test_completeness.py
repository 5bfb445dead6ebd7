"""Capture-recapture: Chapman's arithmetic, recovery of a known total, refusals."""

from __future__ import annotations

import math
import random

import pytest

from pooling import PoolingError
from pooling.completeness import ONE_QUERY, chapman, completeness


def test_chapman_arithmetic() -> None:
    assert chapman(10, 8, 4) == pytest.approx(11 * 9 / 5 - 1)
    assert chapman(3, 2, 0) == pytest.approx(4 * 3 / 1 - 1)
    with pytest.raises(PoolingError):
        chapman(2, 3, 4)


def test_one_query_by_hand() -> None:
    found = {"q": {"a": {"1", "2", "3", "4"}, "b": {"3", "4", "5"}}}  # n1 4, n2 3, m 2, union 5
    c = completeness(found, n_boot=100)
    pair = c.headline
    assert (pair.n1, pair.n2, pair.m) == (4, 3, 2)
    assert pair.estimated_relevant == pytest.approx(5 * 4 / 3 - 1)
    assert pair.missed == pytest.approx(5 * 4 / 3 - 1 - 5)
    assert c.found == 5 and "independently" in c.assumption


def test_independent_sources_recover_the_total() -> None:
    rng = random.Random(5)
    found, total, union = {}, 0, 0
    for q in range(200):
        relevant = [f"{q}-{i}" for i in range(rng.randint(5, 15))]
        total += len(relevant)
        a = {d for d in relevant if rng.random() < 0.5}
        b = {d for d in relevant if rng.random() < 0.6}
        union += len(a | b)
        found[f"q{q}"] = {"a": a, "b": b}
    c = completeness(found, n_boot=500)
    true_missed = total - union
    assert c.found == union
    assert c.headline.low <= true_missed <= c.headline.high
    assert c.headline.missed == pytest.approx(true_missed, rel=0.25)


def test_refusals() -> None:
    with pytest.raises(PoolingError, match="two sources"):
        completeness({"q": {"a": {"1"}}})
    with pytest.raises(PoolingError, match="no relevant"):
        completeness({"q": {"a": set(), "b": set()}})


def test_one_query_has_no_interval_rather_than_a_zero_width_one() -> None:
    found = {"q": {"a": {"1", "2"}, "b": {"1", "2"}}}  # both found the same two: Chapman 3*3/3 - 1 = 2, none missed
    c = completeness(found, n_boot=100)
    assert c.headline.missed == 0.0
    assert math.isnan(c.headline.low) and math.isnan(c.headline.high)
    assert c.interval_note == ONE_QUERY and c.as_dict()["interval_note"] == ONE_QUERY
    two = completeness({**found, "r": {"a": {"3"}, "b": {"4"}}}, n_boot=100)
    assert two.interval_note is None and two.headline.low <= two.headline.missed <= two.headline.high
