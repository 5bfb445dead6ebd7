"""Krippendorff's alpha with a bootstrap interval over units (or groups of units).

The point value is the ``krippendorff`` package's. The interval resamples units: alpha is a
function of the coincidence matrix, which is a sum of one small matrix per unit, so a
replicate is a multinomial draw over the distinct unit patterns (or groups) times their
matrices (see ``calibration.bootstrap``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration import CalibrationError
from calibration.bootstrap import (
    MIN_GROUPS,
    N_BOOT,
    Estimate,
    check_interval_args,
    merge_identical,
    percentile_interval,
    resample_counts,
)

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")


def _value_counts(data: NDArray[np.float64], domain: NDArray[np.float64]) -> NDArray[np.int64]:
    """Units × values: how many raters gave each value to each unit."""
    raters, units = data.shape
    present = ~np.isnan(data)
    idx = np.searchsorted(domain, np.where(present, data, domain[0]))
    unit = np.broadcast_to(np.arange(units), data.shape)
    counts = np.bincount((unit * len(domain) + idx)[present], minlength=units * len(domain))
    return counts.reshape(units, len(domain))


def _coincidence(patterns: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per-pattern coincidence matrices ``(V Vᵀ - diag V) / (m - 1)``, shape ``(P, k, k)``."""
    v = patterns.astype(np.float64)
    m = v.sum(axis=1)
    outer = v[:, :, None] * v[:, None, :] - v[:, :, None] * np.eye(v.shape[1])
    return outer / (m - 1.0)[:, None, None]


def alpha_of_coincidence(o: NDArray[np.float64], domain: NDArray[np.float64], level: Level) -> NDArray[np.float64]:
    """Alpha of each coincidence matrix in ``(..., k, k)``: ``1 - (n-1) Σ o δ² / Σ n_c n_k δ²``.

    Ordinal distance: ``δ²_ck = (Σ_{g=c..k} n_g - (n_c + n_k)/2)²`` (Krippendorff 2011, eq. for
    ordinal metric), computed from each matrix's own marginals.
    """
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    c, k = np.meshgrid(domain, domain, indexing="ij")
    if level == "nominal":
        delta = (c != k).astype(np.float64)
    elif level == "interval":
        delta = (c - k) ** 2
    elif level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = np.nan_to_num(((c - k) / (c + k)) ** 2)
    else:
        s = np.cumsum(n_c, axis=-1)
        delta = (s[..., None, :] - s[..., :, None] + (n_c[..., :, None] - n_c[..., None, :]) / 2.0) ** 2
    observed = np.sum(o * delta, axis=(-2, -1))
    expected = np.sum(n_c[..., :, None] * n_c[..., None, :] * delta, axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 0, 1.0 - (n - 1.0) * observed / np.where(expected > 0, expected, 1.0), np.nan)


