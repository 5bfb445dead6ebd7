"""Encoding on Ray Data: the chunks the embedding cache lacks, on a pool of model actors.

The texts the cache has not seen are read from the caller in blocks, each block put into
Ray's object store as an Arrow table; the blocks make up one Ray Dataset, which
``map_batches`` sends to a pool of actors that each load the sentence-transformers model once
(on a GPU when ``num_gpus`` > 0, on one CPU otherwise) and return unit vectors. The driver
appends every batch of vectors to the same content-addressed :class:`~pooling.dense.EmbeddingCache`
as soon as it arrives, so:

* a later plain (local) build, or another cluster run, reuses the vectors;
* a run that is killed keeps everything written so far, and the next run encodes the rest.

Without an address a local Ray instance is started with ``num_workers`` CPUs and shut down at
the end, so the same command works on a laptop. Ray is an optional dependency
(``pip install 'goldpool[ray]'``) imported only here, inside the functions.

Vectors equal the local engine's to float rounding (the model sees the texts in other
batches; padding within a batch is masked out): cosines agree within 1e-5.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from pooling import PoolingError
from pooling.dense import EmbeddingCache, best_k, top_k_cosine

INSTALL_HINT = "--engine ray needs Ray: pip install 'goldpool[ray]'"


@dataclass(frozen=True, slots=True)
class RayOptions:
    """How to run the encoding on Ray.

    Attributes:
        address: a running cluster (``ray://host:10001``, ``auto``...); ``None`` starts a
            local instance.
        num_workers: encoding actors; also the CPUs of a local instance. Default: the
            local CPU count (on a cluster with GPUs, one actor per GPU is usual).
        num_gpus: GPUs per actor (a fraction shares a GPU); 0 encodes on CPU.
        batch_size: texts per forward pass on an actor.
        block_size: texts per block read from the store into the object store.
        search: run the dense top-k on Ray too (:func:`search_sharded`), one actor per
            corpus shard; the cache must be readable where the actors run.
    """

    address: str | None = None
    num_workers: int | None = None
    num_gpus: float = 0.0
    batch_size: int = 32
    block_size: int = 4096
    search: bool = False

    def workers(self) -> int:
        """Actors to start."""
        return self.num_workers or os.cpu_count() or 1


def require_ray() -> Any:
    """Import Ray Data, or fail with one line saying what to install."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as exc:
        raise PoolingError(INSTALL_HINT) from exc
    return ray


def check(options: RayOptions) -> None:
    """Refuse impossible options and a missing Ray before any work starts."""
    if options.num_workers is not None and options.num_workers < 1:
        raise PoolingError(f"--num-workers must be 1 or more, not {options.num_workers}")
    if options.num_gpus < 0:
        raise PoolingError(f"--num-gpus must be 0 or more, not {options.num_gpus}")
    if options.batch_size < 1:
        raise PoolingError(f"--batch-size must be 1 or more, not {options.batch_size}")
    require_ray()


class Encoder:
    """A Ray Data actor: holds the model once and encodes batches of ``{"key", "text"}``."""

    def __init__(self, model_path: str, batch_size: int, gpu: bool) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        if not gpu:
            # Ray gives a CPU actor OMP_NUM_THREADS = its CPUs; torch must follow it too.
            torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
        self.model = SentenceTransformer(model_path, device="cuda" if gpu else "cpu", local_files_only=True)
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = self.model.encode(
            [str(t) for t in batch["text"]],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return {"key": batch["key"], "vector": np.asarray(vectors, dtype=np.float32)}


def _missing(cache: EmbeddingCache, keys: Sequence[str]) -> list[int]:
    """Positions of the keys the cache lacks, each distinct key once."""
    first: dict[str, int] = {}
    for position in np.flatnonzero(cache.rows(keys) < 0).tolist():
        first.setdefault(keys[position], position)
    return list(first.values())


def _start(ray: Any, options: RayOptions) -> bool:
    """Connect to the cluster, or start a local instance; True when this call started it."""
    if ray.is_initialized():
        return False
    quiet = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": False}
    try:
        if options.address:
            ray.init(address=options.address, **quiet)
        else:
            _start_local(ray, options.workers(), quiet)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = options.address or "a local instance"
        raise PoolingError(f"cannot start Ray on {where}: {exc}".splitlines()[0]) from exc
    return True


def _start_local(ray: Any, cpus: int, quiet: dict[str, Any]) -> None:
    """Start a local instance whose workers import this package from where the driver does.

    The path goes into the environment the instance inherits, not into a ``runtime_env``:
    workers for a job's runtime env differ from the ones Ray starts ahead at launch, so a
    runtime env made it start a second set of idle workers (four Python processes
    importing Ray instead of two, on a 2-core machine that is also loading the model).
    Measured on a loaded 2-core machine, a whole run of 96 chunks (``bench/pooling.py
    --case engine_run ray 96``) took 50 s instead of 62 s, median of 4 alternating rounds.
    """
    here = str(Path(__file__).resolve().parent.parent)
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, before) if p)
    try:
        ray.init(num_cpus=cpus, **quiet)
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def _blocks(ray: Any, keys: Sequence[str], todo: list[int], fetch: Callable[[Sequence[int]], Sequence[str]], size: int) -> list[Any]:
    """Read the texts to encode in blocks into the object store, one Arrow table per block.

    Within a window of 16 blocks the texts are ordered by length before they are cut into
    blocks, so a batch pads its texts to about their own length (the local engine gets the
    same from sentence-transformers sorting each 4,096 texts it encodes).
    """
    import pyarrow as pa

    refs = []
    window = 16 * size
    for start in range(0, len(todo), window):
        positions = todo[start : start + window]
        texts = [text for lo in range(0, len(positions), size) for text in fetch(positions[lo : lo + size])]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for lo in range(0, len(order), size):
            chunk = order[lo : lo + size]
            refs.append(ray.put(pa.table({"key": [keys[positions[i]] for i in chunk], "text": [texts[i] for i in chunk]})))
    return refs


