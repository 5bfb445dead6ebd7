"""The stratified design's estimators (:mod:`calibration.judge_assisted` samples the entries).

A metric that is a sum of per-entry terms (DCG@k, P@k, R@k's relevant in the top k) is
estimated over a Poisson sample of pool entries by the difference estimator (the judge's
calibrated grade as control variate) or, from people alone, by Horvitz-Thompson sums; the
relevant counts that nDCG and R divide by are model-assisted and post-stratified; intervals
come from a design bootstrap of the sample's weights. :mod:`calibration.judge_assisted`'s
docstring gives the whole method and its references.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from calibration.stats import z_for

#: Metric families the stratified design estimates; the rest are refused with the reason.
STRATIFIED_METRICS = ("nDCG", "P", "R")
#: Design-bootstrap replicates.
N_REPLICATES = 400
#: Best ranks that are cells of their own in the relevant counts' model (the sampling design's
#: depth: deeper ranks share one cell with entries no run ranks).
RANK_CELLS = 10


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

    def any_probability(self, h: NDArray[np.float64]) -> NDArray[np.float64]:
        """``(B+1, Q)`` the probability that a query has an entry with ``h(y) = 1`` (``h`` an
        indicator): 1 where people saw one, else ``1 − Π (1 − p_e)`` over its unlabelled entries,
        ``p_e`` the counts' model's share of ``h`` in the entry's (judge grade, best rank) cell."""
        sp = self.sp
        seen = np.bincount(self.d.query[self.s], weights=h[self.y], minlength=self.q_count) > 0
        unlabelled = np.flatnonzero(~self.d.sampled)
        p = (self.p_cell @ h)[:, self.cell[unlabelled]]  # (B+1, unlabelled)
        in_q = sp.csr_array((np.ones(len(unlabelled)), (np.arange(len(unlabelled)), self.d.query[unlabelled])),
                            shape=(len(unlabelled), self.q_count))
        none = np.asarray(np.log1p(-np.clip(p, 0.0, 1.0 - 1e-12)) @ in_q)  # (B+1, Q): log P(no such entry)
        return np.where(seen[None, :], 1.0, -np.expm1(none))

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

    The full-label mean leaves out queries without a relevant entry; which those are, a sample
    cannot tell. nDCG and R: a query counts when its estimated number of relevant entries is
    at least 0.5. P: the mean is a ratio of two sums over every query, P@k's numerator (a query
    without a relevant entry adds 0 to it) over the expected number of queries with a relevant
    entry (:meth:`_Totals.any_probability`). Leaving out the queries whose estimated count is
    under 0.5 would leave out the very queries whose sampled entries came out not relevant, and
    with them their negative residuals: P@10 biased up, by 0.03 on Cranfield at 20%
    (``bench/judge_assisted.py``). The model's entries are independent given their cell, so
    it counts a query with no relevant entry as likely to have one: the ratio estimator's
    query effects (:mod:`calibration.ratio_estimates`) err the other way, and a run's
    interval is the union of the two.
    """
    rng = np.random.default_rng(seed)
    if not judge:
        design = _without_judge(design)
    t = _Totals(design, replicates, rng)
    grade_ids = np.arange(design.grades)
    level = metric.level  # nDCG: a query counts when it has an entry graded at least this (as in eval)
    relevant_h = (grade_ids >= level).astype(np.float64)
    n_rel = t.poststratified(relevant_h)  # (B+1, Q)
    included = n_rel >= 0.5
    with_relevant = t.any_probability(relevant_h) if metric.family == "P" else None
    if metric.family == "nDCG":
        counts = np.stack([t.poststratified((grade_ids == g).astype(np.float64)) for g in range(design.grades)], axis=-1)
        ideal = _ideal_dcg(counts, metric.gains, metric.k)
        h = np.asarray(metric.gains, dtype=np.float64)
    else:
        h = relevant_h
    names = list(runs)
    # one column per (run, query): every run's sums in one pass
    columns = [column for name in names for column in _query_columns(design, *runs[name], metric)]
    top_all = t.total(columns, h, judge).reshape(-1, len(names), design.n_queries)  # (B+1, R, Q)
    n_in = included.sum(axis=1)
    out: dict[str, NDArray[np.float64]] = {}
    for i, name in enumerate(names):
        top = top_all[:, i, :]
        if metric.family == "nDCG":
            value = np.where(ideal > 1e-12, top / np.maximum(ideal, 1e-12), 0.0)
        elif metric.family == "R":
            value = np.where(n_rel > 1e-12, top / np.maximum(n_rel, 1e-12), 0.0)
        else:
            queries = with_relevant.sum(axis=1)
            out[name] = np.where(queries > 0, top.sum(axis=1) / np.maximum(queries, 1e-12), np.nan)
            continue
        # Per-query values are left unclipped: clipping a noisy value near 1 biases the mean
        # down; only the mean (and its interval) is clipped to [0, 1].
        out[name] = np.where(n_in > 0, (value * included).sum(axis=1) / np.maximum(n_in, 1), np.nan)
    return out


def _without_judge(design: Design) -> Design:
    """The design with, in place of the judge's grade, whether some run ranks the entry within
    the top :data:`RANK_CELLS`: the people-only estimates' classes."""
    # People alone: the relevant counts are estimated as with the judge, but with no judge
    # grade: in its place (one class per query's stratum) whether some run ranks the entry
    # within the top RANK_CELLS, the sampling design's own boundary (probabilities well
    # above the floor there, at the floor below), which the runs give. A query's few labels
    # below it (weights of 10 and more) then correct only its deep entries, not its top.
    # The sums stay Horvitz-Thompson: they never read a judge grade.
    ranked = np.zeros(len(design.judge), dtype=np.int64) if design.rank is None else np.asarray(design.rank)
    ranked = ((ranked >= 1) & (ranked <= RANK_CELLS)).astype(np.int64)
    return replace(design, judge=ranked)


def _query_columns(design: Design, entries: NDArray[np.int_], ranks: NDArray[np.int_],
                   metric: Metric) -> list[tuple[NDArray[np.int_], NDArray[np.float64]]]:
    """One ``(entries, coefficients)`` column per query of a run's top ``metric.k`` pool
    entries (:func:`run_positions`): the discount (nDCG), ``1/k`` (P) or 1 (R) of each."""
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
    bounds_ = np.searchsorted(qs[order], np.arange(design.n_queries + 1))
    return [(e[order[bounds_[q]:bounds_[q + 1]]], coef[order[bounds_[q]:bounds_[q + 1]]]) for q in range(design.n_queries)]


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
