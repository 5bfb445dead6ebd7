"""Run metrics from a designed sample where relevant entries are few: nDCG's DCG and ideal DCG
estimated jointly, per query, from draws of the labels people did not give.

The stratified difference estimator (:mod:`calibration.judge_assisted`) plugs estimated counts
per grade into each query's ideal DCG. Where a query has 2-15 relevant entries and people label
2-10 of its entries, those counts rest on the pooled model, and the ratio ``DCG / ideal DCG`` is
biased in a way no design bootstrap of the sampled weights shows: the true counts spread over
queries three times as widely as independent entries would (relevance is denser in some
queries than in others), and the ideal DCG is concave in them. Here the unknown labels are
treated as what they are, draws from a model fitted to the sample, and every draw gives every
query its DCG and ideal DCG together:

- **Relevance**, per entry: ``P(grade ≥ g | rank cell, query) = σ(a_{cell,g} + u_q)``, the rank
  cell the best rank any run gives the entry (1-10, or none), ``a`` from the ``1/π``-weighted
  grade shares of the sample's cells (shrunk to the overall shares; on the logit scale divided
  by the attenuation ``√(1 + π τ²/8)`` of a normal query effect, so the shares stay what the
  sample says), ``u_q ~ N(0, τ²)`` the query's own density.
- **The judge as a noisy measurement**: ``P(judge grade | grade, rank group)`` (groups: ranks
  1-3, 4-10, deeper), ``1/π``-weighted from the sample. So every judge grade of a query, the
  unlabelled ones too, tells how dense the query is (its ``u_q``), and an entry's grade given
  the judge's follows by Bayes.
- ``τ`` has a posterior over a grid (flat prior, the marginal likelihood of people's labels and
  the judge's grades over queries, by Gauss-Hermite quadrature); each draw takes its own ``τ``,
  then each query's ``u_q`` from its posterior, then each unlabelled entry's grade.

Numerators (DCG@k, relevant entries in the top k, P@k) are sums over entries: the draw's sum is
corrected by the sampled entries' ``(w − 1)``-weighted residuals, people's gain minus the
model's leave-one-out prediction (the query effect fitted without the entry), so that its mean
over draws is the difference estimator ``Σ_all ŷ + Σ_S (y − ŷ)/π``, design-unbiased whatever
the model. Ideal DCG and recall's relevant count come from the draws alone: their model
uncertainty, a query's "cannot be determined from its labels", is in the interval (a wider,
honest one) rather than hidden in a plug-in count.

Rows: row 0 is the estimate (the mean over :data:`DRAWS` draws from the fit on the design
weights); rows 1..B each refit the model on design-bootstrap weights ``w · (1 ± √(1 − π))``
(the Poisson design's Horvitz-Thompson variance) and take one draw, so their spread holds the
design's variance, the fit's and the unlabelled labels' together. :func:`calibration.judge_assisted.interval`
turns them into an interval; differences of two runs' rows give the paired interval (the same
draws under both runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calibration import CalibrationError
from calibration.stratified_estimation import RANK_CELLS, Design, Metric, _ideal_dcg

#: Rank cell (0: no rank within the top :data:`RANK_CELLS`) -> group of the judge's confusion.
RANK_GROUP = np.array([0] + [1] * 3 + [2] * (RANK_CELLS - 3))
#: The range of the relevance effect's standard deviation, and its grid without judge grades.
TAUS = np.linspace(0.0, 8.0, 17)
#: The grid of the judge's leniency spread.
LENIENCY = np.linspace(0.0, 2.0, 9)
_NODES, _U_WEIGHTS = np.polynomial.hermite_e.hermegauss(11)
_LENIENCY_NODES, _V_WEIGHTS = np.polynomial.hermite_e.hermegauss(7)
_GRID_WEIGHTS = np.outer(_U_WEIGHTS, _V_WEIGHTS).ravel() / (_U_WEIGHTS.sum() * _V_WEIGHTS.sum())
#: Pseudo-entries a cell's shares are shrunk with toward its parent's.
KAPPA = 2.0
#: Draws behind the estimate (row 0).
DRAWS = 40
#: Design-bootstrap replicates.
N_REPLICATES = 200


@dataclass(frozen=True, slots=True)
class Fitted:
    """The model per weight row: ``prior`` (rows, rank cells, grades) ``P(grade | rank cell)``,
    ``confusion`` (rows, 3, grades, grades) ``P(judge grade | grade, rank group)``; ``cell`` the
    rank cell of every entry, ``sampled`` the sampled entries' indices, ``weights`` (rows, S)."""

    prior: NDArray[np.float64]
    confusion: NDArray[np.float64]
    cell: NDArray[np.int_]
    sampled: NDArray[np.int_]
    weights: NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Draws:
    """Label draws: ``labels`` (M, N) every entry's grade (people's where sampled); per draw,
    ``weights`` (M, S) the design weights it was fitted with and ``predicted`` (M, S, G) each
    sampled entry's leave-one-out grade distribution; the first ``n_estimate`` rows make the
    estimate, each later one a replicate. ``spread``: the query effects' (:func:`query_spread`)."""

    labels: NDArray[np.int8]
    weights: NDArray[np.float64]
    predicted: NDArray[np.float64]
    sampled: NDArray[np.int_]
    n_estimate: int
    spread: Spread


