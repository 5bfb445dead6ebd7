"""Stopping rules compared on replays of Vaswani, Cranfield and CISI (complete qrels).

    python bench/stopping_rules.py                        # every collection, strategy and rule
    python bench/stopping_rules.py --collections cisi --strategies rrf --queries 10   # a subset
    python bench/stopping_rules.py --report               # reprint the last results
    python bench/stopping_rules.py --floor-only           # only the floor of valid sampling rules
    python bench/stopping_rules.py --calibration --targets 0.8   # the quantile model at the oracle

Collections, candidate lists (BM25 and dense to depth 200) and the depth-50 baseline are
those of ``bench/pooling_strategies.py`` (its cache of rankings is reused). Per collection,
strategy and target recall (0.8 and 0.9; confidence 0.9), two replays:

- the strategy's own order, asked ``quantile`` and ``knee`` every ``--stop-every`` judgments;
- the ``sample`` rule's, whose judgments after its check sample begins are the sample's draws.

Each query is replayed until every rule said stop, the order reached the target (so the
oracle is known) and the ordinary budget (1.25 depth-50 unions over the queries, the
``simulate-pooling`` default) is spent. Reported per rule, over the queries with a relevant
candidate: where it said stop, the share at or above the target (reliability) and the mean
recall; its judgments there against the oracle's (the first judgment at which the strategy's
own order reached the target, on the same queries); every query's judgments until the rule
said stop (all candidates where it never did) against the depth-50 union's on the same
queries; and how often the 90% recall interval after the ordinary budget's judgments held
the true recall. Recall is within the candidates. The qrels answer the judgments only:
rules and strategies never see them.

The floor (:func:`floor_row`, also alone with ``--floor-only``): the judgments at which a rule
that stops by the hypergeometric test of a uniformly random urn of the unjudged candidates
(``sample``, or any rule whose guarantee holds by construction that way) stops at the
earliest, expected over draw orders, the test asked after every draw: with the urn formed at
the oracle, at the best start in hindsight, and a bound no start at or after the oracle beats.
Where even the bound is above 1.5 times the oracle, no such rule whose urn is formed once the
strategy's order has reached the target can meet the goal of 1.5 times, whatever order it
follows before the urn: the test must rule out the few relevant chunks a recall just below
the target leaves in a large urn, and a query has few relevant chunks (Cranfield about 8).
The bound holds for unequal-probability samples of the urn too: a test that stops once its d
draws show no relevant chunk is valid whatever the urn holds only if the chance of missing K
relevant chunks placed where the design is least likely to look stays below 1 - confidence;
averaged over placements that chance is the uniform draw's, C(N-K, d) / C(N, d), so its
maximum is at least that, and no design of d draws gets there with fewer (tests that stop at
random, without evidence, are left aside). An urn formed
before the oracle point is not covered by the bound; the column "best start, before the
oracle too" measures the uniform urn formed at any moment. The output says where.

The calibration (:func:`calibration`, ``--calibration``): the quantile model's predicted
number of unjudged relevant candidates where the oracle stops against the true number, which
says why ``quantile`` stops so late and so safely.

Nothing in the rules was tuned on these collections: ``KNEE_MIN_JUDGED`` (30) and the
``sample`` rule's start (the quantile model's point estimate reaching the target) were set
before the first run. ``active``'s ``RANK_WEIGHT`` was tuned on them earlier (see
``bench/pooling_strategies.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pooling_strategies as ps  # noqa: E402

OUT = ROOT / "bench" / "out" / "stopping_rules"
CONFIDENCE = 0.9
ORDER = ["depth", "rrf", "mtf", "bandit", "hedge", "active"]


def run(name: str, strategies: list[str], targets: list[float], stop_every: int, queries: int | None, stem: str,
        floor_only: bool = False) -> tuple[list[dict], list[dict]]:
    """Replay ``strategies`` on the collection; one row per strategy, rule and target, and
    one row of the sampling floor (:func:`floor_row`) per strategy and target."""
    from pooling.replay import interval_coverage, replay, replay_query
    from pooling.stopping import oracle_judgments

    candidates, qrels = ps.candidates_for(name)
    candidates = sorted(candidates, key=lambda c: c.query_id)[:queries]
    base = replay(candidates, qrels, [], stop_every=0)
    depth = {c.query_id: len(replay_query("depth", c, qrels.get(c.query_id, ()), stop_every=0).judged) for c in candidates}
    ordinary = math.ceil(1.25 * base.baseline_judgments / len(candidates))
    rows, floors = [], []
    size = {c.query_id: len(c.doc_ids) for c in candidates}
    for strategy in strategies:  # the floor reads the strategy's whole order, no rule
        clock = time.perf_counter()
        whole = replay(candidates, qrels, [strategy], stop_every=0).strategies[strategy].traces
        floors += [floor_row(name, strategy, target, whole, size, stop_every) for target in targets]
        print(f"  {name} {strategy} floor: {time.perf_counter() - clock:.0f} s", file=sys.stderr, flush=True)
    for target in [] if floor_only else targets:
        for strategy in strategies:
            clock = time.perf_counter()
            own = replay(candidates, qrels, [strategy], stop_every=stop_every, target=target, confidence=CONFIDENCE,
                         rule="quantile", also=["knee"], until_settled=True, interval_at=ordinary).strategies[strategy]
            sampled = replay(candidates, qrels, [strategy], stop_every=stop_every, target=target, confidence=CONFIDENCE,
                             rule="sample", until_settled=True, interval_at=ordinary).strategies[strategy]
            oracle = {t.query_id: oracle_judgments(t.relevant, t.findable, target) for t in own.traces}
            for rule, result in (("quantile", own), ("knee", own), ("sample", sampled)):
                traces = [t for t in result.traces if t.findable]
                said = [t for t in traces if t.stops.get(rule) is not None]
                recall = [sum(t.relevant[: t.stops[rule]]) / t.findable for t in said]
                paired = [t for t in said if oracle[t.query_id] is not None]
                covers, intervals = interval_coverage(traces)
                rows.append({
                    "collection": name, "strategy": strategy, "rule": rule, "target": target,
                    "queries": len(traces), "stopped": len(said),
                    "at_or_above": sum(x >= target - 1e-12 for x in recall),
                    "mean_recall": sum(recall) / len(recall) if recall else None,
                    "judgments_at_stop": sum(t.stops[rule] for t in paired),
                    "oracle_there": sum(oracle[t.query_id] for t in paired),
                    "spent": sum(t.stops[rule] if t.stops.get(rule) is not None else size[t.query_id] for t in traces),
                    "depth_there": sum(depth[t.query_id] for t in traces),
                    "covers": covers, "intervals": intervals,
                    "sample_started": sum(t.check_at is not None for t in traces) if rule == "sample" else None,
                })
            print(f"  {name} {strategy} target {target}: {time.perf_counter() - clock:.0f} s", file=sys.stderr, flush=True)
            (OUT / f"{stem}.partial").write_text(json.dumps({"rows": rows, "floors": floors}))  # a run cut short keeps what it did
    return rows, floors


def floor_row(name: str, strategy: str, target: float, traces, size: dict[str, int], every: int) -> dict:
    """The fewest judgments, in expectation, at which a sampling rule valid by construction
    could stop, per query where the strategy's order reaches the target (its oracle n0, f0
    relevant found then), summed over those queries:

    - ``at_oracle``: n0 + the expected draws of a uniformly random urn of the unjudged
      candidates until the hypergeometric test rejects "recall below target" at confidence
      0.9, asked after every draw (:func:`pooling.stopping.sample_draws_needed`), the urn
      formed exactly at n0. At n0 recall is just at the target, where the test has little
      power, so a later start may do better (``recall_at_oracle``: the recall when the test
      rejects, expected over draw orders);
    - ``best_start``: the least over urns formed at n0, n0 + ``every``, ... up to the end of
      the replayed order (the start chosen in hindsight, which no rule can do);
    - ``any_start``: the least over urns formed at 0, ``every``, 2 ``every``, ... up to the end
      of the replayed order, before the oracle too (an earlier urn is larger and still holds
      relevant candidates, which the test must count);
    - ``bound``: n0 + the draws needed had the order found every relevant candidate by n0
      (no relevant left in the urn, the most found outside it): fewer relevant in the urn and
      more found outside it only make the test reject sooner, and each judgment of the order
      before the urn is formed removes at most one draw, so no start at or after n0 does
      better (checked: ``bound`` <= ``best_start`` on every query, counted in ``bound_above``).
    """
    from pooling.stopping import oracle_judgments, sample_draws_needed, sample_walk

    out = {"collection": name, "strategy": strategy, "target": target, "queries": 0, "oracle": 0,
           "at_oracle": 0.0, "recall_at_oracle": 0.0, "best_start": 0.0, "any_start": 0.0, "bound": 0.0,
           "bound_above": 0}
    for t in traces:
        n0 = oracle_judgments(t.relevant, t.findable, target) if t.findable else None
        if n0 is None:
            continue
        n = size[t.query_id]
        found = sum(t.relevant[:n0])
        draws, drawn = sample_walk(found, n - n0, t.findable - found, target, CONFIDENCE)
        at = n0 + draws
        out["recall_at_oracle"] += (found + drawn) / t.findable
        best = at
        for s in range(n0 + every, len(t.relevant) + 1, every):
            f = sum(t.relevant[:s])
            best = min(best, s + sample_draws_needed(f, n - s, t.findable - f, target, CONFIDENCE))
        earliest = best
        for s in range(0, n0, every):
            f = sum(t.relevant[:s])
            earliest = min(earliest, s + sample_draws_needed(f, n - s, t.findable - f, target, CONFIDENCE))
        bound = n0 + sample_draws_needed(t.findable, n - n0, 0, target, CONFIDENCE)
        out["queries"] += 1
        out["oracle"] += n0
        out["at_oracle"] += at
        out["best_start"] += best
        out["any_start"] += earliest
        out["bound"] += bound
        out["bound_above"] += bound > best + 1e-9
    return out


def calibration(name: str, strategies: list[str], target: float, queries: int | None) -> list[dict]:
    """The quantile model against the truth where a perfect stopper stops (the oracle of the
    strategy's order), per strategy over the queries reaching the target:

    - ``true``: relevant candidates still unjudged there, summed over the queries;
    - ``predicted``: the model's posterior mean of them (the draws the rule reads);
    - ``map``: the same at the fitted coefficients alone (no parameter uncertainty);
    - ``everything``: the same model fitted to every candidate's true label (the best the
      model's form can do): far below ``map``, the excess comes from extrapolating the fit on
      the judged candidates to the unjudged, not from the form;
    - ``would_stop``: queries where the rule's P(recall >= target) >= 0.9 there already;
    - ``pit_low``, ``pit_high``: queries where the true number lies below, above the model's
      central 90% interval (before the one-sided widening under ``active``).
    """
    import numpy as np

    from pooling.replay import replay
    from pooling.recall_estimate import INTERCEPT_SD, SLOPE_SD, estimate_from_draws, fit_logistic, rank_features, unfound_draws
    from pooling.stopping import oracle_judgments, strategy_scores

    candidates, qrels = ps.candidates_for(name)
    candidates = sorted(candidates, key=lambda c: c.query_id)[:queries]
    out = []
    for strategy in strategies:
        clock = time.perf_counter()
        row = {"collection": name, "strategy": strategy, "target": target, "queries": 0, "true": 0,
               "predicted": 0.0, "map": 0.0, "everything": 0.0, "would_stop": 0, "pit_low": 0, "pit_high": 0}
        traces = replay(candidates, qrels, [strategy], stop_every=0).strategies[strategy].traces
        for c, t in zip(candidates, traces):
            n0 = oracle_judgments(t.relevant, t.findable, target) if t.findable else None
            if n0 is None or n0 == len(c.doc_ids):
                continue
            labels = {d: bool(r) for d, r in zip(t.judged[:n0], t.relevant[:n0])}
            scores = strategy_scores(strategy, c, labels)
            draws = unfound_draws(c, labels, scores=scores)
            if draws is None:
                continue
            relevant = qrels.get(c.query_id, set())
            rest = sorted(d for d in c.doc_ids if d not in labels)
            truth = sum(d in relevant for d in rest)
            found = sum(labels.values())  # the model's own interval, before any widening of it
            e = estimate_from_draws(c.query_id, len(labels), found, draws, target, CONFIDENCE)
            every = sorted(c.doc_ids)
            x = np.hstack([np.ones((len(every), 1)), rank_features(c, every)])
            if scores is not None:
                x = np.hstack([x, np.array([[scores[d]] for d in every])])
            judged = np.array([d in labels for d in every])
            prior = [INTERCEPT_SD] + [SLOPE_SD] * (x.shape[1] - 1)
            theta, _ = fit_logistic(x[judged], np.array([float(labels[d]) for d in every if d in labels]), prior)
            whole, _ = fit_logistic(x, np.array([float(d in relevant) for d in every]), prior)
            row["queries"] += 1
            row["true"] += truth
            row["predicted"] += float(draws.sum(axis=1).mean())
            row["map"] += float((1 / (1 + np.exp(-(x[~judged] @ theta)))).sum())
            row["everything"] += float((1 / (1 + np.exp(-(x[~judged] @ whole)))).sum())
            row["would_stop"] += e.stop
            row["pit_low"] += truth < (e.remaining_low or 0)
            row["pit_high"] += truth > (e.remaining_high or 0)
        out.append(row)
        print(f"  {name} {strategy} calibration: {time.perf_counter() - clock:.0f} s", file=sys.stderr, flush=True)
    return out


def _calibration_table(rows: list[dict]) -> str:
    header = ["collection", "strategy", "queries", "unjudged relevant at the oracle", "model's mean",
              "at the fit alone", "fit to every label", "would stop there", "true below / above the 90% interval"]
    body = [[r["collection"], r["strategy"], str(r["queries"]), f"{r['true']:,}",
             f"{r['predicted']:,.0f} ({r['predicted'] / max(r['true'], 1):.2f}x)",
             f"{r['map']:,.0f} ({r['map'] / max(r['true'], 1):.2f}x)",
             f"{r['everything']:,.0f} ({r['everything'] / max(r['true'], 1):.2f}x)",
             f"{r['would_stop']}/{r['queries']}", f"{r['pit_low']} / {r['pit_high']}"] for r in rows]
    return ps._table(header, body)


def _table(rows: list[dict]) -> str:
    header = ["collection", "strategy", "rule", "stopped/queries", "at/above target", "mean recall at stop",
              "judgments at stop : oracle", "to stop vs depth-50", "90% interval covers"]
    body = []
    for r in rows:
        share = f"{r['at_or_above'] / r['stopped']:.0%}" if r["stopped"] else "-"
        ratio = f"{r['judgments_at_stop']:,} : {r['oracle_there']:,} ({r['judgments_at_stop'] / r['oracle_there']:.2f}x)" \
            if r["oracle_there"] else "-"
        body.append([r["collection"], r["strategy"], r["rule"], f"{r['stopped']}/{r['queries']}", share,
                     "-" if r["mean_recall"] is None else f"{r['mean_recall']:.3f}", ratio,
                     f"{r['spent'] / r['depth_there']:.2f}x",
                     f"{r['covers']}/{r['intervals']} ({r['covers'] / r['intervals']:.0%})" if r["intervals"] else "-"])
    return ps._table(header, body)


def _floor_table(rows: list[dict]) -> str:
    def ratio(key: str, r: dict) -> str:
        return f"{r[key]:,.0f} ({r[key] / r['oracle']:.2f}x)" if r["oracle"] else "-"

    header = ["collection", "strategy", "queries reaching target", "oracle", "urn at the oracle",
              "mean recall there", "urn at the best start", "best start, before the oracle too",
              "bound, any start >= oracle"]
    body = [[r["collection"], r["strategy"], str(r["queries"]), f"{r['oracle']:,}", ratio("at_oracle", r),
             f"{r['recall_at_oracle'] / r['queries']:.3f}" if r["queries"] else "-",
             ratio("best_start", r), ratio("any_start", r) if "any_start" in r else "-", ratio("bound", r) + ("" if not r["bound_above"] else f" ({r['bound_above']} above)")]
            for r in rows]
    return ps._table(header, body)


def _floor_verdict(rows: list[dict]) -> str:
    """Whether the 1.5x goal is within reach of any sampling rule valid by construction."""
    measured = [r for r in rows if r["oracle"]]
    if not measured:
        return ""
    over = [r for r in measured if r["bound"] / r["oracle"] > 1.5]
    least = min(r["bound"] / r["oracle"] for r in measured)
    most = max(r["bound"] / r["oracle"] for r in measured)
    if over:
        names = ", ".join(f"{r['collection']}/{r['strategy']}" for r in over)
        return (f"The bound is {least:.2f}-{most:.2f}x the oracle; above 1.5x on {names}: there no rule that stops "
                f"by a valid test of a uniformly random urn formed at or after the oracle point can meet the 1.5x goal.")
    return f"The bound is {least:.2f}-{most:.2f}x the oracle: the 1.5x goal is not excluded by it."


def _verdict(rows: list[dict]) -> str:
    """Per rule, whether each part of the goal holds on every row where it can be measured
    (``depth`` cannot leave the depth-50 union and mostly runs out before any rule stops)."""
    lines = []
    for rule in ("quantile", "sample", "knee"):
        mine = [r for r in rows if r["rule"] == rule]
        stopped = [r for r in mine if r["stopped"]]
        paired = [r for r in mine if r["oracle_there"]]
        covered = [r for r in mine if r["intervals"]]
        if not mine:
            continue
        worst_share = min((r["at_or_above"] / r["stopped"] for r in stopped), default=None)
        worst_cost = max((r["judgments_at_stop"] / r["oracle_there"] for r in paired), default=None)
        worst_cover = min((r["covers"] / r["intervals"] for r in covered), default=None)
        lines.append(
            f"{rule}: worst reliability {_share(worst_share)} (goal >= 90%), worst judgments at stop / oracle "
            f"{'-' if worst_cost is None else f'{worst_cost:.2f}x'} (goal <= 1.5x), worst interval coverage "
            f"{_share(worst_cover)} (goal >= 85%); rows with no stop: {len(mine) - len(stopped)}")
    return "\n".join(lines)


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def main() -> None:
    from pooling.strategies import STRATEGIES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", nargs="+", choices=sorted(ps.LOADERS), default=["vaswani", "cranfield", "cisi"])
    parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    parser.add_argument("--targets", nargs="+", type=float, default=[0.8, 0.9])
    parser.add_argument("--stop-every", type=int, default=10, help="ask the rules every n judgments of a query")
    parser.add_argument("--queries", type=int, help="only the first n queries (by id) of each collection")
    parser.add_argument("--report", action="store_true", help="print the tables of the last runs, replay nothing")
    parser.add_argument("--calibration", action="store_true",
                        help="only the quantile model's predicted against true unfound relevant at the oracle")
    parser.add_argument("--floor-only", action="store_true", help="only the sampling floor: replay no rule")
    options = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if options.calibration:
        for target in options.targets:
            rows = []
            for name in options.collections:
                rows += calibration(name, options.strategies, target, options.queries)
            (OUT / f"calibration-{target}.json").write_text(json.dumps(rows))
            print(f"\nThe quantile model where the oracle stops, target {target} (see calibration):")
            print(_calibration_table(rows))
        return
    rows: list[dict] = []
    floors: list[dict] = []
    for name in options.collections:
        if options.report:  # every run's results, each target from its latest run
            found, low = {}, {}
            for path in sorted(OUT.glob(f"{name}*.json"), key=lambda p: p.stat().st_mtime):
                saved = json.loads(path.read_text())
                found.update({(r["strategy"], r["rule"], r["target"]): r for r in saved["rows"]})
                low.update({(r["strategy"], r["target"]): r for r in saved["floors"]})
            rows += found.values()
            floors += low.values()
            continue
        # one file per collection and set of targets, so runs of different targets can run at once
        stem = name + ("" if options.targets == [0.8, 0.9] else "-" + "-".join(map(str, options.targets)))
        if options.floor_only:
            stem += "-floor"
        fresh, low = run(name, options.strategies, options.targets, options.stop_every, options.queries, stem,
                         options.floor_only)
        (OUT / f"{stem}.json").write_text(json.dumps({"rows": fresh, "floors": low}))
        rows += fresh
        floors += low
    for target in sorted({r["target"] for r in rows + floors}):
        mine = sorted((r for r in rows if r["target"] == target),
                      key=lambda r: (r["collection"], ORDER.index(r["strategy"]), r["rule"]))
        if mine:
            print(f"\nTarget recall {target}, confidence {CONFIDENCE} (recall within the candidates):")
            print(_table(mine))
            print(_verdict(mine))
        low = sorted((r for r in floors if r["target"] == target), key=lambda r: (r["collection"], ORDER.index(r["strategy"])))
        print(f"\nThe floor of sampling rules valid by construction, target {target} (expected judgments; see floor_row):")
        print(_floor_table(low))
        print(_floor_verdict(low))

if __name__ == "__main__":
    main()
