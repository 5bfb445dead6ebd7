"""Bias probes for a pairwise judge: position, verbosity and self-preference.

A pairwise verdict names the answer that won: ``1`` (the first answer of the item) or ``2``;
``None`` is no verdict (a tie or an unparsable reply). In the swapped presentation answer 2 is
shown first, but its verdict still names answers, not slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calibration import CalibrationError
from calibration.bootstrap import N_BOOT, Estimate, bootstrap_tables, check_interval_args, wilson_interval

Verdict = int | str | None


@dataclass(frozen=True, slots=True)
class PositionBias:
    """What a judge does when the same pair is shown in both orders.

    Attributes:
        consistency: share of pairs whose winner is the same in both orders (Wilson interval).
        first_slot_preference: among inconsistent pairs, the share where the answer shown
            first won both times (0.5 means no position preference; Wilson interval).
        wins_1: pairs answer 1 won in both orders.
        wins_2: pairs answer 2 won in both orders.
        ties: pairs that won once each way (a tie, per the issue's rule).
        n_excluded: pairs left out because a verdict was missing in either order.
    """

    consistency: Estimate
    first_slot_preference: Estimate
    wins_1: int
    wins_2: int
    ties: int
    n_excluded: int


@dataclass(frozen=True, slots=True)
class RateComparison:
    """A rate under the judge vs under humans on the same pairs, and their difference.

    The interval of the difference resamples pairs (paired bootstrap over the 2×2 table of
    judge-event × human-event), so it accounts for both rates moving together.
    """

    judge: Estimate
    human: Estimate
    difference: Estimate
    n_excluded: int


def _verdict(value: Verdict, where: str) -> int | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    text = str(value).strip()
    if text in ("1", "2"):
        return int(text)
    if text.lower() in ("", "none", "tie", "nan"):
        return None
    raise CalibrationError(f"{where} = {value!r}: a verdict is 1, 2 or None (no verdict)")


def position_bias(original: Sequence[Verdict], swapped: Sequence[Verdict], *, ci: float = 0.95) -> PositionBias:
    """Consistency and first-slot preference from verdicts in both presentation orders.

    A pair is consistent when the same answer wins in both orders. An inconsistent pair won by
    the first slot both times reads ``(1, 2)``: answer 1 won when shown first, answer 2 won when
    shown first. Both rates get Wilson (1927) score intervals. Zheng et al. (2023), "Judging
    LLM-as-a-judge", sec. 3.3, define consistency the same way.

    >>> bias = position_bias([1, 1, 1, 2], [1, 2, 2, 1])
    >>> bias.consistency.value, bias.first_slot_preference.value
    (0.25, 0.6666666666666666)
    """
    check_interval_args(ci, 0)
    if len(original) != len(swapped):
        raise CalibrationError(f"original and swapped verdicts differ in length ({len(original)} vs {len(swapped)})")
    pairs = [
        (_verdict(x, f"original[{i}]"), _verdict(y, f"swapped[{i}]"))
        for i, (x, y) in enumerate(zip(original, swapped, strict=True))
    ]
    valid = [(x, y) for x, y in pairs if x is not None and y is not None]
    if not valid:
        raise CalibrationError("no pair has a verdict in both orders")
    wins_1 = sum(1 for x, y in valid if x == y == 1)
    wins_2 = sum(1 for x, y in valid if x == y == 2)
    first_slot = sum(1 for x, y in valid if (x, y) == (1, 2))
    inconsistent = len(valid) - wins_1 - wins_2
    consistent = wins_1 + wins_2
    consistency = Estimate("consistency", consistent / len(valid), *wilson_interval(consistent, len(valid), ci), len(valid), ci, "wilson")
    share = first_slot / inconsistent if inconsistent else float("nan")
    preference = Estimate(
        "first_slot_preference", share, *wilson_interval(first_slot, inconsistent, ci), inconsistent, ci, "wilson"
    )
    return PositionBias(consistency, preference, wins_1, wins_2, inconsistent, len(pairs) - len(valid))


def _compare_rates(
    judge_event: NDArray[np.bool_], human_event: NDArray[np.bool_], name: str, n_excluded: int, *, ci: float, n_boot: int, seed: int | None
) -> RateComparison:
    check_interval_args(ci, n_boot)
    if judge_event.size == 0:
        raise CalibrationError(f"no pair qualifies for the {name} probe")
    table = np.zeros((1, 2, 2), dtype=np.int64)
    np.add.at(table[0], (judge_event.astype(int), human_event.astype(int)), 1)
    n = int(judge_event.size)
    method = "bootstrap" if n_boot else "none"

    def make(label: str, statistic) -> Estimate:
        value = float(statistic(table.astype(np.float64))[0])
        low, high = bootstrap_tables(table, statistic, grouped=False, n_boot=n_boot, ci=ci, seed=seed)
        return Estimate(f"{name}_{label}", value, low, high, n, ci, method, n_boot, None, None, None, seed if n_boot else None)

    def judge_rate(t):
        return t[..., 1, :].sum(axis=-1) / t.sum(axis=(-2, -1))

    def human_rate(t):
        return t[..., :, 1].sum(axis=-1) / t.sum(axis=(-2, -1))

    return RateComparison(
        make("judge", judge_rate),
        make("human", human_rate),
        make("difference", lambda t: judge_rate(t) - human_rate(t)),
        n_excluded,
    )


def _paired_verdicts(judge: Sequence[Verdict], human: Sequence[Verdict]) -> tuple[list[int | None], list[int | None]]:
    if len(judge) != len(human):
        raise CalibrationError(f"judge and human verdicts differ in length ({len(judge)} vs {len(human)})")
    return [_verdict(v, f"judge[{i}]") for i, v in enumerate(judge)], [_verdict(v, f"human[{i}]") for i, v in enumerate(human)]


def verbosity_bias(
    judge: Sequence[Verdict],
    human: Sequence[Verdict],
    length_1: Sequence[int],
    length_2: Sequence[int],
    *,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> RateComparison:
    """How often the longer answer wins under the judge vs under humans, on the same pairs.

    Pairs of equal length or without both verdicts are left out (``n_excluded``). A positive
    difference means the judge favours length more than people do (Zheng et al. 2023, sec. 3.3).

    >>> r = verbosity_bias([1, 1, 2, 1], [1, 2, 2, 2], [9, 9, 1, 9], [1, 1, 9, 1], n_boot=0)
    >>> r.judge.value, r.human.value, r.difference.value
    (1.0, 0.5, 0.5)
    """
    j, h = _paired_verdicts(judge, human)
    if not len(length_1) == len(length_2) == len(j):
        raise CalibrationError("length_1 and length_2 must give one length per pair")
    keep = [i for i in range(len(j)) if j[i] is not None and h[i] is not None and length_1[i] != length_2[i]]
    longer = [1 if length_1[i] > length_2[i] else 2 for i in keep]
    judge_event = np.array([j[i] == w for i, w in zip(keep, longer, strict=True)], dtype=bool)
    human_event = np.array([h[i] == w for i, w in zip(keep, longer, strict=True)], dtype=bool)
    return _compare_rates(judge_event, human_event, "longer_wins", len(j) - len(keep), ci=ci, n_boot=n_boot, seed=seed)


def self_preference(
    judge: Sequence[Verdict],
    human: Sequence[Verdict],
    family_1: Sequence[str],
    family_2: Sequence[str],
    judge_family: str,
    *,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> RateComparison:
    """The judge's win rate for answers of its own model family vs the humans' rate.

    Only pairs where exactly one answer comes from ``judge_family`` and both verdicts exist
    count (Panickssery et al. 2024, "LLM evaluators recognize and favor their own generations").

    >>> r = self_preference([1, 2, 1], [2, 2, 1], ["gpt", "x", "gpt"], ["x", "gpt", "y"], "gpt", n_boot=0)
    >>> r.judge.value, r.human.value
    (1.0, 0.6666666666666666)
    """
    j, h = _paired_verdicts(judge, human)
    if not len(family_1) == len(family_2) == len(j):
        raise CalibrationError("family_1 and family_2 must give one model family per pair")
    own = [
        (i, 1 if family_1[i] == judge_family else 2)
        for i in range(len(j))
        if (family_1[i] == judge_family) != (family_2[i] == judge_family) and j[i] is not None and h[i] is not None
    ]
    judge_event = np.array([j[i] == w for i, w in own], dtype=bool)
    human_event = np.array([h[i] == w for i, w in own], dtype=bool)
    return _compare_rates(judge_event, human_event, "own_family_wins", len(j) - len(own), ci=ci, n_boot=n_boot, seed=seed)
