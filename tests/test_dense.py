"""Dense retrieval: the real default model, exact blocked top-k, and a cache that spares re-encoding."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pooling.dense import DenseRetriever, default_model_path, top_k_cosine

PAIRS = [
    ("How do I append an item to a list?", "list.append(x) adds an item to the end of the list."),
    ("Open a file for reading", "The open() function returns a file object; mode 'r' opens it for reading."),
    ("What does a dictionary map?", "A dictionary maps hashable keys to arbitrary values."),
    ("How are exceptions raised?", "The raise statement throws an exception object."),
    ("Loop over numbers", "The for statement with range() iterates over a sequence of integers."),
    ("Define a function", "The def keyword introduces a function definition with its parameters."),
    ("Import a module", "The import statement loads a module and binds its name."),
    ("Sort items", "sorted() returns a new list with the items in ascending order."),
]
FILLER = [
    "The mitochondria is the powerhouse of the cell.",
    "Mount Everest is the highest mountain above sea level.",
    "Bread is made from flour, water, yeast and salt.",
    "The violin has four strings tuned in fifths.",
    "Rain forms when water vapour condenses into droplets.",
    "Chess is played on a board of sixty-four squares.",
    "The Nile flows north into the Mediterranean Sea.",
    "Photosynthesis turns light into chemical energy.",
    "A haiku has three lines of five, seven and five syllables.",
    "Copper conducts electricity well.",
    "Penguins live mostly in the southern hemisphere.",
    "The Moon orbits the Earth in about twenty-seven days.",
]
TEXTS = [doc for _, doc in PAIRS] + FILLER
KEYS = [f"hash-{i}" for i in range(len(TEXTS))]


@pytest.fixture(scope="module")
def encoded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """A cache filled once with the real default model, and the rows it gave the texts."""
    cache = tmp_path_factory.mktemp("cache")
    retriever = DenseRetriever(cache, progress=False)
    rows = retriever.embed(KEYS, lambda positions: [TEXTS[p] for p in positions])
    assert retriever.encoded == len(TEXTS)
    return cache, rows


def test_embeddings_equal_raw_sentence_transformers(encoded: tuple[Path, np.ndarray]) -> None:
    from sentence_transformers import SentenceTransformer

    cache, rows = encoded
    raw = SentenceTransformer(str(default_model_path()), device="cpu").encode(TEXTS, normalize_embeddings=True)
    stored = DenseRetriever(cache, progress=False).cache.matrix()[rows]
    assert stored.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(stored, raw, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-5)


def test_each_question_finds_its_answer_first(encoded: tuple[Path, np.ndarray]) -> None:
    cache, rows = encoded
    retriever = DenseRetriever(cache, progress=False)
    questions = [q for q, _ in PAIRS]
    q_rows = retriever.embed([f"q{i}" for i in range(len(questions))], lambda ps: [questions[p] for p in ps])
    best, scores = retriever.search(q_rows, rows, 3, np.arange(len(TEXTS)))
    assert best[:, 0].tolist() == list(range(len(PAIRS)))
    assert np.all(scores[:, 0] > scores[:, 1])


def test_warm_cache_encodes_nothing_and_loads_no_model(encoded: tuple[Path, np.ndarray], monkeypatch: pytest.MonkeyPatch) -> None:
    from sentence_transformers import SentenceTransformer

    calls: list[int] = []
    original = SentenceTransformer.encode
    monkeypatch.setattr(SentenceTransformer, "encode", lambda self, texts, **kw: calls.append(len(texts)) or original(self, texts, **kw))
    cache, rows = encoded
    warm = DenseRetriever(cache, progress=False)
    assert np.array_equal(warm.embed(KEYS, lambda ps: pytest.fail("fetched texts on a warm cache")), rows)
    assert calls == [] and warm._model is None
    # One changed chunk: only it is encoded.
    changed = KEYS[:-1] + ["hash-new"]
    texts = TEXTS[:-1] + ["Octopuses have three hearts."]
    new_rows = warm.embed(changed, lambda ps: [texts[p] for p in ps])
    assert calls == [1] and warm.encoded == 1
    assert np.array_equal(new_rows[:-1], rows[:-1]) and new_rows[-1] == len(warm.cache) - 1


def test_build_pool_twice_hits_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labeler.retrieval import build
    from labeler.store import init_db

    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"doc_id": k, "text": t}) + "\n" for k, t in zip(KEYS, TEXTS)))
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"query_id": f"q{i}", "text": q}) + "\n" for i, (q, _) in enumerate(PAIRS)))
    db = init_db(tmp_path / "p.db")
    build.import_corpus(db, tmp_path / "c.jsonl")
    build.import_queries(db, tmp_path / "q.jsonl")
    first = build.build_pool(db, bm25_depth=0, dense_depth=2, progress=False)
    assert first.encoded == len(TEXTS) + len(PAIRS)
    assert (tmp_path / "p.db.cache").is_dir()
    second = build.build_pool(db, bm25_depth=0, dense_depth=3, progress=False)
    assert second.encoded == 0
    assert second.added == len(PAIRS)  # one more document per query at depth 3
    top = db.conn.execute("SELECT query_id, doc_id FROM pool WHERE position = 1 ORDER BY query_id").fetchall()
    assert top == [(f"q{i}", KEYS[i]) for i in range(len(PAIRS))]


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 5),
    n=st.integers(0, 60),
    k=st.integers(1, 12),
    block=st.integers(1, 17),
    seed=st.integers(0, 10_000),
)
def test_blocked_top_k_equals_brute_force(m: int, n: int, k: int, block: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n + 3, 8)).astype(np.float32)
    rows = rng.permutation(n + 3)[:n]
    queries = rng.standard_normal((m, 8)).astype(np.float32)
    ties = np.arange(n)
    best, scores = top_k_cosine(queries, matrix, rows, k, ties, block=block)
    full = queries @ matrix[rows].T
    expected = np.argsort(-full, axis=1, kind="stable")[:, : min(k, n)]
    np.testing.assert_allclose(scores, np.take_along_axis(full, expected, axis=1), rtol=1e-5, atol=1e-6)
    assert best.shape == expected.shape
    np.testing.assert_allclose(np.take_along_axis(full, best, axis=1), scores, rtol=1e-5, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 4),
    n=st.integers(1, 70),
    k=st.integers(1, 15),
    block=st.integers(1, 23),
    seed=st.integers(0, 10_000),
)
def test_blocked_top_k_is_the_full_sort_ties_included(m: int, n: int, k: int, block: int, seed: int) -> None:
    # Small integer vectors: every dot product is exact in float32 and ties are frequent, so
    # the blocked search must pick exactly the documents a full sort picks at the cut.
    rng = np.random.default_rng(seed)
    matrix = rng.integers(-1, 2, size=(n + 5, 4)).astype(np.float32)
    rows = rng.permutation(n + 5)[:n]
    queries = rng.integers(-1, 2, size=(m, 4)).astype(np.float32)
    ties = rng.permutation(n)
    best, scores = top_k_cosine(queries, matrix, rows, k, ties, block=block)
    full = queries @ matrix[rows].T
    for q in range(m):
        expected = sorted(range(n), key=lambda i: (-full[q, i], -ties[i]))[: min(k, n)]
        assert best[q].tolist() == expected
        assert scores[q].tolist() == full[q, expected].tolist()


def test_search_of_a_memory_mapped_cache_equals_the_unblocked_search(tmp_path: Path) -> None:
    from pooling.dense import EmbeddingCache

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((500, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cache = EmbeddingCache(tmp_path, "model-x", "path/to/model")
    cache.append([f"k{i}" for i in range(500)], vectors)
    queries = vectors[:7] + 0.1 * rng.standard_normal((7, 16)).astype(np.float32)
    ties = np.arange(450)
    for rows in (np.arange(50, 500), rng.permutation(500)[:450]):  # a contiguous and a scattered corpus
        one, one_s = top_k_cosine(queries, vectors, rows, 20, ties, block=len(rows))
        blocked, blocked_s = top_k_cosine(queries, cache.matrix(), rows, 20, ties, block=37)
        assert isinstance(cache.matrix(), np.memmap)
        np.testing.assert_array_equal(blocked, one)
        np.testing.assert_allclose(blocked_s, one_s, rtol=0, atol=1e-6)


def test_cache_stores_a_repeated_key_once_and_survives_reopening(tmp_path: Path) -> None:
    from pooling.dense import EmbeddingCache

    cache = EmbeddingCache(tmp_path, "model-x", "path/to/model")
    vectors = np.eye(3, 4, dtype=np.float32)
    cache.append(["a", "b", "a"], vectors)
    cache.append(["b", "c"], vectors[:2] * 2)
    assert cache.rows(["a", "b", "c", "zz"]).tolist() == [0, 1, 2, -1]
    reopened = EmbeddingCache(tmp_path, "model-x", "path/to/model")
    expected = np.stack([vectors[0], vectors[1], vectors[1] * 2])
    np.testing.assert_array_equal(reopened.matrix(), expected)


ROW = 4 * 4  # bytes of one float32 row of dimension 4


@pytest.mark.parametrize(
    ("vector_tail", "keys_tail", "kept"),
    [
        (2 * ROW, b"", []),  # a crash after the vectors of two keys, before their keys
        (ROW + 5, b"", []),  # ... and the second vector row cut short
        (2 * ROW, b"ccc\ndd", ["ccc"]),  # both vectors whole, the second key line cut short
        (ROW - 1, b"ccc\nddd\n", []),  # whole key lines whose vector rows were cut short
    ],
)
def test_cache_cut_short_mid_write_keeps_keys_and_vectors_aligned(
    tmp_path: Path, vector_tail: int, keys_tail: bytes, kept: list[str]
) -> None:
    from pooling.dense import EmbeddingCache

    vectors = np.arange(1, 17, dtype=np.float32).reshape(4, 4)
    torn = np.full((2, 4), -1, dtype=np.float32)
    cache = EmbeddingCache(tmp_path, "model-x", "path/to/model")
    cache.append(["a", "b"], vectors[:2])
    directory = tmp_path / "model-x"
    with (directory / "vectors.f32").open("ab") as out:
        out.write(torn.tobytes()[:vector_tail])
    with (directory / "keys.txt").open("ab") as out:
        out.write(keys_tail)

    reopened = EmbeddingCache(tmp_path, "model-x", "path/to/model")
    assert len(reopened) == 2 + len(kept)
    assert reopened.rows(["a", "b", "ccc", "ddd"]).tolist() == [0, 1, 2 if kept else -1, -1]
    assert (directory / "vectors.f32").stat().st_size == (2 + len(kept)) * ROW
    assert (directory / "keys.txt").read_bytes() == b"".join(f"{k}\n".encode() for k in ["a", "b", *kept])
    # Later chunks land on the rows their keys name, now and after reopening.
    reopened.append(["ccc", "ddd"], vectors[2:])
    expected = np.concatenate([vectors[:2], torn[:1] if kept else vectors[2:3], vectors[3:]])
    for cache in (reopened, EmbeddingCache(tmp_path, "model-x", "path/to/model")):
        rows = cache.rows(["a", "b", "ccc", "ddd"])
        np.testing.assert_array_equal(cache.matrix()[rows], expected)


def test_cache_append_after_a_failed_write_overwrites_the_torn_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pooling import dense

    vectors = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    cache = dense.EmbeddingCache(tmp_path, "model-x", "path/to/model")
    cache.append(["a"], vectors[:1])
    original = dense._write_at

    def vectors_then_crash(path: Path, offset: int, data: bytes) -> None:
        original(path, offset, data)
        if path.suffix == ".f32":
            raise KeyboardInterrupt

    monkeypatch.setattr(dense, "_write_at", vectors_then_crash)
    with pytest.raises(KeyboardInterrupt):
        cache.append(["b"], np.full((1, 4), -1, dtype=np.float32))
    monkeypatch.setattr(dense, "_write_at", original)
    cache.append(["b", "c"], vectors[1:])
    reopened = dense.EmbeddingCache(tmp_path, "model-x", "path/to/model")
    np.testing.assert_array_equal(reopened.matrix()[reopened.rows(["a", "b", "c"])], vectors)


def test_a_directory_that_is_no_model_is_refused(tmp_path: Path) -> None:
    from pooling import PoolingError

    with pytest.raises(PoolingError, match=r"not a sentence-transformers model directory \(no modules\.json"):
        DenseRetriever(tmp_path / "cache", tmp_path)


def test_the_encoding_progress_bar_moves_per_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pooling.dense as dense

    steps: list[int] = []

    class Bar:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def __enter__(self) -> "Bar":
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def update(self, n: int) -> None:
            steps.append(n)

    monkeypatch.setattr(dense, "tqdm", Bar)
    # 20 texts, batches of 8, one chunk of 4096: the bar moves 8, 8, 4, not 20 at the end.
    retriever = DenseRetriever(tmp_path / "cache", progress=True, batch_size=8)
    rows = retriever.embed(KEYS, lambda positions: [TEXTS[p] for p in positions])
    assert steps == [8, 8, 4]
    from sentence_transformers import SentenceTransformer

    raw = SentenceTransformer(str(default_model_path()), device="cpu").encode(TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(retriever.cache.matrix()[rows], raw, atol=1e-5)
