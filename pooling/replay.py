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
from dataclasses import dataclass, field
from types import MappingProxyType

from pooling import PoolingError
from pooling.recall_estimate import CONFIDENCE, TARGET, Estimate, estimate
from pooling.stopping import RULES, CheckSample, check_order, decide, oracle_judgments, sample_begins, strategy_scores
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
        stops: rule -> judgments after which it first said stop, for the replayed rule and
            any others asked on the same judgments (``also``).
        check_at: judgments before the ``sample`` rule's check sample began (None: never).
        interval_judged: judgments when ``final_interval`` was computed (None: after the last).
    """

    query_id: str
    judged: tuple[str, ...]
    relevant: tuple[int, ...]
    findable: int
    stop_at: int | None
    final_interval: tuple[float, float] | None = None
    stops: Mapping[str, int | None] = field(default_factory=lambda: MappingProxyType({}))
    check_at: int | None = None
    interval_judged: int | None = None


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
        rule: the stopping rule replayed (:data:`pooling.stopping.RULES`).
    """

    strategy: str
    curve: tuple[tuple[int, int], ...]
    judgments_to_90: int | None
    found_at_baseline_budget: int
    stop_recall: tuple[float, ...]
    stop_judgments: tuple[int, ...]
    findable_queries: int
    traces: tuple[QueryTrace, ...]
    rule: str = "quantile"


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
    rule: str = "quantile",
    also: Sequence[str] = (),
    until_settled: bool = False,
    interval_at: int | None = None,
) -> QueryTrace:
    """Replay one query judgment by judgment until its candidates or ``budget`` run out.

    The strategy is asked for :func:`batch_size` chunks at a time, all are judged, then it
    is asked again. The stopping rule is asked whenever the judgments pass a multiple of
    ``stop_every`` (0: never); with ``until_stop`` the query ends where it first says stop,
    as it does in a project whose stopping rule is on. Rules in ``also`` that do not change
    what is judged (``quantile``, ``knee``) are asked at the same points. With
    ``until_settled`` the query ends once every rule has said stop, the order has reached
    the target recall (so the oracle is known) and ``interval_at`` judgments are done: the
    least a comparison of the rules needs. ``interval_at``: the final interval is the one
    after that many judgments (or the last, if fewer), not after the last.

    Under ``sample``, once :func:`pooling.stopping.sample_begins` says so the unjudged candidates become the check sample's urn, and from then on the query's
    judgments are its draws, in :func:`pooling.stopping.check_order`, as in a project.

    >>> c = Candidates("q", {"a": ["x", "y"], "b": ["y", "z"]}, pool_depth=1)
    >>> t = replay_query("depth", c, {"y", "z"}, stop_every=0)
    >>> t.judged, t.relevant, t.findable
    (('x', 'y'), (0, 1), 2)
    """
    rules = [rule, *(r for r in also if r != rule)]
    unknown = [r for r in rules if r not in RULES]
    if unknown or "sample" in rules[1:]:
        raise PoolingError(f"cannot replay stopping rule {(unknown or ['sample'])[0]!r} here; rules are {', '.join(RULES)}")
    findable = len(candidates.doc_ids & set(relevant))
    state = _Replaying(strategy, candidates, relevant, target, confidence, seed, findable, {r: None for r in rules})
    limit = len(candidates.doc_ids) if budget is None else budget
    interval, interval_judged = state.run(limit, stop_every, rule, until_stop, until_settled, interval_at)
    order, labels = state.order, state.labels
    return QueryTrace(candidates.query_id, tuple(order), tuple(int(labels[d]) for d in order), findable,
                      state.stops[rule], interval, MappingProxyType(state.stops), state.check_at, interval_judged)