def replicate_weights(probability: NDArray[np.float64], replicates: int,
                      rng: np.random.Generator) -> NDArray[np.float64]:
    """(1 + replicates, S): the design weights ``1/π`` of the sampled entries, then replicates
    ``w · (1 + ε √(1 − π))``, ε = ±1 at random."""
    w = 1.0 / probability
    eps = rng.choice([-1.0, 1.0], size=(replicates, len(w)))
    return np.vstack([w[None, :], w[None, :] * (1 + eps * np.sqrt(1 - probability)[None, :])])


def _shrunk(mass: NDArray[np.float64], count: NDArray[np.float64], parent: NDArray[np.float64]) -> NDArray[np.float64]:
    """Weighted shares ``mass`` (rows, cells, G) shrunk toward ``parent`` by :data:`KAPPA`
    entries of the cell's mean weight (``count``: sampled entries per cell)."""
    total = mass.sum(axis=-1, keepdims=True)
    mean_w = np.where(count[None, :, None] > 0, total / np.maximum(count, 1)[None, :, None], 1.0)
    return (mass + KAPPA * mean_w * parent) / (total + KAPPA * mean_w)


def _masses(weights: NDArray[np.float64], group: NDArray[np.int_], value: NDArray[np.int_], n_groups: int,
            n_values: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(rows, n_groups, n_values) weighted counts of ``value`` per ``group``, and entries per group."""
    import scipy.sparse as sp

    onehot = sp.csr_array((np.ones(len(group)), (np.arange(len(group)), group * n_values + value)),
                          shape=(len(group), n_groups * n_values))
    mass = np.asarray(weights @ onehot).reshape(weights.shape[0], n_groups, n_values)
    return mass, np.bincount(group, minlength=n_groups).astype(np.float64)


def fit(design: Design, weights: NDArray[np.float64]) -> Fitted:
    """The model's parts per weight row (see the module docstring)."""
    g = design.grades
    s = np.flatnonzero(design.sampled)
    if len(s) == 0:
        raise CalibrationError("no sampled entry: people have labelled nothing of the sample yet")
    rank = np.zeros(len(design.judge), dtype=np.int64) if design.rank is None else np.asarray(design.rank)
    cell = np.where((rank >= 1) & (rank <= RANK_CELLS), rank, 0)
    y, f = design.people[s], design.judge[s]
    overall = _masses(weights, np.zeros(len(s), dtype=np.int64), y, 1, g)[0]
    overall = (overall + 0.5) / (overall.sum(axis=-1, keepdims=True) + 0.5 * g)
    mass, count = _masses(weights, cell[s], y, RANK_CELLS + 1, g)
    prior = _shrunk(mass, count, overall)
    mass, count = _masses(weights, y, f, g, g)
    judge_all = (mass + 0.5) / (mass.sum(axis=-1, keepdims=True) + 0.5 * g)
    groups = RANK_GROUP[cell[s]]
    mass, count = _masses(weights, groups * g + y, f, 3 * g, g)
    parent = np.tile(judge_all, (1, 3, 1))
    confusion = _shrunk(mass, count, parent).reshape(weights.shape[0], 3, g, g)
    return Fitted(prior, confusion, cell, s, weights)


def _sigmoid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _grade_probabilities(prior: NDArray[np.float64], tau: float, u: NDArray[np.float64]) -> NDArray[np.float64]:
    """``prior`` (..., G) shares, shifted on the cumulative logit scale by ``u`` (broadcast
    against ``prior``'s leading axes), as (..., G) probabilities."""
    at_least = np.clip(np.cumsum(prior[..., ::-1], axis=-1)[..., ::-1][..., 1:], 1e-6, 1 - 1e-6)
    logit = np.log(at_least / (1 - at_least)) * np.sqrt(1 + np.pi * tau * tau / 8)
    c = _sigmoid(logit + u[..., None])
    ones = np.ones(c.shape[:-1] + (1,))
    c = np.minimum.accumulate(np.concatenate([ones, c, 0 * ones], axis=-1), axis=-1)
    return c[..., :-1] - c[..., 1:]


@dataclass(frozen=True, slots=True)
class Spread:
    """The standard deviations of the two query effects: ``relevance`` (``u_q``, how dense
    relevance is in the query) and ``leniency`` (``v_q``, how readily the judge grades up in it)."""

    relevance: float
    leniency: float


def _grid(spread: Spread) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The (u, v) nodes of the quadrature, flattened."""
    u = np.repeat(_NODES, len(_LENIENCY_NODES)) * spread.relevance
    v = np.tile(_LENIENCY_NODES, len(_NODES)) * spread.leniency
    return u, v


@dataclass(frozen=True, slots=True)
class Tables:
    """Per weight row at one :class:`Spread`, on the quadrature's nodes: ``given`` (rows,
    cells, judge grade, nodes, grade) an unlabelled entry's grade given its cell, its judge
    grade and the node; ``unlabelled`` (rows, cells · judge grades, nodes) the log-probability
    of an unlabelled entry's judge grade; ``labelled`` (rows, (cells · grades) · judge grades,
    nodes) of a labelled entry's grade and judge grade."""

    given: NDArray[np.float64]
    unlabelled: NDArray[np.float64]
    labelled: NDArray[np.float64]


