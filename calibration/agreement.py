"""Agreement between raters: raw agreement, Cohen's kappa, Gwet's AC1/AC2, Krippendorff's
alpha, the confusion matrix, the majority-class baseline, and a judge's per-class precision
and recall against humans. Every statistic comes with an interval and its n.

Two-rater statistics take two equal-length label sequences ``a`` (the reference, rows) and
``b`` (columns); with ``groups=`` (one query_id per item) intervals resample groups instead of
items. Categories are the sorted ``labels`` (default: the sorted observed values); weighted
statistics use the distance between category positions, as scikit-learn does.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration import CalibrationError
from calibration.bootstrap import (
    N_BOOT,
    Estimate,
    bootstrap_tables,
    check_interval_args,
    normal_interval,
    wilson_interval,
)
from calibration.tables import PairTables, pair_tables

Weights = Literal["linear", "quadratic"] | None
IntervalKind = Literal["bootstrap", "analytic"]


def disagreement_weights(k: int, weights: Weights | ArrayLike) -> NDArray[np.float64]:
    """The ``k × k`` disagreement weights: 0/1, ``|i-j|`` or ``(i-j)²``, or a given matrix."""
    i, j = np.indices((k, k))
    if weights is None:
        return (i != j).astype(np.float64)
    if isinstance(weights, str):
        if weights == "linear":
            return np.abs(i - j).astype(np.float64)
        if weights == "quadratic":
            return ((i - j) ** 2).astype(np.float64)
        raise CalibrationError(f"weights={weights!r}: use None, 'linear', 'quadratic' or a k×k matrix")
    matrix = np.asarray(weights, dtype=np.float64)
    if matrix.shape != (k, k) or np.any(matrix < 0):
        raise CalibrationError(f"a custom weight matrix must be {k}×{k} and non-negative (got shape {matrix.shape})")
    return matrix


def _weights_name(weights: Weights | ArrayLike) -> str:
    if weights is None:
        return "none"
    return weights if isinstance(weights, str) else "custom"


def _proportions(tables: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    t = np.asarray(tables, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = t / t.sum(axis=(-2, -1), keepdims=True)
    return p, p.sum(axis=-1), p.sum(axis=-2)


def kappa_of_tables(tables: NDArray, disagreement: NDArray[np.float64]) -> NDArray[np.float64]:
    """Cohen's (weighted) kappa of each table in ``(..., k, k)``: ``1 - Σ w·p_o / Σ w·p_e``."""
    p, row, col = _proportions(tables)
    observed = np.einsum("...ij,ij->...", p, disagreement)
    expected = np.einsum("...i,...j,ij->...", row, col, disagreement)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 0, 1.0 - observed / np.where(expected > 0, expected, 1.0), np.nan)


def agreement_of_tables(tables: NDArray) -> NDArray[np.float64]:
    """Share of items on the diagonal of each table."""
    p, _, _ = _proportions(tables)
    return np.trace(p, axis1=-2, axis2=-1)


def kappa_standard_error(table: NDArray, disagreement: NDArray[np.float64]) -> float:
    """Large-sample standard error of (weighted) kappa (Fleiss, Cohen & Everitt 1969).

    With agreement weights ``w = 1 - d / max(d)``, marginals ``r``, ``c`` and
    ``w̄_i = Σ_j c_j w_ij``, ``w̄_j = Σ_i r_i w_ij``:
    ``var = [Σ p_ij (w_ij - (w̄_i + w̄_j)(1-κ))² - (κ - p_e(1-κ))²] / (n (1-p_e)²)``.
    """
    p, row, col = _proportions(table)
    n = float(np.asarray(table).sum())
    top = disagreement.max()
    w = 1.0 - disagreement / top if top > 0 else np.ones_like(disagreement)
    p_e = float(row @ w @ col)
    if p_e >= 1.0:
        return float("nan")
    kappa = (float(np.sum(w * p)) - p_e) / (1.0 - p_e)
    w_row, w_col = w @ col, row @ w
    spread = (w - (w_row[:, None] + w_col[None, :]) * (1.0 - kappa)) ** 2
    var = (float(np.sum(p * spread)) - (kappa - p_e * (1.0 - kappa)) ** 2) / (n * (1.0 - p_e) ** 2)
    return float(np.sqrt(max(var, 0.0)))


