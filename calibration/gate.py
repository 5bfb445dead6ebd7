"""The regression gate: does a candidate score detectably worse than a baseline on one metric?

For per-question values a_q (baseline) and b_q (candidate) of the same n questions,
δ_q = b_q − a_q and the drop is −mean(δ) = mean(a) − mean(b). Every metric here is "higher is
better" (retrieval metrics, correctness, answer relevance, faithfulness).

- **The test** is the one-sided paired randomisation (sign-flip) test of "no difference"
  against "the candidate is worse": under no difference each δ_q is as likely to have either
  sign, so ``p`` is the share of sign patterns whose mean is at or below the observed one.
  With at most :data:`EXACT_UP_TO` non-zero differences every pattern is enumerated (the exact
  p); beyond, 10,000 random patterns give ``p = (1 + hits) / (1 + R)`` (Phipson & Smyth 2010:
  never 0). It is the test ``goldpool compare`` runs, one-sided. On TREC runs it agrees with
  the paired t-test and the bootstrap, and is the one Smucker, Allan & Carterette (2007)
  recommend; unlike the t-test it assumes nothing of the differences' distribution, which for
  IR metrics is bounded, lumpy (many exact zeros) and skewed, and for binary correctness takes
  three values only: a normal approximation is weakest there, on small sets.
- **The tolerance** is the smallest drop worth failing on. By default it is the set's
  minimum detectable difference (:func:`calibration.power.minimum_detectable_difference`,
  per-query design: ``(z_{1−α/2} + z_{0.8}) · sd(δ)/sqrt(n)``, the number ``goldpool compare``
  and ``goldpool plan`` print): a drop smaller than that is one this set detects less than 80%
  of the time, so failing on it would make the build fail at random. Such a drop passes, with a
  warning that says so.
- **Several metrics** in one gate are a family: their p-values are Holm-corrected, so the gate
  as a whole fails on "no difference" at most ``alpha`` of the time.

The gate fails when the (corrected) p is below ``alpha`` and the drop is at least the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal

from calibration import CalibrationError
from calibration.compare import PairedTest, holm, paired_test
from calibration.formatting import fixed
from calibration.stats import N_PERMUTATIONS, sign_flip_p

_EPS = 1e-12  # float sums of the same values in another order differ in the last bits

Status = Literal["pass", "fail"]


#: The one-sided test of "no difference" against "the candidate is worse" (mean δ < 0), exact
#: for at most :data:`EXACT_UP_TO` non-zero differences (:func:`calibration.stats.sign_flip_p`).
one_sided_p = partial(sign_flip_p, alternative="less")


def paired_values(
    baseline: Mapping[str, float], candidate: Mapping[str, float], questions: Sequence[str]
) -> tuple[list[float], list[float], dict[str, int]]:
    """The two runs' values on ``questions``, a question one run lacks scoring 0 there (as
    ``trec_eval -c`` scores it); also how many each run lacked: ``{"baseline": k, "candidate": j}``."""
    a = [float(baseline.get(q, 0.0)) for q in questions]
    b = [float(candidate.get(q, 0.0)) for q in questions]
    missing = {"baseline": sum(q not in baseline for q in questions),
               "candidate": sum(q not in candidate for q in questions)}
    return a, b, missing


@dataclass(frozen=True, slots=True)
class GateResult:
    """One metric's verdict: the paired test of the candidate against the baseline
    (:class:`calibration.compare.PairedTest`, one-sided), read as a drop.

    Attributes:
        test: the paired test (``run`` the candidate; its interval is that of the difference).
        tolerance: the smallest drop that fails. tolerance_is_mdd: it is the MDD (no
            ``--tolerance`` given).
        alpha, power: the test's level and the power of the MDD.
        status: ``pass`` or ``fail``.
        warning: why a drop passed ('' when there is no drop, or it failed).
        missing: questions each run lacked (scored 0), ``{"baseline": k, "candidate": j}``.
        left_out: questions left out of the pair, by reason (e.g. an answer without a verdict).
        source: where the per-question values came from, one line ('' for run files).
        beside: for faithfulness, the abstention, correctness and answer relevance rates of
            both sides, one line: faithfulness is never reported alone ('' otherwise).

    Read from the test: metric, n (paired questions), mean_baseline, mean_candidate, drop
    (mean_baseline − mean_candidate; negative: the candidate is better), low and high (95%
    bootstrap interval of the drop, NaN without resamples), p_value (one-sided), p_adjusted
    (Holm-corrected over the gate's metrics; = p_value for one metric), sd and mdd.
    """

    test: PairedTest
    tolerance: float
    tolerance_is_mdd: bool
    alpha: float
    power: float
    status: Status = "pass"
    warning: str = ""
    missing: dict[str, int] = field(default_factory=dict)
    left_out: dict[str, int] = field(default_factory=dict)
    source: str = ""
    beside: str = ""

    metric = property(lambda self: self.test.metric)
    n = property(lambda self: self.test.n)
    mean_baseline = property(lambda self: self.test.mean_baseline)
    mean_candidate = property(lambda self: self.test.mean_run)
    drop = property(lambda self: -self.test.delta)
    low = property(lambda self: -self.test.high)
    high = property(lambda self: -self.test.low)
    p_value = property(lambda self: self.test.p_value)
    p_adjusted = property(lambda self: self.test.p_adjusted)
    sd = property(lambda self: self.test.sd)
    mdd = property(lambda self: self.test.mdd)

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    @property
    def reason(self) -> str:
        """One sentence: why the metric passed or failed."""
        p = _p_text(self.p_adjusted)
        if self.failed:
            return (f"{self.metric} dropped by {fixed(self.drop)} ({fixed(self.mean_baseline)} → "
                    f"{fixed(self.mean_candidate)}), one-sided {p}, at least the {_tolerance_text(self)}.")
        if self.warning:
            return f"{self.metric}: {self.warning}."
        return (f"{self.metric} did not drop ({fixed(self.mean_baseline)} → {fixed(self.mean_candidate)}, "
                f"difference {fixed(-self.drop, sign=True)}).")

    def as_dict(self) -> dict[str, Any]:
        """Every number by name, the gate's fields, and ``reason``, for JSON."""
        return {name: getattr(self, name) for name in _KEYS}


#: The keys of a result's JSON, in order.
_KEYS = ("metric", "n", "mean_baseline", "mean_candidate", "drop", "low", "high", "p_value", "p_adjusted", "sd", "mdd",
         "tolerance", "tolerance_is_mdd", "alpha", "power", "status", "warning", "missing", "left_out", "source", "beside",
         "reason")


def _p_text(p: float) -> str:
    return f"p={p:.3f}" if p >= 0.001 else "p<0.001"


def _tolerance_text(r: GateResult) -> str:
    if r.tolerance_is_mdd:
        return f"{fixed(r.tolerance)} this set resolves"
    return f"tolerance {fixed(r.tolerance)}"


def _warning(r: GateResult) -> str:
    """Why a drop passed, or '' when nothing dropped or it failed."""
    if r.failed or r.drop <= _EPS:
        return ""
    drop = f"a drop of {fixed(r.drop)}"
    if r.drop < r.tolerance - _EPS:
        resolves = "" if r.tolerance_is_mdd else f" (this set resolves {fixed(r.mdd)})"
        text = f"{drop} is below the {_tolerance_text(r)}{resolves}"
        if r.mdd > 1.0:
            text += f": no drop on this scale can be detected with n = {r.n}"
        return text
    return f"{drop} is not significant (one-sided {_p_text(r.p_adjusted)}, alpha {r.alpha:g})"


def decide(r: GateResult) -> GateResult:
    """``r`` with its status and warning set from its p, drop and tolerance."""
    failing = r.p_adjusted < r.alpha and r.drop >= r.tolerance - _EPS and r.drop > _EPS
    out = replace(r, status="fail" if failing else "pass")
    return replace(out, warning=_warning(out))


def gate_metric(
    baseline: Sequence[float],
    candidate: Sequence[float],
    metric: str,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    tolerance: float | None = None,
    n_permutations: int = N_PERMUTATIONS,
    n_boot: int = 10_000,
    seed: int | None = 0,
) -> GateResult:
    """One metric's verdict on paired per-question values (same order, same length).

    Raises:
        CalibrationError: fewer than 2 paired questions, lengths that differ, alpha or power
            outside (0, 1), a negative tolerance, a value that is not a finite number.
    """
    if len(baseline) != len(candidate):
        raise CalibrationError(f"{metric}: {len(baseline)} baseline values against {len(candidate)} candidate values")
    n = len(baseline)
    if n < 2:
        raise CalibrationError(f"{metric}: {n} paired question(s); the gate needs 2 or more")
    if not 0.0 < alpha < 1.0:
        raise CalibrationError(f"alpha={alpha}: give a significance level between 0 and 1, e.g. 0.05")
    if tolerance is not None and not (math.isfinite(tolerance) and tolerance >= 0):
        raise CalibrationError(f"tolerance={tolerance}: give a drop of 0 or more (0.02 for 2 points)")
    if not all(math.isfinite(x) for x in (*baseline, *candidate)):
        raise CalibrationError(f"{metric}: a per-question value is not a finite number")
    test = paired_test(baseline, candidate, metric, names=("baseline", "candidate"), alternative="less", alpha=alpha,
                       power=power, n_permutations=n_permutations, n_boot=n_boot, seed=seed)
    result = GateResult(test, tolerance=test.mdd if tolerance is None else tolerance, tolerance_is_mdd=tolerance is None,
                        alpha=alpha, power=power)
    return decide(result)


def correct(results: Sequence[GateResult]) -> list[GateResult]:
    """The results with Holm-corrected p-values (unchanged for one metric), decided again."""
    if len(results) < 2:
        return list(results)
    adjusted = holm([r.p_value for r in results])
    return [decide(replace(r, test=replace(r.test, p_adjusted=p))) for r, p in zip(results, adjusted, strict=True)]
