"""The small statistical building blocks every estimator here shares, each defined once: the
normal quantile, the Wilson score interval and the paired sign-flip (randomisation) test.

- **Normal quantile** Φ⁻¹(p) (:func:`normal_quantile`) and the two-sided multiplier of a
  ``ci`` interval, ``z_{(1+ci)/2}`` (:func:`z_for`).
- **Wilson score interval** of a share (Wilson 1927) at a possibly fractional sample size
  (:func:`wilson`): a design-effect sample size is one.
- **Paired sign-flip test** of "mean δ = 0" (Fisher 1935; Smucker, Allan & Carterette 2007):
  under no difference each δ_q is as likely to have either sign. With at most
  :data:`EXACT_UP_TO` non-zero differences every sign pattern is enumerated (the exact p);
  beyond, ``n_permutations`` random patterns give ``p = (1 + hits) / (1 + R)`` (Phipson &
  Smyth 2010: never 0). Zeros keep their value under any sign and are left out of the patterns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from calibration import CalibrationError

#: Random sign patterns of the sign-flip test when the exact enumeration would be larger.
N_PERMUTATIONS = 10_000
#: Up to this many non-zero differences, all 2^m sign patterns are enumerated (65,536 at most).
EXACT_UP_TO = 16
_CHUNK = 2_000_000  # pattern x difference cells drawn at once (bounds memory to ~16 MB)
_EPS = 1e-12  # float sums of the same values in another order differ in the last bits

Alternative = Literal["two-sided", "less", "greater"]


def normal_quantile(p: float) -> float:
    """The standard normal quantile Φ⁻¹(p) (NaN outside [0, 1]).

    >>> round(normal_quantile(0.975), 6)
    1.959964
    """
    from scipy.stats import norm

    return float(norm.ppf(p))


def z_for(ci: float) -> float:
    """``z_{(1+ci)/2}``: the half-width of a two-sided ``ci`` normal interval in standard errors.

    >>> round(z_for(0.95), 6)
    1.959964

    Raises:
        CalibrationError: ``ci`` not strictly between 0 and 1.
    """
    if not 0.0 < ci < 1.0:
        raise CalibrationError(f"ci={ci}: the interval coverage must be between 0 and 1, e.g. 0.95")
    return normal_quantile(0.5 + ci / 2.0)


def wilson(p: float, n: float, z: float) -> tuple[float, float]:
    """The Wilson score interval of a share ``p`` at a (possibly fractional) sample size ``n``,
    ``z`` standard errors wide on each side; NaN when ``n`` is not above 0 or ``p`` is NaN.

    >>> [round(v, 4) for v in wilson(0.8, 10, 1.959964)]
    [0.4902, 0.9433]
    """
    if n <= 0 or math.isnan(p):
        return float("nan"), float("nan")
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denominator
    half = z * math.sqrt(max(p * (1.0 - p), 0.0) / n + z * z / (4.0 * n * n)) / denominator
    # Rounding must not put an end on the wrong side of p (nor outside [0, 1]) when p is 0 or 1.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def sign_flip_p(deltas: Sequence[float], *, alternative: Alternative = "two-sided", exact_up_to: int = EXACT_UP_TO,
                n_permutations: int = N_PERMUTATIONS, seed: int | None = 0) -> float:
    """p of the paired sign-flip test of "mean δ = 0" against ``alternative``: ``two-sided``
    (share of sign patterns whose |mean| reaches the observed |mean|), ``less`` (mean at or
    below the observed one: "δ < 0") or ``greater``.

    Exact for at most ``exact_up_to`` non-zero differences. With δ = (1, 1, 1) the 2 of the 2³
    patterns with all signs equal reach |mean| 1; against "δ < 0" only the pattern with every
    sign flipped reaches −1 when δ = (−1, −1, −1):

    >>> sign_flip_p([1.0, 1.0, 1.0])
    0.25
    >>> sign_flip_p([-1.0, -1.0, -1.0], alternative="less"), sign_flip_p([1.0, 1.0, 1.0], alternative="less")
    (0.125, 1.0)

    Raises:
        CalibrationError: no difference, or an unknown ``alternative``.
    """
    import numpy as np

    if alternative not in ("two-sided", "less", "greater"):
        raise CalibrationError(f"alternative={alternative!r}: give 'two-sided', 'less' or 'greater'")
    d = np.asarray(deltas, dtype=float)
    if d.size == 0:
        raise CalibrationError("no paired differences to test")
    observed = float(d.mean())
    nonzero = d[d != 0.0]
    m = nonzero.size
    if m == 0:
        return 1.0

    def reached(means: np.ndarray) -> int:
        if alternative == "less":
            return int(np.count_nonzero(means <= observed + _EPS))
        if alternative == "greater":
            return int(np.count_nonzero(means >= observed - _EPS))
        return int(np.count_nonzero(np.abs(means) >= abs(observed) - _EPS))

    if m <= exact_up_to:
        patterns = ((np.arange(2**m)[:, None] >> np.arange(m)) & 1).astype(np.int8) * 2 - 1
        return reached((patterns @ nonzero) / d.size) / 2**m
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    step = max(1, _CHUNK // m)
    while done < n_permutations:
        k = min(step, n_permutations - done)
        signs = rng.integers(0, 2, size=(k, m), dtype=np.int8) * 2 - 1
        hits += reached((signs @ nonzero) / d.size)
        done += k
    return (1 + hits) / (1 + n_permutations)
