"""The vectorised bootstrap against naive resampling, and the analytic intervals."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint

from calibration import CalibrationError, cohen_kappa, krippendorff_alpha, raw_agreement, wilson_interval
from calibration.agreement import disagreement_weights, kappa_of_tables, kappa_standard_error
from calibration.bootstrap import bootstrap_tables


def correlated_grades(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = np.clip(a + rng.integers(-1, 2, n), 0, 3)
    return a, b


def naive_item_replicates(a, b, weights, n_boot, seed):
    """Resample items one by one and recompute kappa with scikit-learn: the slow reference."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(a), len(a))
        out.append(cohen_kappa_score(a[idx], b[idx], labels=[0, 1, 2, 3], weights=weights))
    return np.array(out)


@pytest.mark.parametrize("weights", [None, "quadratic"])
def test_table_bootstrap_matches_naive_item_resampling(weights):
    a, b = correlated_grades(300, seed=4)
    naive = naive_item_replicates(a, b, weights, 1000, seed=5)
    fast = cohen_kappa(a, b, weights, labels=[0, 1, 2, 3], n_boot=20_000, seed=6)
    naive_low, naive_high = np.quantile(naive, [0.025, 0.975])
    # Same sampling distribution: the interval ends agree to Monte Carlo error of the naive run.
    assert fast.low == pytest.approx(naive_low, abs=0.015)
    assert fast.high == pytest.approx(naive_high, abs=0.015)
    assert fast.method == "bootstrap" and fast.n_boot == 20_000 and not fast.groups_resampled


def test_cluster_bootstrap_matches_naive_group_resampling():
    rng = np.random.default_rng(8)
    groups = np.repeat(np.arange(40), 10)
    # Every item of a query shares the query's disagreement: labels correlated within groups.
    shift = rng.integers(-1, 2, 40)[groups]
    a = rng.integers(0, 4, 400)
    b = np.clip(a + shift, 0, 3)
    fast = cohen_kappa(a, b, "quadratic", labels=[0, 1, 2, 3], groups=groups, n_boot=20_000, seed=1)
    naive = []
    for _ in range(1000):
        pick = rng.integers(0, 40, 40)
        idx = np.concatenate([np.flatnonzero(groups == g) for g in pick])
        naive.append(cohen_kappa_score(a[idx], b[idx], labels=[0, 1, 2, 3], weights="quadratic"))
    naive_low, naive_high = np.quantile(naive, [0.025, 0.975])
    assert fast.low == pytest.approx(naive_low, abs=0.02)
    assert fast.high == pytest.approx(naive_high, abs=0.02)
    assert fast.method == "cluster bootstrap" and fast.n_groups == 40


def test_cluster_interval_is_wider_than_item_interval_when_groups_are_correlated():
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(30), 20)
    shift = rng.integers(-1, 2, 30)[groups]
    a = rng.integers(0, 4, 600)
    b = np.clip(a + shift, 0, 3)
    items = cohen_kappa(a, b, n_boot=4000, seed=0)
    clusters = cohen_kappa(a, b, groups=groups, n_boot=4000, seed=0)
    assert items.value == clusters.value
    assert clusters.high - clusters.low > 1.5 * (items.high - items.low)


@pytest.mark.parametrize("wt", [None, "linear", "quadratic"])
def test_analytic_standard_error_equals_statsmodels(wt):
    # Cohen (1968) Table 1; statsmodels implements Fleiss, Cohen & Everitt (1969).
    table = np.array([[88, 14, 18], [10, 40, 10], [2, 6, 12]])
    expected = cohens_kappa(table, wt=wt).std_kappa
    assert kappa_standard_error(table, disagreement_weights(3, wt)) == pytest.approx(expected, rel=1e-9)


def test_analytic_interval_agrees_with_bootstrap_on_many_items():
    a, b = correlated_grades(5000, seed=2)
    analytic = cohen_kappa(a, b, "quadratic", interval="analytic")
    boot = cohen_kappa(a, b, "quadratic", n_boot=10_000, seed=3)
    assert analytic.method == "analytic" and analytic.n_boot == 0
    assert (analytic.high - analytic.low) == pytest.approx(boot.high - boot.low, rel=0.08)


