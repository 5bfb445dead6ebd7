"""Two judges (two prompt versions, two models) against the same people on the same items.

The comparisons are the (item, annotator) pairs on which both judges gave a usable label; on
them, each judge's agreement with people and kappa, and the differences A - B. The interval of
a difference is a paired cluster bootstrap: each resample draws groups (queries) with
replacement and recomputes both judges on the same draw, so the items both judges share
cancel out of the spread and only what differs between them is left. A difference whose
interval holds 0 is no evidence that one prompt beats the other on these items.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from calibration import CalibrationError
from calibration.agreement import agreement_of_tables, disagreement_weights, kappa_of_tables
from calibration.bootstrap import MIN_GROUPS, N_BOOT, Estimate, check_interval_args, merge_identical, percentile_interval, resample_counts
from calibration.tables import category_index, sorted_labels


@dataclass(frozen=True, slots=True)
class PairedJudges:
    """Judge A against judge B with people on the same comparisons.

    Attributes:
        n_items: items both judges labelled and a person labelled.
        n_pairs: (item, annotator) comparisons.
        n_changed: items on which the two judges' labels differ.
        agreement_a, agreement_b, agreement_difference: agreement with people, and A - B.
        kappa_a, kappa_b, kappa_difference: kappa with people (``weights``), and A - B.
    """

    n_items: int
    n_pairs: int
    n_changed: int
    agreement_a: Estimate
    agreement_b: Estimate
    agreement_difference: Estimate
    kappa_a: Estimate
    kappa_b: Estimate
    kappa_difference: Estimate
    weights: str

    def as_dict(self) -> dict[str, object]:
        return {"n": self.n_items, "n_pairs": self.n_pairs, "n_changed": self.n_changed, "kappa_weights": self.weights,
                "agreement": {"a": self.agreement_a.as_dict(), "b": self.agreement_b.as_dict(),
                              "difference": self.agreement_difference.as_dict()},
                "kappa": {"a": self.kappa_a.as_dict(), "b": self.kappa_b.as_dict(),
                          "difference": self.kappa_difference.as_dict()}}


def _comparisons(humans: Mapping[Hashable, Mapping[str, Hashable]], judge_a: Mapping[Hashable, Hashable | None],
                 judge_b: Mapping[Hashable, Hashable | None], groups: Mapping[Hashable, Hashable] | None,
                 ) -> tuple[list, list, list, list, set]:
    """One row per person's label on an item both judges labelled: people's, A's and B's labels,
    the item's group; and the items."""
    h, a, b, g, items = [], [], [], [], set()
    for key in sorted(humans, key=str):
        x, y = judge_a.get(key), judge_b.get(key)
        if x is None or y is None:
            continue
        items.add(key)
        for annotator in sorted(humans[key]):
            h.append(humans[key][annotator])
            a.append(x)
            b.append(y)
            g.append(key if groups is None else groups[key])
    if not h:
        raise CalibrationError("no item that both judges and a person labelled: nothing to compare")
    return h, a, b, g, items


def _tables(h: list, a: list, b: list, g: list, labels: Sequence[Hashable] | None) -> np.ndarray:
    """Per group, judge A's and B's confusion tables against people: shape (groups, 2, k, k)."""
    cats = sorted_labels(labels, np.asarray(h), np.asarray(a + b))
    k = len(cats)
    people = category_index(np.asarray(h), cats, "people")
    cells_a = people * k + category_index(np.asarray(a), cats, "judge A")
    cells_b = people * k + category_index(np.asarray(b), cats, "judge B")
    _, g_idx = np.unique(np.asarray([str(x) for x in g]), return_inverse=True)
    n_groups = int(g_idx.max()) + 1
    tables = np.zeros((n_groups, 2, k * k))
    np.add.at(tables, (g_idx, 0, cells_a), 1)
    np.add.at(tables, (g_idx, 1, cells_b), 1)
    return tables.reshape(n_groups, 2, k, k)


def paired_judges(
    humans: Mapping[Hashable, Mapping[str, Hashable]],
    judge_a: Mapping[Hashable, Hashable | None],
    judge_b: Mapping[Hashable, Hashable | None],
    groups: Mapping[Hashable, Hashable] | None = None,
    *,
    labels: Sequence[Hashable] | None = None,
    weights: Literal["quadratic"] | None = None,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> PairedJudges:
    """Judges A and B against people on the items both labelled (see the module docstring).

    ``humans`` maps an item to ``{annotator: label}``, each judge an item to its label (None:
    no usable label), ``groups`` an item to the unit resampled (default: the item).

    Judge A matches both people on items 1 and 2, B only on item 1: agreement 1.0 against 0.5.

    >>> humans = {1: {"p": "x"}, 2: {"p": "y"}}
    >>> r = paired_judges(humans, {1: "x", 2: "y"}, {1: "x", 2: "x"}, n_boot=0)
    >>> r.agreement_a.value, r.agreement_b.value, r.agreement_difference.value, r.n_changed
    (1.0, 0.5, 0.5, 1)

    Raises:
        CalibrationError: no item that both judges and a person labelled, or a label outside ``labels``.
    """
    check_interval_args(ci, n_boot)
    h, a, b, g, items = _comparisons(humans, judge_a, judge_b, groups)
    tables = _tables(h, a, b, g, labels)
    n_groups, k = tables.shape[0], tables.shape[2]
    disagreement = disagreement_weights(k, weights)
    stats = {"agreement": agreement_of_tables, "kappa": lambda t: kappa_of_tables(t, disagreement)}
    total = tables.sum(axis=0)
    draws = None
    if n_boot and n_groups >= MIN_GROUPS:
        parts, counts = merge_identical(tables)
        draws = resample_counts(parts, counts, n_boot, np.random.default_rng(seed))
    method = "cluster bootstrap" if groups is not None else "bootstrap"
    out: dict[str, Estimate] = {}
    for name, statistic in stats.items():
        values = [float(statistic(total[None, j])[0]) for j in (0, 1)]
        for j, side in ((0, "a"), (1, "b")):
            low, high = (percentile_interval(statistic(draws[:, j]), ci) if draws is not None
                         else (float("nan"), float("nan")))
            out[f"{name}_{side}"] = Estimate(name, values[j], low, high, len(h), ci, method, n_boot, n_groups)
        low, high = (percentile_interval(statistic(draws[:, 0]) - statistic(draws[:, 1]), ci) if draws is not None
                     else (float("nan"), float("nan")))
        out[f"{name}_difference"] = Estimate(f"{name}_difference", values[0] - values[1], low, high, len(h), ci, method,
                                             n_boot, n_groups)
    changed = sum(judge_a[key] != judge_b[key] for key in items)
    return PairedJudges(len(items), len(h), changed, out["agreement_a"], out["agreement_b"], out["agreement_difference"],
                        out["kappa_a"], out["kappa_b"], out["kappa_difference"],
                        "quadratic" if weights == "quadratic" else "none")
