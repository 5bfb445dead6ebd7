"""The stopping rule: Poisson-binomial arithmetic against references, and the stop decision."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from pooling import PoolingError
from pooling.recall_estimate import (
    estimate,
    estimate_from_draws,
    fit_logistic,
    mixture,
    poisson_binomial,
    unfound_draws,
    unfound_probabilities,
)
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
    e = estimate_from_draws("q", 60, 30, p, target=0.8, confidence=0.9)
    assert e.remaining == pytest.approx(12.0)  # 40 * 0.3
    assert (e.remaining_low, e.remaining_high) == (binom.ppf(0.05, 40, 0.3), binom.ppf(0.95, 40, 0.3))
    assert e.recall == pytest.approx(30 / 42)
    assert e.recall_low == pytest.approx(30 / (30 + binom.ppf(0.95, 40, 0.3)))


def test_stop_when_target_recall_is_reached_with_the_stated_confidence():
    # 8 found, target 0.8: at most 8 * 0.25 = 2 may remain; P(R <= 2) over 10 x p
    assert binom.cdf(2, 10, 0.1) == pytest.approx(0.9298, abs=1e-4)
    assert estimate_from_draws("q", 20, 8, [0.1] * 10, 0.8, 0.9).stop is True
    assert binom.cdf(2, 10, 0.2) == pytest.approx(0.6778, abs=1e-4)
    assert estimate_from_draws("q", 20, 8, [0.2] * 10, 0.8, 0.9).stop is False
    # the same 10 x 0.1 falls short of a 95% confidence
    assert estimate_from_draws("q", 20, 8, [0.1] * 10, 0.8, 0.95).stop is False


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
    point = estimate_from_draws("q", 40, sum(labels.values()), draws.mean(axis=0), 0.8, 0.9)
    assert e.remaining == pytest.approx(point.remaining)
    assert e.remaining_high - e.remaining_low > point.remaining_high - point.remaining_low


# --------------------------------------------------------------------------- named rules


def test_the_sample_test_is_the_hypergeometric_tail_at_the_least_favourable_urn():
    from scipy.stats import hypergeom

    from pooling.stopping import sample_p_value

    # 16 found outside an urn of 200; 60 drawn, 1 relevant among them: 17 found. Recall below
    # 0.8 means the urn holds K > 17 / 0.8 - 16 = 5.25, so K >= 6: p = P(X <= 1), X ~ H(200, 6, 60).
    assert sample_p_value(16, 200, 60, 1, 0.8) == pytest.approx(hypergeom.cdf(1, 200, 6, 60))
    # by counting: (C(194, 60) + 6 C(194, 59)) / C(200, 60)
    assert sample_p_value(16, 200, 60, 1, 0.8) == pytest.approx(
        (math.comb(194, 60) + 6 * math.comb(194, 59)) / math.comb(200, 60), rel=1e-9)
    # 20 found outside, none drawn: 20 / 0.8 - 20 = 5 exactly, so K >= 6 as well (not 5)
    assert sample_p_value(20, 200, 100, 0, 0.8) == pytest.approx(hypergeom.cdf(0, 200, 6, 100))
    # an urn that cannot hold K relevant (100 of 104 drawn, none relevant): recall is reached
    assert sample_p_value(20, 104, 100, 0, 0.8) == 0.0


def test_the_sample_test_stops_below_target_no_more_often_than_its_level():
    """For urns of every kind: over every possible sample, the probability of rejecting
    "recall below target" at 0.1 while recall (with the drawn relevant found) is below the
    target is at most 0.1 (exact, from the hypergeometric)."""
    from scipy.stats import hypergeom

    from pooling.stopping import sample_p_value

    worst = 0.0
    for found, urn, relevant, drawn in itertools.product([4, 8, 16, 30], [30, 80], [1, 2, 3, 5, 8, 12], [10, 25]):
        wrong = sum(hypergeom.pmf(k, urn, relevant, drawn) for k in range(min(drawn, relevant) + 1)
                    if sample_p_value(found, urn, drawn, k, 0.8) < 0.1 and (found + k) / (found + relevant) < 0.8)
        worst = max(worst, wrong)
    assert 0.0 < worst <= 0.1 + 1e-12


def test_the_sample_interval_by_hand():
    from scipy.stats import hypergeom

    from pooling.stopping import sample_interval

    assert sample_interval(10, 10, 3, 0.9) == (3, 3)  # all drawn: known
    low, high = sample_interval(50, 20, 2, 0.9)
    # the largest K whose lower tail still holds 5%, the smallest whose upper tail does
    assert hypergeom.cdf(2, 50, high, 20) >= 0.05 > hypergeom.cdf(2, 50, high + 1, 20)
    assert hypergeom.sf(1, 50, low, 20) >= 0.05 > hypergeom.sf(1, 50, low - 1, 20)
    assert (low, high) == (2, 12)


def test_the_knee_by_hand():
    from pooling.stopping import knee_stop

    # 10 relevant in the first 10, none in the next 30: knee at 10, (10/10) / (1/30) = 30
    assert knee_stop([1] * 10 + [0] * 30)
    # the same curve before the floor of 30 judgments: no
    assert not knee_stop([1] * 10 + [0] * 15)
    # 6 of the first 10, then 2 in 20: knee at 10, (6/10) / (3/20) = 4 < 6
    assert not knee_stop([1, 0] * 3 + [1] * 3 + [0] + [0] * 9 + [1] + [0] * 9 + [1])
    assert not knee_stop([0] * 40)  # nothing found


def test_the_oracle_is_the_first_judgment_reaching_the_target():
    from pooling.stopping import oracle_judgments

    assert oracle_judgments([0, 1, 1, 0, 1, 1], 5, 0.8) == 6  # 4 of 5 at the 6th
    assert oracle_judgments([1, 1, 1, 1], 5, 0.8) == 4
    assert oracle_judgments([1, 0, 0], 2, 0.8) is None  # never reached
    assert oracle_judgments([], 0, 0.8) is None


def test_every_rule_by_name():
    from labeler.store.settings import Settings
    from pooling.stopping import DEFAULT_RULE, RULES, CheckSample, check_order, decide

    assert Settings().stop_rule == DEFAULT_RULE and DEFAULT_RULE in RULES

    c = _ranked(60)
    labels = {f"d{i:03d}": i < 8 for i in range(20)}
    with pytest.raises(PoolingError, match="unknown stopping rule 'best'"):
        decide("best", c, labels)
    assert decide("quantile", c, labels) == estimate(c, labels)
    knee = decide("knee", c, labels, order=sorted(labels))
    assert knee.rule == "knee" and knee.stop is False  # 20 judged: below the floor
    # sample: no check sample yet, no stop; the model's estimate meanwhile
    before = decide("sample", c, labels)
    assert before.rule == "sample" and not before.stop and before.recall == estimate(c, labels).recall
    # the urn is the 40 unjudged; 30 drawn in check order, none relevant: 8 found, urn must hold
    # K >= 3 for recall < 0.8, and no relevant in 30 of 40 then has P = C(37,30)/C(40,30)
    urn = frozenset(c.doc_ids - set(labels))
    drawn = check_order("q", urn)[:30]
    sampled = decide("sample", c, {**labels, **{d: False for d in drawn}}, check=CheckSample(urn))
    from scipy.stats import hypergeom

    assert hypergeom.cdf(0, 40, 3, 30) == pytest.approx(0.0121, abs=1e-4)
    assert sampled.stop and sampled.judged == 50 and sampled.found == 8
    # the urn's relevant: at most K = 2, as none in 30 of 40 has P = (10 * 9) / (40 * 39) = 0.058
    # >= 0.05 at K = 2 and 0.012 < 0.05 at K = 3; so recall is in [8 / 10, 8 / 8]
    assert (sampled.recall_low, sampled.recall_high) == (0.8, 1.0)


def test_the_check_order_is_random_but_fixed_and_query_specific():
    from pooling.stopping import check_order

    ids = [f"d{i:03d}" for i in range(50)]
    assert check_order("q", ids) == check_order("q", list(reversed(ids)))
    assert check_order("q", ids) != ids and check_order("q", ids) != check_order("r", ids)


def test_strategy_scores_only_under_active_and_cross_fitted():
    from pooling.stopping import strategy_scores
    from pooling.strategies import relevance_scores

    docs = [f"d{i}" for i in range(12)]
    texts = {d: ("solar panel efficiency" if i % 3 == 0 else "river fish migration") + f" note {i}" for i, d in enumerate(docs)}
    c = Candidates("q", {"bm25": docs, "dense": docs[::-1]}, "solar panel", texts)
    labels = {d: i % 3 == 0 for i, d in enumerate(docs[:8])}
    assert strategy_scores("rrf", c, labels) is None
    scores = strategy_scores("active", c, labels)
    assert set(scores) == set(docs)
    full = relevance_scores(c, labels)
    unjudged = [d for d in docs if d not in labels]
    assert all(scores[d] == pytest.approx(np.log(full[d] / (1 - full[d]))) for d in unjudged)
    # a judged chunk is scored by a classifier that never saw it, not by the full one
    assert any(abs(scores[d] - np.log(full[d] / (1 - full[d]))) > 1e-6 for d in labels)


def test_the_draws_a_valid_sample_needs_by_hand():
    from pooling.stopping import sample_draws_needed

    # 4 found outside, target 0.8: recall below it means K >= 2 relevant in the urn (k = 0
    # drawn). An urn of 10 with none: P(X = 0 | K = 2, d) = (10 - d)(9 - d) / 90 < 0.1 first at d = 7.
    assert sample_draws_needed(4, 10, 0, 0.8, 0.9) == 7.0
    # An urn of 20 with one relevant. Not drawn by the 14th draw (probability 6/20):
    # (20 - d)(19 - d) / 380 < 0.1 first at d = 14. Drawn by then (14/20): K >= 3 with k = 1,
    # P(X <= 1 | 20, 3, d) = 0.0877 at d = 16, 0.140 at 15: 16 draws. 0.3 * 14 + 0.7 * 16 = 15.4.
    assert sample_draws_needed(4, 20, 1, 0.8, 0.9) == pytest.approx(15.4)


def test_the_draws_needed_are_the_mean_over_every_draw_order():
    from pooling.stopping import sample_draws_needed, sample_p_value

    def first_rejection(order: tuple[int, ...]) -> int:
        for d in range(1, len(order) + 1):
            if sample_p_value(6, len(order), d, sum(order[:d]), 0.8) < 0.1:
                return d
        raise AssertionError("the test rejects once the urn is drawn out")

    for relevant in (0, 1, 2, 3):  # every placement of the relevant in the order, equally likely
        orders = [tuple(int(i in spots) for i in range(9)) for spots in itertools.combinations(range(9), relevant)]
        mean = sum(first_rejection(o) for o in orders) / len(orders)
        assert sample_draws_needed(6, 9, relevant, 0.8, 0.9) == pytest.approx(mean)


def test_with_the_strategys_scores_the_interval_claims_no_upper_end_of_recall():
    """Under ``active`` the model over-predicts what is left, so its interval says only how
    low recall may be: the lower end and the stop call are the model's, the upper end 1."""
    c = _ranked(200)
    labels = {f"d{i:03d}": i % 3 == 0 for i in range(60)}  # a third relevant all the way down
    scores = {d: 2.0 - int(d[1:]) / 20 for d in c.doc_ids}
    plain = estimate(c, labels)
    assert plain.recall_high < 1.0  # ranks alone: a two-sided interval
    fed = estimate(c, labels, scores=scores)
    assert (fed.remaining_low, fed.recall_high) == (0, 1.0)
    assert fed.remaining_low <= fed.remaining <= fed.remaining_high
    assert fed.recall_low <= fed.recall < fed.recall_high
    unwidened = estimate_from_draws("q", fed.judged, fed.found,
                        unfound_draws(c, labels, scores=scores), 0.8, 0.9)
    assert (fed.recall_low, fed.remaining_high, fed.stop) == (unwidened.recall_low, unwidened.remaining_high, unwidened.stop)


