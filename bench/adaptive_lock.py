"""Adaptive pooling in a project: how long a hand-out holds the write lock.

    python bench/adaptive_lock.py                 # Vaswani, strategy active, 400 key presses
    python bench/adaptive_lock.py --presses 200 --strategy mtf

A project is made from the Vaswani collection (``../shared/external``) with the BM25 and dense
candidate lists ``bench/pooling_strategies.py`` caches (run that first), the depth-50 union as
its pool, the stopping rule on (target 0.8, confidence 0.9). One annotator labels it key press
by key press (``next_item`` then ``record_judgment``), the qrels answering. Reported per
press: the time from the press to the next item, and how long the write transaction that
hands out a batch holds the lock (what every other annotator's save waits behind).

Two runs in the same process (imports made before both): as built (the stopping rule and the strategy are
decided before the write lock is taken, :meth:`labeler.retrieval.scheduling.Scheduler.decide_before_lock`) and the baseline with
that step switched off (decided inside the write transaction, as before).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))  # after the checkout: bench/pooling.py must not hide the package


def build(path: Path, strategy: str) -> tuple[int, dict[str, set[str]]]:
    import pooling_strategies as ps

    from labeler.retrieval import scheduling
    from labeler.store import access, init_db, now
    from labeler.store.access import OWNER
    from pooling.pool import rrf_priority

    docs, queries, qrels = ps.load_vaswani()
    rankings = ps.rankings_for("vaswani", docs, queries)
    judged = sorted(q for q in queries if qrels.get(q))
    db = init_db(path)
    db["queries"].insert_all({"query_id": q, "text": queries[q], "meta": "{}", "content_hash": q} for q in judged)
    used = {d for s in rankings for q in judged for d in rankings[s][q]}
    db["documents"].insert_all({"doc_id": d, "title": "", "text": docs[d], "meta": "{}", "content_hash": d} for d in sorted(used))
    db["pool_builds"].insert({"id": 1, "at": now(), "params": "{}"})
    pool, cands = [], []
    for q in judged:
        sources: dict[str, dict[str, int]] = {}
        for s in sorted(rankings):
            for r, d in enumerate(rankings[s][q], start=1):
                cands.append((q, s, d, r))
                if r <= ps.POOL_DEPTH:
                    sources.setdefault(d, {})[s] = r
        ordered = sorted(sources, key=lambda d: (-rrf_priority(sources[d]), d))
        pool += [{"query_id": q, "doc_id": d, "sources": json.dumps(sources[d]), "priority": rrf_priority(sources[d]),
                  "position": n, "added_at": now(), "build_id": 1} for n, d in enumerate(ordered, start=1)]
    db["pool"].insert_all(pool)
    with db.conn:
        db.conn.executemany("INSERT INTO candidates (query_id, source, doc_id, rank) VALUES (?, ?, ?, ?)", cands)
    annotator, _ = access.add_annotator(db, "ann")
    scheduling.set_settings(db, {"strategy": strategy, "stop_recall": 0.8, "overlap": 0, "batch_size": 10}, caller=OWNER)
    db.close()
    return annotator.id, qrels


def press(path: Path, annotator_id: int, qrels: dict[str, set[str]], n: int, prepared: bool) -> tuple[list[float], list[float]]:
    """n key presses; (seconds press to next item, seconds the hand-out's lock was held)."""
    from labeler.retrieval import scheduling
    from labeler.store import assign, connect, labels

    held: list[float] = []
    real = assign.transaction

    @contextlib.contextmanager
    def timed(db):
        with real(db) as inner:
            start = time.perf_counter()
            yield inner
        held.append(time.perf_counter() - start)

    original = scheduling.Scheduler.decide_before_lock
    assign.transaction = timed
    if not prepared:
        scheduling.Scheduler.decide_before_lock = lambda self, db: None  # type: ignore[method-assign]
    db = connect(path)
    latency = []
    try:
        item = scheduling.next_item(db, annotator_id)
        for _ in range(n):
            if item is None:
                break
            clock = time.perf_counter()
            grade = 2 if item.doc_id in qrels.get(item.query_id, ()) else 0
            labels.record_judgment(db, annotator_id, item.query_id, item.doc_id, grade, 3.0)
            item = scheduling.next_item(db, annotator_id)
            latency.append(time.perf_counter() - clock)
    finally:
        assign.transaction = real
        scheduling.Scheduler.decide_before_lock = original  # type: ignore[method-assign]
        db.close()
    return latency, held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presses", type=int, default=400)
    parser.add_argument("--strategy", default="active")
    options = parser.parse_args()
    import pooling.stopping
    import pooling.strategies
    from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: F401  (imports out of the timings)
    from sklearn.linear_model import LogisticRegression  # noqa: F401

    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for prepared in (False, True):
            path = Path(tmp) / f"{prepared}.db"
            annotator_id, qrels = build(path, options.strategy)
            latency, held = press(path, annotator_id, qrels, options.presses, prepared)
            result[prepared] = (latency, held)
    ms = lambda xs, q: 1000 * (statistics.quantiles(xs, n=100, method="inclusive")[q - 1] if q < 100 else max(xs))  # noqa: E731
    print(f"strategy {options.strategy}, stopping rule on, {options.presses} key presses each")
    print(f"{'':40}{'press p50':>11}{'p95':>9}{'max':>9}{'lock held p50':>15}{'p95':>9}{'max':>9}")
    for prepared, name in ((False, "decided under the write lock (before)"), (True, "decided before the lock (now)")):
        latency, held = result[prepared]
        print(f"{name:40}{ms(latency, 50):>9.0f}ms{ms(latency, 95):>7.0f}ms{ms(latency, 100):>7.0f}ms"
              f"{ms(held, 50):>13.1f}ms{ms(held, 95):>7.1f}ms{ms(held, 100):>7.1f}ms")
    ratio = max(result[False][1]) / max(result[True][1])
    print(f"worst lock hold: {ratio:.0f}x shorter")


if __name__ == "__main__":
    main()