#: Why a chance-corrected statistic is undefined, by cause.
ONE_ITEM = "computed on 1 item: agreement expected by chance cannot be estimated from a single item"
NO_ITEM = "no item to compare"
ONE_GRADE = "both raters give every item the same single grade, so agreement expected by chance is complete"
ONE_CATEGORY = "only one grade is in use and no wider scale was given, so chance agreement is complete"


def _estimate(
    name: str,
    pt: PairTables,
    statistic,
    *,
    ci: float,
    n_boot: int,
    seed: int | None,
    weights: str | None = None,
    chance_corrected: bool = False,
) -> Estimate:
    """``statistic`` on the pooled table with its bootstrap interval. A chance-corrected
    statistic (kappa, AC) on fewer than two items is undefined, whatever the formula gives
    (one item gives kappa 0 or 0/0), and says why."""
    check_interval_args(ci, n_boot)
    method = "none" if n_boot == 0 else ("cluster bootstrap" if pt.n_groups is not None else "bootstrap")
    stamp = (ci, method, n_boot, pt.n_groups, weights, None, seed if n_boot else None)
    if pt.n == 0 or (chance_corrected and pt.n < 2):
        nan = float("nan")
        return Estimate(name, nan, nan, nan, pt.n, *stamp, why=NO_ITEM if pt.n == 0 else ONE_ITEM)  # type: ignore[arg-type]
    value = float(statistic(pt.total[None])[0])
    low, high = bootstrap_tables(pt.tables, statistic, grouped=pt.n_groups is not None, n_boot=n_boot, ci=ci, seed=seed)
    if low == high:
        # Every resample gave the same value (perfect agreement on a few items is the usual
        # case): the bootstrap shows no spread, which is not certainty. Raw agreement is a
        # proportion and takes the Wilson interval instead; a chance-corrected statistic has
        # no such interval and is shown without one.
        if statistic is agreement_of_tables:
            agreed = int(round(value * pt.n))
            return Estimate(name, value, *wilson_interval(agreed, pt.n, ci), pt.n, ci, "wilson", 0, pt.n_groups)
        low = high = float("nan")
    why = ONE_GRADE if chance_corrected and np.isnan(value) else None
    return Estimate(name, value, low, high, pt.n, *stamp, why=why)  # type: ignore[arg-type]


