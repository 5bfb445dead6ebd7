"""When to stop judging a query: the stopping rules a project can choose.

Each rule reads where a query stands from the quantile method's model of the relevant
candidates still unfound (:mod:`pooling.recall_estimate`): ``quantile`` stops on the model
alone, ``sample`` once a random check sample of the unjudged candidates rejects "recall below
target", ``knee`` at the knee of the query's gain curve.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pooling import PoolingError
from pooling.recall_estimate import CONFIDENCE, TARGET, Estimate, estimate
from pooling import strategies
from pooling.strategies import Candidates

#: The stopping rules a project can choose (``label-settings DB stop_rule=NAME``):
#:
#: - ``quantile``: the quantile method (:mod:`pooling.recall_estimate`); under ``active`` the
#:   classifier's own (cross-fitted) scores are a feature of the model beside the ranks (Yang
#:   et al. feed the active learner's probabilities to it).
#: - ``sample``: Callaghan and Müller-Hansen (2020). Once the quantile model's point
#:   estimate of recall reaches the target (:func:`sample_begins`), the query's unjudged
#:   candidates become an urn and are judged in a random order fixed in advance
#:   (:func:`check_order`); after each draw a hypergeometric test of "recall below target" (:func:`sample_p_value`); stop when
#:   it is rejected at 1 - confidence. Valid by construction at any fixed number of draws,
#:   whatever chose the judgments before the urn was formed.
#: - ``knee``: the knee method (Cormack and Grossman 2016), a heuristic without a stated
#:   confidence (:func:`knee_stop`).
RULES = ("quantile", "sample", "knee")
#: The rule a project uses until it chooses one (``labeler.store.assign.Settings``): the one
#: whose promise holds by construction (``bench/stopping_rules.py``).
DEFAULT_RULE = "sample"
#: The knee method's slope ratio and the fewest judgments before it may stop. Cormack and
#: Grossman ask for 150 judgments over whole collections; a query's candidates here number
#: a few hundred, so the floor is scaled down (set before any replay, not tuned).
KNEE_RATIO, KNEE_MIN_JUDGED = 6.0, 30
#: Folds of the cross-fitting that scores the judged candidates in :func:`strategy_scores`.
FOLDS = 4


@dataclass(frozen=True, slots=True)
class CheckSample:
    """A query's random check sample (the ``sample`` rule).

    Attributes:
        urn: the candidates unjudged (and not handed out) when the sample began; they are
            judged in :func:`check_order` from then on, so the judged ones are the draws.
    """

    urn: frozenset[str]


def sample_begins(e: Estimate) -> bool:
    """Whether the ``sample`` rule's check sample should begin: the quantile model's point
    estimate of recall (``e``, before any check sample) has reached its target.

    Begun too early, the random draws must find what the strategy would have found faster;
    too late, the strategy's judgments past the target are wasted. Beginning at even odds
    instead (the quantile rule at confidence 0.5, earlier) cost more judgments on a
    development subset (12 queries of CISI: 2.09 against 1.81 times the oracle's). The
    test's validity does not depend on when it begins.
    """
    return e.recall is not None and e.recall >= e.target


def check_order(query_id: str, doc_ids: Iterable[str]) -> list[str]:
    """``doc_ids`` in the check sample's random order: by a hash of (query, doc), fixed in
    advance and independent of every label, so its first n unjudged are a simple random
    sample of them.

    >>> check_order("q", ["a", "b", "c"]) == check_order("q", ["c", "b", "a"])
    True
    """
    return sorted(doc_ids, key=lambda d: hashlib.sha256(f"check\x1f{query_id}\x1f{d}".encode()).digest())


def _urn_target(found_outside: int, drawn_relevant: int, target: float) -> int:
    """Fewest relevant the urn (drawn ones included) must hold for recall to be below target.

    recall = (found_outside + k) / (found_outside + K) < target  <=>  K > (found_outside + k) / target - found_outside.
    """
    return math.floor((found_outside + drawn_relevant) / target - found_outside + 1e-9) + 1


def sample_p_value(found_outside: int, urn: int, drawn: int, drawn_relevant: int, target: float) -> float:
    """p-value of "recall is below ``target``" after ``drawn`` random draws from the urn
    (Callaghan and Müller-Hansen 2020); ``found_outside``: relevant judged outside the urn.

    Under the least favourable case of that hypothesis the urn of ``urn`` candidates holds
    K = :func:`_urn_target` relevant ones, and the relevant drawn are hypergeometric:
    p = P(X <= drawn_relevant), X ~ Hypergeom(urn, K, drawn). Counting the drawn relevant as
    found keeps the test valid (K grows with them, so a rejection at the observed count is a
    rejection at every count the hypothesis allows).

    >>> round(sample_p_value(8, 100, 40, 0, 0.8), 4)  # K = 3: C(60,40)/C(100,40)
    0.2116
    """
    k = _urn_target(found_outside, drawn_relevant, target)
    if k > urn - (drawn - drawn_relevant):
        return 0.0  # the urn cannot hold that many relevant: recall is at or above target
    from scipy.stats import hypergeom

    return float(hypergeom.cdf(drawn_relevant, urn, k, drawn))


def _sample_p_values(found_outside: int, urn: int, drawn: int, drawn_relevant: np.ndarray, target: float) -> np.ndarray:
    """:func:`sample_p_value` for every count in ``drawn_relevant`` at once (impossible counts: 1)."""
    from scipy.stats import hypergeom

    k = drawn_relevant
    least = np.floor((found_outside + k) / target - found_outside + 1e-9).astype(int) + 1
    out = np.ones(len(k))
    possible = (k <= drawn) & (drawn - k <= urn)
    full = possible & (least > urn - (drawn - k))
    out[full] = 0.0
    rest = possible & ~full
    out[rest] = hypergeom.cdf(k[rest], urn, least[rest], drawn)
    return out


def sample_draws_needed(found_outside: int, urn: int, relevant_in_urn: int, target: float = TARGET,
                        confidence: float = CONFIDENCE) -> float:
    """Expected draws from an urn of ``urn`` candidates holding ``relevant_in_urn`` relevant
    until :func:`sample_p_value` first rejects "recall below ``target``" at 1 - ``confidence``,
    the test asked after every draw; exact, over every draw order (a walk over (draws,
    relevant drawn) whose next draw is relevant with probability (K - k) / (urn - d)).

    With ``found_outside`` the relevant found when the urn is formed, these are the judgments
    after forming it of a rule that stops by that test, asked at every draw, in expectation:
    the floor of the valid sampling rules. The test always rejects once the urn is drawn out,
    so the walk ends.

    >>> sample_draws_needed(4, 10, 0)  # K = 2 least favourable: C(8, d) / C(10, d) < 0.1 first at d = 7
    7.0
    """
    return sample_walk(found_outside, urn, relevant_in_urn, target, confidence)[0]


def sample_walk(found_outside: int, urn: int, relevant_in_urn: int, target: float = TARGET,
                confidence: float = CONFIDENCE) -> tuple[float, float]:
    """(expected draws, expected relevant drawn) when the test of :func:`sample_draws_needed` first rejects.

    >>> sample_walk(4, 20, 1)  # drawn among the first 14 (p = 0.7): stop at 16, else at 14
    (15.4, 0.7)
    """
    if not 0 <= relevant_in_urn <= urn:
        raise PoolingError(f"an urn of {urn} cannot hold {relevant_in_urn} relevant")
    mass = np.zeros(relevant_in_urn + 1)
    mass[0] = 1.0
    expected = drawn = 0.0
    ks = np.arange(relevant_in_urn + 1)
    for d in range(urn):
        hit = np.where(ks < relevant_in_urn, (relevant_in_urn - ks) / (urn - d), 0.0)
        nxt = mass * (1 - hit)
        nxt[1:] += mass[:-1] * hit[:-1]
        reject = _sample_p_values(found_outside, urn, d + 1, ks, target) < 1 - confidence
        expected += (d + 1) * float(nxt[reject].sum())
        drawn += float((ks * nxt)[reject].sum())
        mass = np.where(reject, 0.0, nxt)
        if float(mass.sum()) <= 1e-15:
            break
    return round(expected, 12), round(drawn, 12)


def sample_interval(urn: int, drawn: int, drawn_relevant: int, confidence: float) -> tuple[int, int]:
    """Central ``confidence`` interval of the relevant in the urn (drawn ones included),
    exact from the hypergeometric: the K whose tail probabilities of the observed count both
    reach (1 - confidence) / 2.

    >>> sample_interval(10, 10, 3, 0.9)  # the whole urn drawn: known exactly
    (3, 3)
    """
    from scipy.stats import hypergeom

    tail = (1 - confidence) / 2
    ks = np.arange(drawn_relevant, urn - (drawn - drawn_relevant) + 1)
    upper = ks[hypergeom.cdf(drawn_relevant, urn, ks, drawn) >= tail - 1e-12]
    lower = ks[hypergeom.sf(drawn_relevant - 1, urn, ks, drawn) >= tail - 1e-12]
    return int(lower.min()), int(upper.max())


def knee_stop(relevant: Sequence[int], *, ratio: float = KNEE_RATIO, min_judged: int = KNEE_MIN_JUDGED) -> bool:
    """The knee method (Cormack and Grossman, "Engineering quality and reliability in
    technology-assisted review", SIGIR 2016) on the gain curve of one query.

    The knee is the point of the curve (judgments i, relevant f_i) farthest from the line
    through the origin and the last point (n, f_n); stop when the slope before it over the
    slope after it, (f_i / i) / ((f_n - f_i + 1) / (n - i)), reaches ``ratio``, with at least
    ``min_judged`` judgments and one relevant found.

    >>> knee_stop([1] * 10 + [0] * 30)  # 10/10 before the knee, 1/30 after: ratio 300
    True
    >>> knee_stop([1, 0] * 20)
    False
    """
    n = len(relevant)
    found = np.cumsum(relevant)
    if n < max(min_judged, 2) or found[-1] == 0:
        return False
    i = np.arange(1, n + 1)
    # distance to the line from (0, 0) to (n, f_n), up to a constant factor
    distance = np.abs(found[-1] * i - n * found)
    knee = int(np.argmax(distance[:-1])) + 1
    before = found[knee - 1] / knee
    after = (found[-1] - found[knee - 1] + 1) / (n - knee)
    return bool(before / after >= ratio)


def strategy_scores(strategy: str, candidates: Candidates, labels: Mapping[str, bool], seed: int = 0) -> dict[str, float] | None:
    """The strategy's own logit of relevance for every candidate, or None where it has none.

    Only ``active`` has one: its classifier (:func:`pooling.strategies.relevance_scores`).
    A judged candidate's score comes from a classifier trained without it (``FOLDS``-fold
    cross-fitting): trained on it, the classifier would have nearly learnt its label, and
    the model fitted on the judged candidates would trust the scores far more than they
    deserve on the unjudged ones. Judged and unjudged candidates then differ in the scores
    that chose them only, which the model sees: that is what lets it hold under ``active``.
    """
    if strategy != "active" or not candidates.texts:
        return None
    ids = candidates.doc_ids
    inside = {d: bool(r) for d, r in labels.items() if d in ids}
    judged = {d: r for d, r in inside.items() if d in candidates.texts}
    if len(set(judged.values())) < 2:
        return None  # no classifier yet (relevance_scores' own condition)
    # One feature matrix (TF-IDF and ranks) for the full fit and every fold, each fold
    # predicting only what it held out: the Progress page asks this for every query at once.
    features = strategies.relevance_features(candidates)
    full = strategies._scores_cached(candidates, inside, seed, features)  # the strategy's own fit, when it just made it
    if full is None:
        return None
    out = dict(full)
    folds = {d: int(hashlib.sha256(d.encode()).hexdigest(), 16) % FOLDS for d in inside}
    for fold in range(FOLDS):
        held = {d for d, f in folds.items() if f == fold}
        train = {d: r for d, r in judged.items() if d not in held}
        if len(set(train.values())) == 2:
            out.update(strategies.fit_relevance(features, train, seed, only=held))
    return {d: math.log(max(p, 1e-6) / max(1 - p, 1e-6)) for d, p in out.items()}


def oracle_judgments(relevant: Sequence[int], findable: int, target: float) -> int | None:
    """Judgments a perfect stopper needs: the first n at which the relevant found reach
    ``target`` of the ``findable`` ones (None: never, or nothing to find).

    >>> oracle_judgments([0, 1, 0, 1, 1], 4, 0.5), oracle_judgments([0, 1], 4, 0.8)
    (4, None)
    """
    if findable == 0:
        return None
    found = 0
    for n, r in enumerate(relevant, start=1):
        found += r
        if found >= target * findable - 1e-9:
            return n
    return None


def decide(
    rule: str,
    candidates: Candidates,
    labels: Mapping[str, bool],
    *,
    order: Sequence[str] = (),
    check: CheckSample | None = None,
    scores: Mapping[str, float] | None = None,
    target: float = TARGET,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    base: Estimate | None = None,
) -> Estimate:
    """Where a query stands under ``rule`` (:data:`RULES`).

    Args:
        order: the judged doc_ids in judgment order (the knee method reads its gain curve).
        check: the query's check sample, once begun (``sample``).
        scores: the strategy's logits (:func:`strategy_scores`) for the quantile model.
        base: the quantile model's estimate with these labels and settings, if already made.

    The estimate and interval are the quantile model's, except under ``sample`` once the
    check sample has draws: then the recall interval is the sample's (:func:`sample_interval`),
    valid whatever chose the judgments.
    """
    if rule not in RULES:
        raise PoolingError(f"unknown stopping rule {rule!r}; choose one of {', '.join(RULES)}")
    if base is None:
        base = estimate(candidates, labels, target=target, confidence=confidence, seed=seed, scores=scores)
    everything = base.judged == len(candidates.doc_ids)
    if rule == "quantile":
        return base
    if rule == "knee":
        inside = [d for d in order if d in labels and d in candidates.doc_ids]
        stop = everything or knee_stop([int(bool(labels[d])) for d in inside])
        return dataclasses.replace(base, stop=stop, rule=rule)
    if check is None:
        return dataclasses.replace(base, stop=everything, rule=rule)
    drawn = [d for d in check.urn if d in labels]
    if not drawn:
        return dataclasses.replace(base, stop=everything, rule=rule)
    k = sum(bool(labels[d]) for d in drawn)
    outside = base.found - k
    stop = everything or sample_p_value(outside, len(check.urn), len(drawn), k, target) < 1 - confidence
    low, high = sample_interval(len(check.urn), len(drawn), k, confidence)
    expected = k * len(check.urn) / len(drawn)

    def recall(in_urn: float) -> float | None:
        return base.found / (outside + in_urn) if outside + in_urn > 0 else None

    return Estimate(base.query_id, base.judged, base.found, expected - k, low - k, high - k,
                    recall(expected), recall(high), recall(low), stop, target, confidence, rule)


__all__ = [
    "DEFAULT_RULE",
    "RULES",
    "CheckSample",
    "check_order",
    "decide",
    "knee_stop",
    "oracle_judgments",
    "sample_begins",
    "sample_interval",
    "sample_draws_needed",
    "sample_p_value",
    "sample_walk",
    "strategy_scores",
]