def _batches(ray: Any, refs: list[Any], block: int, model_path: str, options: RayOptions) -> Iterator[dict[str, np.ndarray]]:
    """Encoded batches, as the actors finish them (in no particular order)."""
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    gpu = options.num_gpus > 0
    dataset = ray.data.from_arrow_refs(refs).map_batches(
        Encoder,
        fn_constructor_args=(model_path, options.batch_size, gpu),
        batch_size=min(16 * options.batch_size, block),
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=options.workers()),
        num_gpus=options.num_gpus if gpu else None,
        num_cpus=None if gpu else 1,
    )
    yield from dataset.iter_batches(batch_size=None, batch_format="numpy")


#: texts to encode: their keys, a reader of the texts at given positions, a progress label
Job = tuple[Sequence[str], Callable[[Sequence[int]], Sequence[str]], str]


def encode_missing(cache: EmbeddingCache, jobs: Sequence[Job], model_path: str, options: RayOptions, *, progress: bool = True) -> int:
    """Encode on Ray every text whose key the cache lacks, writing each batch as it arrives.

    Ray is started (or joined) only when some text is missing, once for all ``jobs``.

    Args:
        cache: the embedding cache of ``model_path``.
        jobs: ``(keys, fetch, label)``: content hash of each text; the texts at given
            positions of ``keys`` (called a block at a time); the progress label.
        model_path: the sentence-transformers model directory, readable on every worker.
        options: cluster, actors, GPUs, batch size.
        progress: show chunks encoded / total, rate and ETA.

    Returns:
        How many texts were encoded.
    """
    todo = [(keys, fetch, label, missing) for keys, fetch, label in jobs if (missing := _missing(cache, keys))]
    if not todo:
        return 0
    ray = require_ray()
    done = 0
    # An actor that cannot load the model or dies ends the run; what was written stays cached.
    with _on_ray(ray, options, "encoding"):
        for keys, fetch, label, missing in todo:
            done += _encode(ray, cache, keys, fetch, missing, model_path, options, progress, label)
    return done


@contextlib.contextmanager
def _on_ray(ray: Any, options: RayOptions, what: str) -> Iterator[None]:
    """Ray started (a local instance unless connected), its errors one line, and stopped after."""
    started = _start(ray, options)
    try:
        yield
    except ray.exceptions.RayError as exc:
        first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise PoolingError(f"{what} on Ray failed: {first}") from exc
    finally:
        if started:
            ray.shutdown()


