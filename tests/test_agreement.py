"""Agreement statistics against independent references and published worked examples."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score, precision_score, recall_score
from sklearn.metrics import confusion_matrix as sk_confusion_matrix

from calibration import (
    CalibrationError,
    class_scores,
    cohen_kappa,
    confusion_matrix,
    gwet_ac,
    krippendorff_alpha,
    majority_baseline,
    raw_agreement,
)

nan = math.nan


def expand(table: list[list[int]]) -> tuple[list[int], list[int]]:
    """Label pairs (row index, column index), each repeated as often as its cell count."""
    a = [i for i, row in enumerate(table) for j, count in enumerate(row) for _ in range(count)]
    b = [j for i, row in enumerate(table) for j, count in enumerate(row) for _ in range(count)]
    return a, b


# --- Cohen's kappa --------------------------------------------------------------------------


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kappa_equals_scikit_learn_on_random_grades(weights, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, 300)
    b = np.clip(a + rng.integers(-2, 3, 300), 0, 3)
    got = cohen_kappa(a, b, weights, n_boot=0).value
    assert got == pytest.approx(cohen_kappa_score(a, b, weights=weights), abs=1e-12)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_equals_scikit_learn_with_an_unused_category(weights):
    rng = np.random.default_rng(7)
    a = rng.choice([0, 1, 3], 200)
    b = rng.choice([0, 1, 3], 200)
    got = cohen_kappa(a, b, weights, labels=[0, 1, 2, 3], n_boot=0).value
    assert got == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights=weights), abs=1e-12)


def test_cohen_1968_table_1_kappa_and_weighted_kappa():
    # Cohen (1968), "Weighted kappa", Psychological Bulletin 70(4), Table 1 (N = 200):
    # kappa .492 (p_o .70, p_e .41); weighted kappa .348 with his symmetric disagreement weights
    # and .353 with the asymmetric ones.
    a, b = expand([[88, 14, 18], [10, 40, 10], [2, 6, 12]])
    assert cohen_kappa(a, b, n_boot=0).value == pytest.approx((0.70 - 0.41) / (1 - 0.41), abs=1e-3)
    assert cohen_kappa(a, b, n_boot=0).value == pytest.approx(0.492, abs=1e-3)
    symmetric = [[0, 1, 3], [1, 0, 6], [3, 6, 0]]
    asymmetric = [[0, 1, 4], [1, 0, 6], [2, 2, 0]]
    assert cohen_kappa(a, b, symmetric, n_boot=0).value == pytest.approx(0.348, abs=1e-3)
    assert cohen_kappa(a, b, asymmetric, n_boot=0).value == pytest.approx(0.353, abs=1e-3)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        # Krippendorff (2004), Content Analysis 2nd ed., p. 246, table b: kappa .258.
        ([[12, 18, 18], [0, 14, 18], [0, 0, 20]], 0.258),
        # Agresti (1992) on Landis & Koch (1977), p. 202: kappa .493.
        ([[22, 2, 2, 0], [5, 7, 14, 0], [0, 2, 36, 0], [0, 1, 17, 10]], 0.493),
        # Zwick (1988), p. 376, example 3: kappa .474.
        ([[20, 5, 5, 10], [0, 10, 5, 5], [0, 5, 10, 5], [0, 0, 0, 20]], 0.474),
    ],
)
def test_kappa_published_tables(table, expected):
    a, b = expand(table)
    assert cohen_kappa(a, b, n_boot=0).value == pytest.approx(expected, abs=1e-3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=40), st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_is_symmetric_and_bounded(pairs, weights):
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    k_ab = cohen_kappa(a, b, weights, n_boot=0).value
    k_ba = cohen_kappa(b, a, weights, n_boot=0).value
    if math.isnan(k_ab):
        assert math.isnan(k_ba)
        assert len(set(a) | set(b)) == 1  # undefined only when one category is in use
        return
    assert k_ab == pytest.approx(k_ba, abs=1e-12)
    assert -1.0 - 1e-12 <= k_ab <= 1.0 + 1e-12


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=40).filter(lambda xs: len(set(xs)) > 1))
def test_kappa_is_one_for_identical_ratings(labels):
    for weights in (None, "linear", "quadratic"):
        assert cohen_kappa(labels, labels, weights, n_boot=0).value == pytest.approx(1.0)


# --- Gwet's AC1 / AC2 -----------------------------------------------------------------------

# R irrCAC 1.4 (gwet.ac1.raw), as kept in DKPro Statistics' test fixtures.
GWET_CASES = [
    # The "kappa paradox" table: high agreement on a dominant category.
    ([[80, 7], [8, 5]], 0.808, 0.808),
    # Cohen (1960), p. 37 (below-chance agreement).
    ([[25, 12, 3], [13, 2, 15], [12, 16, 2]], -0.04797, 0.1831),
    # Cohen (1960), p. 45.
    ([[88, 14, 18], [10, 40, 10], [2, 6, 12]], 0.57597, 0.63855),
    ([[20, 5, 1, 0], [4, 15, 6, 1], [0, 5, 18, 4], [0, 1, 3, 12]], 0.58046, 0.84028),
    ([[15, 4, 1, 0, 0], [3, 12, 4, 1, 0], [1, 3, 14, 3, 1], [0, 1, 3, 10, 2], [0, 0, 1, 2, 8]], 0.57997, 0.87005),
]


@pytest.mark.parametrize(("table", "ac1", "ac2"), GWET_CASES)
def test_gwet_ac1_and_quadratic_ac2_equal_irrcac(table, ac1, ac2):
    a, b = expand(table)
    assert gwet_ac(a, b, n_boot=0).value == pytest.approx(ac1, abs=1e-3)
    assert gwet_ac(a, b, "quadratic", n_boot=0).value == pytest.approx(ac2, abs=1e-3)


def test_gwet_paradox_table_by_hand_and_kappa_collapse():
    a, b = expand([[80, 7], [8, 5]])
    # p_a = 0.85; pi = (0.875, 0.125); p_e = 2 * 0.875 * 0.125 / 1 = 0.21875.
    assert gwet_ac(a, b, n_boot=0).value == pytest.approx((0.85 - 0.21875) / (1 - 0.21875))
    # Kappa on the same table: p_e = 0.87 * 0.88 + 0.13 * 0.12 = 0.7812.
    assert cohen_kappa(a, b, n_boot=0).value == pytest.approx((0.85 - 0.7812) / (1 - 0.7812))


# --- Krippendorff's alpha -------------------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
# 12 units, values 1-5 (rows: observers A-D; NaN: no value).
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]

# Wikipedia, "Krippendorff's alpha", section "A computational example": 3 coders, 15 units.
WIKIPEDIA = [
    [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
    [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
    [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
]


@pytest.mark.parametrize(("level", "expected"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)])
def test_alpha_krippendorff_2011_example(level, expected):
    result = krippendorff_alpha(KRIPPENDORFF_2011, level, n_boot=0)
    assert result.value == pytest.approx(expected, abs=1e-3)
    assert result.n == 11  # unit 12 holds one value: not pairable


@pytest.mark.parametrize(("level", "expected"), [("nominal", 0.691358), ("interval", 0.810845)])
def test_alpha_wikipedia_example(level, expected):
    assert krippendorff_alpha(WIKIPEDIA, level, n_boot=0).value == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", [0, 1])
def test_alpha_equals_krippendorff_package_on_random_data_with_missing(level, seed):
    rng = np.random.default_rng(seed)
    data = rng.integers(1, 6, (4, 60)).astype(float)
    data[rng.random(data.shape) < 0.35] = nan
    expected = krippendorff.alpha(data, level_of_measurement=level)
    assert krippendorff_alpha(data, level, n_boot=0).value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_bootstrap_statistic_equals_package_at_the_observed_data(level):
    # The interval is computed by a second, vectorised implementation of alpha over
    # coincidence matrices; at the observed data it must give the package's value.
    from calibration.alpha import _coincidence, _value_counts, alpha_of_coincidence

    rng = np.random.default_rng(11)
    data = rng.integers(1, 5, (3, 80)).astype(float)
    data[rng.random(data.shape) < 0.3] = nan
    domain = np.unique(data[~np.isnan(data)])
    counts = _value_counts(data, domain)
    counts = counts[counts.sum(axis=1) >= 2]
    o = _coincidence(counts).sum(axis=0)
    assert float(alpha_of_coincidence(o, domain, level)) == pytest.approx(krippendorff.alpha(data, level_of_measurement=level), abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_unchanged_by_permuting_coders_or_units(seed, level):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 4, (3, 12)).astype(float)
    data[rng.random(data.shape) < 0.2] = nan
    data[:, 0] = [0, 1, 2]  # at least one pairable unit and two values
    base = krippendorff_alpha(data, level, n_boot=0).value
    permuted = data[rng.permutation(3)][:, rng.permutation(12)]
    assert krippendorff_alpha(permuted, level, n_boot=0).value == pytest.approx(base, abs=1e-12)


# --- raw agreement, confusion, majority baseline, per-class scores --------------------------


def test_raw_agreement_and_confusion_against_scikit_learn():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, 200)
    b = rng.integers(0, 4, 200)
    assert raw_agreement(a, b, n_boot=0).value == pytest.approx(np.mean(a == b))
    assert confusion_matrix(a, b).table.tolist() == sk_confusion_matrix(a, b).tolist()


def test_majority_baseline_is_the_largest_reference_share():
    # 6 of 10 reference labels are 0: always answering 0 agrees on 6/10.
    ref = [0, 0, 0, 0, 0, 0, 1, 1, 2, 3]
    result = majority_baseline(ref, n_boot=500)
    assert result.value == pytest.approx(6 / 10)
    assert result.low <= result.value <= result.high


def test_class_scores_equal_scikit_learn():
    rng = np.random.default_rng(9)
    human = rng.integers(0, 3, 150)
    judge = np.where(rng.random(150) < 0.7, human, rng.integers(0, 3, 150))
    scores = class_scores(human, judge, n_boot=0)
    assert [s.precision.value for s in scores] == pytest.approx(precision_score(human, judge, average=None).tolist())
    assert [s.recall.value for s in scores] == pytest.approx(recall_score(human, judge, average=None).tolist())
    assert [s.support for s in scores] == np.bincount(human).tolist()


# --- input checks ---------------------------------------------------------------------------


def test_unequal_lengths_are_refused():
    with pytest.raises(CalibrationError, match="equal length"):
        cohen_kappa([0, 1], [0, 1, 1])


def test_a_label_outside_the_scale_is_named():
    with pytest.raises(CalibrationError, match=r"b\[1\] = 7"):
        cohen_kappa([0, 1, 2], [0, 7, 2], labels=[0, 1, 2, 3])


def test_unknown_alpha_level_is_refused():
    with pytest.raises(CalibrationError, match="level"):
        krippendorff_alpha([[1, 2], [1, 2]], "cardinal")


def test_every_public_name_is_the_one_its_module_defines():
    import importlib

    import calibration

    for name, module in calibration._EXPORTS.items():
        defined = getattr(importlib.import_module(f"calibration.{module}"), name)
        assert getattr(calibration, name) is defined, name
        if callable(defined) and hasattr(defined, "__module__"):
            assert defined.__module__ == f"calibration.{module}", f"{name} is re-exported from {module}"
    assert sorted(calibration.__all__) == sorted(["CalibrationError", *calibration._EXPORTS])
    with pytest.raises(AttributeError, match="no attribute 'read_labels'"):
        calibration.read_labels  # noqa: B018  label files are read by pooling.qrels


@pytest.mark.parametrize(
    "module",
    ["agreement", "alpha", "bias", "bootstrap", "power", "report"],
)
def test_docstring_examples_hold(module):
    # The docstrings carry published values (Cohen 1968, Krippendorff 2011, Gwet's paradox table).
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"calibration.{module}"))
    assert result.failed == 0
    assert result.attempted > 0
