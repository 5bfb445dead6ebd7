"""Adaptive pooling in a project: which chunks of a query go out next, and when to stop.

An application service: it reads a query's candidate lists and labels so far through
:mod:`labeler.store.candidates`, asks :mod:`pooling.strategies` for the next chunks (and
:mod:`pooling.stopping` whether to stop), and writes chosen candidates that are not yet in
the pool back through the store, after the query's existing positions, with their
provenance from the candidate lists. The scheduler (:mod:`labeler.retrieval.scheduling`) asks
:func:`plan_next_chunks` when the project's ``strategy`` is not ``depth`` or a stopping rule is
set; the order on screen stays the per-annotator shuffle, and nothing about the strategy is
shown.

Labels are binary for the strategies: relevant when the grade is 1 or more (the latest
adjudication, else at least half the annotators' latest judgments). Chunks handed out but
not yet judged are *pending*: never picked twice, and no evidence either way.

A project whose pool was built before candidate lists were kept has its pool provenance
(``{source: rank}``) as its candidate lists.

The stopping rule is the project's ``stop_rule`` (:data:`pooling.stopping.RULES`). Under
``sample``, once the quantile model's point estimate says the target is reached, the query's
candidates not judged or handed out become its check sample's urn (recorded in the hand-out
that begins it); from then on the query's fresh entries are the urn's, in a random order
fixed in advance, handed out like any other entry: in the annotator's shuffle, beside other
queries' work, nothing on screen telling them apart, every one a judgment of the budget.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from labeler.store import candidates as store
from labeler.store.access import require_admin
from labeler.store.corpus import database_file
from labeler.store.settings import Settings, get_settings
from labeler.store.vocabulary import Caller
from pooling import PoolingError
from pooling.pool import rrf_priority
from pooling.qrels import read_qrels
from pooling.recall_estimate import TARGET, Estimate
from pooling.replay import (
    Replay,
    StrategyResult,
    found_at,
    replay,
    stopping_figures,
    to_json,
)
from pooling.stopping import (
    RULES,
    CheckSample,
    check_order,
    decide,
    sample_begins,
    strategy_scores,
)
from pooling.strategies import Candidates, next_chunks

__all__ = [
    "ChunkPlan",
    "QueryStatus",
    "choose_ahead",
    "choose_next_chunks",
    "load_candidates",
    "plan_next_chunks",
    "query_status",
    "simulate",
    "stop_line",
]

#: Default replay budget of ``simulate-pooling``, in judgments of the depth union.
BUDGET_FACTOR = 1.25


def load_candidates(db: sqlite_utils.Database, query_id: str, *, with_texts: bool = False) -> Candidates:
    """The query's candidate lists as :class:`pooling.strategies.Candidates`.

    Pool entries missing from the lists (added by an earlier strategy, or a pool built
    before lists were kept) are included from their provenance.
    """
    rankings = store.query_rankings(db, query_id)
    listed = {d for ranking in rankings.values() for d in ranking}
    extra: dict[str, list[tuple[int, str]]] = {}
    for doc_id, sources in store.pool_sources(db, query_id).items():
        if doc_id not in listed:
            for source, rank in sources.items():
                extra.setdefault(source, []).append((int(rank), doc_id))
    for source, ranked in extra.items():
        merged = [(i + 1, d) for i, d in enumerate(rankings.get(source, []))] + ranked
        rankings[source] = [d for _, d in sorted(merged)]
    cands = Candidates(query_id, rankings, pool_depth=store.pool_depth(db))
    return _with_texts(db, cands) if with_texts else cands


def _with_texts(db: sqlite_utils.Database, cands: Candidates) -> Candidates:
    """The candidates with their chunk texts and the query's text (what ``active`` reads)."""
    texts = store.texts(db, cands.doc_ids)
    return dataclasses.replace(cands, query_text=store.query_text(db, cands.query_id), texts=texts)


@dataclass(frozen=True, slots=True)
class ChunkPlan:
    """The next chunks of a query to hand out, and what the pool must hold first.

    Attributes:
        doc_ids: at most ``batch_size`` chunks, best first (empty: none left, or stop).
        additions: ``(doc_id, sources, priority)`` of every chosen candidate, to append to the
            query's pool (after its last position) where it is not there yet; sources are the
            candidate lists' ranks, priority their reciprocal-rank fusion.
        check_urn: the urn of the check sample this hand-out begins (None: none begins).
    """

    doc_ids: tuple[str, ...]
    additions: tuple[tuple[str, dict[str, int], float], ...] = ()
    check_urn: tuple[str, ...] | None = None


