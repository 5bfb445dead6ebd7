"""Adaptive pooling: which candidate chunk of a query to judge next.

Every strategy is a pure function of one query's candidate lists (each source's ranking to
the candidate depth) and the labels so far (doc_id -> relevant or not), returning the next
chunks to judge, best first. State is never stored: it is rebuilt from the labels on every
call, so switching strategy mid-project, several annotators at once, or labels made before
a strategy was chosen all leave it consistent.

Allocation is per query. The source-allocating strategies (``mtf``, ``bandit``, ``hedge``)
treat a query's sources (runs) as arms, as Losada, Parapar and Barreiro do within a topic:
a source's quality differs from query to query (BM25 wins where the words match, the dense
model where they do not), so evidence from one query says little about the next. Across
queries, the caller schedules (the app labels query by query; the replay interleaves queries
round-robin, see :mod:`pooling.replay`).

A run's evidence is its *judged prefix*: the longest prefix of its ranking whose chunks are
all judged (or pending). Its next chunk is the first one after that prefix. Every label in
the prefix counts for the run, whichever strategy or annotator caused it, which is what makes
the state a function of the labels alone (in the original algorithms only the chunks a run
itself supplied count; with shared chunks the two differ slightly).

``pending`` chunks (handed out, not yet labelled) are skipped and carry no evidence, so
``next_chunks(..., k=10)`` gives the ten chunks the strategy would pick if the pending ones
told it nothing.

Ties are broken deterministically: sources by name, chunks by RRF priority then doc_id. The
only randomness (the logistic regression's solver) takes ``seed``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from pooling import PoolingError
from pooling.pool import RRF_K, rrf_priority

STRATEGIES = ("depth", "rrf", "mtf", "bandit", "hedge", "active")

#: Discount of older evidence in ``bandit`` (MM-NS).
NS_DISCOUNT = 0.9
#: Hedge's learning rate beta in (0, 1): weight_s = beta ** (cumulative loss of s).
HEDGE_BETA = 0.5


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Candidates:
    """One query's candidate lists.

    Attributes:
        query_id: the query.
        rankings: source -> doc_ids, best first, to the candidate depth.
        query_text: the query's text (``active`` only).
        texts: doc_id -> chunk text for every candidate (``active`` only).
        pool_depth: the fixed depth of the ``depth`` baseline.
    """

    query_id: str
    rankings: Mapping[str, Sequence[str]]
    query_text: str = ""
    texts: Mapping[str, str] = field(default_factory=_empty)
    pool_depth: int = 50

    @property
    def doc_ids(self) -> frozenset[str]:
        """Every candidate of the query."""
        return frozenset(d for ranking in self.rankings.values() for d in ranking)


def next_chunks(
    strategy: str,
    candidates: Candidates,
    labels: Mapping[str, bool],
    k: int = 1,
    *,
    pending: Collection[str] = (),
    seed: int = 0,
) -> list[str]:
    """The next ``k`` candidates to judge under ``strategy``, best first.

    Args:
        strategy: one of :data:`STRATEGIES`.
        candidates: the query's candidate lists.
        labels: doc_id -> relevant, for the query's judged chunks (others are ignored).
        k: how many to return; fewer when the strategy has no more candidates.
        pending: chunks handed out but not yet labelled; never returned.
        seed: seed of the only random step (``active``'s solver).

    Returns:
        Unjudged, non-pending candidates, no duplicates.

    >>> c = Candidates("q1", {"bm25": ["a", "b", "c"], "dense": ["b", "d"]})
    >>> next_chunks("rrf", c, {"b": True}, k=2)
    ['a', 'd']
    """
    if strategy not in _DISPATCH:
        raise PoolingError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if k < 0:
        raise PoolingError(f"k must be >= 0, got {k}")
    taken = set(pending)
    picked: list[str] = []
    while len(picked) < k:
        doc_id = _DISPATCH[strategy](candidates, labels, taken, seed)
        if doc_id is None:
            break
        picked.append(doc_id)
        taken.add(doc_id)
    return picked


# --------------------------------------------------------------------------- shared pieces


def _sources(candidates: Candidates) -> list[str]:
    return sorted(candidates.rankings)


def rrf_order(rankings: Mapping[str, Sequence[str]], k: int = RRF_K) -> list[str]:
    """Doc ids by reciprocal-rank fusion, priority descending, ties by doc_id.

    priority(d) = sum over sources s that rank d of 1 / (k + rank_s(d))  (Cormack, Clarke
    and Büttcher, SIGIR 2009), exactly the pool's labelling order.

    >>> rrf_order({"a": ["x", "y"], "b": ["y", "z"]})
    ['y', 'x', 'z']
    """
    ranks: dict[str, dict[str, int]] = {}
    for source in sorted(rankings):
        for rank, doc_id in enumerate(rankings[source], start=1):
            ranks.setdefault(doc_id, {}).setdefault(source, rank)
    return sorted(ranks, key=lambda d: (-rrf_priority(ranks[d], k), d))


@lru_cache(maxsize=64)
def _cached_rrf(key: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[str, ...]:
    return tuple(rrf_order(dict(key)))


def _rrf(candidates: Candidates, depth: int | None = None) -> tuple[str, ...]:
    rankings = {s: tuple(r[:depth] if depth else r) for s, r in candidates.rankings.items()}
    return _cached_rrf(tuple(sorted(rankings.items())))


def _first_free(order: Sequence[str], labels: Mapping[str, bool], taken: Collection[str]) -> str | None:
    return next((d for d in order if d not in labels and d not in taken), None)


def judged_prefix(ranking: Sequence[str], labels: Mapping[str, bool], taken: Collection[str]) -> tuple[list[bool], int]:
    """A run's evidence: labels of its longest judged-or-pending prefix, and that length.

    Pending chunks extend the prefix but add no label.

    >>> judged_prefix(["a", "b", "c", "d"], {"a": True, "c": False}, {"b"})
    ([True, False], 3)
    """
    seen: list[bool] = []
    for position, doc_id in enumerate(ranking):
        if doc_id in labels:
            seen.append(bool(labels[doc_id]))
        elif doc_id not in taken:
            return seen, position
    return seen, len(ranking)


# --------------------------------------------------------------------------- strategies


def depth_next(candidates: Candidates, labels: Mapping[str, bool], taken: Collection[str], seed: int = 0) -> str | None:
    """Fixed-depth pooling, the baseline: the union of every source's top ``pool_depth``.

    Judged in RRF order over the truncated rankings (the pool's own order; see
    :func:`rrf_order`), and exhausted once the union is judged (Spärck Jones and van
    Rijsbergen 1975; TREC since 1992).
    """
    return _first_free(_rrf(candidates, candidates.pool_depth), labels, taken)


def rrf_next(candidates: Candidates, labels: Mapping[str, bool], taken: Collection[str], seed: int = 0) -> str | None:
    """RRF over the whole candidate lists, no fixed depth.

    priority(d) = sum_s 1 / (60 + rank_s(d)) (Cormack, Clarke and Büttcher 2009); a chunk
    ranked by one source only and deep still comes, after the fused head.
    """
    return _first_free(_rrf(candidates), labels, taken)


def mtf_next(candidates: Candidates, labels: Mapping[str, bool], taken: Collection[str], seed: int = 0) -> str | None:
    """Move-to-front pooling (Cormack, Palmer and Clarke, SIGIR 1998).

    Every run starts at the same priority; the run with the highest priority supplies its
    next unjudged chunk; a non-relevant chunk lowers that run's priority by one, so a run
    keeps being drawn while it yields relevant chunks and yields the turn after a miss::

        priority_s = - (non-relevant chunks in s's judged prefix)

    ties by source name. An exhausted run drops out.
    """
    best: tuple[int, str] | None = None
    for source in _sources(candidates):
        ranking = candidates.rankings[source]
        seen, position = judged_prefix(ranking, labels, taken)
        if position == len(ranking):
            continue
        priority = -sum(1 for relevant in seen if not relevant)
        if best is None or priority > best[0]:
            best = (priority, ranking[position])
    return None if best is None else best[1]


def mmns_mean(seen: Sequence[bool], discount: float = NS_DISCOUNT) -> float:
    """MM-NS posterior mean of a run's relevance rate from its labels in rank order.

    Beta(1, 1) prior; the i-th of m labels weighs discount^(m - i), so recent evidence (deeper
    in the run) counts most, tracking a precision that falls with depth::

        alpha = 1 + sum_i discount^(m-i) * rel_i,  beta = 1 + sum_i discount^(m-i) * (1 - rel_i)
        mean  = alpha / (alpha + beta)

    >>> mmns_mean([True, False], discount=0.5) == (1 + 0.5) / (2 + 0.5 + 1)
    True
    >>> mmns_mean([])
    0.5
    """
    alpha = beta = 1.0
    m = len(seen)
    for i, relevant in enumerate(seen, start=1):
        weight = discount ** (m - i)
        if relevant:
            alpha += weight
        else:
            beta += weight
    return alpha / (alpha + beta)


def bandit_next(candidates: Candidates, labels: Mapping[str, bool], taken: Collection[str], seed: int = 0) -> str | None:
    """MM-NS, the max-mean non-stationary bandit (Losada, Parapar and Barreiro, SIGIR 2016;
    IP&M 2017), the best of their bandit allocation methods.

    Runs are arms, a pull judges the run's next unjudged chunk, the reward is its relevance.
    Each arm has a Beta posterior over its relevance rate; the arm with the largest posterior
    mean (:func:`mmns_mean`, with discounted evidence: the non-stationary part) is pulled,
    ties by source name. Max-mean is deterministic (no Thompson sampling).
    """
    best: tuple[float, str] | None = None
    for source in _sources(candidates):
        ranking = candidates.rankings[source]
        seen, position = judged_prefix(ranking, labels, taken)
        if position == len(ranking):
            continue
        mean = mmns_mean(seen)
        if best is None or mean > best[0]:
            best = (mean, ranking[position])
    return None if best is None else best[1]


def rank_value(rank: int, depth: int) -> float:
    """Hedge's normalised rank value u(r) = (H_N - H_(r-1)) / H_N, 0 beyond depth N.

    Aslam, Pavlu and Savell derive it from average precision: a chunk at rank r of N
    contributes 1/r + 1/(r+1) + ... + 1/N.

    >>> rank_value(1, 3), rank_value(3, 3) == (1 / 3) / (1 + 1 / 2 + 1 / 3), rank_value(4, 3)
    (1.0, True, 0.0)
    """
    if rank > depth:
        return 0.0
    tails = _harmonic_tails(depth)
    return tails[rank - 1] / tails[0]


@lru_cache(maxsize=16)
def _harmonic_tails(depth: int) -> tuple[float, ...]:
    tails = [0.0] * (depth + 1)
    for i in range(depth, 0, -1):
        tails[i - 1] = tails[i] + 1.0 / i
    return tuple(tails)


def hedge_loss(relevant: bool, value: float) -> float:
    """A run's loss on one judged chunk, in [0, 1]: low for ranking a relevant one high.

    loss = (1 - u) / 2 if relevant, (1 + u) / 2 if not; u = :func:`rank_value`.

    >>> hedge_loss(True, 1.0), hedge_loss(False, 1.0), hedge_loss(True, 0.0)
    (0.0, 1.0, 0.5)
    """
    return (1.0 - value) / 2 if relevant else (1.0 + value) / 2


def hedge_weights(candidates: Candidates, labels: Mapping[str, bool], beta: float = HEDGE_BETA) -> dict[str, float]:
    """Hedge's normalised run weights: w_s proportional to beta ** (sum of s's losses).

    The losses are summed over every judged candidate of the query (Freund and Schapire
    1997; Aslam, Pavlu and Savell 2003).
    """
    depth = max((len(r) for r in candidates.rankings.values()), default=0)
    ids = candidates.doc_ids
    judged = [(d, bool(rel)) for d, rel in labels.items() if d in ids]
    total: dict[str, float] = {}
    for source in _sources(candidates):
        ranks = {d: r for r, d in enumerate(candidates.rankings[source], start=1)}
        total[source] = sum(hedge_loss(rel, rank_value(ranks.get(d, depth + 1), depth)) for d, rel in judged)
    low = min(total.values(), default=0.0)
    raw = {s: beta ** (loss - low) for s, loss in total.items()}
    norm = sum(raw.values())
    return {s: w / norm for s, w in raw.items()}


def hedge_next(candidates: Candidates, labels: Mapping[str, bool], taken: Collection[str], seed: int = 0) -> str | None:
    """Hedge pooling (Aslam, Pavlu and Savell, CIKM 2003).

    Runs are experts weighted by :func:`hedge_weights`; the next chunk is the unjudged one
    with the largest weighted rank value (the weighted metasearch list)::

        score(d) = sum_s w_s * u_s(d)

    ties by RRF priority then doc_id.
    """
    weights = hedge_weights(candidates, labels)
    depth = max((len(r) for r in candidates.rankings.values()), default=0)
    score: dict[str, float] = {}
    for source, weight in weights.items():
        for rank, doc_id in enumerate(candidates.rankings[source], start=1):
            score[doc_id] = score.get(doc_id, 0.0) + weight * rank_value(rank, depth)
    order = _rrf(candidates)
    position = {d: i for i, d in enumerate(order)}
    free = [d for d in score if d not in labels and d not in taken]
    return min(free, key=lambda d: (-score[d], position[d]), default=None)


@lru_cache(maxsize=32)
def tfidf_features(query_text: str, texts: tuple[tuple[str, str], ...]) -> tuple[Any, dict[str, int]]:
    """TF-IDF rows (sublinear tf, English stop words) of the query (row 0) and of ``texts``
    (``(doc_id, text)`` pairs), and doc_id -> its row; cached, as the same query's features
    serve every fit on its labels."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=1, stop_words="english")
    matrix = vectorizer.fit_transform([query_text] + [text for _, text in texts])
    return matrix, {doc_id: row for row, (doc_id, _) in enumerate(texts, start=1)}


#: Weight of the rank features beside TF-IDF in ``active`` (0: text only).
RANK_WEIGHT = 1.0


def with_rank_features(matrix: Any, candidates: Candidates, row: Mapping[str, int]) -> Any:
    """TF-IDF rows plus one column per source: RANK_WEIGHT * 1 / log2(1 + rank), 0 if unranked.

    The query's own row gets 1 per source (a perfect rank), like the chunks at rank 1.
    """
    import numpy as np
    from scipy import sparse

    ranks = np.zeros((matrix.shape[0], len(candidates.rankings)))
    ranks[0, :] = 1.0
    for column, source in enumerate(sorted(candidates.rankings)):
        for rank, doc_id in enumerate(candidates.rankings[source], start=1):
            ranks[row[doc_id], column] = 1.0 / np.log2(1 + rank)
    return sparse.hstack([matrix, sparse.csr_matrix(RANK_WEIGHT * ranks)], format="csr")


def relevance_scores(
    candidates: Candidates, labels: Mapping[str, bool], seed: int = 0, features: tuple[Any, Mapping[str, int]] | None = None,
) -> dict[str, float] | None:
    """P(relevant) of every candidate from a logistic regression on TF-IDF features.

    Features: TF-IDF (sublinear tf, English stop words) of the query and the candidates,
    plus the sources' ranks (:func:`with_rank_features`), so the first few labels refine the
    retrievers' order instead of replacing it. Trained on the query's judged candidates plus
    the query text as one synthetic relevant example (AutoTAR's seed, Cormack and Grossman
    2015), classes balanced; ``None`` until the labels hold both a relevant and a
    non-relevant chunk. ``features``: :func:`relevance_features` of ``candidates``, when
    already built.
    """
    judged = {d: bool(r) for d, r in labels.items() if d in candidates.texts}
    if len(set(judged.values())) < 2:
        return None
    return fit_relevance(features if features is not None else relevance_features(candidates), judged, seed)


def relevance_features(candidates: Candidates) -> tuple[Any, dict[str, int]]:
    """The feature matrix of :func:`relevance_scores` (row 0 the query) and doc_id -> its row.

    Built once, it serves any number of fits on different labels of the same query
    (:func:`fit_relevance`).
    """
    matrix, row = tfidf_features(candidates.query_text, tuple(sorted(candidates.texts.items())))
    if RANK_WEIGHT:
        matrix = with_rank_features(matrix, candidates, row)
    return matrix, row


def fit_relevance(
    features: tuple[Any, Mapping[str, int]], judged: Mapping[str, bool], seed: int = 0, only: Collection[str] | None = None,
) -> dict[str, float]:
    """:func:`relevance_scores`' classifier trained on ``judged`` (both kinds present) over
    ``features`` (:func:`relevance_features`): P(relevant) of every candidate, or of ``only``.

    Each candidate's probability depends on its own row alone, so predicting ``only`` some
    gives them the same values as predicting all.
    """
    from sklearn import config_context
    from sklearn.linear_model import LogisticRegression

    matrix, row = features
    train = [0] + [row[d] for d in sorted(judged)]
    y = [1] + [int(judged[d]) for d in sorted(judged)]
    wanted = list(row) if only is None else [d for d in row if d in only]
    # The parameters are fixed here and TF-IDF and ranks are finite: scikit-learn's checks
    # of them cost a quarter of a fit this small, and the Progress page makes five per query.
    with config_context(skip_parameter_validation=True, assume_finite=True):
        model = LogisticRegression(C=10.0, class_weight="balanced", solver="liblinear", max_iter=1000, random_state=seed)
        model.fit(matrix[train], y)
        if not wanted:
            return {}
        probabilities = model.predict_proba(matrix[[row[d] for d in wanted]])[:, 1]
    return dict(zip(wanted, probabilities.tolist()))


def active_next(candidates: Candidates, labels: Mapping[str, bool], taken: Collection[str], seed: int = 0) -> str | None:
    """Continuous active learning (Cormack and Grossman, SIGIR 2014; AutoTAR/BMI 2015).

    A relevance classifier (scikit-learn LogisticRegression over TF-IDF of the query and the
    chunks, and the sources' ranks: :func:`relevance_scores`), retrained from the labels so
    far on every call (once per batch when asked for several), ranks
    the unjudged candidates; the most likely relevant comes next, ties by RRF order. Until
    the labels hold both kinds, the order is :func:`rrf_next`'s.
    """
    missing = candidates.doc_ids - set(candidates.texts)
    if missing:
        raise PoolingError(f"query {candidates.query_id}: no text for candidate {sorted(missing)[0]}", field="text")
    scores = _scores_cached(candidates, labels, seed)
    if scores is None:
        return rrf_next(candidates, labels, taken, seed)
    position = {d: i for i, d in enumerate(_rrf(candidates))}
    free = [d for d in scores if d not in labels and d not in taken]
    return min(free, key=lambda d: (-scores[d], position[d]), default=None)


_LAST: list[tuple[Any, Candidates, dict[str, float] | None]] = []


def _scores_cached(
    candidates: Candidates, labels: Mapping[str, bool], seed: int, features: tuple[Any, Mapping[str, int]] | None = None,
) -> dict[str, float] | None:
    # next_chunks(k > 1) asks k times with the same labels: train once. One tuple, swapped
    # whole, so concurrent callers never see one query's key with another's scores.
    key = (candidates.query_id, candidates.query_text, tuple(sorted(labels.items())), seed)
    last = _LAST[0] if _LAST else None
    if last is not None and last[0] == key and last[1] is candidates:
        return last[2]
    scores = relevance_scores(candidates, labels, seed, features)
    _LAST[:] = [(key, candidates, scores)]
    return scores


_DISPATCH: dict[str, Callable[[Candidates, Mapping[str, bool], Collection[str], int], str | None]] = {
    "depth": depth_next,
    "rrf": rrf_next,
    "mtf": mtf_next,
    "bandit": bandit_next,
    "hedge": hedge_next,
    "active": active_next,
}

__all__ = ["STRATEGIES", "Candidates", "next_chunks", "rrf_order"]
