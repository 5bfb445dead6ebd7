"""The Progress page's per-query estimates under ``active``: the first load, uncached.

    python bench/progress_active.py                       # 50 queries, 2 sources x 200, 40 labels each
    python bench/progress_active.py --queries 10 --rounds 1

A synthetic project (no collection needed): every query has its own topic words, a chunk
is relevant when it carries several of them; two sources rank the chunks by a noisy score,
``--depth`` candidates each (out of 1.6 times that); ``--labels`` candidates per
query are judged, the best of the sources' fused order first. The strategy is ``active``
and the ``sample`` stopping rule is on.

Timed: :func:`labeler.retrieval.adaptive.query_status`, what the Progress page and ``goldpool stats``
call, with every cache of estimates and scores emptied first (a first load). Against, in the
same process on the same project: the reference, the same call with the cross-fitted scores
computed as :func:`reference_strategy_scores` does (a whole ``relevance_scores`` per fold,
the features rebuilt for each, every candidate predicted, scikit-learn's checks on) and the
Poisson-binomial mixture as :func:`reference_mixture` does, the two alternating which goes
first; and the strategy ``rrf`` (the rank-only model, no classifier). The estimates of the
two ``active`` runs must be equal, field for field.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = [f"w{i:04d}" for i in range(4000)]


def reference_relevance_scores(candidates, labels: Mapping[str, bool], seed: int = 0) -> dict[str, float] | None:
    """``relevance_scores`` with its features built anew and every candidate predicted, under
    scikit-learn's checks (the reference)."""
    from sklearn.linear_model import LogisticRegression

    from pooling.strategies import RANK_WEIGHT, tfidf_features, with_rank_features

    judged = {d: bool(r) for d, r in labels.items() if d in candidates.texts}
    if len(set(judged.values())) < 2:
        return None
    matrix, row = tfidf_features(candidates.query_text, tuple(sorted(candidates.texts.items())))
    if RANK_WEIGHT:
        matrix = with_rank_features(matrix, candidates, row)
    train = [0] + [row[d] for d in sorted(judged)]
    y = [1] + [int(judged[d]) for d in sorted(judged)]
    model = LogisticRegression(C=10.0, class_weight="balanced", solver="liblinear", max_iter=1000, random_state=seed)
    model.fit(matrix[train], y)
    probabilities = model.predict_proba(matrix[1:])[:, 1]
    return {doc_id: float(probabilities[row[doc_id] - 1]) for doc_id in row}


def reference_strategy_scores(strategy, candidates, labels, seed: int = 0) -> dict[str, float] | None:
    """The cross-fitted scores computed the plain way: :func:`reference_relevance_scores`
    once on every judged candidate and once per fold (the reference)."""
    from pooling.stopping import FOLDS

    if strategy != "active" or not candidates.texts:
        return None
    inside = {d: bool(r) for d, r in labels.items() if d in candidates.doc_ids}
    full = reference_relevance_scores(candidates, inside, seed)
    if full is None:
        return None
    out = dict(full)
    for fold in range(FOLDS):
        held = {d for d in inside if int(hashlib.sha256(d.encode()).hexdigest(), 16) % FOLDS == fold}
        part = reference_relevance_scores(candidates, {d: r for d, r in inside.items() if d not in held}, seed)
        if part is not None:
            out.update((d, part[d]) for d in held)
    return {d: math.log(max(p, 1e-6) / max(1 - p, 1e-6)) for d, p in out.items()}


def reference_mixture(p, upto=None):
    """The Poisson-binomial mixture computed draws by counts, over every count at each step."""
    import numpy as np

    rows, n = p.shape
    top = n if upto is None else min(n, upto)
    dist = np.zeros((rows, top + 1))
    dist[:, 0] = 1.0
    for column in range(n):
        pi = p[:, column : column + 1]
        dist[:, 1:] = dist[:, 1:] * (1 - pi) + dist[:, :-1] * pi
        dist[:, 0] *= 1 - pi[:, 0]
    return dist.mean(axis=0)


