"""Vectorised bootstrap over contingency tables, and the interval each statistic carries.

Every agreement statistic here is a function of a table of counts (a contingency table for two
raters, a coincidence matrix for Krippendorff's alpha). Resampling ``n`` independent items with
replacement therefore changes nothing but the counts: the resampled table is one multinomial
draw with ``n`` trials over the cells, in the cells' observed proportions. Drawing 10,000 such
tables costs milliseconds whatever ``n`` is (Efron & Tibshirani 1993, ch. 6).

Labels in a pool are grouped by query and correlated within it, so when groups are given the
unit of resampling is the group (cluster bootstrap; Field & Welsh 2007): each replicate draws
``G`` groups with replacement and adds up their tables. Groups with identical tables are merged
first, so the draw is again a multinomial over distinct parts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from calibration import CalibrationError
from calibration.stats import wilson, z_for

IntervalMethod = Literal["bootstrap", "cluster bootstrap", "analytic", "wilson", "none"]

#: Default number of bootstrap replicates.
N_BOOT = 2000
#: A binomial draw costs about this many uniform index draws (numpy 2, measured in bench/).
_BINOMIAL_COST = 30
#: Index draws per chunk when resampling units one by one (bounds memory to ~100 MB).
_CHUNK_DRAWS = 4_000_000
#: A cluster bootstrap over fewer groups than this has no variation to show: every replicate
#: of a single query is that query. The interval is then NaN (reported as missing), not a
#: zero-width interval that looks like certainty.
MIN_GROUPS = 2

#: Fewer queries than this make a cluster bootstrap interval too narrow to trust: the
#: resamples can only recombine the few queries there are (Field & Welsh 2007).
FEW_GROUPS = 10


@dataclass(frozen=True, slots=True)
class Estimate:
    """One statistic with its interval, its n and what it was computed on.

    Attributes:
        statistic: name, e.g. ``kappa_quadratic`` or ``alpha_ordinal``.
        value: the point estimate (NaN when undefined, e.g. kappa with one category in use).
        low: lower end of the interval (NaN when no interval was asked for).
        high: upper end of the interval.
        n: items (or pairable units, or pairs) the value was computed on.
        ci: coverage of the interval, e.g. 0.95.
        method: how the interval was made: ``bootstrap`` (items resampled), ``cluster
            bootstrap`` (groups resampled), ``analytic``, ``wilson`` or ``none``.
        n_boot: bootstrap replicates (0 for analytic intervals).
        n_groups: groups resampled by a cluster bootstrap, else None.
        weights: kappa/AC weighting (``none``, ``linear``, ``quadratic``, ``custom``) or None.
        level: Krippendorff level of measurement, or None.
        seed: seed of the bootstrap, or None.
        why: when the value is undefined (NaN), why, in words (e.g. "one item: chance
            agreement cannot be estimated from a single item"); None otherwise.
    """

    statistic: str
    value: float
    low: float
    high: float
    n: int
    ci: float = 0.95
    method: IntervalMethod = "none"
    n_boot: int = 0
    n_groups: int | None = None
    weights: str | None = None
    level: str | None = None
    seed: int | None = None
    why: str | None = None

    @property
    def undefined(self) -> bool:
        """True when the statistic has no value on these data (see ``why``)."""
        return bool(np.isnan(self.value))

    @property
    def groups_resampled(self) -> bool:
        """True when the interval resampled groups (queries) rather than items."""
        return self.n_groups is not None

    def as_dict(self) -> dict[str, float | int | str | None]:
        """The four numbers a report prints: ``value``, ``low``, ``high``, ``n``; and
        ``undefined`` (why) when the value is undefined."""
        out: dict[str, float | int | str | None] = {
            "value": _json_float(self.value), "low": _json_float(self.low), "high": _json_float(self.high), "n": self.n
        }
        if self.undefined and self.why:
            out["undefined"] = self.why
        return out


def _json_float(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def check_interval_args(ci: float, n_boot: int) -> None:
    """Refuse a coverage outside (0, 1) or a negative replicate count."""
    if not 0.0 < ci < 1.0:
        raise CalibrationError(f"ci={ci}: the interval coverage must be between 0 and 1, e.g. 0.95")
    if n_boot < 0:
        raise CalibrationError(f"n_boot={n_boot}: the number of bootstrap replicates cannot be negative")


def resample_counts(
    parts: NDArray[np.floating] | NDArray[np.integer],
    counts: NDArray[np.integer],
    n_boot: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Draw ``n_boot`` bootstrap sums of parts, each part drawn as often as a multinomial says.

    Args:
        parts: shape ``(P, ...)``: the table each distinct unit (a cell, or a group) adds.
        counts: shape ``(P,)``: how many units carry each part.
        n_boot: replicates.
        rng: the random generator.

    Returns:
        Shape ``(n_boot, ...)``: sum over units drawn with replacement, ``counts.sum()`` draws.
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    flat = np.asarray(parts, dtype=np.float64).reshape(len(counts), -1)
    if len(counts) * _BINOMIAL_COST <= total:
        weights = rng.multinomial(total, counts / total, size=n_boot).astype(np.float64)
        return (weights @ flat).reshape((n_boot, *np.shape(parts)[1:]))
    # Many distinct parts (e.g. thousands of queries): a multinomial draws one binomial per
    # part, so drawing the units themselves and counting them is cheaper.
    unit_part = np.repeat(np.arange(len(counts)), counts)
    out = np.empty((n_boot, flat.shape[1]))
    chunk = max(1, _CHUNK_DRAWS // total)
    for start in range(0, n_boot, chunk):
        rows = min(chunk, n_boot - start)
        drawn = unit_part[rng.integers(0, total, size=(rows, total))]
        offsets = np.arange(rows)[:, None] * len(counts)
        weights = np.bincount((drawn + offsets).ravel(), minlength=rows * len(counts)).reshape(rows, len(counts))
        out[start : start + rows] = weights @ flat
    return out.reshape((n_boot, *np.shape(parts)[1:]))


def merge_identical(parts: NDArray[np.floating]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Distinct parts (along axis 0) and how often each occurs."""
    flat = np.asarray(parts, dtype=np.float64).reshape(len(parts), -1)
    unique, counts = np.unique(flat, axis=0, return_counts=True)
    return unique.reshape((len(unique), *np.shape(parts)[1:])), counts.astype(np.int64)


def bootstrap_tables(
    tables: NDArray[np.floating],
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    *,
    grouped: bool,
    n_boot: int,
    ci: float,
    seed: int | None,
) -> tuple[float, float]:
    """Percentile interval of ``statistic`` over resampled tables.

    Args:
        tables: shape ``(G, k, k)``: one table per group (``G = 1`` when not grouped).
        statistic: maps tables of shape ``(B, k, k)`` to ``B`` values (NaN where undefined).
        grouped: resample groups (cluster bootstrap) rather than the units inside the tables.
        n_boot: replicates; 0 gives ``(nan, nan)``, and so do fewer than ``MIN_GROUPS``
            groups when ``grouped``.
        ci: coverage.
        seed: seed of the generator.

    Returns:
        ``(low, high)``; NaN when fewer than half the replicates give a defined statistic.
    """
    if n_boot == 0 or (grouped and len(tables) < MIN_GROUPS):
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    if grouped:
        parts, counts = merge_identical(tables)
    else:
        total = np.asarray(tables, dtype=np.float64).sum(axis=0)
        cell_counts = np.rint(total.ravel()).astype(np.int64)
        if np.any(np.abs(total.ravel() - cell_counts) > 1e-9):
            # Fractional tables (coincidence matrices) cannot be a multinomial over cells;
            # the caller passes one part per distinct unit instead, with grouped=True.
            raise CalibrationError("item resampling needs a table of whole counts")
        replicates = rng.multinomial(int(cell_counts.sum()), cell_counts / cell_counts.sum(), size=n_boot)
        return percentile_interval(statistic(replicates.reshape((n_boot, *total.shape)).astype(np.float64)), ci)
    return percentile_interval(statistic(resample_counts(parts, counts, n_boot, rng)), ci)


def percentile_interval(replicates: NDArray[np.float64], ci: float) -> tuple[float, float]:
    """The ``(1-ci)/2`` and ``(1+ci)/2`` quantiles of the defined replicates."""
    defined = replicates[~np.isnan(replicates)]
    if defined.size < max(1, replicates.size // 2):
        return float("nan"), float("nan")
    tail = (1.0 - ci) / 2.0
    low, high = np.quantile(defined, [tail, 1.0 - tail])
    return float(low), float(high)


def normal_interval(value: float, se: float, ci: float) -> tuple[float, float]:
    """``value ± z_{(1+ci)/2} · se``."""
    z = z_for(ci)
    return value - z * se, value + z * se


def wilson_interval(successes: int, n: int, ci: float) -> tuple[float, float]:
    """Wilson score interval of ``successes`` out of ``n`` (:func:`calibration.stats.wilson`),
    NaN when n is 0.

    >>> [round(x, 4) for x in wilson_interval(8, 10, 0.95)]
    [0.4902, 0.9433]
    """
    if n == 0:
        return float("nan"), float("nan")
    return wilson(successes / n, n, z_for(ci))