def plan_next_chunks(db: sqlite_utils.Database, query_id: str, settings: Settings) -> ChunkPlan:
    """The next chunks of a query to hand out, and the pool entries they need; writes nothing.

    The hand-out asks inside its write transaction. The costly part (the stopping rule's
    model, ``active``'s classifier) is :func:`choose_next_chunks`, which :func:`choose_ahead`
    runs before the write lock is taken; here it is then only looked up, unless the labels or
    hand-outs changed in between.
    """
    cands, chosen, begins = _choose_next(db, query_id, settings)
    urn = tuple(sorted(begins)) if begins is not None else None
    if not chosen:
        return ChunkPlan((), check_urn=urn)
    # check sample draws may lie outside the pool whatever the strategy; entries already
    # there (all of ``depth``'s own choices) are left as they are
    provenance = _provenance(cands)
    return ChunkPlan(tuple(chosen), tuple((d, provenance[d], rrf_priority(provenance[d])) for d in chosen), urn)


class _LruCache:
    """The latest ``size`` answers of a pure function, by its inputs (shared by the server's threads)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.answers: OrderedDict[tuple, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple) -> Any:
        with self.lock:
            if key in self.answers:
                self.answers.move_to_end(key)
            return self.answers.get(key)

    def put(self, key: tuple, answer: Any) -> None:
        with self.lock:
            self.answers[key] = answer
            while len(self.answers) > self.size:
                self.answers.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.answers.clear()


#: Answers of :func:`choose_next_chunks`, and the stopping rule's estimates (the Progress
#: page and ``stats`` ask for every query at once).
_CHOICES = _LruCache(256)
_ESTIMATES = _LruCache(4096)


def choose_next_chunks(db: sqlite_utils.Database, query_id: str, settings: Settings) -> tuple[Candidates, list[str]]:
    """The query's candidates and the next chunks to hand out, without writing anything.

    Reads the candidate lists, labels and hand-outs, and asks the stopping rule and the
    strategy. The answer is a function of what was read, so it is kept (by those inputs) and
    the same reads later answer at once: :func:`choose_ahead` computes it outside the write
    transaction and :func:`plan_next_chunks` finds it inside. Chunk texts (``active``) are
    read only when the answer is computed.
    """
    cands, chosen, _ = _choose_next(db, query_id, settings)
    return cands, chosen


def _choose_next(db: sqlite_utils.Database, query_id: str, settings: Settings) -> tuple[Candidates, list[str], frozenset[str] | None]:
    """:func:`choose_next_chunks`, and the urn of the check sample the hand-out would begin."""
    cands = load_candidates(db, query_id)
    labels = store.labels(db, query_id)
    pending = store.pending(db, query_id)
    urn = store.check_urn(db, query_id) if _sampling(settings) else None
    order = tuple(store.judged_order(db, query_id)) if settings.stop_rule == "knee" else ()
    # depth: pool order, as without a stopping rule
    ordered = list(store.pool_sources(db, query_id)) if settings.strategy == "depth" else None
    key = (
        _identity(db), query_id, settings.strategy, settings.batch_size, settings.stop_recall,
        settings.stop_confidence, settings.stop_rule, _rankings_key(cands), cands.pool_depth, frozenset(labels.items()),
        frozenset(pending), tuple(ordered or ()), urn, order,
    )
    answer = _CHOICES.get(key)
    if answer is None:
        if settings.strategy == "active":
            cands = _with_texts(db, cands)
        answer = _choose(cands, labels, pending, settings, ordered, urn, order)
        _CHOICES.put(key, answer)
    return cands, list(answer[0]), answer[1]


def _sampling(settings: Settings) -> bool:
    return settings.stop_recall is not None and settings.stop_rule == "sample"


def _rankings_key(cands: Candidates) -> tuple:
    return tuple(sorted((source, tuple(ranking)) for source, ranking in cands.rankings.items()))


def _choose(
    cands: Candidates, labels: dict[str, bool], pending: set[str], settings: Settings, ordered: list[str] | None,
    urn: frozenset[str] | None = None, order: Sequence[str] = (),
) -> tuple[list[str], frozenset[str] | None]:
    now = _estimate(cands, labels, settings, urn, order) if settings.stop_recall is not None else None
    if now is not None and now.stop:
        return [], None
    begins = None
    if _sampling(settings) and urn is None and now is not None and sample_begins(now):
        urn = begins = frozenset(cands.doc_ids - set(labels) - pending)
    if urn is not None:
        draws = [d for d in check_order(cands.query_id, urn) if d not in labels and d not in pending]
        return draws[: settings.batch_size], begins
    if ordered is not None:
        return [d for d in ordered if d not in labels and d not in pending][: settings.batch_size], None
    return next_chunks(settings.strategy, cands, labels, settings.batch_size, pending=pending), None


def _identity(db: sqlite_utils.Database) -> object:
    """The database file (the connection itself for an in-memory one)."""
    return database_file(db) or id(db.conn)


#: Queries :func:`choose_ahead` decides at most before a hand-out.
CHOSEN_AHEAD = 20


def choose_ahead(db: sqlite_utils.Database, query_ids: Iterable[str], settings: Settings) -> int:
    """Run :func:`choose_next_chunks` for the queries a hand-out will visit, before its write lock.

    ``query_ids`` in the order the hand-out visits them; stops at the first query with
    chunks to offer, or after :data:`CHOSEN_AHEAD` queries. Returns the queries decided.
    """
    done = 0
    for query_id in query_ids:
        done += 1
        if choose_next_chunks(db, query_id, settings)[1] or done >= CHOSEN_AHEAD:
            break
    return done


def _provenance(cands: Candidates) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for source in sorted(cands.rankings):
        for rank, doc_id in enumerate(cands.rankings[source], start=1):
            found.setdefault(doc_id, {}).setdefault(source, rank)
    return found


def _scores(cands: Candidates, labels: dict[str, bool], settings: Settings) -> dict[str, float] | None:
    """The strategy's own scores for the quantile model (``active``'s classifier), if any."""
    return strategy_scores(settings.strategy, cands, labels) if cands.texts else None


def _estimate(
    cands: Candidates, labels: dict[str, bool], settings: Settings, urn: frozenset[str] | None = None,
    order: Sequence[str] = (),
) -> Estimate:
    """The project's stopping rule's estimate (a pure function of its inputs, so kept by them).

    Under ``active`` the candidates must carry their texts: the strategy's scores are part
    of the model (:func:`pooling.stopping.strategy_scores`), whose interval is shown under
    every rule, ``knee`` too, as the replays measure it.
    """
    target = settings.stop_recall if settings.stop_recall is not None else TARGET
    key = (cands.query_id, _rankings_key(cands), frozenset(labels.items()), target, settings.stop_confidence,
           settings.stop_rule, settings.strategy, bool(cands.texts), urn, tuple(order))
    found = _ESTIMATES.get(key)
    if found is None:
        check = CheckSample(urn) if urn is not None else None
        drawn = check is not None and any(d in labels for d in urn or ())
        found = decide(settings.stop_rule, cands, labels, order=order, check=check,
                       scores=None if drawn else _scores(cands, labels, settings),
                       target=target, confidence=settings.stop_confidence)
        _ESTIMATES.put(key, found)
    return found


@dataclass(frozen=True, slots=True)
class QueryStatus:
    """Where one query stands under the stopping rule.

    Attributes:
        query_id: the query.
        estimate: :class:`pooling.recall_estimate.Estimate` (recall within the candidates).
        stopping: whether the project's stopping rule is on (``stop_recall`` set).
    """

    query_id: str
    estimate: Estimate
    stopping: bool


def query_status(db: sqlite_utils.Database, *, caller: Caller, labelled_only: bool = False) -> list[QueryStatus]:
    """The stopping rule's estimate for every pooled query, in import order (admin only);
    with ``labelled_only``, for the queries with a label only (a query without one has no
    estimate, and its candidate lists are not read: on a big project most queries may have
    none yet).

    With no ``stop_recall`` set, the estimate uses the default target (0.8) and the
    project's ``stop_confidence`` and ``stop_rule``, and decides nothing. The interval is
    the check sample's where the ``sample`` rule has drawn one, else the quantile model's
    (with ``active``'s own scores under ``active``).
    """
    require_admin(db, caller)
    settings = get_settings(db)
    out = []
    for query_id in store.candidate_queries(db):
        labels = store.labels(db, query_id)
        if labelled_only and not labels:
            continue
        cands = load_candidates(db, query_id, with_texts=settings.strategy == "active" and bool(labels))
        urn = store.check_urn(db, query_id) if settings.stop_rule == "sample" else None
        order = store.judged_order(db, query_id) if settings.stop_rule == "knee" else ()
        out.append(QueryStatus(query_id, _estimate(cands, labels, settings, urn, order), settings.stop_recall is not None))
    return out


def stop_line(status: QueryStatus) -> str:
    """One line: ``q17: ~90% of relevant found [82, 96]; stop`` (or ``; go on``).

    Before a relevant and a non-relevant chunk are both judged there is no estimate.
    """
    e = status.estimate
    if e.recall is None or e.recall_low is None or e.recall_high is None:
        head = f"{e.query_id}: no estimate yet ({e.judged} judged, {e.found} relevant)"
    else:
        head = (
            f"{e.query_id}: ~{round(100 * e.recall)}% of relevant found "
            f"[{round(100 * e.recall_low)}, {round(100 * e.recall_high)}]"
        )
    if not status.stopping:
        return head
    return f"{head}; {'stop' if e.stop else 'go on'}"


def simulate(
    db: sqlite_utils.Database,
    qrels_path: str | Path,
    strategies: Sequence[str],
    *,
    budgets: Sequence[int] = (),
    stop_every: int = 10,
    rules: Sequence[str] = (),
) -> dict:
    """Replay ``strategies`` over the project's candidate lists against full qrels.

    The queries replayed are the pooled ones the qrels file names (a query absent from it
    has unknown relevance, not none); a candidate absent from the qrels counts as not
    relevant, a grade of 1 or more as relevant. The baseline is the union of every source to
    the pool depth of the latest build, judged in full (:func:`pooling.replay.replay`).

    Args:
        db: the project.
        qrels_path: TREC qrels file.
        strategies: names from :data:`pooling.strategies.STRATEGIES`.
        budgets: total judgments per strategy; the largest caps the replay (default:
            :data:`BUDGET_FACTOR` times the baseline's judgments) and each is reported under
            ``found_at_budget``.
        stop_every: ask the stopping rules after every n-th judgment of a query (0: never).
        rules: stopping rules (:data:`pooling.stopping.RULES`) to replay, the first reported
            under ``stopping`` (default: the project's ``stop_rule``, then the others). The
            curve is the strategy's own order; ``sample``, whose check sample changes what
            is judged, is replayed apart for its figures.

    Returns:
        :func:`pooling.replay.to_json`'s shape, plus ``queries``, ``budget`` and, per
        strategy, ``found_at_budget`` ({budget: relevant found}) and ``stopping_by_rule``
        ({rule: the ``stopping`` figures of that rule}).

    Raises:
        PoolingError: a bad qrels file, an unknown strategy or rule, a budget below 1, or
            no pooled query in the qrels.
    """
    if any(b < 1 for b in budgets):
        raise PoolingError(f"a budget must be 1 or more, got {min(budgets)}")
    chosen = _rules_to_replay(db, rules)
    queries, cands, qrels = _replay_inputs(db, qrels_path, strategies)
    baseline = replay(cands, qrels, [], stop_every=0).baseline_judgments
    budget = max(budgets) if budgets else max(1, round(BUDGET_FACTOR * baseline))
    passive = [r for r in chosen if r != "sample"] or ["quantile"]
    result = replay(cands, qrels, list(strategies), budget=budget, stop_every=stop_every, rule=passive[0], also=passive[1:])
    sampled = None
    if "sample" in chosen and stop_every:
        sampled = replay(cands, qrels, list(strategies), budget=budget, stop_every=stop_every, rule="sample")
    out = to_json(result)
    out["queries"] = len(queries)
    out["budget"] = budget
    for name, r in result.strategies.items():
        entry = out["strategies"][name]
        entry["found_at_budget"] = {str(b): found_at(r.curve, b) for b in sorted(set(budgets))}
        entry["stopping_by_rule"] = _figures_by_rule(r, sampled.strategies[name] if sampled is not None else None, result,
                                                     passive, chosen)
        entry["stopping"] = entry["stopping_by_rule"].get(chosen[0], entry["stopping"])
        entry.pop("stopping_also", None)
    return out


def _rules_to_replay(db: sqlite_utils.Database, rules: Sequence[str]) -> list[str]:
    """``rules`` without repeats, or the project's ``stop_rule`` then the others; an unknown one refused."""
    chosen = list(dict.fromkeys(rules)) or list(dict.fromkeys([get_settings(db).stop_rule, *RULES]))
    unknown = [r for r in chosen if r not in RULES]
    if unknown:
        raise PoolingError(f"unknown stopping rule {unknown[0]!r}; choose from {', '.join(RULES)}")
    return chosen


def _replay_inputs(
    db: sqlite_utils.Database, qrels_path: str | Path, strategies: Sequence[str]
) -> tuple[list[str], list[Candidates], dict[str, set[str]]]:
    """The pooled queries the qrels name, their candidates, and their relevant doc_ids (grade 1 or more)."""
    graded = read_qrels(qrels_path)
    queries = [q for q in store.candidate_queries(db) if q in graded]
    if not queries:
        raise PoolingError("no pooled query of the project is in the qrels", path=Path(qrels_path))
    cands = [load_candidates(db, q, with_texts="active" in strategies) for q in queries]
    return queries, cands, {q: {d for d, g in graded[q].items() if g >= 1} for q in queries}


def _figures_by_rule(
    own: StrategyResult, sampled: StrategyResult | None, result: Replay, passive: Sequence[str], chosen: Sequence[str]
) -> dict[str, dict]:
    """Rule -> the ``stopping`` figures of one strategy: the passive rules on its own replay,
    ``sample`` on the replay it changed (``sampled``), in the order of ``chosen``."""
    by_rule = {rule: stopping_figures(own.traces, rule, result.target, result.confidence) for rule in passive}
    if sampled is not None:
        by_rule["sample"] = stopping_figures(sampled.traces, "sample", result.target, result.confidence)
    return {rule: by_rule[rule] for rule in chosen if rule in by_rule}