def _plain_strategy_scores(candidates, labels, seed=0):
    """The cross-fitted scores the plain way: a whole ``relevance_scores`` (features built
    anew, every candidate predicted) once on all the judged and once per fold."""
    import hashlib

    from pooling.stopping import FOLDS
    from pooling.strategies import relevance_scores

    inside = {d: bool(r) for d, r in labels.items() if d in candidates.doc_ids}
    full = relevance_scores(candidates, inside, seed)
    if full is None:
        return None
    out = dict(full)
    for fold in range(FOLDS):
        held = {d for d in inside if int(hashlib.sha256(d.encode()).hexdigest(), 16) % FOLDS == fold}
        part = relevance_scores(candidates, {d: r for d, r in inside.items() if d not in held}, seed)
        if part is not None:
            out.update((d, part[d]) for d in held)
    return {d: math.log(max(p, 1e-6) / max(1 - p, 1e-6)) for d, p in out.items()}


def _active_query(seed: int, n: int = 90, judged: int = 30) -> tuple[Candidates, dict[str, bool]]:
    import random

    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)]
    topic = rng.sample(words, 8)
    docs = [f"d{i:03d}" for i in range(n)]
    relevant = {d: rng.random() < 0.2 for d in docs}
    texts = {d: " ".join(rng.choices(words, k=25) + (rng.sample(topic, 4) if relevant[d] else [])) for d in docs}
    bm25 = sorted(docs, key=lambda d: -(relevant[d] + rng.gauss(0, 1)))[: n - 10]
    dense = sorted(docs, key=lambda d: -(relevant[d] + rng.gauss(0, 1)))[: n - 10]
    c = Candidates(f"q{seed}", {"bm25": bm25, "dense": dense}, " ".join(topic[:3]), texts)
    ranked = sorted(c.doc_ids, key=lambda d: (bm25 + docs).index(d))
    return c, {d: relevant[d] for d in ranked[:judged]}