def tables(fitted: Fitted, spread: Spread, rows: NDArray[np.int_]) -> Tables:
    """The model's :class:`Tables` for weight ``rows``: every entry with the same rank cell and
    grades shares them, so a query's likelihood is counts times tables."""
    u, v = _grid(spread)
    prior = fitted.prior[rows]  # (b, R, G)
    b, r, g = prior.shape
    grade = _grade_probabilities(prior[:, :, None, :], spread.relevance, np.broadcast_to(u, (b, r, len(u))))
    confusion = fitted.confusion[rows][:, RANK_GROUP][:, :, None, :, :]  # (b, R, 1, G, F)
    shift = np.broadcast_to(v[None, None, :, None], (b, r, len(v), g))
    judge = _grade_probabilities(np.broadcast_to(confusion, (b, r, len(v), g, g)), spread.leniency, shift)
    joint = grade[..., None] * judge  # (b, R, J, G, F)
    marginal = joint.sum(axis=3)  # (b, R, J, F)
    unlabelled = np.log(np.maximum(np.moveaxis(marginal, 3, 2), 1e-300)).reshape(b, r * g, len(u))
    labelled = np.log(np.maximum(np.moveaxis(joint, 2, 4), 1e-300)).reshape(b, r * g * g, len(u))
    given = np.moveaxis(joint / np.maximum(marginal[:, :, :, None, :], 1e-300), 4, 2)  # (b, R, F, J, G)
    return Tables(given, unlabelled, labelled)


def _key_counts(design: Design, fitted: Fitted) -> tuple:
    """Per query, counts of unlabelled entries per (cell, judge grade) and of labelled ones per
    (cell, people's grade, judge grade), as sparse matrices, and every entry's two keys."""
    import scipy.sparse as sp

    g = design.grades
    judge_key = fitted.cell * g + design.judge
    both_key = (fitted.cell * g + design.people) * g + design.judge
    sampled = design.sampled

    def counts(mask: NDArray[np.bool_], key: NDArray[np.int_], n_keys: int):
        return sp.csr_array((np.ones(int(mask.sum())), (design.query[mask], key[mask])),
                            shape=(design.n_queries, n_keys))

    cells = RANK_CELLS + 1
    return counts(~sampled, judge_key, cells * g), counts(sampled, both_key, cells * g * g), judge_key, both_key