def test_analytic_interval_refuses_groups():
    a, b = correlated_grades(50, seed=1)
    with pytest.raises(CalibrationError, match="groups"):
        cohen_kappa(a, b, groups=np.arange(50) // 5, interval="analytic")


def test_same_seed_same_interval_other_seed_other_interval():
    a, b = correlated_grades(200, seed=9)
    first = raw_agreement(a, b, n_boot=1000, seed=42)
    assert raw_agreement(a, b, n_boot=1000, seed=42) == first
    assert (raw_agreement(a, b, n_boot=1000, seed=43).low, raw_agreement(a, b, n_boot=1000, seed=43).high) != (first.low, first.high)


def test_no_interval_when_n_boot_is_zero():
    a, b = correlated_grades(50, seed=1)
    result = cohen_kappa(a, b, n_boot=0)
    assert np.isnan(result.low) and np.isnan(result.high) and result.method == "none"


def test_one_query_gives_no_cluster_interval_rather_than_a_zero_width_one():
    a, b = correlated_grades(300, seed=3)
    one = np.zeros(300, dtype=int)
    for result in (
        cohen_kappa(a, b, weights="quadratic", groups=one, n_boot=500),
        raw_agreement(a, b, groups=one, n_boot=500),
        krippendorff_alpha(np.vstack([a, b]).astype(float), "ordinal", groups=one, n_boot=500),
    ):
        assert not np.isnan(result.value)
        assert np.isnan(result.low) and np.isnan(result.high) and result.n_groups == 1
    two = np.arange(300) % 2
    split = cohen_kappa(a, b, weights="quadratic", groups=two, n_boot=500)
    assert split.low < split.value < split.high


def test_bad_interval_arguments_are_refused():
    a, b = correlated_grades(20, seed=1)
    with pytest.raises(CalibrationError, match="ci="):
        cohen_kappa(a, b, ci=95)
    with pytest.raises(CalibrationError, match="n_boot"):
        cohen_kappa(a, b, n_boot=-1)


def test_alpha_unit_bootstrap_matches_naive_unit_resampling():
    import krippendorff

    rng = np.random.default_rng(12)
    data = rng.integers(0, 4, (3, 150)).astype(float)
    data[1] = np.where(rng.random(150) < 0.6, data[0], data[1])
    data[rng.random(data.shape) < 0.2] = np.nan
    fast = krippendorff_alpha(data, "ordinal", n_boot=20_000, seed=2)
    naive = []
    for _ in range(800):
        sample = data[:, rng.integers(0, 150, 150)]
        naive.append(krippendorff.alpha(sample, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]))
    naive_low, naive_high = np.quantile(naive, [0.025, 0.975])
    assert fast.low == pytest.approx(naive_low, abs=0.03)
    assert fast.high == pytest.approx(naive_high, abs=0.03)


def test_alpha_cluster_bootstrap_records_groups():
    rng = np.random.default_rng(1)
    data = rng.integers(0, 3, (2, 60)).astype(float)
    result = krippendorff_alpha(data, "nominal", groups=np.arange(60) // 6, n_boot=500)
    assert result.method == "cluster bootstrap" and result.n_groups == 10 and result.level == "nominal"


def test_table_bootstrap_of_a_million_items_is_a_multinomial_over_cells():
    # 10,000 replicates of 1M items: every replicate table sums to n, and the replicate mean
    # of each cell's share is the observed share.
    table = np.array([[[400_000, 100_000], [50_000, 450_000]]])
    captured = {}

    def statistic(tables):
        captured["tables"] = tables
        return kappa_of_tables(tables, disagreement_weights(2, None))

    low, high = bootstrap_tables(table, statistic, grouped=False, n_boot=10_000, ci=0.95, seed=0)
    reps = captured["tables"]
    assert reps.shape == (10_000, 2, 2)
    assert np.all(reps.sum(axis=(1, 2)) == 1_000_000)
    assert reps.mean(axis=0) / 1_000_000 == pytest.approx(table[0] / 1_000_000, abs=1e-4)
    assert low < kappa_of_tables(table, disagreement_weights(2, None))[0] < high


def test_wilson_interval_equals_statsmodels():
    for successes, n in [(8, 10), (0, 25), (37, 120)]:
        assert wilson_interval(successes, n, 0.95) == pytest.approx(proportion_confint(successes, n, method="wilson"), abs=1e-9)