def build(path: Path, queries: int, depth: int, judged: int, seed: int) -> None:
    from labeler.retrieval import scheduling
    from labeler.store import access, init_db, now
    from labeler.store.access import OWNER
    from pooling.pool import rrf_priority

    rng = random.Random(seed)
    db = init_db(path)
    annotator, _ = access.add_annotator(db, "ann")
    docs: dict[str, str] = {}
    qrows, pool, cands, judgments = [], [], [], []
    for q in range(queries):
        qid = f"q{q:03d}"
        topic = rng.sample(WORDS, 12)
        qrows.append({"query_id": qid, "text": " ".join(topic[:5]), "meta": "{}", "content_hash": qid})
        chunks = []
        for c in range(int(depth * 1.6)):
            on_topic = rng.random() < 0.12
            words = rng.choices(WORDS, k=60) + (rng.sample(topic, rng.randint(3, 8)) if on_topic else rng.sample(topic, rng.randint(0, 1)))
            rng.shuffle(words)
            doc_id = f"{qid}-d{c:04d}"
            docs[doc_id] = " ".join(words)
            chunks.append((doc_id, on_topic))
        sources: dict[str, dict[str, int]] = {}
        for source in ("bm25", "dense"):
            ranked = sorted(chunks, key=lambda dc: -(2.0 * dc[1] + rng.gauss(0, 1.2)))[:depth]
            for r, (d, _) in enumerate(ranked, start=1):
                cands.append((qid, source, d, r))
                sources.setdefault(d, {})[source] = r
        ordered = sorted(sources, key=lambda d: (-rrf_priority(sources[d]), d))
        pool += [{"query_id": qid, "doc_id": d, "sources": json.dumps(sources[d]), "priority": rrf_priority(sources[d]),
                  "position": n, "added_at": now(), "build_id": 1} for n, d in enumerate(ordered, start=1)]
        relevant = dict(chunks)
        judgments += [(qid, d, annotator.id, 2 if relevant[d] else 0, now()) for d in ordered[:judged]]
    db["queries"].insert_all(qrows)
    db["documents"].insert_all({"doc_id": d, "title": "", "text": t, "meta": "{}", "content_hash": d} for d, t in sorted(docs.items()))
    db["pool_builds"].insert({"id": 1, "at": now(), "params": "{}"})
    db["pool"].insert_all(pool)
    with db.conn:
        db.conn.executemany("INSERT INTO candidates (query_id, source, doc_id, rank) VALUES (?, ?, ?, ?)", cands)
        db.conn.executemany("INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, at) VALUES (?, ?, ?, ?, ?)",
                            judgments)
    scheduling.set_settings(db, {"strategy": "active", "stop_recall": 0.8, "stop_rule": "sample", "overlap": 0},
                            caller=OWNER)
    db.close()


def first_load(path: Path, strategy: str | None = None) -> tuple[float, list]:
    """Seconds of one uncached ``query_status`` call, and its estimates."""
    import pooling.strategies
    from labeler.retrieval import adaptive
    from labeler.store import connect
    from labeler.store.access import OWNER

    db = connect(path)
    try:
        if strategy is not None:
            from labeler.retrieval import scheduling

            scheduling.set_settings(db, {"strategy": strategy}, caller=OWNER)
        adaptive._ESTIMATES.clear()
        pooling.strategies._LAST.clear()
        pooling.strategies.tfidf_features.cache_clear()
        gc.collect()  # the garbage of the run before, collected outside this one
        clock = time.perf_counter()
        statuses = adaptive.query_status(db, caller=OWNER)
        seconds = time.perf_counter() - clock
    finally:
        db.close()
    return seconds, [s.estimate for s in statuses]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--depth", type=int, default=200, help="candidates per source")
    parser.add_argument("--labels", type=int, default=40, help="judged candidates per query")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the median is reported")
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    import pooling.recall_estimate as recall_estimate
    import pooling.strategies  # noqa: F401  (imports out of the timings)
    from labeler.retrieval import adaptive
    from scipy.stats import qmc  # noqa: F401
    from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: F401
    from sklearn.linear_model import LogisticRegression  # noqa: F401

    now = adaptive.strategy_scores, recall_estimate.mixture
    times: dict[str, list[float]] = {"now": [], "reference": [], "rrf": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "project.db"
        build(path, options.queries, options.depth, options.labels, options.seed)
        first_load(path)  # warm-up: lazy imports and first calls out of the timings
        for round_ in range(options.rounds):
            estimates = {}
            for which in ("now", "reference") if round_ % 2 == 0 else ("reference", "now"):  # neither always first
                if which == "reference":
                    adaptive.strategy_scores, recall_estimate.mixture = reference_strategy_scores, reference_mixture
                try:
                    seconds, estimates[which] = first_load(path)
                finally:
                    adaptive.strategy_scores, recall_estimate.mixture = now
                times[which].append(seconds)
            if estimates["now"] != estimates["reference"]:
                raise SystemExit("the estimates differ from the reference's")
            mine = estimates["now"]
            seconds, _ = first_load(path, "rrf")
            times["rrf"].append(seconds)
            first_load(path, "active")  # the setting back
    estimated = sum(e.recall is not None for e in mine)
    print(f"{options.queries} queries, 2 sources x {options.depth} candidates, {options.labels} labels each "
          f"({estimated} with an estimate); median of {options.rounds} first loads")
    names = {"reference": "active, a fit per fold (reference)", "now": "active, as built", "rrf": "rrf (rank-only model)"}
    for key in ("reference", "now", "rrf"):
        print(f"{names[key]:40}{statistics.median(times[key]):>8.2f} s")
    ratio = statistics.median(times["reference"]) / statistics.median(times["now"])
    print(f"as built vs reference: {ratio:.2f}x faster; the same estimates")


if __name__ == "__main__":
    main()
