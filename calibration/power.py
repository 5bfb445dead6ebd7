"""How precisely a golden set of n questions measures a system, and what it can resolve.

All quantities are proportions (0.07 is 7 points). With ``z = z_{1-α/2}`` (1.96 at α=0.05):

- one accuracy p over n items: half-width ``z·sqrt(p(1-p)/n)``;
- two systems on different items: ``z·sqrt(2p(1-p)/n)``;
- two systems on the same items, discordant share d: ``z·sqrt(d/n)`` (McNemar);
- per-query scores of two runs (graded metrics): ``z·sd/sqrt(n)``, sd of the differences.

The minimum detectable difference at power 1-β is ``(z_{1-α/2} + z_{1-β})·SE`` (Cohen 1988;
2.80·SE at α=0.05 and 80% power). A binary judge with sensitivity Se and specificity Sp against
humans shrinks every true difference by ``J = Se + Sp - 1`` (Youden's J), so every half-width
and detectable difference of a true quantity grows by ``1/J`` and the n needed by ``1/J²``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from calibration import CalibrationError
from calibration.stats import normal_quantile

Design = Literal["accuracy", "unpaired", "paired", "per_query"]


@dataclass(frozen=True, slots=True)
class Plan:
    """The precision of one design at one n, and what it can resolve.

    Attributes:
        design: ``accuracy`` (one system), ``unpaired``, ``paired`` (binary, from the discordant
            share) or ``per_query`` (graded, from the SD of per-query differences).
        n: questions.
        unit_variance: variance of one question's contribution (p(1-p), 2p(1-p), d or sd²).
        half_width: half-width of the interval at ``1 - alpha``, judge inflation included.
        mdd: minimum detectable difference at ``power``, judge inflation included.
        alpha: two-sided significance level.
        power: 1 - β.
        inflation: ``1/J`` for an imperfect judge, 1.0 for human labels.
    """

    design: Design
    n: int
    unit_variance: float
    half_width: float
    mdd: float
    alpha: float
    power: float
    inflation: float


def _check(n: float, alpha: float = 0.05, power: float = 0.8) -> None:
    if n <= 0:
        raise CalibrationError(f"n={n}: the number of questions must be positive")
    if not 0.0 < alpha < 1.0:
        raise CalibrationError(f"alpha={alpha}: the significance level must be between 0 and 1, e.g. 0.05")
    if not 0.0 < power < 1.0:
        raise CalibrationError(f"power={power}: power must be between 0 and 1, e.g. 0.8")


def _check_share(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise CalibrationError(f"{name}={value}: give a proportion between 0 and 1 (0.7, not 70)")


def accuracy_half_width(p: float, n: int, alpha: float = 0.05) -> float:
    """Half-width of the interval of one accuracy: ``z·sqrt(p(1-p)/n)``.

    >>> round(accuracy_half_width(0.7, 100), 4), round(accuracy_half_width(0.7, 200), 4)
    (0.0898, 0.0635)
    """
    _check_share("p", p)
    _check(n, alpha)
    return normal_quantile(1.0 - alpha / 2.0) * math.sqrt(p * (1.0 - p) / n)


def unpaired_half_width(p: float, n: int, alpha: float = 0.05) -> float:
    """Half-width for two systems scored on different items: ``z·sqrt(2p(1-p)/n)``.

    >>> round(unpaired_half_width(0.7, 200), 4)
    0.0898
    """
    _check_share("p", p)
    _check(n, alpha)
    return normal_quantile(1.0 - alpha / 2.0) * math.sqrt(2.0 * p * (1.0 - p) / n)


def paired_half_width(discordant: float, n: int, alpha: float = 0.05) -> float:
    """Half-width for two systems on the same items, discordant share d: ``z·sqrt(d/n)``.

    >>> round(paired_half_width(0.2, 200), 4)
    0.062
    """
    _check_share("discordant", discordant)
    _check(n, alpha)
    return normal_quantile(1.0 - alpha / 2.0) * math.sqrt(discordant / n)


def judge_inflation(sensitivity: float | None, specificity: float | None) -> float:
    """``1 / (Se + Sp - 1)``: how much an imperfect binary judge widens every difference.

    >>> round(judge_inflation(0.9, 0.8), 4)
    1.4286
    """
    if sensitivity is None and specificity is None:
        return 1.0
    if sensitivity is None or specificity is None:
        raise CalibrationError("give both the judge's sensitivity and its specificity")
    _check_share("sensitivity", sensitivity)
    _check_share("specificity", specificity)
    youden = sensitivity + specificity - 1.0
    if youden <= 0:
        raise CalibrationError(
            f"sensitivity + specificity - 1 = {youden:.3f}: a judge no better than chance cannot "
            "resolve any difference"
        )
    return 1.0 / youden


def unit_variance(design: Design, *, p: float | None = None, discordant: float | None = None, sd: float | None = None) -> float:
    """Variance one question adds to the estimate under ``design``."""
    if design in ("accuracy", "unpaired"):
        if p is None:
            raise CalibrationError(f"the {design} design needs p, the expected accuracy")
        _check_share("p", p)
        return p * (1.0 - p) * (1.0 if design == "accuracy" else 2.0)
    if design == "paired":
        if discordant is None:
            raise CalibrationError("the paired design needs the discordant share d")
        _check_share("discordant", discordant)
        return discordant
    if design == "per_query":
        if sd is None or sd < 0:
            raise CalibrationError("the per-query design needs sd >= 0, the SD of per-query differences")
        return sd * sd
    raise CalibrationError(f"design={design!r}: use accuracy, unpaired, paired or per_query")


def minimum_detectable_difference(
    n: int,
    design: Design = "unpaired",
    *,
    p: float | None = None,
    discordant: float | None = None,
    sd: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    sensitivity: float | None = None,
    specificity: float | None = None,
) -> float:
    """``(z_{1-α/2} + z_{1-β}) · sqrt(v/n) / J``: the smallest true difference detected at ``power``.

    Paired, d=0.2, n=200: 2.8016 · sqrt(0.2/200) = 0.0886 (8.9 points).

    >>> round(minimum_detectable_difference(200, "paired", discordant=0.2), 4)
    0.0886
    """
    _check(n, alpha, power)
    v = unit_variance(design, p=p, discordant=discordant, sd=sd)
    return (normal_quantile(1.0 - alpha / 2.0) + normal_quantile(1.0 - 2.0 * (1.0 - power) / 2.0)) * math.sqrt(v / n) * judge_inflation(sensitivity, specificity)


def required_n(
    delta: float,
    design: Design = "unpaired",
    *,
    p: float | None = None,
    discordant: float | None = None,
    sd: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    sensitivity: float | None = None,
    specificity: float | None = None,
) -> int:
    """Questions needed to detect a true difference ``delta``: ``ceil(v·((z_α + z_β)/(J·δ))²)``.

    Paired, d=0.2, δ=0.03: 0.2 · (2.8016/0.03)² = 1744.1, so 1745 questions.

    >>> required_n(0.03, "paired", discordant=0.2)
    1745
    """
    if delta <= 0:
        raise CalibrationError(f"delta={delta}: the target difference must be positive (0.03 for 3 points)")
    _check(1, alpha, power)
    v = unit_variance(design, p=p, discordant=discordant, sd=sd)
    scale = (normal_quantile(1.0 - alpha / 2.0) + normal_quantile(1.0 - 2.0 * (1.0 - power) / 2.0)) * judge_inflation(sensitivity, specificity) / delta
    return max(1, math.ceil(v * scale * scale - 1e-9))


def plan(
    n: int,
    design: Design,
    *,
    p: float | None = None,
    discordant: float | None = None,
    sd: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    sensitivity: float | None = None,
    specificity: float | None = None,
) -> Plan:
    """Half-width and minimum detectable difference of ``design`` at ``n`` questions."""
    _check(n, alpha, power)
    v = unit_variance(design, p=p, discordant=discordant, sd=sd)
    inflation = judge_inflation(sensitivity, specificity)
    half = normal_quantile(1.0 - alpha / 2.0) * math.sqrt(v / n) * inflation
    mdd = minimum_detectable_difference(
        n, design, p=p, discordant=discordant, sd=sd, alpha=alpha, power=power,
        sensitivity=sensitivity, specificity=specificity,
    )
    return Plan(design, n, v, half, mdd, alpha, power, inflation)


def discordant_share(a: Sequence[bool | int], b: Sequence[bool | int]) -> float:
    """Share of items on which two systems' binary outcomes differ (the d of the paired design).

    >>> discordant_share([1, 1, 0, 0], [1, 0, 1, 0])
    0.5
    """
    if len(a) != len(b) or not a:
        raise CalibrationError("two systems' outcomes must be non-empty and of equal length")
    return sum(bool(x) != bool(y) for x, y in zip(a, b, strict=True)) / len(a)


def per_query_sd(a: Sequence[float], b: Sequence[float]) -> float:
    """Sample SD (n-1) of the per-query differences ``a_q - b_q`` of two runs' scores.

    >>> round(per_query_sd([0.5, 0.7, 0.9], [0.4, 0.4, 0.4]), 4)
    0.2
    """
    if len(a) != len(b) or len(a) < 2:
        raise CalibrationError("per-query scores of two runs must be of equal length, at least 2 queries")
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    mean = sum(diffs) / len(diffs)
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))


@dataclass(frozen=True, slots=True)
class PlanSummary:
    """What ``goldpool plan`` reports: half-widths and MDD at ``n``, questions needed for ``delta``.

    Attributes:
        design: ``per_query`` (sd given), ``paired`` (discordant share given) or ``unpaired``.
        half_width: (design, half-width) for every design the inputs allow (``accuracy`` and
            ``unpaired`` from p, ``paired`` from d, ``per_query`` from sd); empty without ``n``.
        mdd: minimum detectable difference of ``design`` at ``n`` (None without ``n``).
        n_required: questions needed to detect ``delta`` (None without ``delta``).
    """

    design: Design
    n: int | None
    p: float | None
    discordant: float | None
    sd: float | None
    alpha: float
    power: float
    sensitivity: float | None
    specificity: float | None
    inflation: float
    half_width: tuple[tuple[str, float], ...]
    mdd: float | None
    delta: float | None
    n_required: int | None

    def as_dict(self) -> dict[str, object]:
        """Plain JSON-ready data; ``half_width``/``mdd`` only with n, ``delta``/``n_required`` only with delta."""
        out: dict[str, object] = {
            "design": self.design, "n": self.n, "p": self.p, "discordant": self.discordant, "sd": self.sd,
            "alpha": self.alpha, "power": self.power, "inflation": self.inflation,
        }
        if self.n is not None:
            out["half_width"] = dict(self.half_width)
            out["mdd"] = self.mdd
        if self.delta is not None:
            out["delta"] = self.delta
            out["n_required"] = self.n_required
        return out


def plan_summary(
    n: int | None = None,
    delta: float | None = None,
    *,
    p: float | None = None,
    discordant: float | None = None,
    sd: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    sensitivity: float | None = None,
    specificity: float | None = None,
) -> PlanSummary:
    """Every number of a power plan: half-widths, MDD at ``n``, questions needed for ``delta``.

    The design is ``per_query`` when ``sd`` is given, else ``paired`` when ``discordant`` is,
    else ``unpaired`` (which needs ``p``). Paired, d=0.2, n=200: MDD 2.8016·sqrt(0.2/200) = 0.0886.

    >>> s = plan_summary(200, 0.03, discordant=0.2)
    >>> s.design, round(s.mdd, 4), s.n_required, [(k, round(v, 4)) for k, v in s.half_width]
    ('paired', 0.0886, 1745, [('paired', 0.062)])

    Raises:
        CalibrationError: neither ``n`` nor ``delta``, or a value out of range.
    """
    if n is None and delta is None:
        raise CalibrationError("give n (what n questions resolve) or delta (questions needed), or both")
    design: Design = "per_query" if sd is not None else ("paired" if discordant is not None else "unpaired")
    inflation = judge_inflation(sensitivity, specificity)
    given = {"p": p, "discordant": discordant, "sd": sd}
    common = {"alpha": alpha, "power": power, "sensitivity": sensitivity, "specificity": specificity}
    widths: list[tuple[str, float]] = []
    mdd = n_required = None
    if n is not None:
        needs: dict[Design, float | None] = {"accuracy": p, "unpaired": p, "paired": discordant, "per_query": sd}
        widths = [(d, plan(n, d, **given, **common).half_width) for d, value in needs.items() if value is not None]
        mdd = minimum_detectable_difference(n, design, **given, **common)
    if delta is not None:
        n_required = required_n(delta, design, **given, **common)
    return PlanSummary(design, n, p, discordant, sd, alpha, power, sensitivity, specificity, inflation,
                       tuple(widths), mdd, delta, n_required)
