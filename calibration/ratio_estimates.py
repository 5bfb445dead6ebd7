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
from calibration.judge_assisted import RANK_CELLS, Design, Metric, _ideal_dcg

#: Rank cell (0: no rank within the top :data:`RANK_CELLS`) -> group of the judge's confusion.
RANK_GROUP = np.array([0] + [1] * 3 + [2] * (RANK_CELLS - 3))
#: The grid of the query effect's standard deviation τ.
TAUS = np.linspace(0.0, 8.0, 33)
_NODES, _NODE_WEIGHTS = np.polynomial.hermite_e.hermegauss(11)
_NODE_WEIGHTS = _NODE_WEIGHTS / _NODE_WEIGHTS.sum()
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
    estimate, each later one a replicate. ``tau``: the query effect's τ (:func:`query_spread`)."""

    labels: NDArray[np.int8]
    weights: NDArray[np.float64]
    predicted: NDArray[np.float64]
    sampled: NDArray[np.int_]
    n_estimate: int
    tau: float


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
class Tables:
    """Per weight row at one τ, on the node grid of the query effect: ``given`` (rows, cells,
    judge grade, nodes, grade) an entry's grade given its cell, its judge grade and the node;
    ``unlabelled`` (rows, cells · judge grades, nodes) the log-probability of an unlabelled
    entry's judge grade; ``labelled`` (rows, cells · grades, nodes) of a labelled entry's grade."""

    given: NDArray[np.float64]
    unlabelled: NDArray[np.float64]
    labelled: NDArray[np.float64]


def tables(fitted: Fitted, tau: float, rows: NDArray[np.int_]) -> Tables:
    """The model's :class:`Tables` for weight ``rows`` at ``tau``: every entry with the same
    rank cell and judge grade shares them, so a query's likelihood is counts times tables."""
    prior = fitted.prior[rows]  # (b, R, G)
    u = np.broadcast_to(tau * _NODES, prior.shape[:2] + (len(_NODES),))
    grade = _grade_probabilities(prior[:, :, None, :], tau, u)  # (b, R, J, G)
    judge = fitted.confusion[rows][:, RANK_GROUP]  # (b, R, G, F)
    joint = grade[:, :, None, :, :] * np.moveaxis(judge, 3, 2)[:, :, :, None, :]  # (b, R, F, J, G)
    marginal = joint.sum(axis=-1)  # (b, R, F, J)
    b, r, f, j = marginal.shape
    unlabelled = np.log(np.maximum(marginal, 1e-300)).reshape(b, r * f, j)
    labelled = np.log(np.maximum(np.moveaxis(grade, 3, 2), 1e-300)).reshape(b, r * grade.shape[-1], j)
    return Tables(joint / np.maximum(marginal[..., None], 1e-300), unlabelled, labelled)


def _key_counts(design: Design, fitted: Fitted) -> tuple:
    """Per query, counts of unlabelled entries per (cell, judge grade) and labelled ones per
    (cell, people's grade), as sparse (Q, cells · grades) matrices, and each entry's two keys."""
    import scipy.sparse as sp

    g = design.grades
    judge_key = fitted.cell * g + design.judge
    people_key = fitted.cell * g + design.people
    n_keys = (RANK_CELLS + 1) * g
    sampled = design.sampled

    def counts(mask: NDArray[np.bool_], key: NDArray[np.int_]):
        return sp.csr_array((np.ones(int(mask.sum())), (design.query[mask], key[mask])),
                            shape=(design.n_queries, n_keys))

    return counts(~sampled, judge_key), counts(sampled, people_key), judge_key, people_key


def query_loglik(counts: tuple, t: Tables) -> NDArray[np.float64]:
    """(rows, Q, nodes): each query's log-likelihood of its labels and judge grades per node."""
    unl, lab = counts[0], counts[1]
    return np.stack([unl @ t.unlabelled[i] + lab @ t.labelled[i] for i in range(t.unlabelled.shape[0])])