def query_loglik(counts: tuple, t: Tables) -> NDArray[np.float64]:
    """(rows, Q, nodes): each query's log-likelihood of its labels and judge grades per node."""
    unl, lab = counts[0], counts[1]
    return np.stack([unl @ t.unlabelled[i] + lab @ t.labelled[i] for i in range(t.unlabelled.shape[0])])


def _normalised(log: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Last axis of ``log + log(node weights)`` as probabilities, and its log normaliser."""
    top = log.max(axis=-1, keepdims=True)
    p = np.exp(log - top) * _GRID_WEIGHTS
    total = p.sum(axis=-1, keepdims=True)
    return p / total, np.log(total[..., 0]) + top[..., 0]


def _marginal(design: Design, fitted: Fitted, spread: Spread, counts: tuple) -> float:
    """The log marginal likelihood of people's labels and the judge's grades at ``spread``."""
    return float(_normalised(query_loglik(counts, tables(fitted, spread, np.zeros(1, dtype=np.int64))))[1].sum())


def _judge_dispersion(design: Design, fitted: Fitted, spread: Spread) -> tuple[float, float]:
    """(model, observed) spread of the queries' judge-grade sums around the model's means:
    ``Σ_q Var(S_q)`` (quadrature over the query effects) and ``Σ_q (S_q − E S_q)²``."""
    import scipy.sparse as sp

    g = design.grades
    t = tables(fitted, spread, np.zeros(1, dtype=np.int64))
    p_judge = np.exp(t.unlabelled[0]).reshape(RANK_CELLS + 1, g, -1)  # (R, F, J)
    value = np.arange(g, dtype=np.float64)
    first = np.einsum("rfj,f->rj", p_judge, value)
    second = np.einsum("rfj,f->rj", p_judge, value * value)
    per_cell = sp.csr_array((np.ones(len(design.query)), (design.query, fitted.cell)),
                            shape=(design.n_queries, RANK_CELLS + 1))
    mean, var = per_cell @ first, per_cell @ (second - first * first)
    expected = mean @ _GRID_WEIGHTS
    model = float(((var + mean * mean) @ _GRID_WEIGHTS - expected * expected).sum())
    observed = np.bincount(design.query, weights=design.judge.astype(float), minlength=design.n_queries)
    return model, float(((observed - expected) ** 2).sum())


def _relevance_moment(design: Design, fitted: Fitted, leniency: float) -> float:
    """The relevance spread at which the model spreads the queries' judge-grade sums as widely
    as they are spread, given the judge's ``leniency`` spread (bisection within :data:`TAUS`:
    the model's spread grows with it)."""

    def gap(t: float) -> float:
        return float(np.subtract(*_judge_dispersion(design, fitted, Spread(t, leniency))))

    lo, hi = float(TAUS[0]), float(TAUS[-1])
    if gap(lo) >= 0:
        return lo
    if gap(hi) <= 0:
        return hi
    for _ in range(10):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def query_spread(design: Design, fitted: Fitted) -> Spread:
    """The two query effects' spreads. Where the judge's grades vary: the relevance spread from
    the queries' judge-grade sums (a moment estimate over the whole pool: the marginal
    likelihood of normal effects settles on too small a spread where a few queries hold many
    relevant entries and most hold one or two), the leniency spread by marginal likelihood
    (the labelled entries show it: the judge's grade against people's), the first again given
    the second. Without judge grades: the relevance spread by marginal likelihood."""
    counts = _key_counts(design, fitted)
    if np.ptp(design.judge) == 0:
        marginal = [_marginal(design, fitted, Spread(float(t), 0.0), counts) for t in TAUS]
        return Spread(float(TAUS[int(np.argmax(marginal))]), 0.0)
    relevance = _relevance_moment(design, fitted, 0.0)
    marginal = [_marginal(design, fitted, Spread(relevance, float(t)), counts) for t in LENIENCY]
    leniency = float(LENIENCY[int(np.argmax(marginal))])
    return Spread(_relevance_moment(design, fitted, leniency), leniency)


def _pick(cumulative: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.int_]:
    """Indices drawn along the last axis of ``cumulative`` (cumulative probabilities)."""
    u = rng.random(cumulative.shape[:-1] + (1,))
    return np.minimum((u > cumulative).sum(axis=-1), cumulative.shape[-1] - 1)


def _draw_rows(design: Design, fitted: Fitted, rows: NDArray[np.int_], spread: Spread, counts: tuple,
               rng: np.random.Generator) -> tuple[NDArray[np.int8], NDArray[np.float64]]:
    """One draw of every entry's grade per weight row in ``rows`` (people's grades where
    sampled), and each sampled entry's leave-one-out grade distribution (rows, S, G)."""
    t = tables(fitted, spread, rows)
    ll = query_loglik(counts, t)  # (b, Q, J)
    post = _normalised(ll)[0]
    node = _pick(np.cumsum(post, axis=-1), rng)[:, design.query]  # (b, N)
    b = np.arange(len(rows))[:, None]
    given = t.given[b, fitted.cell[None, :], design.judge[None, :], node]  # (b, N, G)
    labels = _pick(np.cumsum(given, axis=-1), rng).astype(np.int8)
    s = fitted.sampled
    labels[:, s] = design.people[s]
    judge_key, both_key = counts[2][s], counts[3][s]
    others = _normalised(ll[:, design.query[s]] - t.labelled[:, both_key] + t.unlabelled[:, judge_key])[0]
    given_s = t.given[:, fitted.cell[s], design.judge[s]]  # (b, S, J, G)
    return labels, np.einsum("bsj,bsjg->bsg", others, given_s)


def draw_labels(design: Design, *, replicates: int = N_REPLICATES, seed: int = 0, judge: bool = True,
                draws: int = DRAWS, spread_replicates: int | None = None) -> Draws:
    """:data:`DRAWS` draws of the unlabelled grades from the fit on the design weights, then
    one draw per design-bootstrap replicate, all at the spreads of :func:`query_spread`.

    ``judge=False``: people alone, the judge's grades replaced by one constant (they then say
    nothing; the model is the rank cells and the query effect of people's labels).
    ``spread_replicates``: how many replicates refit the query-effect spreads (default
    :data:`SPREAD_REPLICATES`; the fit is most of the cost).
    """
    from dataclasses import replace

    rng = np.random.default_rng(seed)
    if not judge:
        design = replace(design, judge=np.zeros(len(design.judge), dtype=np.int64))
    s = np.flatnonzero(design.sampled)
    weights = replicate_weights(design.probability[s], replicates, rng)
    fitted = fit(design, weights)
    counts = _key_counts(design, fitted)
    # The spreads are refitted on the first SPREAD_REPLICATES replicates (the later ones take
    # theirs in turn): how much they vary over samples is part of the estimate's variance.
    refits = SPREAD_REPLICATES if spread_replicates is None else spread_replicates
    spreads = [query_spread(design, _row(fitted, b)) for b in range(min(replicates, refits) + 1)]
    rows = np.concatenate([np.zeros(draws, dtype=np.int64), np.arange(1, replicates + 1)])
    which = np.where(rows == 0, 0, 1 + (rows - 1) % max(len(spreads) - 1, 1))
    labels = np.zeros((len(rows), len(design.judge)), dtype=np.int8)
    predicted = np.zeros((len(rows), len(s), design.grades))
    for k in np.unique(which):
        at = np.flatnonzero(which == k)
        for i in range(0, len(at), _CHUNK):
            part = at[i : i + _CHUNK]
            labels[part], predicted[part] = _draw_rows(design, fitted, rows[part], spreads[int(k)], counts, rng)
    return Draws(labels, weights[rows], predicted, s, draws, spreads[0])


def _row(fitted: Fitted, row: int) -> Fitted:
    """The fit of one weight row alone."""
    one = slice(row, row + 1)
    return Fitted(fitted.prior[one], fitted.confusion[one], fitted.cell, fitted.sampled, fitted.weights[one])


#: Replicates whose query-effect spreads are refitted.
SPREAD_REPLICATES = 15


#: Weight rows drawn at once (bounds the (rows, entries, grades) arrays).
_CHUNK = 8


def _coefficients(design: Design, runs: Mapping[str, tuple[NDArray[np.int_], NDArray[np.int_]]], metric: Metric):
    """Sparse (N, runs · Q): each entry's coefficient in each (run, query)'s numerator."""
    import scipy.sparse as sp

    rows, cols, vals = [], [], []
    for i, (entries, ranks) in enumerate(runs.values()):
        keep = ranks <= metric.k
        e, r = entries[keep], ranks[keep]
        if metric.family == "nDCG":
            coef = 1.0 / np.log2(r + 1.0)
        else:
            coef = np.full(len(e), 1.0 / metric.k if metric.family == "P" else 1.0)
        rows.append(e)
        cols.append(i * design.n_queries + design.query[e])
        vals.append(coef)
    shape = (len(design.judge), len(runs) * design.n_queries)
    if not rows:
        return sp.csr_array(shape)
    return sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=shape)


