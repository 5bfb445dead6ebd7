"""Paired comparison of runs on the same queries: is B better than A, and can this set tell?

For per-query scores a_q and b_q of two runs on the same n queries, δ_q = b_q − a_q.

- **Mean difference** δ̄ with a percentile bootstrap interval over queries (Efron & Tibshirani
  1993): each replicate draws n queries with replacement.
- **Paired randomisation test** (Fisher 1935; Smucker, Allan & Carterette 2007): under "no
  difference" each δ_q is as likely to have either sign: with at most 16 non-zero differences
  every sign pattern is enumerated (the exact p), beyond that 10,000 replicates flip every sign
  at random and ``p = (1 + #{|mean of flipped| >= |δ̄|}) / (1 + R)`` (Phipson & Smyth 2010: never
  0). The test is :func:`calibration.stats.sign_flip_p`, two-sided.
- **Holm's step-down correction** (Holm 1979) when several runs are compared with one baseline.
- **One record**: :func:`paired_test` returns :class:`PairedTest`, the numbers of one paired
  comparison; :class:`Comparison` is it with ``compare``'s reading, and the gate's
  :class:`calibration.gate.GateResult` holds one (one-sided) and reads it as a drop.
- **Minimum detectable difference** of the set: ``(z_{1−α/2} + z_{1−β}) · sd(δ)/sqrt(n)``
  (:func:`calibration.power.minimum_detectable_difference`, per-query design). A difference
  that is not significant and below the MDD says nothing either way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from calibration import CalibrationError
from calibration.formatting import fixed
from calibration.power import minimum_detectable_difference
from calibration.stats import N_PERMUTATIONS, Alternative, sign_flip_p

#: Resamples of the bootstrap (the randomisation test's patterns: calibration.stats.N_PERMUTATIONS).
N_BOOTSTRAP = 10_000
_CHUNK = 2_000_000  # replicate x query cells drawn at once (bounds memory to ~16 MB)


@dataclass(frozen=True, slots=True)
class PairedTest:
    """Run ``run`` against ``baseline`` on one metric, paired on the same n queries: the one
    record of the paired sign-flip test, which ``goldpool compare`` (:class:`Comparison`) and the
    gate (:class:`calibration.gate.GateResult`) both hold.

    Attributes:
        baseline, run: run names. metric: metric name.
        n: queries both runs score (the paired set).
        mean_baseline, mean_run: means over those queries.
        delta: mean of δ_q = run − baseline. low, high: bootstrap interval of delta (NaN
            without resamples).
        p_value: sign-flip p (its alternative as asked). p_adjusted: Holm-adjusted p (= p_value
            alone).
        sd: sample SD of δ_q. mdd: minimum detectable difference of this set.
    """

    baseline: str
    run: str
    metric: str
    n: int
    mean_baseline: float
    mean_run: float
    delta: float
    low: float
    high: float
    p_value: float
    p_adjusted: float
    sd: float
    mdd: float


@dataclass(frozen=True, slots=True)
class Comparison(PairedTest):
    """:class:`PairedTest` of ``goldpool compare`` (two-sided), with what it says.

    Attributes:
        deltas: query_id -> δ_q.
        sentence: the plain-language reading.
        dropped: run name -> queries the other run of the pair scores but this one lacks (left
            out of the pair), for ``baseline`` and ``run``.
    """

    deltas: dict[str, float]
    sentence: str
    dropped: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Every field by name, for JSON."""
        return {name: getattr(self, name) for name in (
            "baseline", "run", "metric", "n", "mean_baseline", "mean_run", "delta", "low", "high", "p_value",
            "p_adjusted", "sd", "mdd", "sentence", "deltas", "dropped")}


@dataclass(frozen=True, slots=True)
class Comparisons:
    """Every run against the baseline on one metric (what :func:`compare_runs` returns, with the metric)."""

    metric: str
    comparisons: tuple[Comparison, ...]
    relevance_level: int | None = None  # the grade from which the metric counted a document relevant

    def as_dict(self) -> dict[str, Any]:
        """``{"metric", "relevance_level", "comparisons": [...]}``: one entry per run after the baseline."""
        return {"metric": self.metric, "relevance_level": self.relevance_level,
                "comparisons": [c.as_dict() for c in self.comparisons]}


#: The two-sided test of "mean δ = 0" (:func:`calibration.stats.sign_flip_p`).
randomisation_p = partial(sign_flip_p, alternative="two-sided")


