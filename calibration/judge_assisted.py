"""Run metrics from a judge's labels on the whole pool and people's labels on a designed sample.

Two designs decide which pool entries people label:

- ``queries``: a simple random sample of ``m`` of the ``Q`` queries, every pool entry of each
  labelled (Oosterhuis et al. 2024). Every entry's inclusion probability is ``m / Q``. The unit
  is the query: per query, the metric with the people's labels (``y``) and with the judge's
  (``f``) are the pairs of a prediction-powered mean (:func:`calibration.ppi.ppi_mean`, PPI++
  with its power-tuning λ), valid for any per-query metric whatever the judge.
- ``stratified``: Poisson sampling of pool entries with inclusion probabilities ``π`` that are
  constant within strata of (query, the judge's grade, the best rank any run gives the entry):
  larger where the runs' metrics are sensitive (a top rank's discount ``1/log2(rank + 1)``) and
  where the judge is unsure (its middle grades), never below a floor (a share of the mean
  probability), so every entry can be drawn (statAP-like; Pavlu & Aslam; Yilmaz & Aslam).

Under ``stratified`` a metric that is a sum of per-entry terms (DCG@k, P@k, the relevant
entries in a run's top k) is estimated by a **difference estimator** (the judge as control
variate): the judge's calibrated prediction summed over every entry, plus the ``1/π``-weighted
people-minus-prediction residuals of the sampled entries. The prediction of an entry is the
``1/π``-weighted mean of the people's labels among sampled entries with the same judge grade
(over the whole pool: four classes, so in-sample fitting costs a bias of order ``1/n``). Whatever
the judge, the estimator stays nearly unbiased; a good judge makes the residuals small. Ratio
metrics are ratios: nDCG@k divides DCG by the ideal DCG built from each query's counts per
grade, R@k the relevant in the top k by the query's relevant count. Those counts are
**model-assisted and post-stratified**: a model of the people's grade given the judge's grade
and the entry's best rank (the sampling design's own strata, pooled over queries) predicts
every entry, and per (query, judge grade) stratum its size times the ``1/π``-weighted mean
residual of its sampled entries corrects the prediction; a count is never below what people
saw. They keep the ideal DCG from collapsing or exploding as Horvitz-Thompson counts do
(weights of 30 and more). With a few labels a query the ratio is still biased (a query's count
is pulled toward the pooled model, and a query whose estimated relevant count is below 0.5 is
left out): ``bench/judge_assisted.py`` measures it. RR and AP depend on the order of labels in
a way no sum of per-entry terms captures: under ``stratified`` they are refused
(:data:`STRATIFIED_METRICS`).

People-only estimates use the same sample: under ``queries`` the mean of the labelled queries;
under ``stratified`` Horvitz-Thompson sums (``1/π``-weighted, no judge) over relevant counts
estimated as above with no judge grade: the model's cells are the best rank alone, and its
strata (query, whether some run ranks the entry within the top :data:`RANK_CELLS`). Per-query
Horvitz-Thompson counts would be 0 for most queries when each has a few labels, and the mean
would run over the queries where people happened to see a relevant entry (biased up).
Intervals under ``stratified`` come from a design bootstrap: each replicate perturbs every
sampled entry's weight to ``w · (1 + ε √(1 − π))`` with ε = ±1 at random (its variance is the
Poisson design's Horvitz-Thompson variance) and refits the calibration, and the interval is
normal with the replicates' standard deviation. The query set is fixed (it is the golden set),
so queries are not resampled. Per-query values are not clipped (clipping a noisy value near 1
would bias the mean down); the mean over queries and its interval are clipped to [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from calibration import CalibrationError
from calibration.stats import z_for

DESIGNS = ("queries", "stratified")
#: Metric families the stratified design estimates; the rest are refused with the reason.
STRATIFIED_METRICS = ("nDCG", "P", "R")
#: The judge grades whose entries are sampled at full weight: the middle grades, where
#: relevance judges disagree with people most often. Grades 0 and 3 get ``_SURE``.
_UNSURE = (1, 2)
_SURE = 0.5
#: The floor of an entry's inclusion probability, as a share of the mean probability.
FLOOR = 0.3
#: Design-bootstrap replicates.
N_REPLICATES = 400
#: Best ranks that are cells of their own in the relevant counts' model (the sampling design's
#: depth: deeper ranks share one cell with entries no run ranks).
RANK_CELLS = 10


def best_discount(best_rank: NDArray[np.int_], depth: int = 10) -> NDArray[np.float64]:
    """``1/log2(rank + 1)`` of the best rank any run gives an entry within ``depth``, else 0.

    >>> best_discount(np.array([1, 3, 0, 11])).round(3).tolist()
    [1.0, 0.5, 0.0, 0.0]
    """
    rank = np.asarray(best_rank, dtype=np.float64)
    inside = (rank >= 1) & (rank <= depth)
    return np.where(inside, 1.0 / np.log2(np.maximum(rank, 1) + 1), 0.0)


def stratified_probabilities(
    judge_grade: NDArray[np.int_] | None, best_rank: NDArray[np.int_], budget: float, *, depth: int = 10,
    floor: float = FLOOR,
) -> NDArray[np.float64]:
    """Inclusion probabilities summing to ``budget`` (expected judgments), each in
    [``floor · budget / N``, 1], proportional within that range to an entry's best discount
    (:func:`best_discount`; entries no run ranks within ``depth`` get the floor) times the
    judge's uncertainty (1 for grades 1 and 2, 0.5 for 0 and 3; 1 without a judge).

    Entries with the same judge grade and best rank get the same probability: these are the
    strata. ``budget >= N`` gives every entry probability 1.

    >>> p = stratified_probabilities(np.array([0, 1, 2, 3]), np.array([1, 1, 5, 0]), 2.0)
    >>> round(float(p.sum()), 6), bool(p[1] > p[0] > 0), bool(p[3] == p.min())
    (2.0, True, True)
    """
    rank = np.asarray(best_rank)
    n = len(rank)
    if n == 0:
        raise CalibrationError("the pool is empty: nothing to sample")
    if budget <= 0:
        raise CalibrationError(f"budget {budget}: give a positive number of judgments")
    if budget >= n:
        return np.ones(n)
    score = best_discount(rank, depth)
    if judge_grade is not None:
        g = np.asarray(judge_grade)
        score = score * np.where(np.isin(g, _UNSURE), 1.0, _SURE)
    low = floor * budget / n
    if not (score > 0).any():
        return np.full(n, budget / n)

    def total(c: float) -> float:
        return float(np.clip(np.maximum(low, c * score), 0.0, 1.0).sum())

    lo, hi = 0.0, 1.0
    while total(hi) < budget:
        hi *= 2
        if hi > 1e12:
            break
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) < budget else (lo, mid)
    p = np.clip(np.maximum(low, hi * score), 0.0, 1.0)
    # Every entry at the floor except those at 1 cannot reach the budget exactly: spread the rest.
    return np.minimum(1.0, p * budget / p.sum()) if abs(p.sum() - budget) > 1e-6 else p


def poisson_sample(probability: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.bool_]:
    """Each entry drawn independently with its probability."""
    return rng.random(len(probability)) < probability


def query_sample(n_queries: int, labelled: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """A simple random sample of ``labelled`` of ``n_queries`` queries, as a mask."""
    if not 1 <= labelled <= n_queries:
        raise CalibrationError(f"{labelled} queries to label out of {n_queries}: give 1 to {n_queries}")
    mask = np.zeros(n_queries, dtype=bool)
    mask[rng.choice(n_queries, size=labelled, replace=False)] = True
    return mask


@dataclass(frozen=True, slots=True)
class Combined:
    """One metric (or one paired difference) of one run three ways, with intervals.

    ``value``/``low``/``high``: the judge-assisted estimate and its interval; ``people_only``
    (``people_low``, ``people_high``): the people's sample alone; ``judge_only``: the judge's
    labels everywhere (no interval: its bias is unknown). ``method`` names the estimator,
    ``lam`` the PPI++ weight (query design), ``why`` says why no value could be given.
    """

    value: float
    low: float
    high: float
    judge_only: float
    people_only: float
    people_low: float
    people_high: float
    n_people: int
    n_judge: int
    method: str
    lam: float | None = None
    why: str | None = None

    def as_dict(self) -> dict[str, object]:
        clean = lambda x: None if x is None or (isinstance(x, float) and math.isnan(x)) else x  # noqa: E731
        out: dict[str, object] = {
            "value": clean(self.value), "low": clean(self.low), "high": clean(self.high),
            "judge_only": clean(self.judge_only), "people_only": clean(self.people_only),
            "n_people": self.n_people, "n_judge": self.n_judge,
            "people_low": clean(self.people_low), "people_high": clean(self.people_high), "method": self.method,
        }
        if self.lam is not None:
            out["lambda"] = self.lam
        if self.why:
            out["why"] = self.why
        return out


def refused(why: str, judge_only: float, n_people: int, n_judge: int, method: str) -> Combined:
    """A metric the design cannot estimate validly: no number, the reason instead."""
    nan = math.nan
    return Combined(nan, nan, nan, judge_only, nan, nan, nan, n_people, n_judge, method, why=why)


# --- the query design ------------------------------------------------------------------------


def query_level(
    people: Sequence[float], judge_labelled: Sequence[float], judge_unlabelled: Sequence[float], *,
    bounds: tuple[float, float] | None = (0.0, 1.0), ci: float = 0.95, n_people: int = 0, n_judge: int = 0,
) -> Combined:
    """PPI++ over queries: ``people``/``judge_labelled`` are the per-query values of the
    labelled queries (people's labels, the judge's), ``judge_unlabelled`` the judge's values on
    the other queries. The estimate and its standard error are ``ppi_py.ppi_mean_ci``'s with its
    tuned λ (clipped to [0, 1]); the interval takes Student's t quantile with Welch-Satterthwaite
    degrees of freedom instead of the normal one (:func:`calibration.ppi.ppi_mean`,
    ``small_sample``), as a handful of labelled queries cannot size a normal interval, so it is
    ``t_df / z`` times ppi-python's width. Where the labelled queries all give the same people's
    value less λ times the judge's, the spread that sizes the interval is unknown: no number is
    given, the reason instead.

    With every query labelled the people's mean is exact (a zero-width interval).
    """
    from calibration.ppi import ppi_mean

    y = np.asarray(people, dtype=np.float64)
    fl = np.asarray(judge_labelled, dtype=np.float64)
    fu = np.asarray(judge_unlabelled, dtype=np.float64)
    judge_only = float(np.concatenate([fl, fu]).mean()) if len(fl) + len(fu) else math.nan
    if len(y) == 0:
        return refused("no labelled query", judge_only, n_people, n_judge, "ppi++ over queries")
    if len(fu) == 0:
        m = float(y.mean())
        return Combined(m, m, m, judge_only, m, m, m, n_people, n_judge, "every query labelled")
    if len(y) < 2:
        return refused("one labelled query: no interval can be made from one", judge_only, n_people, n_judge,
                       "ppi++ over queries")
    r = ppi_mean(y, fl, fu, ci=ci, tuned=True, bounds=bounds, small_sample=True)
    h = r.human_only
    if math.isnan(r.ppi.low):
        what = "value" if r.lam == 0 else f"people's value less {r.lam:.2f} times the judge's"
        return refused(f"no interval: the {len(y)} labelled queries all give the same {what} "
                       f"({float(np.mean(y - r.lam * fl)):.4f}), so the spread that sizes the interval is unknown; "
                       "label more queries, or use --design stratified", judge_only, n_people, n_judge,
                       "ppi++ over queries")
    return Combined(r.ppi.value, r.ppi.low, r.ppi.high, judge_only, h.value, h.low, h.high, n_people, n_judge,
                    "ppi++ over queries", lam=r.lam)


def query_level_columns(
    people: NDArray[np.float64], judge_labelled: NDArray[np.float64], judge_unlabelled: NDArray[np.float64], *,
    bounds: tuple[float, float] | None = (0.0, 1.0), ci: float = 0.95,
) -> tuple[NDArray[np.float64], ...]:
    """:func:`query_level` for many columns at once (runs, or pairs of runs), for repeated
    simulations: ``people``/``judge_labelled`` are (n, K), ``judge_unlabelled`` (N, K).
    Returns (value, low, high, people_only, people_low, people_high), each (K,). The same
    numbers as :func:`calibration.ppi.ppi_mean` (PPI++, ``small_sample``) where the people's
    values are not all 0 or 1 (there :func:`query_level` gives the Wilson interval for people
    alone); ``nan`` bounds where no interval can be given.
    """
    from calibration.ppi import SAME

    y, fl, fu = (np.asarray(a, dtype=np.float64) for a in (people, judge_labelled, judge_unlabelled))
    n, big_n = y.shape[0], fu.shape[0]
    cov = np.mean((y - y.mean(axis=0)) * (fl - fl.mean(axis=0)), axis=0)
    var = np.var(np.concatenate([fl, fu]), axis=0, ddof=1)
    lam = np.where(var > 0, np.clip(cov / ((1 + n / big_n) * np.where(var > 0, var, 1.0)), 0.0, 1.0), 0.0)
    value = np.mean(lam * fu, axis=0) + np.mean(y - lam * fl, axis=0)
    a, b = np.var(lam * fu, axis=0) / big_n, np.var(y - lam * fl, axis=0) / n
    se = np.sqrt(a + b)
    from scipy.stats import t

    den = (a * a / (big_n - 1) if big_n > 1 else 0.0) + b * b / (n - 1)
    df = np.where(lam == 0, n - 1.0, (a + b) ** 2 / np.where(den > 0, den, 1.0))
    spread = np.ptp(y - lam * fl, axis=0) > SAME
    q = np.where(spread, t.ppf(0.5 + ci / 2, np.where(spread, df, 1.0)), np.nan)
    human = y.mean(axis=0)
    human_se = np.std(y, axis=0) / math.sqrt(n)
    human_q = np.where(np.ptp(y, axis=0) > SAME, t.ppf(0.5 + ci / 2, n - 1.0), np.nan)
    out = [value, value - q * se, value + q * se, human, human - human_q * human_se, human + human_q * human_se]
    if bounds is not None:
        out = [np.clip(a, bounds[0], bounds[1]) for a in out]
    return tuple(out)


# --- the stratified design --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Metric:
    """A metric the stratified design estimates: ``family`` nDCG, P or R at cutoff ``k``;
    ``gains`` grade -> gain (nDCG), ``level`` the relevance level (what P and R count as
    relevant; for nDCG, a query without an entry at this grade is left out, as ``eval`` does)."""

    name: str
    family: str
    k: int
    gains: tuple[float, ...] = (0.0, 1.0, 2.0, 3.0)
    level: int = 1


def stratified_metric(name: str, measure: object, relevance_level: int) -> Metric | str:
    """The :class:`Metric` for an ir-measures measure, or why the stratified design cannot
    estimate it."""
    family = getattr(measure, "NAME", "")
    params = dict(getattr(measure, "params", {}))
    cutoff = params.get("cutoff")
    if family not in STRATIFIED_METRICS:
        return (f"{name}: not a sum of per-entry terms, so a designed sample of entries cannot estimate it without "
                "bias; use --design queries, or nDCG@k, P@k, R@k")
    if not isinstance(cutoff, int):
        return f"{name}: give a cutoff (e.g. {family}@10): the whole ranking is not sampled"
    if family == "nDCG":
        dcg = params.get("dcg", "log2")
        if params.get("gains") is not None or dcg not in ("log2", "exp-log2") or params.get("judged_only"):
            return f"{name}: only nDCG@k with linear or exp-log2 gains is estimated under the stratified design"
        gains = (0.0, 1.0, 3.0, 7.0) if dcg == "exp-log2" else (0.0, 1.0, 2.0, 3.0)
        return Metric(name, "nDCG", cutoff, gains=gains, level=relevance_level)
    return Metric(name, family, cutoff, level=int(params.get("rel", relevance_level)))


@dataclass
class Design:
    """The pool, the judge's grades on it, and the people's sample (stratified estimator input).

    Attributes:
        query: per pool entry, its query's index (0..Q-1).
        judge: per entry, the judge's grade 0-3.
        sampled: per entry, whether people labelled it.
        probability: per entry, its inclusion probability (used for sampled entries).
        people: per entry, the people's grade (read for sampled entries only).
        n_queries: Q.
        rank: per entry, the best rank any run gives it (0: none within the top
            :data:`RANK_CELLS`), a cell of the model the relevant counts are estimated with;
            None: no rank is known (the judge grade alone).
    """

    query: NDArray[np.int_]
    judge: NDArray[np.int_]
    sampled: NDArray[np.bool_]
    probability: NDArray[np.float64]
    people: NDArray[np.int_]
    n_queries: int
    grades: int = 4
    rank: NDArray[np.int_] | None = None


def run_positions(design: Design, index: Mapping[tuple[int, str], int], ranking: Mapping[int, Sequence[str]],
                  k: int) -> tuple[NDArray[np.int_], NDArray[np.int_]]:
    """(entry index, rank) of a run's top-``k`` documents that are pool entries: the others
    carry no label, people's or judge's, and count as not relevant (trec_eval)."""
    entries, ranks = [], []
    for q, docs in ranking.items():
        for i, doc in enumerate(docs[:k]):
            e = index.get((q, doc))
            if e is not None:
                entries.append(e)
                ranks.append(i + 1)
    return np.asarray(entries, dtype=np.int64), np.asarray(ranks, dtype=np.int64)


class _Totals:
    """Sums ``Σ_e c_e h(y_e)`` over the pool for many coefficient columns, by the difference
    estimator (``judge=True``) or Horvitz-Thompson (``judge=False``), on the sample and on
    ``B`` design-bootstrap replicates of its weights, all at once."""

    def __init__(self, design: Design, replicates: int, rng: np.random.Generator | None) -> None:
        import scipy.sparse as sp

        self.d = design
        s = np.flatnonzero(design.sampled)
        self.s = s
        w = 1.0 / design.probability[s]
        self.w = w
        if rng is None:
            replicates = 0
        eps = rng.choice([-1.0, 1.0], size=(replicates, len(s))) if replicates else np.zeros((0, len(s)))
        self.weights = np.vstack([w[None, :], w[None, :] * (1 + eps * np.sqrt(1 - design.probability[s])[None, :])])
        self.y = design.people[s]
        self.js = design.judge[s]
        g = design.grades
        # Per weight vector: calibrated P(people grade = y | judge grade = j), shape (B+1, J, G).
        onehot = np.zeros((len(s), g * g))
        onehot[np.arange(len(s)), self.js * g + self.y] = 1.0
        mass = (self.weights @ onehot).reshape(-1, g, g)
        per_j = mass.sum(axis=2, keepdims=True)
        overall = mass.sum(axis=1, keepdims=True)
        overall = overall / np.maximum(overall.sum(axis=2, keepdims=True), 1e-300)
        self.p = np.where(per_j > 0, mass / np.maximum(per_j, 1e-300), overall)
        self.sp = sp
        # The counts' model: P(people grade | judge grade, best rank), pooled over queries, per
        # weight vector, shape (B+1, K, G); a cell with no sampled entry takes its judge grade's.
        q_count = design.n_queries
        rank = np.zeros(len(design.judge), dtype=np.int64) if design.rank is None else np.asarray(design.rank)
        rank = np.where((rank >= 1) & (rank <= RANK_CELLS), rank, 0)
        self.cell = design.judge * (RANK_CELLS + 1) + rank
        self.k = g * (RANK_CELLS + 1)
        by_cell = sp.csr_array((np.ones(len(s)), (np.arange(len(s)), self.cell[s] * g + self.y)),
                               shape=(len(s), self.k * g))
        cell_mass = np.asarray(self.weights @ by_cell).reshape(-1, self.k, g)
        cell_total = cell_mass.sum(axis=2, keepdims=True)
        of_judge = np.repeat(self.p, RANK_CELLS + 1, axis=1)
        self.p_cell = np.where(cell_total > 0, cell_mass / np.maximum(cell_total, 1e-300), of_judge)
        # (query, judge grade) strata: each one's sampled weight, size, and membership.
        self.q_count = q_count
        self.qj_s = design.query[s] * g + self.js
        self.in_qj = sp.csr_array((np.ones(len(s)), (np.arange(len(s)), self.qj_s)), shape=(len(s), q_count * g))
        self.weight_qj = np.asarray(self.weights @ self.in_qj)  # (B+1, Q·J)
        self.size_qj = np.bincount(design.query * g + design.judge, minlength=q_count * g)
        self.cells_q = sp.csr_array((np.ones(len(design.judge)), (design.query, self.cell)), shape=(q_count, self.k))

    def poststratified(self, h: NDArray[np.float64]) -> NDArray[np.float64]:
        """``(B+1, Q)`` estimates of ``Σ_{e in q} h(y_e)`` per query (h >= 0), model-assisted:
        the model's prediction of every entry of the query (the ``1/π``-weighted mean of ``h``
        in its (judge grade, best rank) cell over the whole sample), plus, per (query, judge
        grade) stratum, its size times the ``1/π``-weighted mean residual of its sampled
        entries; at least the sum of ``h`` over the query's sampled entries (what people saw).

        The model has the best rank in it because inclusion probabilities and relevance both
        grow toward the top ranks: a stratum's few sampled entries are mostly its top-ranked
        ones, and their plain mean (or the judge grade's pooled mean, for a stratum with none
        sampled) overstates the relevance of the rest. The floor keeps an ideal DCG built from
        these counts from collapsing."""
        pred = self.p_cell @ h  # (B+1, K)
        model = np.asarray(self.cells_q @ pred.T).T  # (B+1, Q)
        residual = h[self.y][None, :] - pred[:, self.cell[self.s]]
        summed = np.asarray((self.weights * residual) @ self.in_qj)  # (B+1, Q·J)
        mean = np.where(self.weight_qj > 0, summed / np.maximum(self.weight_qj, 1e-300), 0.0)
        out = model + (mean * self.size_qj[None, :]).reshape(-1, self.q_count, self.d.grades).sum(axis=2)
        seen = np.bincount(self.d.query[self.s], weights=h[self.y], minlength=self.q_count)
        return np.maximum(out, seen[None, :])

    def total(self, columns: Sequence[tuple[NDArray[np.int_], NDArray[np.float64]]], h: NDArray[np.float64],
              judge: bool) -> NDArray[np.float64]:
        """``(B+1, C)`` totals; column c sums ``coef · h(y_e)`` over its (entries, coef) pairs."""
        d, sp = self.d, self.sp
        n_cols = len(columns)
        rows = np.concatenate([e for e, _ in columns]) if columns else np.zeros(0, dtype=np.int64)
        cols = np.concatenate([np.full(len(e), i) for i, (e, _) in enumerate(columns)]) if columns else rows
        vals = np.concatenate([c for _, c in columns]) if columns else np.zeros(0)
        coef = sp.csr_array((vals, (rows, cols)), shape=(len(d.judge), n_cols))
        coef_s = coef[self.s]
        hy = h[self.y]
        direct = (self.weights * hy[None, :]) @ coef_s  # Σ_S w c h(y)
        direct = np.asarray(direct)
        if not judge:
            return direct
        pred = self.p @ h  # (B+1, J): calibrated prediction of h per judge grade
        classes = sp.csr_array((np.ones(len(d.judge)), (d.judge, np.arange(len(d.judge)))), shape=(d.grades, len(d.judge)))
        in_pool = np.asarray((classes @ coef).todense())  # (J, C): Σ_{e: judge=j} c
        out = direct + pred @ in_pool
        for j in range(d.grades):
            mask = self.js == j
            if mask.any():
                out -= pred[:, j : j + 1] * np.asarray(self.weights[:, mask] @ coef_s[mask])
        return out


def _cumulative_discount(x: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """``Σ_{i ≤ x} 1/log2(i + 1)`` for real ``x`` in [0, k] (linear between integers)."""
    steps = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(1, k + 1) + 1))])
    x = np.clip(x, 0.0, k)
    low = np.floor(x).astype(int)
    high = np.minimum(low + 1, k)
    return steps[low] + (x - low) * (steps[high] - steps[low])


def _ideal_dcg(counts: NDArray[np.float64], gains: Sequence[float], k: int) -> NDArray[np.float64]:
    """Ideal DCG@k from (..., grade) counts, best grade first; fractional counts allowed."""
    counts = np.maximum(counts, 0.0)
    total = np.zeros(counts.shape[:-1])
    filled = np.zeros(counts.shape[:-1])
    for g in range(counts.shape[-1] - 1, 0, -1):
        upto = filled + counts[..., g]
        total += gains[g] * (_cumulative_discount(upto, k) - _cumulative_discount(filled, k))
        filled = upto
    return total


def stratified_estimates(
    design: Design, runs: Mapping[str, tuple[NDArray[np.int_], NDArray[np.int_]]], metric: Metric, *,
    replicates: int = N_REPLICATES, seed: int = 0, judge: bool = True,
) -> dict[str, NDArray[np.float64]]:
    """Run -> ``(B+1,)`` estimates of the mean over queries of ``metric`` (row 0 the estimate,
    rows 1.. design-bootstrap replicates), by the difference estimator (``judge``) or from
    people alone (Horvitz-Thompson sums, relevant counts of the best rank: see the module's
    docstring). ``runs``: run -> :func:`run_positions` at ``metric.k`` or deeper.

    A query counts in the mean when its estimated number of relevant entries is at least 0.5
    (the full-label mean leaves out queries without a relevant entry).
    """
    rng = np.random.default_rng(seed)
    if not judge:
        # People alone: the relevant counts are estimated as with the judge, but with no judge
        # grade: in its place (one class per query's stratum) whether some run ranks the entry
        # within the top RANK_CELLS, the sampling design's own boundary (probabilities well
        # above the floor there, at the floor below), which the runs give. A query's few labels
        # below it (weights of 10 and more) then correct only its deep entries, not its top.
        # The sums stay Horvitz-Thompson: they never read a judge grade.
        ranked = np.zeros(len(design.judge), dtype=np.int64) if design.rank is None else np.asarray(design.rank)
        ranked = ((ranked >= 1) & (ranked <= RANK_CELLS)).astype(np.int64)
        design = replace(design, judge=ranked)
    t = _Totals(design, replicates, rng)
    q_count = design.n_queries
    grade_ids = np.arange(design.grades)
    level = metric.level  # nDCG: a query counts when it has an entry graded at least this (as in eval)
    relevant_h = (grade_ids >= level).astype(np.float64)
    count = t.poststratified
    n_rel = count(relevant_h)  # (B+1, Q)
    included = n_rel >= 0.5
    if metric.family == "nDCG":
        counts = np.stack([count((grade_ids == g).astype(np.float64)) for g in range(design.grades)], axis=-1)
        ideal = _ideal_dcg(counts, metric.gains, metric.k)
    if metric.family == "nDCG":
        h = np.asarray(metric.gains, dtype=np.float64)
    else:
        h = relevant_h
    names = list(runs)
    columns: list[tuple[NDArray[np.int_], NDArray[np.float64]]] = []
    for name in names:  # one column per (run, query): every run's sums in one pass
        entries, ranks = runs[name]
        keep = ranks <= metric.k
        e, r = entries[keep], ranks[keep]
        qs = design.query[e]
        if metric.family == "nDCG":
            coef = 1.0 / np.log2(r + 1.0)
        elif metric.family == "P":
            coef = np.full(len(e), 1.0 / metric.k)
        else:
            coef = np.ones(len(e))
        order = np.argsort(qs, kind="stable")
        bounds_ = np.searchsorted(qs[order], np.arange(q_count + 1))
        columns += [(e[order[bounds_[q]:bounds_[q + 1]]], coef[order[bounds_[q]:bounds_[q + 1]]]) for q in range(q_count)]
    top_all = t.total(columns, h, judge).reshape(-1, len(names), q_count)  # (B+1, R, Q)
    n_in = included.sum(axis=1)
    out: dict[str, NDArray[np.float64]] = {}
    for i, name in enumerate(names):
        top = top_all[:, i, :]
        if metric.family == "nDCG":
            value = np.where(ideal > 1e-12, top / np.maximum(ideal, 1e-12), 0.0)
        elif metric.family == "R":
            value = np.where(n_rel > 1e-12, top / np.maximum(n_rel, 1e-12), 0.0)
        else:
            value = top
        # Per-query values are left unclipped: clipping a noisy value near 1 biases the mean
        # down; only the mean (and its interval) is clipped to [0, 1].
        out[name] = np.where(n_in > 0, (value * included).sum(axis=1) / np.maximum(n_in, 1), np.nan)
    return out


def interval(replicated: NDArray[np.float64], ci: float = 0.95,
             bounds: tuple[float, float] | None = (0.0, 1.0)) -> tuple[float, float, float]:
    """(estimate, low, high): row 0 ± z · the replicates' standard deviation, clipped to ``bounds``."""
    value = float(replicated[0])
    reps = replicated[1:]
    reps = reps[np.isfinite(reps)]
    if not math.isfinite(value) or len(reps) < 2:
        return value, math.nan, math.nan
    half = z_for(ci) * float(np.std(reps, ddof=1))
    low, high = value - half, value + half
    if bounds is not None:
        value, low, high = (min(max(x, bounds[0]), bounds[1]) for x in (value, low, high))
    return value, low, high