def _per_grade(design: Design, labels: NDArray[np.int8]) -> NDArray[np.float64]:
    """(M, Q, G) entries per query and grade in each draw."""
    m, g = labels.shape[0], design.grades
    flat = (np.arange(m)[:, None] * design.n_queries + design.query[None, :]) * g + labels
    return np.bincount(flat.ravel(), minlength=m * design.n_queries * g).reshape(m, design.n_queries, g).astype(float)


def metric_values(design: Design, draws: Draws, runs: Mapping[str, tuple[NDArray[np.int_], NDArray[np.int_]]],
                  metric: Metric) -> dict[str, NDArray[np.float64]]:
    """Run -> (1 + B,) estimates of the mean over queries of ``metric`` (row 0 the estimate,
    then the replicates), from ``draws`` (:func:`draw_labels`). A query counts in a draw when
    it has an entry at ``metric.level`` or above in it (the full-label mean leaves out queries
    without one)."""
    g = design.grades
    gains = np.asarray(metric.gains, float) if metric.family == "nDCG" else (np.arange(g) >= metric.level) * 1.0
    coef = _coefficients(design, runs, metric)
    top = np.asarray((coef.T @ gains[draws.labels].T).T)  # (M, R·Q)
    s = draws.sampled
    residual = (draws.weights - 1.0) * (gains[design.people[s]][None, :] - draws.predicted @ gains)
    top = top + np.asarray((coef[s].T @ residual.T).T)
    top = top.reshape(len(draws.labels), len(runs), design.n_queries)
    counts = _per_grade(design, draws.labels)
    relevant = counts[..., metric.level:].sum(axis=-1)  # (M, Q)
    included = relevant > 0
    if metric.family == "nDCG":
        ideal = _ideal_dcg(counts, metric.gains, metric.k)
        value = top / np.maximum(ideal, 1e-12)[:, None, :]
    elif metric.family == "R":
        value = top / np.maximum(relevant, 1e-12)[:, None, :]
    else:
        value = top
    mean = np.where(included[:, None, :], value, 0.0).sum(axis=2) / np.maximum(included.sum(axis=1), 1)[:, None]
    estimate = mean[: draws.n_estimate].mean(axis=0)
    return {name: np.concatenate([[estimate[i]], mean[draws.n_estimate :, i]]) for i, name in enumerate(runs)}