def krippendorff_alpha(
    data: ArrayLike,
    level: Level = "nominal",
    *,
    value_domain: ArrayLike | None = None,
    groups: ArrayLike | None = None,
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> Estimate:
    """Krippendorff's alpha, ``α = 1 - D_o / D_e``, on raters × units with NaN for missing.

    Any number of raters, missing values allowed; units with fewer than two values are not
    pairable and are left out (``n`` counts the pairable units). Krippendorff (2011),
    "Computing Krippendorff's Alpha-Reliability", section C: nominal 0.743, interval 0.849.

    >>> nan = float("nan")
    >>> data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    ...         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    ...         [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    ...         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]
    >>> round(krippendorff_alpha(data, "nominal", n_boot=0).value, 3)
    0.743
    >>> round(krippendorff_alpha(data, "interval", n_boot=0).value, 3)
    0.849

    Args:
        data: shape ``(raters, units)``, numeric codes, NaN where a rater gave no value.
        level: ``nominal``, ``ordinal``, ``interval`` or ``ratio``.
        value_domain: every value of the scale (default: the observed values).
        groups: one group id per unit (e.g. query_id): the interval resamples groups.
        ci: interval coverage.
        n_boot: bootstrap replicates (0: no interval).
        seed: seed of the bootstrap.
    """
    import krippendorff

    check_interval_args(ci, n_boot)
    if level not in LEVELS:
        raise CalibrationError(f"level={level!r}: use one of {', '.join(LEVELS)}")
    domain, counts = _checked_counts(data, value_domain)
    pairable = counts.sum(axis=1) >= 2
    n_units = int(pairable.sum())
    why = _undefined(n_units, counts[pairable], len(domain))
    if why is not None:
        nan = float("nan")
        return Estimate(f"alpha_{level}", nan, nan, nan, n_units, ci, "none", 0, None, None, level, why=why)
    value = float(krippendorff.alpha(value_counts=counts[pairable], value_domain=domain, level_of_measurement=level))
    if n_boot == 0:
        return Estimate(f"alpha_{level}", value, float("nan"), float("nan"), n_units, ci, "none", 0, None, None, level)
    low, high, n_groups = _interval(counts, pairable, domain, level, groups, n_boot, ci, seed)
    if low == high:  # every resample gave the same value: no spread shown is not certainty, so no interval
        low = high = float("nan")
    method = "bootstrap" if groups is None else "cluster bootstrap"
    return Estimate(f"alpha_{level}", value, low, high, n_units, ci, method, n_boot, n_groups, None, level, seed)


def _checked_counts(data: ArrayLike, value_domain: ArrayLike | None) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The scale's values and the units × values counts of ``data`` (raters × units, NaN missing).

    Raises:
        CalibrationError: ``data`` not 2-D, or holding a value outside ``value_domain``.
    """
    matrix = np.asarray(data, dtype=np.float64)
    if matrix.ndim != 2:
        raise CalibrationError(f"data must be raters × units (2-D), got shape {matrix.shape}")
    observed = np.unique(matrix[~np.isnan(matrix)])
    domain = observed if value_domain is None else np.unique(np.asarray(value_domain, dtype=np.float64))
    if not np.all(np.isin(observed, domain)):
        raise CalibrationError(f"data holds values outside value_domain {domain.tolist()}")
    return domain, _value_counts(matrix, domain)


def _undefined(n_units: int, counts: NDArray[np.int64], n_values: int) -> str | None:
    """Why alpha has no value on these counts, or None: it needs a unit rated twice and
    disagreement expected by chance (two values in use, or a scale of two or more)."""
    if n_units == 0:
        return "no unit was rated by two raters"
    if n_units < 2:
        return "computed on 1 unit: disagreement expected by chance cannot be estimated from a single unit"
    if n_values < 2 or np.count_nonzero(counts.sum(axis=0)) < 2:
        return "every rating is the same single value, so disagreement expected by chance is zero"
    return None


def _interval(
    counts: NDArray[np.int64],
    pairable: NDArray[np.bool_],
    domain: NDArray[np.float64],
    level: Level,
    groups: ArrayLike | None,
    n_boot: int,
    ci: float,
    seed: int | None,
) -> tuple[float, float, int | None]:
    """Percentile interval over resampled units (or groups of units), and the group count."""
    patterns, inverse, pattern_counts = np.unique(counts[pairable], axis=0, return_inverse=True, return_counts=True)
    per_pattern = _coincidence(patterns)
    rng = np.random.default_rng(seed)
    if groups is None:
        replicates = resample_counts(per_pattern, pattern_counts, n_boot, rng)
        return (*percentile_interval(alpha_of_coincidence(replicates, domain, level), ci), None)
    g_all = np.asarray(groups)
    if g_all.shape != (len(counts),):
        raise CalibrationError(f"groups must give one group id per unit ({g_all.size} for {len(counts)} units)")
    _, g_idx = np.unique(g_all[pairable], return_inverse=True)
    n_groups = int(g_idx.max()) + 1
    if n_groups < MIN_GROUPS:
        return float("nan"), float("nan"), n_groups
    p_count = len(patterns)
    # Each group's coincidence matrix is the sum of its units' (pattern) matrices.
    membership = np.bincount(g_idx * p_count + inverse.ravel(), minlength=n_groups * p_count)
    group_o = membership.reshape(n_groups, p_count).astype(np.float64) @ per_pattern.reshape(p_count, -1)
    parts, part_counts = merge_identical(group_o.reshape(n_groups, *per_pattern.shape[1:]))
    replicates = resample_counts(parts, part_counts, n_boot, rng)
    return (*percentile_interval(alpha_of_coincidence(replicates, domain, level), ci), n_groups)