def raw_agreement(
    a: ArrayLike,
    b: ArrayLike,
    *,
    labels: Sequence[Hashable] | None = None,
    groups: ArrayLike | None = None,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> Estimate:
    """Share of items on which ``a`` and ``b`` give the same label, ``p_o = Σ_i p_ii``.

    >>> raw_agreement([0, 1, 1, 2], [0, 1, 2, 2], n_boot=0).value
    0.75
    """
    return _estimate("agreement", pair_tables(a, b, labels, groups), agreement_of_tables, ci=ci, n_boot=n_boot, seed=seed)


def cohen_kappa(
    a: ArrayLike,
    b: ArrayLike,
    weights: Weights | ArrayLike = None,
    *,
    labels: Sequence[Hashable] | None = None,
    groups: ArrayLike | None = None,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
    interval: IntervalKind = "bootstrap",
) -> Estimate:
    """Cohen's kappa, unweighted or weighted (Cohen 1960; Cohen 1968).

    ``κ_w = 1 - Σ_ij w_ij p_ij / Σ_ij w_ij p_i. p_.j`` with disagreement weights ``w_ij``: 0/1
    (unweighted), ``|i-j|`` (linear), ``(i-j)²`` (quadratic) or a given ``k × k`` matrix. Equals
    scikit-learn's ``cohen_kappa_score``. ``interval="analytic"`` gives the large-sample
    normal interval of Fleiss, Cohen & Everitt (1969) (items only, not with ``groups``).

    Cohen (1968), Table 1 (N=200) with his disagreement weights gives κ_w = 0.348:

    >>> table = [[88, 14, 18], [10, 40, 10], [2, 6, 12]]
    >>> a = [i for i in range(3) for j in range(3) for _ in range(table[i][j])]
    >>> b = [j for i in range(3) for j in range(3) for _ in range(table[i][j])]
    >>> round(cohen_kappa(a, b, n_boot=0).value, 3)
    0.492
    >>> round(cohen_kappa(a, b, [[0, 1, 3], [1, 0, 6], [3, 6, 0]], n_boot=0).value, 3)
    0.348
    """
    pt = pair_tables(a, b, labels, groups)
    disagreement = disagreement_weights(len(pt.labels), weights)
    name = "kappa" if weights is None else ("kappa_" + _weights_name(weights))

    def statistic(tables: NDArray) -> NDArray[np.float64]:
        return kappa_of_tables(tables, disagreement)

    if interval == "bootstrap":
        return _estimate(name, pt, statistic, ci=ci, n_boot=n_boot, seed=seed, weights=_weights_name(weights), chance_corrected=True)
    if interval != "analytic":
        raise CalibrationError(f"interval={interval!r}: use 'bootstrap' or 'analytic'")
    if pt.n_groups is not None:
        raise CalibrationError("the analytic interval assumes independent items; use the bootstrap with groups=")
    check_interval_args(ci, 0)
    value = float(statistic(pt.total[None])[0])
    low, high = normal_interval(value, kappa_standard_error(pt.total, disagreement), ci)
    return Estimate(name, value, low, high, pt.n, ci, "analytic", 0, None, _weights_name(weights))


def gwet_ac(
    a: ArrayLike,
    b: ArrayLike,
    weights: Weights = None,
    *,
    labels: Sequence[Hashable] | None = None,
    groups: ArrayLike | None = None,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> Estimate:
    """Gwet's AC1 (unweighted) or AC2 (weighted) for two raters (Gwet 2008; Gwet 2014, ch. 3).

    ``AC = (p_a - p_e) / (1 - p_e)``, ``p_a = Σ w_ij p_ij``,
    ``p_e = T_w / (q(q-1)) · Σ_k π_k (1 - π_k)``, ``π_k = (p_k. + p_.k) / 2``, ``T_w = Σ w_ij``,
    agreement weights ``w = 1``, ``1 - |i-j|/(q-1)`` or ``1 - (i-j)²/(q-1)²``, q categories.
    Stays high on skewed tables where kappa collapses (the "kappa paradox").

    Gwet's paradox table [[80, 7], [8, 5]] (irrCAC 1.4: p_a 0.85, p_e 0.21875, AC1 0.808):

    >>> a = [0] * 87 + [1] * 13
    >>> b = [0] * 80 + [1] * 7 + [0] * 8 + [1] * 5
    >>> round(gwet_ac(a, b, n_boot=0).value, 3)
    0.808
    """
    pt = pair_tables(a, b, labels, groups)
    q = len(pt.labels)
    name = "gwet_ac1" if weights is None else f"gwet_ac2_{weights}"
    if q < 2 and pt.n >= 2:
        nan = float("nan")
        return Estimate(name, nan, nan, nan, pt.n, ci, "none", 0, pt.n_groups, _weights_name(weights), why=ONE_CATEGORY)
    distance = disagreement_weights(q, weights)
    agree_w = 1.0 - distance / distance.max()

    def statistic(tables: NDArray) -> NDArray[np.float64]:
        p, row, col = _proportions(tables)
        pi = (row + col) / 2.0
        p_a = np.einsum("...ij,ij->...", p, agree_w)
        p_e = agree_w.sum() / (q * (q - 1)) * np.sum(pi * (1.0 - pi), axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (p_a - p_e) / (1.0 - p_e)

    return _estimate(name, pt, statistic, ci=ci, n_boot=n_boot, seed=seed, weights=_weights_name(weights), chance_corrected=True)


@dataclass(frozen=True, slots=True)
class Confusion:
    """Counts of (reference label, other label): rows ``a``, columns ``b``, in ``labels`` order."""

    labels: tuple[Hashable, ...]
    table: NDArray[np.int64]

    @property
    def n(self) -> int:
        return int(self.table.sum())


@dataclass(frozen=True, slots=True)
class ClassScore:
    """A judge's precision and recall on one category, against the reference labels."""

    label: Hashable
    precision: Estimate
    recall: Estimate
    support: int  # reference items with this label


def confusion_matrix(a: ArrayLike, b: ArrayLike, *, labels: Sequence[Hashable] | None = None) -> Confusion:
    """The contingency table of ``a`` (rows) against ``b`` (columns).

    >>> confusion_matrix([0, 0, 1], [0, 1, 1]).table.tolist()
    [[1, 1], [0, 1]]
    """
    pt = pair_tables(a, b, labels)
    return Confusion(pt.labels, pt.total)


def majority_baseline(
    reference: ArrayLike,
    *,
    labels: Sequence[Hashable] | None = None,
    groups: ArrayLike | None = None,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> Estimate:
    """Agreement of a constant rater that always gives the reference's most frequent label.

    ``max_k p_k`` over the reference label shares: the floor any judge must clear.

    >>> majority_baseline([0, 0, 0, 1], n_boot=0).value
    0.75
    """
    ref = np.asarray(reference)
    pt = pair_tables(ref, ref, labels, groups)

    def statistic(tables: NDArray) -> NDArray[np.float64]:
        _, row, _ = _proportions(tables)
        return row.max(axis=-1)

    return _estimate("majority_baseline", pt, statistic, ci=ci, n_boot=n_boot, seed=seed)


def class_scores(
    reference: ArrayLike,
    predicted: ArrayLike,
    *,
    labels: Sequence[Hashable] | None = None,
    groups: ArrayLike | None = None,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> list[ClassScore]:
    """Per-category precision ``p_cc / p_.c`` and recall ``p_cc / p_c.`` of ``predicted``.

    Equal to scikit-learn's ``precision_score``/``recall_score`` with ``average=None``.

    >>> [round(s.recall.value, 2) for s in class_scores([0, 0, 1, 1], [0, 1, 1, 1], n_boot=0)]
    [0.5, 1.0]
    """
    pt = pair_tables(reference, predicted, labels, groups)
    out = []
    for c, label in enumerate(pt.labels):
        precision = _estimate(f"precision[{label}]", pt, _cell_share(c, axis=-2), ci=ci, n_boot=n_boot, seed=seed)
        recall = _estimate(f"recall[{label}]", pt, _cell_share(c, axis=-1), ci=ci, n_boot=n_boot, seed=seed)
        support = int(pt.total[c].sum())
        n_pred = int(pt.total[:, c].sum())
        out.append(ClassScore(label, _with_n(precision, n_pred), _with_n(recall, support), support))
    return out


def _cell_share(c: int, axis: int):
    def statistic(tables: NDArray) -> NDArray[np.float64]:
        t = np.asarray(tables, dtype=np.float64)
        margin = t[..., c, :].sum(axis=-1) if axis == -1 else t[..., :, c].sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(margin > 0, t[..., c, c] / np.where(margin > 0, margin, 1.0), np.nan)

    return statistic


def _with_n(estimate: Estimate, n: int) -> Estimate:
    return replace(estimate, n=n)