def _encode(
    ray: Any,
    cache: EmbeddingCache,
    keys: Sequence[str],
    fetch: Callable[[Sequence[int]], Sequence[str]],
    missing: list[int],
    model_path: str,
    options: RayOptions,
    progress: bool,
    label: str,
) -> int:
    # Enough blocks that every actor has work, none so big that a batch holds up the rest.
    block = max(options.batch_size, min(options.block_size, -(-len(missing) // (4 * options.workers()))))
    refs = _blocks(ray, keys, missing, fetch, block)
    clock = time.perf_counter()
    done = 0
    with tqdm(total=len(missing), desc=label, unit="chunk", disable=not progress, smoothing=0.1) as bar:
        for batch in _batches(ray, refs, block, model_path, options):
            cache.append([str(k) for k in batch["key"]], batch["vector"])
            done += len(batch["key"])
            bar.update(len(batch["key"]))
    if progress:
        seconds = time.perf_counter() - clock
        tqdm.write(f"{label}: {done} in {seconds:.1f} s ({done / max(seconds, 1e-9):.1f}/s)")
    return done


class ShardSearcher:
    """A Ray actor: exact top-k over one shard of the memory-mapped embedding cache.

    Each actor maps ``vectors.f32`` itself (the path must be readable where the actor runs:
    the same machine, or a file system every node shares) and searches its shard with the
    local :func:`~pooling.dense.top_k_cosine`, so its memory stays one block of vectors.
    """

    def __init__(self, vectors: str, count: int, dim: int) -> None:
        self.matrix = np.memmap(vectors, dtype=np.float32, mode="r", shape=(count, dim))

    def search(self, queries: np.ndarray, rows: np.ndarray, k: int, ties: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` of ``queries`` over ``self.matrix[rows]``: positions into ``rows``, scores."""
        return top_k_cosine(queries, self.matrix, rows, k, ties, block=block)


def shard_bounds(n: int, shards: int, block: int) -> list[tuple[int, int]]:
    """Cut ``n`` corpus positions into at most ``shards`` runs of whole blocks.

    Every shard starts at a multiple of ``block``, so it multiplies exactly the blocks the
    local search does and every score is the same float.

    >>> shard_bounds(10, 2, 3)
    [(0, 6), (6, 10)]
    """
    blocks = -(-n // block)
    per = -(-blocks // max(1, shards)) * block
    return [(lo, min(lo + per, n)) for lo in range(0, n, per)]


def search_sharded(
    queries: np.ndarray,
    cache: EmbeddingCache,
    rows: np.ndarray,
    k: int,
    ties: np.ndarray,
    options: RayOptions,
    *,
    block: int = 16384,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact dense top-k on Ray: one actor per corpus shard, per-shard top-k merged exactly.

    The corpus positions are cut into ``options.workers()`` shards of whole blocks
    (:func:`shard_bounds`); each actor returns its shard's top ``k`` ordered as the local
    search orders (score descending, then ``ties`` descending), and the driver keeps the
    best ``k`` of their union with :func:`~pooling.dense.best_k`. Every document of the
    global top ``k`` is in its own shard's top ``k`` (fewer than ``k`` documents of its shard
    come before it), and the scores are the same floats, so the result equals
    :func:`~pooling.dense.top_k_cosine` over the whole corpus, ties at the cut included.

    Args:
        queries: (m x d) unit vectors.
        cache: the embedding cache holding the corpus rows.
        rows: (n,) cache rows of the corpus, in corpus order.
        k: documents per query.
        ties: (n,) tie-break keys; larger wins among equal scores.
        options: cluster and number of actors (shards).
        block: corpus rows multiplied at once in each actor.

    Returns:
        ``(indices, scores)``: (m x min(k, n)) positions into ``rows`` and their cosines.
    """
    n = rows.shape[0]
    if min(k, n) <= 0 or queries.shape[0] == 0 or cache.dim is None:
        return top_k_cosine(queries, cache.matrix(), rows, k, ties, block=block)
    ray = require_ray()
    with _on_ray(ray, options, "search"):
        bounds = shard_bounds(n, options.workers(), block)
        actor = ray.remote(num_cpus=1)(ShardSearcher)
        path = str(cache.directory / "vectors.f32")
        searchers = [actor.remote(path, len(cache), cache.dim) for _ in bounds]
        shared = ray.put(np.ascontiguousarray(queries, dtype=np.float32))
        parts = ray.get([s.search.remote(shared, rows[lo:hi], k, ties[lo:hi], block) for s, (lo, hi) in zip(searchers, bounds)])
    found = np.concatenate([index + lo for (index, _), (lo, _) in zip(parts, bounds)], axis=1)
    scores = np.concatenate([score for _, score in parts], axis=1)
    return best_k(scores, found, min(k, n), ties)
