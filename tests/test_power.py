"""Half-widths, minimum detectable differences and sample sizes, as arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from calibration import (
    CalibrationError,
    accuracy_half_width,
    discordant_share,
    judge_inflation,
    minimum_detectable_difference,
    paired_half_width,
    per_query_sd,
    plan,
    required_n,
    unpaired_half_width,
)

Z = norm.ppf(0.975)  # 1.959964
Z_POWER = norm.ppf(0.8)  # 0.841621


def test_one_accuracy_half_width_p_07():
    # 1.96 * sqrt(0.7 * 0.3 / 100) = 0.0898 (±9.0 points); at n=200, 0.0635 (±6.4).
    assert accuracy_half_width(0.7, 100) == pytest.approx(Z * math.sqrt(0.7 * 0.3 / 100))
    assert round(100 * accuracy_half_width(0.7, 100), 1) == 9.0
    assert round(100 * accuracy_half_width(0.7, 200), 1) == 6.4


def test_paired_is_145_times_narrower_than_unpaired():
    # Unpaired: 1.96 * sqrt(2 * 0.21 / 200) = 0.0898; paired, d=0.2: 1.96 * sqrt(0.2 / 200) = 0.0620.
    unpaired = unpaired_half_width(0.7, 200)
    paired = paired_half_width(0.2, 200)
    assert unpaired == pytest.approx(Z * math.sqrt(2 * 0.7 * 0.3 / 200))
    assert paired == pytest.approx(Z * math.sqrt(0.2 / 200))
    assert round(100 * unpaired, 1) == 9.0 and round(100 * paired, 1) == 6.2
    assert round(unpaired / paired, 2) == 1.45


def test_mdd_is_z_alpha_plus_z_power_times_se():
    # (1.96 + 0.84) * sqrt(0.2 / 200) = 0.0886: 8.9 points.
    assert minimum_detectable_difference(200, "paired", discordant=0.2) == pytest.approx((Z + Z_POWER) * math.sqrt(0.2 / 200))
    assert minimum_detectable_difference(100, "unpaired", p=0.7) == pytest.approx((Z + Z_POWER) * math.sqrt(0.42 / 100))
    assert minimum_detectable_difference(50, "per_query", sd=0.25) == pytest.approx((Z + Z_POWER) * 0.25 / math.sqrt(50))
    at_90 = minimum_detectable_difference(200, "paired", discordant=0.2, power=0.9, alpha=0.01)
    assert at_90 == pytest.approx((norm.ppf(0.995) + norm.ppf(0.9)) * math.sqrt(0.2 / 200))


def test_judge_inflation_is_one_over_youden_j():
    # Se 0.9, Sp 0.8: J = 0.7, everything grows by 1/0.7.
    assert judge_inflation(0.9, 0.8) == pytest.approx(1 / 0.7)
    human = minimum_detectable_difference(200, "paired", discordant=0.2)
    judged = minimum_detectable_difference(200, "paired", discordant=0.2, sensitivity=0.9, specificity=0.8)
    assert judged == pytest.approx(human / 0.7)
    assert plan(200, "accuracy", p=0.7, sensitivity=0.9, specificity=0.8).half_width == pytest.approx(accuracy_half_width(0.7, 200) / 0.7)


def test_a_chance_level_judge_is_refused():
    with pytest.raises(CalibrationError, match="no better than chance"):
        judge_inflation(0.5, 0.5)
    with pytest.raises(CalibrationError, match="both"):
        judge_inflation(0.9, None)


@pytest.mark.parametrize(("delta", "kwargs"), [(0.03, {"discordant": 0.2}), (0.05, {"discordant": 0.1}), (0.1, {"discordant": 0.3})])
def test_required_n_is_the_smallest_n_whose_mdd_reaches_delta(delta, kwargs):
    n = required_n(delta, "paired", **kwargs)
    assert n == math.ceil(kwargs["discordant"] * ((Z + Z_POWER) / delta) ** 2)
    assert minimum_detectable_difference(n, "paired", **kwargs) <= delta + 1e-12
    assert minimum_detectable_difference(n - 1, "paired", **kwargs) > delta


def test_required_n_with_a_judge_grows_by_one_over_j_squared():
    human = 0.2 * ((Z + Z_POWER) / 0.03) ** 2
    assert required_n(0.03, "paired", discordant=0.2, sensitivity=0.9, specificity=0.8) == math.ceil(human / 0.49)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 100_000), st.floats(0.01, 0.99), st.sampled_from(["paired", "unpaired", "accuracy"]))
def test_mdd_is_positive_and_falls_as_n_grows(n, share, design):
    kwargs = {"discordant": share} if design == "paired" else {"p": share}
    small = minimum_detectable_difference(n, design, **kwargs)
    large = minimum_detectable_difference(n + 1, design, **kwargs)
    assert small > 0 and large > 0
    assert large < small


def test_per_query_sd_and_discordant_share_against_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.random(40), rng.random(40)
    assert per_query_sd(list(a), list(b)) == pytest.approx(np.std(a - b, ddof=1))
    x, y = rng.integers(0, 2, 80), rng.integers(0, 2, 80)
    assert discordant_share(list(x), list(y)) == pytest.approx(np.mean(x != y))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: accuracy_half_width(70, 100), "proportion"),
        (lambda: accuracy_half_width(0.7, 0), "positive"),
        (lambda: minimum_detectable_difference(100, "paired"), "discordant"),
        (lambda: minimum_detectable_difference(100, "unpaired", p=0.5, power=80), "power"),
        (lambda: required_n(0, "paired", discordant=0.2), "positive"),
    ],
)
def test_bad_input_says_how_to_fix_it(call, message):
    with pytest.raises(CalibrationError, match=message):
        call()
