"""Does a judge order systems as people do? Kendall's τ with a bootstrap interval over questions.

Each system's score is the mean of its per-question values over the questions every system has
a value on from both sources (each question weighs the same, and both orders stand on the same
questions, so what differs is the judge, not the sample). τ is Kendall's τ-b (ties counted as
scipy's ``kendalltau`` counts them; Kendall 1945) between the people's scores and the judge's::

    τ_b = (n_c − n_d) / sqrt((n_0 − n_1)(n_0 − n_2))

The interval is the percentile interval of τ over questions resampled with replacement (the
questions are the sampled unit: an answer's values move with its question's difficulty).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from calibration import CalibrationError
from calibration.bootstrap import Estimate


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's τ-b of two scorings of the same systems; NaN when either is constant.

    >>> kendall_tau([0.1, 0.2, 0.3], [0.3, 0.5, 0.9]), kendall_tau([1, 2, 3, 4], [1, 3, 2, 4])
    (1.0, 0.6666666666666669)
    """
    from scipy.stats import kendalltau

    if len(a) != len(b):
        raise CalibrationError(f"one score per system in both scorings: {len(a)} and {len(b)}")
    if len(a) < 2:
        return float("nan")
    return float(kendalltau(a, b).statistic)


def ranking_tau(people: Mapping[str, Mapping[Hashable, float]], judge: Mapping[str, Mapping[Hashable, float]], *,
                n_boot: int = 2000, seed: int | None = 0, ci: float = 0.95) -> Estimate:
    """τ between the systems' order by people and by the judge, with a bootstrap over questions.

    ``people[system][question]`` and ``judge[system][question]``: a system's mean value on a
    question. Only the questions where every system has both values count.

    >>> e = ranking_tau({"a": {1: 0.9, 2: 0.8}, "b": {1: 0.2, 2: 0.4}}, {"a": {1: 1.0, 2: 0.9}, "b": {1: 0.5, 2: 0.6}})
    >>> e.value, e.n
    (1.0, 2)

    Raises:
        CalibrationError: fewer than two systems, or no question shared by all of both.
    """
    systems = sorted(set(people) & set(judge))
    if len(systems) < 2:
        raise CalibrationError("Kendall's tau orders two or more systems scored by both people and the judge")
    units = sorted(set.intersection(*(set(people[s]) & set(judge[s]) for s in systems)), key=str)
    if not units:
        raise CalibrationError("no question on which every system has a value from both people and the judge")
    p = np.array([[people[s][u] for u in units] for s in systems], dtype=np.float64)
    j = np.array([[judge[s][u] for u in units] for s in systems], dtype=np.float64)
    value = kendall_tau(p.mean(axis=1), j.mean(axis=1))
    if n_boot <= 0 or len(units) < 2:
        return Estimate("kendall_tau", value, math.nan, math.nan, len(units), ci, "none", n_groups=len(units), seed=seed)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(units), size=(n_boot, len(units)))
    taus = np.array([kendall_tau(p[:, d].mean(axis=1), j[:, d].mean(axis=1)) for d in draws])
    taus = taus[~np.isnan(taus)]
    if not len(taus):
        return Estimate("kendall_tau", value, math.nan, math.nan, len(units), ci, "none", n_groups=len(units), seed=seed)
    low, high = np.quantile(taus, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    return Estimate("kendall_tau", value, float(low), float(high), len(units), ci, "cluster bootstrap", n_boot=n_boot,
                    n_groups=len(units), seed=seed)
