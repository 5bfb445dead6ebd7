"""Rates from a sample drawn where the judge is least sure (calibration.weighted): the
design, and estimates weighted by 1/π that cover the population's rate where unweighted ones
are biased. Checked against plain numpy Horvitz-Thompson and Hájek estimators."""

from __future__ import annotations

import random

import numpy as np
import pytest

from calibration import CalibrationError
from calibration.ppi import ppi_mean
from calibration.weighted import hajek_ppi, hajek_rate, pps_probabilities, systematic_pps


def test_systematic_pps_draws_each_member_with_its_probability() -> None:
    sizes = [0.25 + s for s in np.linspace(0.0, 1.0, 12)]
    pi = pps_probabilities(sizes, 4)
    assert sum(pi) == pytest.approx(4.0)
    counts = np.zeros(len(pi))
    draws = 20_000
    rng = random.Random(7)
    for _ in range(draws):
        chosen = systematic_pps(pi, rng)
        assert len(chosen) == 4
        counts[chosen] += 1
    # each share within 4 binomial SDs of its probability
    sd = np.sqrt(np.asarray(pi) * (1 - np.asarray(pi)) / draws)
    assert np.all(np.abs(counts / draws - pi) < 4 * sd + 1e-12)


def test_certain_members_and_bad_probabilities() -> None:
    assert pps_probabilities([1, 1, 1, 97], 2)[3] == 1.0
    with pytest.raises(CalibrationError, match="positive"):
        pps_probabilities([1, 0, 2], 1)
    with pytest.raises(CalibrationError, match="whole number"):
        systematic_pps([0.5, 0.7], random.Random(0))


def test_weights_summing_to_the_population_give_the_horvitz_thompson_mean() -> None:
    # Stratified: 2 of 4 in stratum a (π = 1/2), 1 of 4 in stratum b (π = 1/4): Σ 1/π = 8 = N.
    y, pi = np.array([1.0, 0.0, 1.0]), np.array([0.5, 0.5, 0.25])
    ht = float(np.sum(y / pi) / 8)
    assert hajek_rate(y, pi, "abc").value == pytest.approx(ht)
    f_all = np.array([1, 0, 1, 1, 1, 0, 0, 1], dtype=float)
    f = np.array([1.0, 0.0, 1.0])
    lam = 0.6
    ht_ppi = lam * f_all.mean() + float(np.sum((y - lam * f) / pi) / 8)
    assert hajek_ppi(y, f, pi, "abc", f_all, lam=lam).estimate.value == pytest.approx(ht_ppi)


def test_equal_probabilities_give_the_plain_ppi_mean_at_the_same_lambda() -> None:
    rng = np.random.default_rng(3)
    f_all = rng.integers(0, 2, 400).astype(float)
    y = np.where(rng.random(40) < 0.85, f_all[:40], 1 - f_all[:40])
    r = hajek_ppi(y, f_all[:40], [0.1] * 40, range(40), f_all, lam=0.7)
    # ppi_mean's unlabelled term is over the unlabelled: its mean over everyone differs by the labelled part
    plain = 0.7 * f_all.mean() + float(np.mean(y - 0.7 * f_all[:40]))
    assert r.estimate.value == pytest.approx(plain)
    assert r.se == pytest.approx(np.sqrt((1 - 0.1) * np.var(y - 0.7 * f_all[:40], ddof=1) / 40))
    assert abs(r.estimate.value - ppi_mean(y, f_all[:40], f_all[40:], tuned=False).ppi.value) < 0.05


def _population(rng: np.random.Generator, n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Answers whose judge is unsure on some (s near 1): the truth is worse there, and the
    judge is wrong more often there."""
    s = rng.random(n)
    truth = (rng.random(n) < 0.9 - 0.7 * s).astype(float)
    wrong = rng.random(n) < 0.05 + 0.4 * s
    judge = np.where(wrong, 1 - truth, truth)
    return s, truth, judge


def test_a_judge_uncertain_sample_weighted_covers_the_rate_and_unweighted_is_biased() -> None:
    seeds, n = 300, 150
    covered = covered_plain = covered_rate = 0
    errors, plain_errors, ht_gap, ses = [], [], [], []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        s, truth, judge = _population(rng)
        true_rate = truth.mean()
        pi = np.asarray(pps_probabilities(list(0.25 + s), n))
        chosen = systematic_pps(list(pi), random.Random(seed))
        y, f, p = truth[chosen], judge[chosen], pi[chosen]
        r = hajek_ppi(y, f, p, chosen, judge)
        e = r.estimate
        covered += e.low <= true_rate <= e.high
        errors.append(e.value - true_rate)
        ses.append(r.se)
        # the same λ by plain numpy, Horvitz-Thompson (divided by N)
        ht = r.lam * judge.mean() + float(np.sum((y - r.lam * f) / p)) / len(truth)
        ht_gap.append(e.value - ht)
        people = hajek_rate(y, p, chosen)
        covered_rate += people.low <= true_rate <= people.high
        # unweighted: the sample read as if drawn at random
        rest = np.setdiff1d(np.arange(len(truth)), chosen)
        plain = ppi_mean(y, f, judge[rest], bounds=(0.0, 1.0)).ppi
        covered_plain += plain.low <= true_rate <= plain.high
        plain_errors.append(plain.value - true_rate)
    mean_se = float(np.mean(ses))
    assert 0.92 <= covered / seeds <= 0.98
    assert 0.92 <= covered_rate / seeds <= 0.985
    # unbiased: the mean error within 3 standard errors of its mean; HT and Hájek agree
    assert abs(np.mean(errors)) < 3 * np.std(errors) / np.sqrt(seeds)
    assert abs(np.mean(ht_gap)) < 0.1 * mean_se and np.std(ht_gap) < mean_se
    # the unweighted estimate is biased low (the sample holds the uncertain, worse answers)
    assert np.mean(plain_errors) < -5 * np.std(plain_errors) / np.sqrt(seeds)
    assert covered_plain / seeds < 0.75
