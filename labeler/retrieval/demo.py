"""The demo project: Python's own documentation, 46 questions, a real pool, ready to label.

``goldpool demo`` calls :func:`build_demo_project` and then serves the app on it. Building is
idempotent: a second run reuses the project (imports are no-ops, the pool only grows) and
issues fresh access tokens, so no label made in an earlier session is ever lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from labeler.store import init_db
from labeler.retrieval import build
from labeler.store import corpus as corpus_store
from labeler.store import access
from labeler.store.vocabulary import OWNER, Role
from pooling.dense import merge_cache

#: Where the demo's corpus and queries live in a checkout of goldpool.
DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "demo"

#: The demo team: one admin and two annotators, so overlap and agreement show up at once.
TEAM: tuple[tuple[str, Role], ...] = (
    ("demo-admin", "admin"),
    ("alice", "annotator"),
    ("bob", "annotator"),
)


class DemoError(Exception):
    """The demo cannot be built here: its data is not part of this installation."""


@dataclass(frozen=True, slots=True)
class DemoProject:
    db_path: Path
    tokens: dict[str, str]  # annotator name -> one-time access token
    n_documents: int
    n_queries: int
    n_pool: int


def build_demo_project(
    directory: Path,
    *,
    data_dir: Path = DATA_DIR,
    progress: bool = True,
    say: Callable[[str], None] = lambda _message: None,
) -> DemoProject:
    """Create (or refresh) the demo project in ``directory`` and return its tokens.

    Raises:
        DemoError: the demo data is missing (goldpool is not run from a checkout).
    """
    corpus_file, queries_file = data_dir / "corpus.jsonl", data_dir / "queries.jsonl"
    for required in (corpus_file, queries_file):
        if not required.is_file():
            raise DemoError(f"{required}: demo data not found; run goldpool from its source checkout")
    directory.mkdir(parents=True, exist_ok=True)
    db_path = directory / "demo.db"
    db = init_db(db_path)
    try:
        say(f"Importing {corpus_file.name} and {queries_file.name} into {db_path}")
        build.import_corpus(db, corpus_file)
        build.import_queries(db, queries_file)
        seeded = _seed_embeddings(db, data_dir / "embeddings")
        say(f"Building the pool: BM25 top-50 and dense top-50 per query ({seeded})")
        build.build_pool(db, progress=progress)
        tokens = _issue_tokens(db)
        counts = corpus_store.stats(db)
    finally:
        db.close()
    return DemoProject(
        db_path=db_path,
        tokens=tokens,
        n_documents=int(counts["documents"]),
        n_queries=int(counts["queries"]),
        n_pool=int(counts["pool"]),
    )


def _seed_embeddings(db, shipped: Path) -> str:  # type: ignore[no-untyped-def]
    """Put the demo's shipped embeddings into the project's cache (keys it lacks only).

    They are keyed by content hash, so a chunk changed since they were built is simply
    encoded on its own; another model than the default finds nothing of its own and encodes.
    """
    if not shipped.is_dir():
        return "first run encodes the corpus"
    added = merge_cache(shipped, build.default_cache_dir(db))
    return f"{added} embeddings taken from the demo data" if added else "embeddings already cached"


def _issue_tokens(db) -> dict[str, str]:  # type: ignore[no-untyped-def]
    existing = {a.name for a in access.list_annotators(db, caller=OWNER)}
    tokens: dict[str, str] = {}
    for name, role in TEAM:
        if name in existing:
            tokens[name] = access.rotate_token(db, name)
        else:
            tokens[name] = access.add_annotator(db, name, role)[1]
    return tokens
