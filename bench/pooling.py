"""Pooling benchmark: BM25 backends, encode throughput, dense search, memory, warm rebuilds.

    python bench/pooling.py               # synthetic 100k chunks (+ Vaswani when present)
    python bench/pooling.py --million     # also 1M chunks x 1,000 queries

Each case runs in its own process, so its peak RSS is its own. Inputs and databases go to
bench/out/. Speeds are ratios within one run (the machine is shared; absolute numbers vary).

BM25 (``--case bm25 DOCS QUERIES [ROUNDS]``): goldpool's index (one shard, and the same corpus
in four shards) against rank-bm25-rs driven directly on the same tokens (its scores alone, and
with a NumPy top-50), rounds alternating, who goes first rotating; each side's best round and
the median of the per-round ratios are reported. rank-bm25 (the oracle: scores and top-50 are
checked against it bit for bit) and bm25s are timed once, for the record. rank-bm25-rs and
bm25s are baselines only, not goldpool dependencies: absent, their rows are left out.
``--case bm25_memory DOCS kept|streamed``: peak RSS of building the index and searching 1,000
queries, with every shard kept in memory or (as ``build-pool`` does beyond one shard) built
one at a time from a re-readable text source.

Dense on the synthetic corpora: the embedding cache is filled with random unit vectors (the
text is random words, so real embeddings would mean nothing, and encoding 1M chunks takes
hours on two cores); the encode time such a build would need is projected from the chunks/s
measured on real text in the ``encode`` case. Vaswani uses real embeddings end to end.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
#: The Vaswani collection in ../shared beside the checkout (absent in a user's clone).
VASWANI = ROOT.parent / "shared" / "external" / "vaswani_npl"
sys.path.insert(0, str(ROOT))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------- synthetic data


def _vocabulary(size: int, rng: np.random.Generator) -> np.ndarray:
    syllables = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"] + ["th", "sh", "ch", "qu"]
    words: set[str] = set()
    while len(words) < size:
        parts = rng.choice(len(syllables), size=rng.integers(1, 4))
        words.add("".join(syllables[p] for p in parts))
    return np.array(sorted(words), dtype=object)


def synthesize(n_docs: int, n_queries: int, directory: Path) -> tuple[Path, Path]:
    """A Zipf-distributed random-word corpus and queries (cached on disk)."""
    corpus, queries = directory / f"synth-{n_docs}.jsonl", directory / f"synth-{n_docs}-queries.jsonl"
    if corpus.exists() and queries.exists():
        return corpus, queries
    rng = np.random.default_rng(20261130)
    vocab = _vocabulary(50_000, rng)
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    with corpus.open("w") as out:
        for start in range(0, n_docs, 10_000):
            lengths = rng.integers(40, 160, size=min(10_000, n_docs - start))
            tokens = vocab[rng.choice(len(vocab), size=int(lengths.sum()), p=p)]
            offset = 0
            for i, length in enumerate(lengths.tolist()):
                text = " ".join(tokens[offset : offset + length].tolist())
                offset += length
                out.write(json.dumps({"doc_id": f"doc{start + i:07d}", "text": text}) + "\n")
    # Queries use content words: the 200 most frequent words play the part of stop words.
    q_p = p.copy()
    q_p[:200] = 0
    q_p /= q_p.sum()
    with queries.open("w") as out:
        for i in range(n_queries):
            words = vocab[rng.choice(len(vocab), size=int(rng.integers(2, 6)), p=q_p)]
            out.write(json.dumps({"query_id": f"q{i:04d}", "text": " ".join(words.tolist())}) + "\n")
    return corpus, queries


def fresh_project(name: str) -> tuple[object, Path]:
    from labeler.store import init_db

    path = OUT / f"{name}.db"
    for stale in OUT.glob(f"{name}.db*"):
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    return init_db(path), path


def fill_cache_randomly(db: object, cache_dir: Path, *, queries: bool = False) -> None:
    """Random unit vectors for every document (and query), under the default model's identity."""
    from pooling.dense import EmbeddingCache, default_model_path, model_identity
    from pooling.retrieve import query_key

    model = str(default_model_path())
    cache = EmbeddingCache(cache_dir, model_identity(model), model)
    rng = np.random.default_rng(7)
    cursor = db.conn.execute("SELECT content_hash FROM documents ORDER BY doc_id")
    blocks = iter(lambda: [row[0] for row in cursor.fetchmany(50_000)], [])
    if queries:
        blocks = itertools.chain(blocks, [[query_key(t) for (t,) in db.conn.execute("SELECT text FROM queries")]])
    for keys in blocks:
        vectors = rng.standard_normal((len(keys), 384), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        cache.append(keys, vectors)


# --------------------------------------------------------------------------- cases


def case_bm25(n_docs: int, n_queries: int, rounds: int = 9) -> dict:
    """rank-bm25, raw rank-bm25-rs, goldpool (one index and sharded) and bm25s, same tokens."""
    import rank_bm25

    from pooling.bm25 import BM25Index, top_k
    from pooling.tokenize import Interner, tokenize

    corpus, queries = synthesize(n_docs, n_queries, OUT)
    docs = [json.loads(line) for line in corpus.open()]
    ids, texts = [d["doc_id"] for d in docs], [d["text"] for d in docs]
    del docs
    q_texts = [json.loads(line)["text"] for line in queries.open()]
    q_tokens = [tokenize(q) for q in q_texts]
    intern = Interner()
    clock = time.perf_counter()
    tokens = [intern(t) for t in texts]
    result: dict = {"tokenize_s": time.perf_counter() - clock}

    clock = time.perf_counter()
    index = BM25Index(ids, texts)
    result["goldpool_index_s"] = time.perf_counter() - clock
    shard_docs = -(-n_docs // 4)
    clock = time.perf_counter()
    sharded = BM25Index(ids, texts, shard_docs=shard_docs)
    result["sharded_index_s"] = time.perf_counter() - clock
    pairs = [(str(n), q) for n, q in enumerate(q_texts)]
    sides = {
        "goldpool": lambda: index.ranked_ids(pairs, 50),
        "sharded": lambda: sharded.ranked_ids(pairs, 50),
    }
    try:  # rank-bm25-rs is the speed baseline here, not a goldpool dependency
        import rank_bm25_rs
    except ImportError:
        rank_bm25_rs = None
    if rank_bm25_rs is not None:
        clock = time.perf_counter()
        rs = rank_bm25_rs.BM25Okapi(tokens)  # the same corpus, tokens and parameters
        result["rs_index_s"] = time.perf_counter() - clock

        def raw() -> None:  # scores only, pre-tokenised, in its fastest batch size: no selection at all
            for start in range(0, len(q_tokens), 16):
                rs.get_scores_many(q_tokens[start : start + 16])

        def raw_top50() -> None:  # the same, plus the plain NumPy top-50 a direct user would write
            for start in range(0, len(q_tokens), 16):
                for row in rs.get_scores_many(q_tokens[start : start + 16]):
                    best = np.argpartition(-row, 50)[:50]
                    best[np.argsort(-row[best], kind="stable")]

        sides.update({"rs": raw, "rs_top50": raw_top50})

    # The machine is shared: the sides alternate, who goes first rotates; each side's best
    # round is its speed, and the median of the per-round ratios is reported beside it.
    speeds: dict[str, list[float]] = {name: [] for name in sides}
    for number in range(rounds):
        names = list(sides)[number % len(sides) :] + list(sides)[: number % len(sides)]
        for name in names:
            clock = time.perf_counter()
            sides[name]()
            speeds[name].append(len(q_texts) / (time.perf_counter() - clock))
    for name, values in speeds.items():
        result[f"{name}_qps"] = max(values)
        result[f"{name}_speeds"] = values
    for name in ("rs", "rs_top50", "sharded"):
        if name in speeds:
            ratios = sorted(o / t for o, t in zip(speeds["goldpool"], speeds[name]))
            result[f"goldpool_vs_{name}_median"] = ratios[len(ratios) // 2]
    result["rounds"] = rounds
    result["shards"] = len(sharded._shards)

    try:  # bm25s is only compared here, not a goldpool dependency
        import bm25s
    except ImportError:
        bm25s = None
    if bm25s is not None:
        clock = time.perf_counter()
        s = bm25s.BM25(k1=1.5, b=0.75, method="robertson", dtype="float64")
        s.index(tokens, show_progress=False)
        result["bm25s_index_s"] = time.perf_counter() - clock
        clock = time.perf_counter()
        s.retrieve(q_tokens, k=50, show_progress=False, n_threads=0)
        result["bm25s_qps"] = len(q_tokens) / (time.perf_counter() - clock)

    clock = time.perf_counter()
    ref = rank_bm25.BM25Okapi(tokens)
    result["rank_bm25_index_s"] = time.perf_counter() - clock
    sample = q_tokens[:20]
    clock = time.perf_counter()
    ref_scores = [ref.get_scores(q) for q in sample]
    for scores in ref_scores:
        top_k(scores, 50, index.ties)
    result["rank_bm25_qps"] = len(sample) / (time.perf_counter() - clock)

    if rank_bm25_rs is not None:
        result["rs_identical"] = all(np.array_equal(rs.get_scores(q), r) for q, r in zip(sample, ref_scores))
    expected = [[ids[i] for i in top_k(r, 50, index.ties).tolist()] for r in ref_scores]
    for name, which in (("goldpool", index), ("sharded", sharded)):
        top50 = which.ranked_ids(pairs[:20], 50)
        result[f"{name}_top50_identical"] = all(top50[str(n)] == e for n, e in enumerate(expected))
        result[f"{name}_identical"] = all(np.array_equal(which.scores(t), r) for t, r in zip(q_texts[:20], ref_scores))
    if bm25s is not None:
        bm25s_scores = [s.get_scores(q) for q in sample]
        result["bm25s_max_abs_diff"] = max(float(np.max(np.abs(a - r))) for a, r in zip(bm25s_scores, ref_scores))
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def case_encode(n_texts: int, rounds: int = 5) -> dict:
    """Chunks/s of raw SentenceTransformer.encode and of goldpool's cached encode, same texts.

    The machine is shared, so the two alternate, who goes first alternates too, and each
    side's best round counts; the median of the per-round ratios is reported beside it.
    """
    import tempfile

    from sentence_transformers import SentenceTransformer

    from pooling.dense import DenseRetriever, default_model_path
    from pooling.types import search_text

    demo = ROOT / "data" / "demo" / "corpus.jsonl"
    docs = [json.loads(line) for line in demo.open()][:n_texts]
    texts = [search_text(d.get("title", ""), d["text"]) for d in docs]
    raw_model = SentenceTransformer(str(default_model_path()), device="cpu")
    raw_model.encode(texts[:64], batch_size=32)
    raw, ours = [], []
    with tempfile.TemporaryDirectory() as cache:
        retriever = DenseRetriever(cache, progress=False)
        retriever.encode(texts[:64])
        for number in range(rounds):
            keys = [f"round{number}-{i}" for i in range(len(texts))]  # fresh keys: really encodes
            for side in ((0, 1) if number % 2 == 0 else (1, 0)):
                clock = time.perf_counter()
                if side == 0:
                    raw_model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
                else:
                    retriever.embed(keys, lambda ps: [texts[p] for p in ps])
                (raw if side == 0 else ours).append(len(texts) / (time.perf_counter() - clock))
    ratios = sorted(o / r for o, r in zip(ours, raw))
    return {
        "texts": len(texts),
        "rounds": rounds,
        "raw_cps": max(raw),
        "goldpool_cps": max(ours),
        "median_ratio": ratios[len(ratios) // 2],
        "peak_rss_mb": peak_rss_mb(),
    }


def _pool_case(name: str, corpus: Path, queries: Path, *, random_vectors: bool) -> dict:
    from labeler.retrieval import build
    from labeler.store import corpus as store

    db, path = fresh_project(name)
    clock = time.perf_counter()
    build.import_corpus(db, corpus)
    build.import_queries(db, queries)
    result: dict = {"import_s": time.perf_counter() - clock, "import_rss_mb": peak_rss_mb()}
    if random_vectors:
        fill_cache_randomly(db, Path(str(path) + ".cache"))
    first = build.build_pool(db, progress=False)
    result.update({f"first_{k}": v for k, v in first.seconds.items()})
    result["first_encoded"] = first.encoded
    result["pool_entries"] = first.added
    second = build.build_pool(db, progress=False)
    result.update({f"warm_{k}": v for k, v in second.seconds.items()})
    result["warm_encoded"] = second.encoded
    result["queries"] = first.queries
    result["documents"] = store.stats(db)["documents"]
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def case_pool(n_docs: int, n_queries: int) -> dict:
    corpus, queries = synthesize(n_docs, n_queries, OUT)
    return _pool_case(f"synth-{n_docs}", corpus, queries, random_vectors=True)


def case_vaswani() -> dict:
    root = VASWANI
    result = _pool_case("vaswani", root / "corpus" / "doc-text.trec", root / "query-text.trec", random_vectors=False)
    from labeler.store import connect

    db = connect(OUT / "vaswani.db")
    relevant = set()
    for line in (root / "qrels").read_text().splitlines():
        query_id, _, doc_id, grade = line.split()
        if int(grade) > 0:
            relevant.add((query_id, doc_id))
    found: dict[str, set] = {"bm25": set(), "dense": set(), "union": set()}
    for query_id, doc_id, sources in db.conn.execute("SELECT query_id, doc_id, sources FROM pool"):
        for source in json.loads(sources):
            if source in found:
                found[source].add((query_id, doc_id))
        found["union"].add((query_id, doc_id))
    result["relevant"] = len(relevant)
    result.update({f"recall_{k}": len(v & relevant) / len(relevant) for k, v in found.items()})
    return result


def case_prepare(n_docs: int, n_queries: int) -> dict:
    """Import a synthetic corpus and fill its cache (chunks and queries): a warm project."""
    from labeler.retrieval import build as store

    corpus, queries = synthesize(n_docs, n_queries, OUT)
    db, path = fresh_project(f"warm-{n_docs}")
    clock = time.perf_counter()
    store.import_corpus(db, corpus)
    store.import_queries(db, queries)
    fill_cache_randomly(db, Path(str(path) + ".cache"), queries=True)
    return {"import_s": time.perf_counter() - clock, "peak_rss_mb": peak_rss_mb()}


def case_warm(n_docs: int) -> dict:
    """One build-pool of a prepared project, from a warm cache, alone in its process."""
    from labeler.retrieval import build
    from labeler.store import connect
    from labeler.store import corpus as store

    db = connect(OUT / f"warm-{n_docs}.db")
    result = build.build_pool(db, progress=False)
    return {**{f"s_{k}": v for k, v in result.seconds.items()}, "encoded": result.encoded,
            "documents": store.stats(db)["documents"], "queries": result.queries, "peak_rss_mb": peak_rss_mb()}


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def case_bm25_memory(n_docs: int, mode: str = "kept", n_queries: int = 1000) -> dict:
    """Memory of the BM25 index: peak while building it and searching, and what it keeps.

    ``kept``: the texts as one stream, every shard kept in memory (what a caller with a plain
    iterable gets). ``streamed``: the texts as a re-readable source, as ``build-pool`` gives
    them, so a corpus beyond one shard (:data:`pooling.bm25.SHARD_DOCS`) is searched one
    shard at a time.
    """
    from pooling.bm25 import SHARD_DOCS, BM25Index

    corpus, queries = synthesize(n_docs, n_queries, OUT)
    ids = [json.loads(line)["doc_id"] for line in corpus.open()]
    pairs = [(str(n), json.loads(line)["text"]) for n, line in enumerate(queries.open())]

    def texts() -> Iterator[str]:
        with corpus.open() as lines:
            yield from (json.loads(line)["text"] for line in lines)

    before = _rss_mb()
    clock = time.perf_counter()
    index = BM25Index(ids, texts if mode == "streamed" else texts())
    seconds = time.perf_counter() - clock
    kept = _rss_mb()
    clock = time.perf_counter()
    index.ranked_ids(pairs, 50)
    search_s = time.perf_counter() - clock
    return {"documents": len(index), "mode": mode, "shard_docs": SHARD_DOCS, "index_s": seconds, "search_s": search_s,
            "rss_before_mb": before, "rss_index_mb": kept, "peak_rss_mb": peak_rss_mb()}


def _corpus_files(name: str) -> tuple[Path, Path]:
    if name == "demo":
        return ROOT / "data" / "demo" / "corpus.jsonl", ROOT / "data" / "demo" / "queries.jsonl"
    return VASWANI / "corpus" / "doc-text.trec", VASWANI / "query-text.trec"


def case_engines(name: str, workers: int = 2) -> dict:
    """The same pool built with the local engine and with --engine ray (local Ray instance).

    Both start from an empty cache and encode every chunk and query; the encode stage's
    chunks/s of each is their throughput (Ray's includes starting the instance and actors).
    """
    from labeler.retrieval import build as store
    from pooling.dense import DenseRetriever
    from pooling.ray_engine import RayOptions

    corpus, queries = _corpus_files(name)
    result: dict = {"corpus": name, "workers": workers}
    pools, caches = [], []
    for engine in ("local", "ray"):
        db, path = fresh_project(f"engines-{name}-{engine}")
        store.import_corpus(db, corpus)
        store.import_queries(db, queries)
        options = RayOptions(num_workers=workers) if engine == "ray" else None
        built = store.build_pool(db, progress=False, ray=options)
        encode_s = built.seconds.get("encode_ray", 0.0) + built.seconds["encode"]
        result[f"{engine}_encoded"] = built.encoded
        result[f"{engine}_encode_s"] = encode_s
        result[f"{engine}_cps"] = built.encoded / encode_s
        sql = "SELECT query_id, doc_id, sources, position FROM pool ORDER BY query_id, position"
        pools.append(db.conn.execute(sql).fetchall())
        caches.append(DenseRetriever(Path(str(path) + ".cache"), progress=False).cache)
        keys = [row[0] for row in db.conn.execute("SELECT content_hash FROM documents ORDER BY doc_id")]
    a, b = (c.matrix()[c.rows(keys)] for c in caches)
    result["pool_entries"] = len(pools[0])
    result["same_pool"] = pools[0] == pools[1]
    result["max_cosine_gap"] = float(np.max(np.abs(np.sum(a * b, axis=1) - 1.0)))
    result["ray_vs_local"] = result["ray_cps"] / result["local_cps"]
    return result


def _speed_texts(n_texts: int, words: int = 80) -> list[str]:
    """``n_texts`` synthetic chunks of exactly ``words`` words (the first so long, cut there).

    Equal lengths make the rate the same wherever a run is measured: each engine orders the
    texts by length its own way (local longest first, Ray shortest first), which would
    otherwise tilt a rate measured over part of a run.
    """
    corpus, _ = synthesize(100_000, 1000, OUT)
    texts: list[str] = []
    with corpus.open() as lines:
        for line in lines:
            tokens = json.loads(line)["text"].split()
            if len(tokens) >= words:
                texts.append(" ".join(tokens[:words]))
                if len(texts) == n_texts:
                    break
    return texts


def case_engine_run(engine: str, n_texts: int, workers: int = 2) -> dict:
    """One encoding run of ``n_texts`` chunks, from a fresh process to the last vector written.

    Everything a ``build-pool`` pays is inside the clock: importing torch (and Ray), loading
    the model (in each actor), starting and shutting down the local Ray instance. The time at
    which each batch of vectors is written gives the steady-state rate: chunks written after
    the first quarter of them, over the time from then to the last write. The fixed cost is
    the rest: ``total - n / steady``.
    """
    import tempfile

    texts = _speed_texts(n_texts)
    clock = time.perf_counter()
    from pooling.dense import DenseRetriever
    from pooling.ray_engine import RayOptions, encode_missing

    keys = [f"{engine}-{i}" for i in range(n_texts)]
    stamps: list[tuple[float, int]] = []

    def fetch(positions: object) -> list[str]:
        return [texts[p] for p in positions]  # type: ignore[attr-defined]

    with tempfile.TemporaryDirectory() as cache:
        retriever = DenseRetriever(cache, progress=False)
        if engine == "local":
            encode = retriever.encode  # stamped per forward pass (it writes per 4,096 chunks)

            def stamped(batch: object, on_batch: object = None) -> np.ndarray:
                return encode(batch, on_batch=lambda n: stamps.append((time.perf_counter(), n)))  # type: ignore[arg-type]

            retriever.encode = stamped  # type: ignore[method-assign]
            retriever.embed(keys, fetch)
        else:
            write = retriever.cache.append  # stamped per batch of vectors written

            def timed(batch_keys: list[str], vectors: np.ndarray) -> None:
                write(batch_keys, vectors)
                stamps.append((time.perf_counter(), len(batch_keys)))

            retriever.cache.append = timed  # type: ignore[method-assign]
            encode_missing(retriever.cache, [(keys, fetch, "ray")], retriever.model_path,
                           RayOptions(num_workers=workers), progress=False)
        total = time.perf_counter() - clock
        assert len(retriever.cache) == n_texts
    written = np.cumsum([n for _, n in stamps])
    first = int(np.searchsorted(written, n_texts / 4))
    steady = (n_texts - written[first]) / (stamps[-1][0] - stamps[first][0])
    return {"engine": engine, "texts": n_texts, "total_s": total, "steady_cps": float(steady),
            "fixed_s": total - n_texts / steady, "cps": n_texts / total, "writes": len(stamps)}


def case_engine_speed(n_texts: int = 800, rounds: int = 4, workers: int = 2, project: int = 100_000) -> dict:
    """The local engine against --engine ray, each run in its own process, alternating.

    Per round one run of each engine (who goes first alternates). Reported: the median over
    rounds of each engine's fixed cost and steady-state chunks/s, the median per-round
    ratio of Ray's to local's throughput on the sample as measured, and projected to
    ``project`` chunks (``fixed + project / steady`` for each engine of the round).
    """
    runs: dict[str, list[dict]] = {"local": [], "ray": []}
    load = [os.getloadavg()[0]]
    for number in range(rounds):
        for engine in (("local", "ray") if number % 2 == 0 else ("ray", "local")):
            runs[engine].append(run_case("engine_run", engine, n_texts, workers))
        load.append(os.getloadavg()[0])

    def median(values: list[float]) -> float:
        return float(np.median(values))

    def projected(run: dict) -> float:
        return project / (run["fixed_s"] + project / run["steady_cps"])

    result: dict = {"texts": n_texts, "rounds": rounds, "workers": workers, "project": project,
                    "load_1min": [round(x, 2) for x in load], "runs": runs}
    for engine, done in runs.items():
        result[f"{engine}_fixed_s"] = median([r["fixed_s"] for r in done])
        result[f"{engine}_steady_cps"] = median([r["steady_cps"] for r in done])
        result[f"{engine}_cps"] = median([r["cps"] for r in done])
    pairs = list(zip(runs["ray"], runs["local"]))
    result["ratio_sample"] = median([r["cps"] / loc["cps"] for r, loc in pairs])
    result["ratio_steady"] = median([r["steady_cps"] / loc["steady_cps"] for r, loc in pairs])
    result["ratio_projected"] = median([projected(r) / projected(loc) for r, loc in pairs])
    return result


CASES = {"engines": case_engines, "engine_speed": case_engine_speed, "engine_run": case_engine_run, "bm25": case_bm25, "encode": case_encode, "pool": case_pool, "vaswani": case_vaswani,
         "prepare": case_prepare, "warm": case_warm, "bm25_memory": case_bm25_memory}


def run_case(name: str, *args: object) -> dict:
    command = [sys.executable, __file__, "--case", name, *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"case {name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def _pool_row(label: str, r: dict, cps: float, measured_first: bool) -> list[str]:
    first = r["first_total"] if measured_first else r["first_total"] + r["documents"] / cps
    return [
        label,
        f"{r['documents']:,}",
        f"{r['queries']:,}",
        f"{r['import_s']:.1f}",
        f"{r['first_bm25_index']:.1f}",
        f"{r['queries'] / r['first_bm25_search']:,.0f}",
        f"{r['first_dense_search']:.1f}",
        f"{first:,.1f}" + ("" if measured_first else " (proj.)"),
        f"{r['warm_total']:.1f}",
        f"{first / r['warm_total']:.0f}x",
        f"{r['peak_rss_mb']:,.0f}",
    ]


def _same(r: dict, name: str) -> str:
    return ("identical" if r[f"{name}_identical"] else "DIFFERENT") + (", same top-50" if r[f"{name}_top50_identical"] else ", OTHER TOP-50")


def _print_bm25(bm25: dict, n_docs: int, n_queries: int) -> None:
    print(f"BM25 backends, synthetic {n_docs:,} chunks, top-50 over {n_queries:,} queries (rank-bm25: 20)")
    rows = [["rank-bm25 (oracle)", f"{bm25['rank_bm25_index_s']:.1f}", f"{bm25['rank_bm25_qps']:,.1f}", "-"]]
    if "rs_qps" in bm25:
        rows += [
            ["rank-bm25-rs (scores only)", f"{bm25['rs_index_s']:.1f}", f"{bm25['rs_qps']:,.0f}",
             "identical" if bm25["rs_identical"] else "DIFFERENT"],
            ["rank-bm25-rs + NumPy top-50", "-", f"{bm25['rs_top50_qps']:,.0f}", "identical"],
        ]
    rows += [
        ["goldpool (inverted index, one shard)", f"{bm25['goldpool_index_s']:.1f}", f"{bm25['goldpool_qps']:,.0f}", _same(bm25, "goldpool")],
        [f"goldpool, {bm25['shards']} shards", f"{bm25['sharded_index_s']:.1f}", f"{bm25['sharded_qps']:,.0f}", _same(bm25, "sharded")],
    ]
    if "bm25s_qps" in bm25:
        rows.append(["bm25s (robertson, float64)", f"{bm25['bm25s_index_s']:.1f}", f"{bm25['bm25s_qps']:,.0f}",
                     f"max |diff| {bm25['bm25s_max_abs_diff']:.3g}"])
    print(_table(["backend", "index s", "top-50 q/s", "scores vs rank-bm25"], rows))
    line = f"goldpool / rank-bm25: {bm25['goldpool_qps'] / bm25['rank_bm25_qps']:,.0f}x"
    if "rs_qps" in bm25:
        line += (f"; goldpool / rank-bm25-rs scores only: median per-round {bm25['goldpool_vs_rs_median']:.2f} (best rounds "
                 f"{bm25['goldpool_qps'] / bm25['rs_qps']:.2f}); / rank-bm25-rs + NumPy top-50: median per-round "
                 f"{bm25['goldpool_vs_rs_top50_median']:.2f}")
    print(line + f"; one shard / {bm25['shards']} shards: median {bm25['goldpool_vs_sharded_median']:.2f}; "
          f"{bm25['rounds']} rotating rounds")
    print(f"(tokenising the corpus: {bm25['tokenize_s']:.1f} s, included in goldpool's index time)\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--million", action="store_true", help="also pool 1M chunks x 1,000 queries")
    parser.add_argument("--docs", type=int, default=100_000, help="synthetic corpus size")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--encode-texts", type=int, default=200, help="demo chunks encoded per round")
    parser.add_argument("--no-vaswani", action="store_true")
    parser.add_argument("--ray", action="store_true", help="also build the demo (and Vaswani) pool with --engine ray")
    parser.add_argument("--speed-texts", type=int, default=800, help="chunks per engine run in the Ray speed case")
    parser.add_argument("--speed-rounds", type=int, default=4, help="alternating local/Ray rounds in the Ray speed case")
    parser.add_argument("--case", choices=sorted(CASES), help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    options = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if options.case:
        print(json.dumps(CASES[options.case](*(int(a) if a.isdigit() else a for a in options.args))))
        return

    bm25 = run_case("bm25", options.docs, options.queries)
    _print_bm25(bm25, options.docs, options.queries)

    enc = run_case("encode", options.encode_texts)
    cps = enc["goldpool_cps"]
    print(f"Encode, all-MiniLM-L6-v2, {enc['texts']:,} demo chunks: goldpool {cps:,.1f} chunks/s, "
          f"raw SentenceTransformer.encode {enc['raw_cps']:,.1f} chunks/s (best of {enc['rounds']} alternating rounds): "
          f"ratio {cps / enc['raw_cps']:.3f}, median per-round ratio {enc['median_ratio']:.3f}\n")

    header = ["corpus", "docs", "queries", "import s", "BM25 index s", "BM25 top-50 q/s", "dense top-50 s",
              "first build s", "warm rebuild s", "speed-up", "peak RSS MB"]
    rows = [_pool_row(f"synthetic {options.docs:,}", run_case("pool", options.docs, options.queries), cps, False)]
    vaswani = None
    if not options.no_vaswani and VASWANI.is_dir():
        vaswani = run_case("vaswani")
        rows.append(_pool_row("Vaswani", vaswani, cps, True))
    print(_table(header, rows))
    print("(proj.: the synthetic caches hold random vectors; their first build adds the encode time "
          "projected from goldpool's chunks/s above)")
    if vaswani:
        print(f"\nVaswani pool recall at depth 50 ({vaswani['relevant']:,} known relevant (query, doc) pairs): "
              f"BM25 {vaswani['recall_bm25']:.3f}, dense {vaswani['recall_dense']:.3f}, "
              f"union {vaswani['recall_union']:.3f}; pool {vaswani['pool_entries']:,} entries")
    _warm_builds([options.docs] + ([1_000_000] if options.million else []), options.queries, cps)
    if options.ray:
        _engines(["demo"] + (["vaswani"] if not options.no_vaswani and VASWANI.is_dir() else []))
        _engine_speed(options.speed_texts, options.speed_rounds)


def _warm_builds(sizes: list[int], n_queries: int, cps: float) -> None:
    """build-pool from a warm cache, each alone in its process: time and peak RSS."""
    rows = []
    for n in sizes:
        prepared = run_case("prepare", n, n_queries)
        warm = run_case("warm", n)
        memory = {mode: run_case("bm25_memory", n, mode) for mode in ("kept", "streamed")}
        rows.append([f"{n:,}", f"{n_queries:,}", f"{prepared['import_s']:.0f}", f"{warm['s_total']:.0f}",
                     f"{warm['s_bm25_index']:.0f}", f"{warm['s_bm25_search']:.0f}", f"{warm['s_dense_search']:.0f}",
                     f"{warm['peak_rss_mb']:,.0f}",
                     *(f"{m['peak_rss_mb']:,.0f} / {m['rss_index_mb'] - m['rss_before_mb']:,.0f}" for m in memory.values()),
                     f"{n / cps / 3600:.1f} h"])
    print("\nbuild-pool from a warm cache (synthetic chunks, random unit vectors), each in a fresh process")
    print(_table(["chunks", "queries", "import+fill s", "build s", "BM25 index s", "BM25 search s", "dense search s",
                  "peak RSS MB", "BM25 kept: peak / kept MB", "BM25 streamed: peak / kept MB", "encode would take"], rows))


def _engines(corpora: list[str]) -> None:
    """The local engine and --engine ray (a local 2-CPU instance) on real corpora."""
    rows = []
    for name in corpora:
        r = run_case("engines", name)
        rows.append([name, f"{r['local_encoded']:,}", f"{r['local_cps']:.1f}", f"{r['ray_cps']:.1f}",
                     f"{r['ray_vs_local']:.2f}", "identical" if r["same_pool"] else "DIFFERENT",
                     f"{r['pool_entries']:,}", f"{r['max_cosine_gap']:.1e}"])
    print("\nLocal engine vs --engine ray (local instance, 2 actors), empty cache, same run")
    print(_table(["corpus", "encoded", "local chunks/s", "Ray chunks/s", "Ray / local", "pool", "entries",
                  "max |cosine - 1|"], rows))


def _engine_speed(n_texts: int, rounds: int) -> None:
    """Fixed cost and steady-state rate of each engine, and Ray / local projected to 100k chunks."""
    r = run_case("engine_speed", n_texts, rounds)
    print(f"\nEncoding speed, local engine vs --engine ray (local instance, 2 actors): {r['texts']:,} synthetic "
          f"chunks of 80 words per run, each run in a fresh process, {r['rounds']} alternating rounds, medians; "
          f"1-min load average {min(r['load_1min']):.1f}-{max(r['load_1min']):.1f}")
    rows = [[engine, f"{r[f'{engine}_fixed_s']:.1f}", f"{r[f'{engine}_steady_cps']:.1f}", f"{r[f'{engine}_cps']:.1f}"]
            for engine in ("local", "ray")]
    print(_table(["engine", "fixed s", "steady chunks/s", "chunks/s on the sample"], rows))
    print(f"Ray / local, median per round: {r['ratio_sample']:.2f} on the sample, {r['ratio_steady']:.2f} steady, "
          f"{r['ratio_projected']:.2f} projected to {r['project']:,} chunks (fixed + chunks / steady rate)")


if __name__ == "__main__":
    main()
