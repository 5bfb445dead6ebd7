"""Replay pooling strategies on a collection whose qrels are complete.

Each strategy picks the next chunk of a query (:func:`pooling.strategies.next_chunks`, one at
a time), the qrels answer (a candidate absent from them is not relevant), and the label is
fed back. Queries are interleaved round-robin, one judgment each per round among those with
candidates left, so the collection's curve at n judgments is what n judgments spread evenly
over the queries find. The baseline is the depth-``pool_depth`` union judged in full.

Reported per strategy (METRICS.md, adaptive pooling): the curve of relevant found against
judgments spent, the judgments needed to find 90% of what the baseline finds, the relevant
found at the baseline's budget, and where the stopping rule said stop, the actual recall
within the candidates.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from pooling import PoolingError
from pooling.stopping import CONFIDENCE, TARGET, estimate
from pooling.strategies import STRATEGIES, Candidates, next_chunks


@dataclass(frozen=True, slots=True)
class QueryTrace:
    """One query replayed: what was judged, in order, and where the rule said stop.

    Attributes:
        query_id: the query.
        judged: doc_ids in judgment order.
        relevant: 1/0 per judged doc_id.
        findable: relevant candidates (the recall denominator of the stopping rule).
        stop_at: judgments after which the rule first said stop (None: never did).
        final_interval: the rule's recall interval after the last judgment (None when it
            had no model; not computed when ``stop_every`` is 0).
    """

    query_id: str
    judged: tuple[str, ...]
    relevant: tuple[int, ...]
    findable: int
    stop_at: int | None
    final_interval: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class StrategyResult:
    """One strategy over the collection.

    Attributes:
        strategy: its name.
        curve: (judgments, relevant found) after each judgment, round-robin over queries.
        judgments_to_90: judgments until 90% of the baseline's relevant were found (None:
            never).
        found_at_baseline_budget: relevant found after as many judgments as the baseline.
        stop_recall: per query with a findable relevant candidate where the rule said stop,
            the actual recall within the candidates at that point.
        stop_judgments: judgments spent by those queries up to the stop.
        findable_queries: queries with a findable relevant candidate.
        traces: the per-query replays.
    """

    strategy: str
    curve: tuple[tuple[int, int], ...]
    judgments_to_90: int | None
    found_at_baseline_budget: int
    stop_recall: tuple[float, ...]
    stop_judgments: tuple[int, ...]
    findable_queries: int
    traces: tuple[QueryTrace, ...]


@dataclass(frozen=True, slots=True)
class Replay:
    """Every strategy's result and the baseline (depth union judged in full)."""

    strategies: Mapping[str, StrategyResult]
    baseline_judgments: int
    baseline_found: int
    target: float
    confidence: float


def batch_size(strategy: str, judged: int) -> int:
    """Chunks asked for at once: growing batches of ceil(judged / 10) for ``active``, as in
    AutoTAR (Cormack and Grossman 2015), so the classifier is retrained about 10 ln(n) times
    for n judgments; one at a time for every other strategy.

    >>> batch_size("active", 0), batch_size("active", 25), batch_size("mtf", 25)
    (1, 3, 1)
    """
    return max(1, math.ceil(judged / 10)) if strategy == "active" else 1


def replay_query(
    strategy: str,
    candidates: Candidates,
    relevant: Collection[str],
    *,
    budget: int | None = None,
    stop_every: int = 1,
    target: float = TARGET,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    until_stop: bool = False,
) -> QueryTrace:
    """Replay one query judgment by judgment until its candidates or ``budget`` run out.

    The strategy is asked for :func:`batch_size` chunks at a time, all are judged, then it
    is asked again. The stopping rule is asked whenever the judgments pass a multiple of
    ``stop_every`` (0: never); with ``until_stop`` the query ends where it first says stop,
    as it does in a project whose stopping rule is on.

    >>> c = Candidates("q", {"a": ["x", "y"], "b": ["y", "z"]}, pool_depth=1)
    >>> t = replay_query("depth", c, {"y", "z"}, stop_every=0)
    >>> t.judged, t.relevant, t.findable
    (('x', 'y'), (0, 1), 2)
    """
    labels: dict[str, bool] = {}
    order: list[str] = []
    stop_at = None
    limit = len(candidates.doc_ids) if budget is None else budget
    while len(order) < limit:
        before = len(order)
        picked = next_chunks(strategy, candidates, labels, min(batch_size(strategy, before), limit - before), seed=seed)
        if not picked:
            break
        for doc_id in picked:
            labels[doc_id] = doc_id in relevant
            order.append(doc_id)
        if stop_at is None and stop_every and len(order) // stop_every > before // stop_every:
            if estimate(candidates, labels, target=target, confidence=confidence, seed=seed).stop:
                stop_at = len(order)
                if until_stop:
                    break
    findable = len(candidates.doc_ids & set(relevant))
    interval = None
    if stop_every:
        final = estimate(candidates, labels, target=target, confidence=confidence, seed=seed)
        if final.recall_low is not None and final.recall_high is not None:
            interval = (final.recall_low, final.recall_high)
    return QueryTrace(candidates.query_id, tuple(order), tuple(int(labels[d]) for d in order), findable, stop_at, interval)


def interval_coverage(traces: Sequence[QueryTrace]) -> tuple[int, int]:
    """(queries whose final recall interval holds the true recall, queries with an interval).

    >>> t = QueryTrace("q", ("a", "b"), (1, 0), 2, None, (0.4, 0.6))
    >>> interval_coverage([t, QueryTrace("r", ("c",), (1,), 1, None, (0.2, 0.9))])
    (1, 2)
    """
    inside = total = 0
    for t in traces:
        if t.findable and t.final_interval is not None:
            total += 1
            recall = sum(t.relevant) / t.findable
            inside += t.final_interval[0] - 1e-12 <= recall <= t.final_interval[1] + 1e-12
    return inside, total