@dataclass(frozen=True, slots=True)
class Determination:
    """How well a query's labels pin its ideal DCG: over the estimate's draws, the 5th and 95th
    percentiles of its relevant count and the coefficient of variation of its ideal DCG@k."""

    query: int
    relevant_low: float
    relevant_high: float
    ideal_spread: float


#: A query whose ideal DCG varies by more than this share over the draws is "not determined".
UNDETERMINED = 0.10


def undetermined(design: Design, draws: Draws, metric: Metric, *, threshold: float = UNDETERMINED) -> list[Determination]:
    """The queries whose labels cannot pin their ideal DCG@k (its coefficient of variation over
    the estimate's draws above ``threshold``), widest first: their nDCG rests on the model
    (the interval carries that uncertainty) more than on people's labels."""
    counts = _per_grade(design, draws.labels[: draws.n_estimate])
    ideal = _ideal_dcg(counts, metric.gains, metric.k)  # (M, Q)
    mean = ideal.mean(axis=0)
    spread = np.where(mean > 0, ideal.std(axis=0) / np.maximum(mean, 1e-12), 0.0)
    relevant = counts[..., metric.level :].sum(axis=-1)
    low, high = np.percentile(relevant, [5, 95], axis=0)
    out = [Determination(int(q), float(low[q]), float(high[q]), float(spread[q]))
           for q in np.flatnonzero(spread > threshold)]
    return sorted(out, key=lambda d: -d.ideal_spread)
