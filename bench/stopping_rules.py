"""Stopping rules compared on replays of Vaswani, Cranfield and CISI (complete qrels).

    python bench/stopping_rules.py                        # every collection, strategy and rule
    python bench/stopping_rules.py --collections cisi --strategies rrf --queries 10   # a subset
    python bench/stopping_rules.py --report               # reprint the last results

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


def run(name: str, strategies: list[str], targets: list[float], stop_every: int, queries: int | None, stem: str) -> list[dict]:
    """Replay ``strategies`` on the collection; one row per strategy, rule and target."""
    from pooling.replay import interval_coverage, replay, replay_query
    from pooling.stopping import oracle_judgments

    candidates, qrels = ps.candidates_for(name)
    candidates = sorted(candidates, key=lambda c: c.query_id)[:queries]
    base = replay(candidates, qrels, [], stop_every=0)
    depth = {c.query_id: len(replay_query("depth", c, qrels.get(c.query_id, ()), stop_every=0).judged) for c in candidates}
    ordinary = math.ceil(1.25 * base.baseline_judgments / len(candidates))
    rows = []
    for target in targets:
        for strategy in strategies:
            clock = time.perf_counter()
            own = replay(candidates, qrels, [strategy], stop_every=stop_every, target=target, confidence=CONFIDENCE,
                         rule="quantile", also=["knee"], until_settled=True, interval_at=ordinary).strategies[strategy]
            sampled = replay(candidates, qrels, [strategy], stop_every=stop_every, target=target, confidence=CONFIDENCE,
                             rule="sample", until_settled=True, interval_at=ordinary).strategies[strategy]
            oracle = {t.query_id: oracle_judgments(t.relevant, t.findable, target) for t in own.traces}
            size = {c.query_id: len(c.doc_ids) for c in candidates}
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
            (OUT / f"{stem}.partial").write_text(json.dumps(rows))  # a run cut short keeps what it did
    return rows


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
    options = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for name in options.collections:
        if options.report:  # every run's results, each target from its latest run
            found = {}
            for path in sorted(OUT.glob(f"{name}*.json"), key=lambda p: p.stat().st_mtime):
                found.update({(r["strategy"], r["rule"], r["target"]): r for r in json.loads(path.read_text())})
            rows += found.values()
            continue
        # one file per collection and set of targets, so runs of different targets can run at once
        stem = name + ("" if options.targets == [0.8, 0.9] else "-" + "-".join(map(str, options.targets)))
        fresh = run(name, options.strategies, options.targets, options.stop_every, options.queries, stem)
        (OUT / f"{stem}.json").write_text(json.dumps(fresh))
        rows += fresh
    for target in sorted({r["target"] for r in rows}):
        mine = sorted((r for r in rows if r["target"] == target),
                      key=lambda r: (r["collection"], ORDER.index(r["strategy"]), r["rule"]))
        print(f"\nTarget recall {target}, confidence {CONFIDENCE} (recall within the candidates):")
        print(_table(mine))
        print(_verdict(mine))


if __name__ == "__main__":
    main()
