"""The stopping rule: Poisson-binomial arithmetic against references, and the stop decision."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from pooling import PoolingError
from pooling.stopping import _decide, estimate, fit_logistic, mixture, poisson_binomial, unfound_draws, unfound_probabilities
from pooling.strategies import Candidates


def _enumerated(p: list[float]) -> np.ndarray:
    """P(R = r) by summing the probability of every outcome (2^n of them)."""
    expected = np.zeros(len(p) + 1)
    for outcome in itertools.product([0, 1], repeat=len(p)):
        expected[sum(outcome)] += np.prod([pi if o else 1 - pi for pi, o in zip(p, outcome)])
    return expected


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), max_size=8))
def test_poisson_binomial_equals_enumerating_every_outcome(p):
    assert poisson_binomial(p) == pytest.approx(_enumerated(p), abs=1e-12)


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


def test_map_fit_equals_scikit_learn_with_the_same_penalty():
    """sklearn's L2 logistic regression minimises ||w||^2 / 2 + C * log-loss with the intercept
    unpenalised: the MAP under N(0, C) slope priors and a flat intercept prior."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    x = rng.normal(size=(80, 2))
    y = (rng.random(80) < 1 / (1 + np.exp(-(0.5 + x @ [1.5, -1.0])))).astype(float)
    reference = LogisticRegression(C=2.0, tol=1e-12, max_iter=10_000).fit(x, y)
    theta, cov = fit_logistic(np.hstack([np.ones((80, 1)), x]), y, [1e8, 2.0**0.5, 2.0**0.5])
    assert theta == pytest.approx([reference.intercept_[0], *reference.coef_[0]], abs=1e-6)
    # The Laplace covariance is the inverse Hessian: check it against finite differences
    # of the log posterior's gradient.
    design = np.hstack([np.ones((80, 1)), x])
    precision = np.array([1e-16, 0.5, 0.5])

    def gradient(t: np.ndarray) -> np.ndarray:
        return design.T @ (y - 1 / (1 + np.exp(-(design @ t)))) - precision * t

    h = 1e-6
    hessian = np.column_stack([(gradient(theta + h * e) - gradient(theta - h * e)) / (2 * h) for e in np.eye(3)])
    assert np.linalg.inv(-hessian) == pytest.approx(cov, rel=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1), min_size=5, max_size=5), min_size=1, max_size=4))
def test_the_mixture_is_the_mean_of_each_draws_poisson_binomial(rows):
    p = np.array(rows)
    expected = np.mean([_enumerated(r) for r in rows], axis=0)
    assert mixture(p) == pytest.approx(expected, abs=1e-12)
    assert mixture(p, 2) == pytest.approx(expected[:3], abs=1e-12)  # cut short: exact below the cut


def test_parameter_uncertainty_widens_the_interval():
    """One fitted p (as a point estimate would) against the posterior draws: the same mean
    remaining, a wider interval from the draws."""
    c = _ranked(200)
    labels = {f"d{i:03d}": i < 10 or i % 7 == 0 and i < 20 for i in range(40)}
    draws = unfound_draws(c, labels)
    assert draws.shape == (64, 160)
    e = estimate(c, labels)
    point = _decide("q", 40, sum(labels.values()), draws.mean(axis=0), 0.8, 0.9)
    assert e.remaining == pytest.approx(point.remaining)
    assert e.remaining_high - e.remaining_low > point.remaining_high - point.remaining_low