def bootstrap_interval(
    deltas: Sequence[float], *, ci: float = 0.95, n_boot: int = N_BOOTSTRAP, seed: int | None = 0
) -> tuple[float, float]:
    """Percentile interval of the mean of ``deltas``, resampling queries."""
    import numpy as np

    d = np.asarray(deltas, dtype=float)
    if d.size < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = []
    step = max(1, _CHUNK // d.size)
    for start in range(0, n_boot, step):
        k = min(step, n_boot - start)
        means.append(d[rng.integers(0, d.size, size=(k, d.size))].mean(axis=1))
    reps = np.concatenate(means)
    tail = (1.0 - ci) / 2.0
    return float(np.quantile(reps, tail)), float(np.quantile(reps, 1.0 - tail))


def paired_test(
    baseline: Sequence[float], run: Sequence[float], metric: str, *, names: tuple[str, str] = ("baseline", "run"),
    alternative: Alternative = "two-sided", ci: float = 0.95, alpha: float = 0.05, power: float = 0.8,
    n_permutations: int = N_PERMUTATIONS, n_boot: int = N_BOOTSTRAP, seed: int | None = 0,
) -> PairedTest:
    """The paired test of ``run`` against ``baseline`` (values of the same n >= 2 queries, in
    the same order): mean difference, its bootstrap interval (NaN with ``n_boot`` 0), the
    sign-flip p of ``alternative`` (:func:`calibration.stats.sign_flip_p`), the SD of the
    differences and the minimum detectable difference at ``alpha`` and ``power``.

    >>> t = paired_test([0.5, 0.25, 1.0], [0.75, 0.25, 1.0], "nDCG@10", n_boot=0)
    >>> t.delta == 0.25 / 3, t.mean_run, t.p_value
    (True, 0.6666666666666666, 1.0)
    """
    n = len(baseline)
    deltas = [b - a for a, b in zip(baseline, run, strict=True)]
    mean = sum(deltas) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in deltas) / (n - 1))
    low, high = bootstrap_interval(deltas, ci=ci, n_boot=n_boot, seed=seed) if n_boot > 0 else (math.nan, math.nan)
    p = sign_flip_p(deltas, alternative=alternative, n_permutations=n_permutations, seed=seed)
    mdd = minimum_detectable_difference(n, "per_query", sd=sd, alpha=alpha, power=power)
    return PairedTest(names[0], names[1], metric, n, sum(baseline) / n, sum(run) / n, mean, low, high, p, p, sd, mdd)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order.

    Sorted p = (0.01, 0.04, 0.03) → 3·0.01 = 0.03, max(0.03, 2·0.03) = 0.06, max(0.06, 1·0.04):

    >>> [round(p, 4) for p in holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def sentence(c: Comparison, *, alpha: float = 0.05, corrected: bool = False) -> str:
    """"B beats A by 0.031 nDCG@10 [0.012, 0.050], p=0.004; this golden set resolves 0.018."."""
    verb = "beats" if c.delta > 0 else "trails" if c.delta < 0 else "ties with"
    p = c.p_adjusted if corrected else c.p_value
    p_text = (f"p={p:.3f}" if p >= 0.001 else "p<0.001") + (" (Holm)" if corrected else "")
    # Retrieval metrics live in [0, 1]: a larger detectable difference is no difference at all.
    resolves = (f"this golden set resolves {fixed(c.mdd)}." if c.mdd <= 1.0 else
                f"no difference on this scale can be detected with n = {c.n}.")
    text = (
        f"{c.run} {verb} {c.baseline} by {fixed(abs(c.delta))} {c.metric} [{fixed(c.low)}, {fixed(c.high)}], {p_text}; "
        + resolves
    )
    if p >= alpha and c.mdd > 1.0:
        text += " This set cannot tell the two apart."
    elif p >= alpha and abs(c.delta) < c.mdd:
        text += " The difference is below that, so this set cannot tell the two apart."
    elif p >= alpha:
        text += " Not significant at this n."
    return text


def compare_runs(
    per_query: Mapping[str, Mapping[str, float]],
    metric: str,
    *,
    ci: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
    n_permutations: int = N_PERMUTATIONS,
    n_boot: int = N_BOOTSTRAP,
    seed: int | None = 0,
) -> list[Comparison]:
    """Every run after the first against the first, on the queries each pair both scores.

    ``per_query`` maps run name -> query_id -> the metric's value, runs in order (the first is
    the baseline). With more than two runs the p-values are Holm-corrected. A query only one
    run of a pair has is left out of that pair and counted in ``dropped``.

    Raises:
        CalibrationError: fewer than two runs, or a pair sharing fewer than two queries.
    """
    names = list(per_query)
    if len(names) < 2:
        raise CalibrationError("compare needs at least two runs")
    base = per_query[names[0]]
    raw = []
    for name in names[1:]:
        other = per_query[name]
        shared = sorted(set(base) & set(other))
        if len(shared) < 2:
            raise CalibrationError(
                f"runs {names[0]!r} and {name!r} share {len(shared)} scored queries; need 2 or more ({names[0]!r} lacks "
                f"{len(set(other) - set(base))} that {name!r} has, {name!r} lacks {len(set(base) - set(other))})")
        test = paired_test([base[q] for q in shared], [other[q] for q in shared], metric, names=(names[0], name), ci=ci,
                           alpha=alpha, power=power, n_permutations=n_permutations, n_boot=n_boot, seed=seed)
        dropped = {names[0]: len(set(other) - set(base)), name: len(set(base) - set(other))}
        raw.append((test, {q: other[q] - base[q] for q in shared}, dropped))
    corrected = len(raw) > 1
    adjusted = holm([t.p_value for t, _, _ in raw]) if corrected else [t.p_value for t, _, _ in raw]
    out = []
    for (t, deltas, dropped), p_adj in zip(raw, adjusted, strict=True):
        c = Comparison(t.baseline, t.run, metric, t.n, t.mean_baseline, t.mean_run, t.delta, t.low, t.high, t.p_value,
                       p_adj, t.sd, t.mdd, deltas, "", dropped)
        out.append(replace(c, sentence=sentence(c, alpha=alpha, corrected=corrected)))
    return out
