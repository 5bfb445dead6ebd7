"""The stopping rule: Poisson-binomial arithmetic against references, and the stop decision."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from pooling import PoolingError
from pooling.stopping import _decide, estimate, poisson_binomial, unfound_probabilities
from pooling.strategies import Candidates


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), max_size=8))
def test_poisson_binomial_equals_enumerating_every_outcome(p):
    expected = np.zeros(len(p) + 1)
    for outcome in itertools.product([0, 1], repeat=len(p)):
        expected[sum(outcome)] += np.prod([pi if o else 1 - pi for pi, o in zip(p, outcome)])
    assert poisson_binomial(p) == pytest.approx(expected, abs=1e-12)


def test_equal_probabilities_give_the_binomial_and_its_quantiles():
    p = [0.3] * 40
    assert poisson_binomial(p) == pytest.approx(binom.pmf(np.arange(41), 40, 0.3))
    e = _decide("q", 60, 30, p, target=0.8, confidence=0.9)
    assert e.remaining == pytest.approx(12.0)  # 40 * 0.3
    assert (e.remaining_low, e.remaining_high) == (binom.ppf(0.05, 40, 0.3), binom.ppf(0.95, 40, 0.3))
    assert e.recall == pytest.approx(30 / 42)
    assert e.recall_low == pytest.approx(30 / (30 + binom.ppf(0.95, 40, 0.3)))


def test_stop_when_target_recall_is_reached_with_the_stated_confidence():
    # 8 found, target 0.8: at most 8 * 0.25 = 2 may remain; P(R <= 2) over 10 x p
    assert binom.cdf(2, 10, 0.1) == pytest.approx(0.9298, abs=1e-4)
    assert _decide("q", 20, 8, [0.1] * 10, 0.8, 0.9).stop is True
    assert binom.cdf(2, 10, 0.2) == pytest.approx(0.6778, abs=1e-4)
    assert _decide("q", 20, 8, [0.2] * 10, 0.8, 0.9).stop is False
    # the same 10 x 0.1 falls short of a 95% confidence
    assert _decide("q", 20, 8, [0.1] * 10, 0.8, 0.95).stop is False


def _ranked(n: int) -> Candidates:
    docs = [f"d{i:03d}" for i in range(n)]
    return Candidates("q", {"bm25": docs, "dense": docs[::2] + docs[1::2]})


def test_no_estimate_before_both_kinds_and_stop_once_everything_is_judged():
    c = _ranked(10)
    early = estimate(c, {"d000": True, "d001": True})
    assert (early.remaining, early.stop) == (None, False)
    done = estimate(c, {d: d < "d003" for d in sorted(c.doc_ids)})
    assert (done.judged, done.found, done.remaining, done.recall, done.stop) == (10, 3, 0, 1.0, True)


def test_relevance_at_the_top_only_says_little_remains_below():
    c = _ranked(200)
    labels = {f"d{i:03d}": i < 10 or i % 7 == 0 and i < 20 for i in range(40)}
    p = unfound_probabilities(c, labels)
    assert set(p) == c.doc_ids - set(labels)
    assert p["d041"] > p["d199"]  # deeper in both sources: less likely
    e = estimate(c, labels)
    assert e.remaining_low <= e.remaining <= e.remaining_high
    assert e.recall_low <= e.recall <= e.recall_high


def test_bad_settings_are_a_pooling_error():
    with pytest.raises(PoolingError, match="target must be in"):
        estimate(_ranked(3), {}, target=1.5)