@dataclass
class _Replaying:
    """One query's replay under way (:func:`replay_query`): the judgments so far, in order,
    the check sample once begun, and the judgments after which each rule first said stop."""

    strategy: str
    candidates: Candidates
    relevant: Collection[str]
    target: float
    confidence: float
    seed: int
    findable: int
    stops: dict[str, int | None]
    labels: dict[str, bool] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    check: CheckSample | None = None
    check_at: int | None = None
    draws: list[str] = field(default_factory=list)
    memo: dict[int, object] = field(default_factory=dict)
    bases: dict[tuple[int, bool], Estimate] = field(default_factory=dict)

    def run(self, limit: int, stop_every: int, rule: str, until_stop: bool, until_settled: bool,
            interval_at: int | None) -> tuple[tuple[float, float] | None, int | None]:
        """Judge until ``limit`` judgments, no chunk left, or an end :func:`replay_query` asks
        for; returns the final interval and the judgments it was computed at (None: the last)."""
        interval: tuple[float, float] | None = None
        interval_judged: int | None = None
        while len(self.order) < limit:
            before = len(self.order)
            picked = self.pick(min(batch_size(self.strategy, before), limit - before))
            if not picked:
                break
            for doc_id in picked:
                self.labels[doc_id] = doc_id in self.relevant
                self.order.append(doc_id)
            if not stop_every or len(self.order) // stop_every == before // stop_every:
                continue
            self.ask_rules(rule)
            if interval_at is not None and interval_judged is None and len(self.order) >= interval_at:
                interval, interval_judged = _interval(self.ask(rule)), len(self.order)
            if until_stop and self.stops[rule] is not None:
                break
            if until_settled and all(v is not None for v in self.stops.values()) and (
                    interval_at is None or interval_judged is not None):
                if sum(self.labels.values()) >= self.target * self.findable - 1e-9:
                    break
        if stop_every and interval_judged is None:
            interval = _interval(self.ask(rule))
        return interval, interval_judged

    def pick(self, n: int) -> list[str]:
        """The next chunks to judge: the strategy's ``n``, or the check sample's next draw."""
        if self.check is None:
            return next_chunks(self.strategy, self.candidates, self.labels, n, seed=self.seed)
        return [d for d in self.draws if d not in self.labels][:1]

    def ask_rules(self, rule: str) -> None:
        """Ask every rule whether to stop; under ``sample``, begin the check sample when due."""
        for name in self.stops:
            if self.stops[name] is None and self.ask(name).stop:
                self.stops[name] = len(self.order)
        if rule == "sample" and self.check is None and self.stops[rule] is None:
            if sample_begins(self.ask(rule)):
                self.check = CheckSample(frozenset(self.candidates.doc_ids - set(self.labels)))
                self.check_at = len(self.order)
                self.draws = check_order(self.candidates.query_id, self.check.urn)

    def scores(self) -> object:
        if len(self.order) not in self.memo:  # one classifier fit per point, whichever rules ask
            self.memo.clear()
            self.memo[len(self.order)] = strategy_scores(self.strategy, self.candidates, self.labels, self.seed)
        return self.memo[len(self.order)]

    def ask(self, name: str) -> Estimate:
        # the quantile model once per point for every rule; once a check sample has draws
        # its interval is the sample's own, and the model needs no classifier
        check = self.check
        plain = name == "sample" and check is not None and any(d in self.labels for d in check.urn)
        key = (len(self.order), plain)
        if key not in self.bases:
            self.bases.clear()
            self.bases[key] = estimate(self.candidates, self.labels, target=self.target, confidence=self.confidence,
                                       seed=self.seed, scores=None if plain else self.scores())  # type: ignore[arg-type]
        return decide(name, self.candidates, self.labels, order=self.order, check=check, target=self.target,
                      confidence=self.confidence, seed=self.seed, base=self.bases[key])


def _interval(e: object) -> tuple[float, float] | None:
    low, high = getattr(e, "recall_low", None), getattr(e, "recall_high", None)
    return None if low is None or high is None else (low, high)


def interval_coverage(traces: Sequence[QueryTrace]) -> tuple[int, int]:
    """(queries whose final recall interval holds the true recall, queries with an interval).

    The true recall is the one when the interval was computed (``interval_judged``).

    >>> t = QueryTrace("q", ("a", "b"), (1, 0), 2, None, (0.4, 0.6))
    >>> interval_coverage([t, QueryTrace("r", ("c",), (1,), 1, None, (0.2, 0.9))])
    (1, 2)
    """
    inside = total = 0
    for t in traces:
        if t.findable and t.final_interval is not None:
            total += 1
            recall = sum(t.relevant[: t.interval_judged]) / t.findable
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


