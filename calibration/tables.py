"""Label sequences to contingency tables, per group when groups are given.

Rows are rater ``a`` (the reference, e.g. human), columns rater ``b`` (e.g. the judge), both in
the order of ``labels``. Every statistic in ``calibration.agreement`` is computed from these
tables, which is what makes the bootstrap cheap (see ``calibration.bootstrap``).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration import CalibrationError


@dataclass(frozen=True, slots=True)
class PairTables:
    """Two raters' labels as contingency tables.

    Attributes:
        labels: the categories, in table order.
        tables: shape ``(G, k, k)``, one table per group (``G = 1`` without groups).
        n: items.
        n_groups: groups, or None when none were given.
    """

    labels: tuple[Hashable, ...]
    tables: NDArray[np.int64]
    n: int
    n_groups: int | None

    @property
    def total(self) -> NDArray[np.int64]:
        """The ``(k, k)`` table over all groups."""
        return self.tables.sum(axis=0)


def category_index(values: NDArray, labels: NDArray, what: str) -> NDArray[np.int64]:
    """Position of each value in the sorted ``labels``; an error names the first unknown one."""
    idx = np.searchsorted(labels, values)
    idx_clipped = np.clip(idx, 0, len(labels) - 1)
    bad = labels[idx_clipped] != values
    if np.any(bad):
        first = int(np.flatnonzero(bad)[0])
        raise CalibrationError(
            f"{what}[{first}] = {values[first].item()!r} is not one of labels {labels.tolist()}; "
            "pass every category in labels="
        )
    return idx_clipped.astype(np.int64)


def sorted_labels(labels: Sequence[Hashable] | None, *arrays: NDArray) -> NDArray:
    """The given categories (sorted), or the sorted union of the observed values."""
    if labels is not None:
        out = np.asarray(list(labels))
        if len(np.unique(out)) != len(out):
            raise CalibrationError(f"labels={list(labels)}: categories must be distinct")
        return np.sort(out)
    return np.unique(np.concatenate([np.asarray(x) for x in arrays]))


def pair_tables(
    a: ArrayLike,
    b: ArrayLike,
    labels: Sequence[Hashable] | None = None,
    groups: ArrayLike | None = None,
) -> PairTables:
    """Count label pairs ``(a[i], b[i])`` into ``(G, k, k)`` tables.

    Args:
        a: labels of rater a (rows), one per item.
        b: labels of rater b (columns), same length.
        labels: every category of the scale; default: the sorted observed values.
        groups: one group id per item (e.g. query_id); default: one group.

    Raises:
        CalibrationError: unequal lengths, no items, or a label not in ``labels``.
    """
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.ndim != 1 or b_arr.ndim != 1 or len(a_arr) != len(b_arr):
        raise CalibrationError(
            f"a and b must be 1-D label sequences of equal length (got {a_arr.shape} and {b_arr.shape})"
        )
    if len(a_arr) == 0:
        raise CalibrationError("no items: a and b are empty")
    cats = sorted_labels(labels, a_arr, b_arr)
    k = len(cats)
    cell = category_index(a_arr, cats, "a") * k + category_index(b_arr, cats, "b")
    if groups is None:
        tables = np.bincount(cell, minlength=k * k).reshape(1, k, k)
        return PairTables(tuple(cats.tolist()), tables.astype(np.int64), len(a_arr), None)
    g_arr = np.asarray(groups)
    if g_arr.shape != a_arr.shape:
        raise CalibrationError(f"groups must give one group id per item ({len(g_arr)} for {len(a_arr)} items)")
    _, g_idx = np.unique(g_arr, return_inverse=True)
    n_groups = int(g_idx.max()) + 1
    tables = np.bincount(g_idx * k * k + cell, minlength=n_groups * k * k).reshape(n_groups, k, k)
    return PairTables(tuple(cats.tolist()), tables.astype(np.int64), len(a_arr), n_groups)
