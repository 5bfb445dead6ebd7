"""A judge against itself: the majority of repeated calls, and test-retest agreement.

A judge asked the same question K times (at a temperature above 0, or from an endpoint that
is not deterministic) may answer differently. Its repeats combine by majority; a tie is a
tie, never broken by order or chance. Its self-agreement is the ceiling of any agreement with
people: a judge that agrees with itself on 60% of the items cannot agree with anyone more
reliably than that.

Test-retest agreement compares every pair of repeats of an item (K = 2: the first call against
the second; K repeats give K(K-1)/2 pairs an item): Cohen's kappa over those pairs (weighted as
the judge's agreement with people: quadratic for relevance grades, linear for nugget support), and the flip rate, the share
of those pairs that differ (1 - their raw agreement). Intervals resample ``groups`` (the query
of each item), a cluster bootstrap, so the pairs of one item, and the items of one query, move
together.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Literal

from calibration.agreement import cohen_kappa, raw_agreement
from calibration.bootstrap import N_BOOT, Estimate


def majority(labels: Sequence[Hashable | None], *, tie: Hashable | None = None) -> tuple[Hashable | None, bool]:
    """The label most of ``labels`` give (``None`` entries, replies without a label, left out),
    and whether the top count was shared: a tie gives ``tie`` (``None``: no label; a pairwise
    judge's ``TIE``).

    >>> majority(["A", "A", "B"]), majority(["A", "B"], tie="TIE"), majority([2, 1]), majority([None, 3])
    (('A', False), ('TIE', True), (None, True), (3, False))
    >>> majority([None, None])
    (None, False)
    """
    counts = Counter(x for x in labels if x is not None).most_common()
    if not counts:
        return None, False
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return tie, True
    return counts[0][0], False


@dataclass(frozen=True, slots=True)
class Retest:
    """Test-retest agreement of a judge on one task.

    Attributes:
        repeats: the number of repeats per item (the most any item has).
        n_items: items with two or more labelled repeats.
        n_pairs: pairs of repeats compared.
        kappa: Cohen's kappa over the pairs (quadratic when ``weights`` says so).
        agreement: the share of pairs that agree.
        flip_rate: the share of pairs that differ (1 - agreement; interval likewise).
        n_ties: items whose repeats tie (no majority).
    """

    repeats: int
    n_items: int
    n_pairs: int
    kappa: Estimate | None
    agreement: Estimate | None
    flip_rate: Estimate | None
    n_ties: int
    weights: str

    def as_dict(self) -> dict[str, object]:
        est = lambda e: None if e is None else e.as_dict()  # noqa: E731
        return {"repeats": self.repeats, "n": self.n_items, "n_pairs": self.n_pairs, "kappa": est(self.kappa),
                "kappa_weights": self.weights, "agreement": est(self.agreement), "flip_rate": est(self.flip_rate),
                "ties": self.n_ties}


def retest_agreement(
    repeats: Mapping[Hashable, Sequence[Hashable | None]],
    groups: Mapping[Hashable, Hashable] | None = None,
    *,
    labels: Sequence[Hashable] | None = None,
    weights: Literal["quadratic", "linear"] | None = None,
    tie: Hashable | None = None,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> Retest:
    """Test-retest agreement of repeated labels: ``repeats`` maps an item to its labels in
    repeat order (``None``: a repeat without a label, left out); ``groups`` an item to the unit
    the bootstrap resamples (default: the item itself).

    Two repeats of every item, 3 items of 4 labelled alike twice (agreement 3/4); the first
    repeat says A 3 times in 4, the second 2 in 4, so chance agreement is 3/4 · 1/2 + 1/4 · 1/2
    = 1/2 and κ = (3/4 - 1/2) / (1 - 1/2) = 0.5:

    >>> r = retest_agreement({1: "AA", 2: "BB", 3: "AA", 4: "AB"}, n_boot=0)
    >>> r.kappa.value, r.flip_rate.value, r.n_pairs
    (0.5, 0.25, 4)

    Raises:
        CalibrationError: a label outside ``labels``.
    """
    a, b, g = [], [], []
    ties = 0
    most = 0
    for key, got in repeats.items():
        most = max(most, len(got))
        ties += majority(got, tie=tie)[1]
        present = [x for x in got if x is not None]
        for x, y in combinations(present, 2):
            a.append(x)
            b.append(y)
            g.append(key if groups is None else groups[key])
    n_items = sum(1 for got in repeats.values() if sum(x is not None for x in got) >= 2)
    name = weights or "none"
    if not a:
        return Retest(most, n_items, 0, None, None, None, ties, name)
    common = {"labels": labels, "groups": g, "ci": ci, "n_boot": n_boot, "seed": seed}
    kappa = cohen_kappa(a, b, weights, **common)
    agreement = raw_agreement(a, b, **common)
    flips = replace(agreement, statistic="flip_rate", value=1 - agreement.value, low=1 - agreement.high,
                    high=1 - agreement.low)
    return Retest(most, n_items, len(a), kappa, agreement, flips, ties, name)