@pytest.mark.parametrize("seed", range(4))
def test_strategy_scores_and_the_estimate_are_those_of_a_full_fit_per_fold(seed):
    from pooling.stopping import strategy_scores

    c, labels = _active_query(seed, judged=12 + 8 * seed)
    expected = _plain_strategy_scores(c, labels)
    assert expected is not None
    assert strategy_scores("active", c, labels) == expected  # bit for bit, not approximately
    assert estimate(c, labels, scores=strategy_scores("active", c, labels)) == estimate(c, labels, scores=expected)


def test_strategy_scores_build_the_features_once_for_every_fold(monkeypatch):
    import pooling.strategies as strategies
    from pooling.stopping import strategy_scores

    built = []
    real = strategies.with_rank_features
    monkeypatch.setattr(strategies, "with_rank_features", lambda *a: built.append(1) or real(*a))
    strategies._LAST.clear()
    c, labels = _active_query(7)
    assert strategy_scores("active", c, labels) == _plain_strategy_scores(c, labels)
    built.clear()
    strategies._LAST.clear()
    strategy_scores("active", c, labels)
    assert len(built) == 1


def test_a_fit_predicting_some_candidates_gives_them_their_values_among_all():
    from pooling.strategies import fit_relevance, relevance_features

    c, labels = _active_query(3)
    features = relevance_features(c)
    every = fit_relevance(features, labels)
    some = sorted(c.doc_ids)[::7]
    assert fit_relevance(features, labels, only=set(some)) == {d: every[d] for d in some}


