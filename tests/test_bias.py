"""Position, verbosity and self-preference probes, on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from calibration import CalibrationError, position_bias, self_preference, verbosity_bias


def test_position_bias_counts_wins_ties_and_first_slot():
    # Verdicts name answers. (1, 1): answer 1 won both orders. (1, 2): the first slot won both
    # times. (2, 1): the second slot won both times. (None, 1): excluded.
    original = [1, 1, 2, 1, 1, 2, 1, None]
    swapped = [1, 2, 2, 2, 2, 1, 1, 1]
    bias = position_bias(original, swapped)
    assert (bias.wins_1, bias.wins_2, bias.ties, bias.n_excluded) == (2, 1, 4, 1)
    assert bias.consistency.value == pytest.approx(3 / 7)
    assert bias.consistency.n == 7
    assert bias.first_slot_preference.value == pytest.approx(3 / 4)
    assert bias.first_slot_preference.n == 4
    low, high = proportion_confint(3, 4, method="wilson")
    assert (bias.first_slot_preference.low, bias.first_slot_preference.high) == pytest.approx((low, high))
    assert bias.consistency.method == "wilson"


def test_position_bias_accepts_text_verdicts_and_refuses_others():
    bias = position_bias(["1", "2", "None"], ["1", "1", "2"])
    assert bias.consistency.n == 2 and bias.n_excluded == 1
    with pytest.raises(CalibrationError, match=r"swapped\[0\] = 'A'"):
        position_bias([1], ["A"])


def test_position_bias_without_flips_has_no_preference_value():
    bias = position_bias([1, 2], [1, 2])
    assert bias.consistency.value == 1.0
    assert np.isnan(bias.first_slot_preference.value) and bias.first_slot_preference.n == 0


def test_verbosity_compares_judge_and_humans_on_the_same_pairs():
    # Pairs 0-4 have a longer answer (answer 1 in 0-2, answer 2 in 3-4); pair 5 is equal length.
    judge = [1, 1, 1, 2, 2, 1]
    human = [1, 2, 2, 2, 1, 1]
    length_1 = [900, 800, 700, 100, 100, 50]
    length_2 = [100, 100, 100, 600, 900, 50]
    result = verbosity_bias(judge, human, length_1, length_2, n_boot=2000)
    assert result.judge.value == pytest.approx(5 / 5)
    assert result.human.value == pytest.approx(2 / 5)
    assert result.difference.value == pytest.approx(5 / 5 - 2 / 5)
    assert result.n_excluded == 1 and result.difference.n == 5
    assert result.difference.low <= result.difference.value <= result.difference.high


def test_verbosity_difference_interval_is_paired():
    # Judge and humans agree on every pair: rates move together, so every replicate difference is 0.
    rng = np.random.default_rng(0)
    verdict = list(rng.integers(1, 3, 200))
    lengths_1 = list(rng.integers(10, 1000, 200))
    lengths_2 = [x + 1 for x in lengths_1]
    result = verbosity_bias(verdict, verdict, lengths_1, lengths_2, n_boot=1000)
    assert (result.difference.low, result.difference.high) == (0.0, 0.0)
    assert result.judge.high > result.judge.low


def test_self_preference_counts_only_pairs_with_exactly_one_own_answer():
    judge = [1, 2, 1, 1, 2]
    human = [2, 2, 1, 2, 1]
    family_1 = ["gpt", "llama", "gpt", "gpt", "x"]
    family_2 = ["llama", "gpt", "claude", "gpt", "y"]
    # Pairs 0-2 qualify (own answer 1, 2, 1); pair 3 has two own answers, pair 4 none.
    result = self_preference(judge, human, family_1, family_2, "gpt", n_boot=0)
    assert result.judge.value == pytest.approx(3 / 3)
    assert result.human.value == pytest.approx(2 / 3)
    assert result.n_excluded == 2


def test_probes_refuse_mismatched_lengths():
    with pytest.raises(CalibrationError, match="length"):
        verbosity_bias([1, 2], [1, 2], [3], [4, 5])
    with pytest.raises(CalibrationError, match="length"):
        position_bias([1, 2], [1])
