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
