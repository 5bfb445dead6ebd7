"""A corpus import holds the write lock only in short transactions, and still leaves the
project as it was when it fails half-way (an error, a full disk, ``kill -9``)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlite_utils

from labeler.retrieval import build
from labeler.store import connect, corpus, init_db
from pooling.readers import read_corpus
from pooling.types import Document

N_DOCS = 40


def _corpus(path: Path, prefix: str = "d", n: int = N_DOCS) -> Path:
    path.write_text(
        "".join(json.dumps({"doc_id": f"{prefix}{i:03d}", "text": f"text number {i} of {prefix}"}) + "\n" for i in range(n)),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> sqlite_utils.Database:
    monkeypatch.setattr(corpus, "BATCH", 5)
    store = init_db(tmp_path / "p.db")
    build.import_corpus(store, _corpus(tmp_path / "first.jsonl", "old", 3))
    return store


def _visible_ids(path: Path) -> list[str]:
    with connect(path) as other:
        return [d for d, _ in corpus.document_keys(other)]


def _reading(path: Path, on_record: Callable[[int, int], None]) -> Callable[[], Iterator[Document]]:
    """``read`` for add_documents that calls ``on_record(pass, n)`` before each record."""
    passes = [0]

    def read() -> Iterator[Document]:
        passes[0] += 1
        for n, document in enumerate(read_corpus(path)):
            on_record(passes[0], n)
            yield document

    return read


def test_labelling_writes_between_the_batches_of_a_large_import(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = _corpus(tmp_path / "big.jsonl")
    project = tmp_path / "p.db"
    other = sqlite3.connect(str(project), isolation_level=None, timeout=0)  # never waits
    seen: list[tuple[int, int]] = []

    def probe(passed: int, n: int) -> None:
        if passed == 2 and n in (12, 27):
            other.execute("BEGIN IMMEDIATE")  # fails at once if the import held the lock
            other.execute("INSERT INTO settings VALUES (?, '1')", [f"probe{n}"])
            other.execute("COMMIT")
            seen.append((n, len(_visible_ids(project))))

    result = corpus.add_documents(db, path, _reading(path, probe))
    assert result.added == N_DOCS
    # Half-way, another writer got in, and the import's rows were not yet part of the project.
    assert seen == [(12, 3), (27, 3)]
    assert len(_visible_ids(project)) == 3 + N_DOCS
    assert db.execute("SELECT count(*) FROM imports WHERE finished_at IS NULL").fetchone()[0] == 0


def _rows(db: sqlite_utils.Database) -> list[tuple]:
    return db.execute("SELECT doc_id, title, text, meta, content_hash FROM documents ORDER BY doc_id").fetchall()


def test_a_failure_after_the_check_pass_leaves_the_project_as_it_was(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = _corpus(tmp_path / "big.jsonl")
    before = _rows(db)

    def disk_full(passed: int, n: int) -> None:
        if passed == 2 and n == 23:
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        corpus.add_documents(db, path, _reading(path, disk_full))
    assert _rows(db) == before
    assert db.execute("SELECT count(*) FROM imports WHERE finished_at IS NULL").fetchone()[0] == 0
    # Nothing stands in the way of importing the file again.
    assert build.import_corpus(db, path).added == N_DOCS


KILLED = """
import os, signal, sys
from labeler.store import connect, corpus
from pooling.readers import read_corpus
corpus.BATCH = 5
passes = []
def read():
    passes.append(1)
    for n, document in enumerate(read_corpus(sys.argv[2])):
        if len(passes) == 2 and n == 23:
            os.kill(os.getpid(), signal.SIGKILL)
        yield document
corpus.add_documents(connect(sys.argv[1]), sys.argv[2], read)
"""


def test_an_import_killed_half_way_is_invisible_and_cleared_by_the_next(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = _corpus(tmp_path / "big.jsonl")
    project = tmp_path / "p.db"
    killed = subprocess.run([sys.executable, "-c", KILLED, str(project), str(path)], check=False)
    assert killed.returncode == -9
    assert db.execute("SELECT count(*) FROM documents").fetchone()[0] > 3  # rows were written...
    assert len(_visible_ids(project)) == 3  # ...but are not part of the project
    with connect(project) as other:
        assert corpus.stats(other)["documents"] == 3
    result = build.import_corpus(db, path)  # the next import clears the dead one's rows
    assert result.added == N_DOCS
    assert db.execute("SELECT count(*) FROM documents").fetchone()[0] == 3 + N_DOCS
    assert db.execute("SELECT count(*) FROM imports WHERE finished_at IS NULL").fetchone()[0] == 0


def test_replace_applies_only_when_the_import_finishes(db: sqlite_utils.Database, tmp_path: Path) -> None:
    path = tmp_path / "changed.jsonl"
    path.write_text(
        json.dumps({"doc_id": "old000", "text": "new text"}) + "\n"
        + "".join(json.dumps({"doc_id": f"n{i}", "text": f"t{i}"}) + "\n" for i in range(12)),
        encoding="utf-8",
    )
    texts: list[str] = []

    def look(passed: int, n: int) -> None:
        if passed == 2 and n == 11:
            with connect(tmp_path / "p.db") as other:
                texts.append(corpus.documents_by_id(other, ["old000"])["old000"][1])

    result = corpus.add_documents(db, path, _reading(path, look), replace=True)
    assert (result.added, result.replaced) == (12, 1)
    assert texts == ["text number 0 of old"]
    assert corpus.documents_by_id(db, ["old000"])["old000"][1] == "new text"


def test_a_pool_build_plans_outside_the_write_lock_and_replans_if_the_pool_moved(
    db: sqlite_utils.Database, tmp_path: Path
) -> None:
    from pooling.types import PoolEntry

    db.execute("INSERT INTO queries (query_id, text, content_hash) VALUES ('q1', 'a query', 'h')")
    other = sqlite3.connect(str(tmp_path / "p.db"), isolation_level=None, timeout=0)
    seen: list[set[str]] = []

    def plan(recorded: corpus.Recorded) -> tuple[list[PoolEntry], list[PoolEntry]]:
        seen.append(set(recorded.get("q1", {})))
        if len(seen) == 1:  # another build lands while this one is planning
            other.execute("BEGIN IMMEDIATE")  # fails at once if planning held the lock
            other.execute("INSERT INTO pool_builds (id, at, params) VALUES (90, 'now', '{}')")
            other.execute(
                "INSERT INTO pool VALUES ('q1', 'old000', '{\"bm25\": 1}', 0.5, 1, 'now', 90)"
            )
            other.execute("COMMIT")
        taken = set(recorded.get("q1", {}))
        new = [d for d in ("old000", "old001") if d not in taken]
        return [PoolEntry("q1", d, {"dense": 1}, 0.1, len(taken) + i + 1) for i, d in enumerate(new)], []

    build_id, added, kept = corpus.add_pool_build(db, plan, {"test": True})
    assert seen == [set(), {"old000"}]  # planned again on the pool as it now is
    assert (added, kept) == (1, 1)
    assert db.execute("SELECT doc_id, position, build_id FROM pool ORDER BY position").fetchall() == [
        ("old000", 1, 90),
        ("old001", 2, build_id),
    ]