def _plain_mixture(p: np.ndarray, upto: int | None = None) -> np.ndarray:
    """Every draw's whole convolution, draws by counts (the layout of the module doc's sum)."""
    rows, n = p.shape
    top = n if upto is None else min(n, upto)
    dist = np.zeros((rows, top + 1))
    dist[:, 0] = 1.0
    for column in range(n):
        pi = p[:, column : column + 1]
        dist[:, 1:] = dist[:, 1:] * (1 - pi) + dist[:, :-1] * pi
        dist[:, 0] *= 1 - pi[:, 0]
    return dist.mean(axis=0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 70), st.integers(0, 90), st.one_of(st.none(), st.integers(0, 100)), st.integers(0, 2**32 - 1))
def test_mixture_is_the_plain_convolution_bit_for_bit(rows, n, upto, seed):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.3, 3, size=(rows, n))
    p[:, : n // 5] = rng.choice([0.0, 1.0], size=(rows, n // 5))  # certain chunks too
    assert np.array_equal(mixture(p, upto), _plain_mixture(p, upto))


def test_strategy_scores_build_no_features_before_both_kinds_are_judged(monkeypatch):
    import pooling.strategies as strategies
    from pooling.stopping import strategy_scores

    c, labels = _active_query(5)
    built = []
    monkeypatch.setattr(strategies, "relevance_features", lambda *a: built.append(1))
    assert strategy_scores("active", c, {d: False for d in labels}) is None
    assert _plain_strategy_scores(c, {d: False for d in labels}) is None
    assert built == []