def round_robin(traces: Sequence[QueryTrace]) -> list[tuple[int, int]]:
    """Collection curve: (judgments, relevant found) after each judgment, one query per turn.

    >>> a = QueryTrace("a", ("x", "y"), (1, 1), 2, None)
    >>> b = QueryTrace("b", ("z",), (0,), 0, None)
    >>> round_robin([a, b])
    [(1, 1), (2, 1), (3, 2)]
    """
    curve: list[tuple[int, int]] = []
    found = 0
    for step in range(max((len(t.relevant) for t in traces), default=0)):
        for trace in traces:
            if step < len(trace.relevant):
                found += trace.relevant[step]
                curve.append((len(curve) + 1, found))
    return curve


def judgments_to(curve: Sequence[tuple[int, int]], goal: float) -> int | None:
    """Fewest judgments after which the curve has found at least ``goal`` relevant.

    >>> judgments_to([(1, 0), (2, 1), (3, 2)], 1.8)
    3
    """
    return next((n for n, found in curve if found >= goal - 1e-9), None)


def found_at(curve: Sequence[tuple[int, int]], budget: int) -> int:
    """Relevant found after ``budget`` judgments (all of them when the curve is shorter).

    >>> found_at([(1, 0), (2, 1), (3, 2)], 2), found_at([(1, 1)], 5), found_at([], 3)
    (1, 1, 0)
    """
    reached = [found for n, found in curve if n <= budget]
    return reached[-1] if reached else 0


def _stop_figures(traces: Sequence[QueryTrace]) -> tuple[tuple[float, ...], tuple[int, ...]]:
    recall, spent = [], []
    for t in traces:
        if t.findable == 0 or t.stop_at is None:
            continue
        recall.append(sum(t.relevant[: t.stop_at]) / t.findable)
        spent.append(t.stop_at)
    return tuple(recall), tuple(spent)


def replay(
    candidates: Sequence[Candidates],
    qrels: Mapping[str, Collection[str]],
    strategies: Sequence[str] = STRATEGIES,
    *,
    budget: int | None = None,
    stop_every: int = 1,
    target: float = TARGET,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    until_stop: bool = False,
) -> Replay:
    """Replay ``strategies`` over every query of ``candidates`` (see the module doc).

    Args:
        candidates: one per query, sorted or not (replayed in query_id order).
        qrels: query_id -> relevant doc_ids; a query absent from it has none.
        strategies: names from :data:`pooling.strategies.STRATEGIES`.
        budget: total judgments per strategy (default: every candidate); the per-query cap
            is ceil(budget / queries).
        stop_every: ask the stopping rule after every n-th judgment of a query (0: never).
        target, confidence: the stopping rule's settings.
        seed: passed to the strategies and the rule.
        until_stop: end each query where the rule first says stop (:func:`replay_query`).
    """
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise PoolingError(f"unknown strategy {unknown[0]!r}; choose from {', '.join(STRATEGIES)}")
    ordered = sorted(candidates, key=lambda c: c.query_id)
    cap = None if budget is None else math.ceil(budget / max(1, len(ordered)))
    base = [replay_query("depth", c, qrels.get(c.query_id, ()), stop_every=0) for c in ordered]
    base_judgments = sum(len(t.judged) for t in base)
    base_found = sum(sum(t.relevant) for t in base)
    results: dict[str, StrategyResult] = {}
    for name in strategies:
        traces = [
            replay_query(name, c, qrels.get(c.query_id, ()), budget=cap, stop_every=stop_every,
                         target=target, confidence=confidence, seed=seed, until_stop=until_stop)
            for c in ordered
        ]
        curve = round_robin(traces)
        if budget is not None:
            curve = curve[:budget]
        recall, spent = _stop_figures(traces)
        results[name] = StrategyResult(
            name, tuple(curve), judgments_to(curve, 0.9 * base_found),
            found_at(curve, base_judgments), recall, spent, sum(1 for t in traces if t.findable), tuple(traces),
        )
    return Replay(results, base_judgments, base_found, target, confidence)


def to_json(result: Replay, *, points: int = 200) -> dict:
    """The replay as the ``simulate-pooling --json`` shape (curves thinned to ~``points``)."""
    out: dict = {"strategies": {}, "baseline": {"judgments": result.baseline_judgments, "relevant_found": result.baseline_found}}
    for name, r in result.strategies.items():
        step = max(1, len(r.curve) // points)
        curve = [list(p) for p in r.curve[step - 1 :: step]]
        if r.curve and (not curve or curve[-1] != list(r.curve[-1])):
            curve.append(list(r.curve[-1]))
        stopped = [x >= result.target - 1e-12 for x in r.stop_recall]
        out["strategies"][name] = {
            "curve": curve,
            "judgments_to_90": r.judgments_to_90,
            "found_at_baseline_budget": r.found_at_baseline_budget,
            "stopping": {
                "target": result.target,
                "confidence": result.confidence,
                "queries": r.findable_queries,
                "stopped": len(r.stop_recall),
                "share_at_or_above_target": sum(stopped) / len(stopped) if stopped else None,
                "mean_recall_at_stop": sum(r.stop_recall) / len(r.stop_recall) if r.stop_recall else None,
                "judgments_at_stop": sum(r.stop_judgments),
                "final_interval_covers": interval_coverage(r.traces)[0],
                "final_intervals": interval_coverage(r.traces)[1],
            },
        }
    return out


__all__ = ["QueryTrace", "Replay", "StrategyResult", "replay", "replay_query", "round_robin", "to_json"]
