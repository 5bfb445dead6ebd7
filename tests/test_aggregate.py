"""Label aggregation: majority ties, lower median, adjudication, Dawid-Skene with a random annotator."""

from __future__ import annotations

import random

import pytest

from calibration import CalibrationError
from calibration.aggregate import aggregate, confusion_weight

LABELS = {
    ("q1", "a"): {"x": 2, "y": 2, "z": 3},
    ("q1", "b"): {"x": 1, "y": 3},  # tie
    ("q2", "c"): {"x": 0},  # single label
    ("q2", "d"): {"x": 3, "y": 0, "z": 1, "w": 2},  # tie of four; lower median 1
}


def test_majority_blocks_on_ties_unless_allowed() -> None:
    with pytest.raises(CalibrationError, match="2 item"):
        aggregate(LABELS, "majority")
    result = aggregate(LABELS, "majority", allow_ties=True)
    assert result.grades == {("q1", "a"): 2, ("q1", "b"): 1, ("q2", "c"): 0, ("q2", "d"): 0}
    assert result.ties == (("q1", "b"), ("q2", "d")) and result.single == (("q2", "c"),)


def test_adjudication_wins_and_removes_the_tie() -> None:
    result = aggregate(LABELS, "majority", adjudicated={("q1", "b"): 3, ("q2", "d"): 2})
    assert result.grades[("q1", "b")] == 3 and result.grades[("q2", "d")] == 2 and not result.ties
    assert result.adjudicated == (("q1", "b"), ("q2", "d"))


def test_median_is_the_lower_median() -> None:
    grades = aggregate(LABELS, "median").grades
    assert grades == {("q1", "a"): 2, ("q1", "b"): 1, ("q2", "c"): 0, ("q2", "d"): 1}


def test_unknown_rule_and_empty_input() -> None:
    with pytest.raises(CalibrationError, match="rule"):
        aggregate(LABELS, "mean")
    with pytest.raises(CalibrationError, match="no labels"):
        aggregate({}, "majority")


def test_dawid_skene_gives_a_random_annotator_no_weight() -> None:
    rng = random.Random(3)
    truth, labels = {}, {}
    for i in range(300):
        item = (f"q{i % 30}", f"d{i}")
        truth[item] = rng.choice([0, 0, 1, 2, 3])
        labels[item] = {"ann": truth[item], "bea": truth[item], "cy": truth[item], "rand": rng.randint(0, 3)}
    result = aggregate(labels, "dawid-skene")
    assert result.grades == truth
    assert abs(result.weights["rand"]) < 0.1
    assert min(result.weights[a] for a in ("ann", "bea", "cy")) > 0.95
    posterior = result.posteriors[("q0", "d0")]
    assert sorted(posterior) == [0, 1, 2, 3] and sum(posterior.values()) == pytest.approx(1.0)
    assert max(posterior, key=posterior.get) == truth[("q0", "d0")]


def test_confusion_weight_arithmetic() -> None:
    # priors (0.5, 0.5); P(label = true) = 0.8 both ways: accuracy 0.8, chance 0.5 -> (0.8-0.5)/0.5
    assert confusion_weight([0.5, 0.5], [[0.8, 0.2], [0.2, 0.8]]) == pytest.approx(0.6)