def _stop_figures(traces: Sequence[QueryTrace], rule: str | None = None) -> tuple[tuple[float, ...], tuple[int, ...]]:
    recall, spent = [], []
    for t in traces:
        at = t.stops[rule] if rule in t.stops else t.stop_at
        if t.findable == 0 or at is None:
            continue
        recall.append(sum(t.relevant[:at]) / t.findable)
        spent.append(at)
    return tuple(recall), tuple(spent)


def stopping_figures(traces: Sequence[QueryTrace], rule: str, target: float, confidence: float) -> dict:
    """A rule's figures on replayed queries (``simulate-pooling --json``'s ``stopping``).

    Beside where the rule said stop, the oracle: per query with a findable relevant
    candidate, the first judgment at which recall reached the target in the replayed order
    (:func:`pooling.stopping.oracle_judgments`); summed over the queries that reached it
    (``oracle_judgments``, with their count and mean), and over the queries where the rule
    stopped and the order reached the target (``oracle_judgments_where_stopped``, against
    ``judgments_at_stop_where_oracle``, the rule's own judgments on those queries).
    """
    recall, spent = _stop_figures(traces, rule)
    stopped = [x >= target - 1e-12 for x in recall]
    oracle = {t.query_id: oracle_judgments(t.relevant, t.findable, target) for t in traces if t.findable}
    reached = [n for n in oracle.values() if n is not None]
    said = {t.query_id: t.stops[rule] if rule in t.stops else t.stop_at for t in traces}
    pairs = [(said[t.query_id], oracle[t.query_id]) for t in traces
             if t.findable and said[t.query_id] is not None and oracle[t.query_id] is not None]
    covers, intervals = interval_coverage(traces)
    return {
        "rule": rule,
        "target": target,
        "confidence": confidence,
        "queries": sum(1 for t in traces if t.findable),
        "stopped": len(recall),
        "share_at_or_above_target": sum(stopped) / len(stopped) if stopped else None,
        "mean_recall_at_stop": sum(recall) / len(recall) if recall else None,
        "judgments_at_stop": sum(spent),
        "final_interval_covers": covers,
        "final_intervals": intervals,
        "oracle_judgments": sum(reached),
        "oracle_judgments_mean": sum(reached) / len(reached) if reached else None,
        "oracle_queries": len(reached),
        "oracle_judgments_where_stopped": sum(o for _, o in pairs),
        "judgments_at_stop_where_oracle": sum(s for s, _ in pairs),
    }


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
    rule: str = "quantile",
    also: Sequence[str] = (),
    until_settled: bool = False,
    interval_at: int | None = None,
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
        rule: the stopping rule (:data:`pooling.stopping.RULES`); ``also``: rules asked on
            the same judgments beside it (not ``sample``, which changes what is judged).
        until_settled, interval_at: see :func:`replay_query`.
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
                         target=target, confidence=confidence, seed=seed, until_stop=until_stop, rule=rule, also=also,
                         until_settled=until_settled, interval_at=interval_at)
            for c in ordered
        ]
        curve = round_robin(traces)
        if budget is not None:
            curve = curve[:budget]
        recall, spent = _stop_figures(traces)
        results[name] = StrategyResult(
            name, tuple(curve), judgments_to(curve, 0.9 * base_found),
            found_at(curve, base_judgments), recall, spent, sum(1 for t in traces if t.findable), tuple(traces), rule,
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
        out["strategies"][name] = {
            "curve": curve,
            "judgments_to_90": r.judgments_to_90,
            "found_at_baseline_budget": r.found_at_baseline_budget,
            "stopping": stopping_figures(r.traces, r.rule, result.target, result.confidence),
        }
        others = [rule for rule in (r.traces[0].stops if r.traces else {}) if rule != r.rule]
        if others:
            out["strategies"][name]["stopping_also"] = {
                rule: stopping_figures(r.traces, rule, result.target, result.confidence) for rule in others
            }
    return out


__all__ = ["QueryTrace", "Replay", "StrategyResult", "replay", "replay_query", "round_robin", "stopping_figures", "to_json"]