def _normalised(log: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Last axis of ``log + log(node weights)`` as probabilities, and its log normaliser."""
    top = log.max(axis=-1, keepdims=True)
    p = np.exp(log - top) * _NODE_WEIGHTS
    total = p.sum(axis=-1, keepdims=True)
    return p / total, np.log(total[..., 0]) + top[..., 0]


def tau_posterior(design: Design, fitted: Fitted) -> NDArray[np.float64]:
    """The posterior of τ over :data:`TAUS` (flat prior) from the design weights' fit."""
    counts = _key_counts(design, fitted)
    row = np.zeros(1, dtype=np.int64)
    marginal = np.array([_normalised(query_loglik(counts, tables(fitted, float(t), row)))[1].sum() for t in TAUS])
    p = np.exp(marginal - marginal.max())
    return p / p.sum()


def _judge_dispersion(design: Design, fitted: Fitted, tau: float) -> tuple[float, float]:
    """(model, observed) spread of the queries' judge-grade sums around the model's means at
    ``tau``: ``Σ_q Var(S_q)`` (quadrature over the query effect) and ``Σ_q (S_q − E S_q)²``."""
    import scipy.sparse as sp

    g = design.grades
    t = tables(fitted, tau, np.zeros(1, dtype=np.int64))
    p_judge = np.exp(t.unlabelled[0]).reshape(RANK_CELLS + 1, g, len(_NODES))  # (R, F, J)
    value = np.arange(g, dtype=np.float64)
    first = np.einsum("rfj,f->rj", p_judge, value)
    second = np.einsum("rfj,f->rj", p_judge, value * value)
    per_cell = sp.csr_array((np.ones(len(design.query)), (design.query, fitted.cell)),
                            shape=(design.n_queries, RANK_CELLS + 1))
    mean, var = per_cell @ first, per_cell @ (second - first * first)
    expected = mean @ _NODE_WEIGHTS
    model = float(((var + mean * mean) @ _NODE_WEIGHTS - expected * expected).sum())
    observed = np.bincount(design.query, weights=design.judge.astype(float), minlength=design.n_queries)
    return model, float(((observed - expected) ** 2).sum())


def query_spread(design: Design, fitted: Fitted) -> float:
    """τ, the query effect's standard deviation: where the judge's grades vary, the value on
    :data:`TAUS` (interpolated) at which the model spreads the queries' judge-grade sums as
    widely as they are spread (a moment estimate from the whole pool); else the posterior mode
    from people's labels. The marginal likelihood alone (normal effects) settles on too small
    a τ where a few queries hold many relevant entries and most hold one or two."""
    mode = float(TAUS[np.argmax(tau_posterior(design, fitted))])
    if np.ptp(design.judge) == 0 or SPREAD == "likelihood":
        return mode
    moment = _moment(design, fitted)
    return moment if SPREAD == "moment" else (mode + moment) / 2


SPREAD = "moment"


def _moment(design: Design, fitted: Fitted) -> float:
    gap = np.array([np.subtract(*_judge_dispersion(design, fitted, float(t))) for t in TAUS])
    if gap[0] >= 0:
        return 0.0
    if gap[-1] <= 0:
        return float(TAUS[-1])
    i = int(np.flatnonzero(gap >= 0)[0])
    return float(TAUS[i - 1] + (TAUS[i] - TAUS[i - 1]) * -gap[i - 1] / (gap[i] - gap[i - 1]))


def _pick(cumulative: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.int_]:
    """Indices drawn along the last axis of ``cumulative`` (cumulative probabilities)."""
    u = rng.random(cumulative.shape[:-1] + (1,))
    return np.minimum((u > cumulative).sum(axis=-1), cumulative.shape[-1] - 1)


def _draw_rows(design: Design, fitted: Fitted, rows: NDArray[np.int_], tau: float, counts: tuple,
               rng: np.random.Generator) -> tuple[NDArray[np.int8], NDArray[np.float64]]:
    """One draw of every entry's grade per weight row in ``rows`` (people's grades where
    sampled), and each sampled entry's leave-one-out grade distribution (rows, S, G)."""
    t = tables(fitted, tau, rows)
    ll = query_loglik(counts, t)  # (b, Q, J)
    post = _normalised(ll)[0]
    node = _pick(np.cumsum(post, axis=-1), rng)[:, design.query]  # (b, N)
    b = np.arange(len(rows))[:, None]
    given = t.given[b, fitted.cell[None, :], design.judge[None, :], node]  # (b, N, G)
    labels = _pick(np.cumsum(given, axis=-1), rng).astype(np.int8)
    s = fitted.sampled
    labels[:, s] = design.people[s]
    judge_key, people_key = counts[2][s], counts[3][s]
    others = _normalised(ll[:, design.query[s]] - t.labelled[:, people_key] + t.unlabelled[:, judge_key])[0]
    given_s = t.given[:, fitted.cell[s], design.judge[s]]  # (b, S, J, G)
    return labels, np.einsum("bsj,bsjg->bsg", others, given_s)


def draw_labels(design: Design, *, replicates: int = N_REPLICATES, seed: int = 0, judge: bool = True,
                draws: int = DRAWS) -> Draws:
    """:data:`DRAWS` draws of the unlabelled grades from the fit on the design weights, then
    one draw per design-bootstrap replicate, all at τ from :func:`query_spread`.

    ``judge=False``: people alone, the judge's grades replaced by one constant (they then say
    nothing; the model is the rank cells and the query effect of people's labels).
    """
    from dataclasses import replace

    rng = np.random.default_rng(seed)
    if not judge:
        design = replace(design, judge=np.zeros(len(design.judge), dtype=np.int64))
    s = np.flatnonzero(design.sampled)
    weights = replicate_weights(design.probability[s], replicates, rng)
    fitted = fit(design, weights)
    tau = query_spread(design, fitted)
    counts = _key_counts(design, fitted)
    rows = np.concatenate([np.zeros(draws, dtype=np.int64), np.arange(1, replicates + 1)])
    parts = [_draw_rows(design, fitted, rows[i : i + _CHUNK], tau, counts, rng) for i in range(0, len(rows), _CHUNK)]
    labels = np.concatenate([p[0] for p in parts])
    predicted = np.concatenate([p[1] for p in parts])
    return Draws(labels, weights[rows], predicted, s, draws, tau)


#: Weight rows drawn at once (bounds the (rows, entries, grades) arrays).
_CHUNK = 24


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
