"""The project store: one SQLite file per labelling project.

Every SQL statement goldpool runs lives in this package. ``schema`` creates and migrates the
tables; ``corpus`` holds documents, queries, runs and the pool; ``labels`` holds annotators,
assignments, judgments, adjudications and rubrics; ``sessions`` holds sign-ins kept across
reloads and each annotator's display choices. Reading input files and running retrieval
is not the store's job (see :mod:`labeler.build`); the store raises only :class:`StoreError`.
Functions that check rights take the required keyword ``caller`` (an annotator, or
``OWNER`` for the command line).

Everything a person did is in the database; everything else (indexes, embeddings) is a cache
beside it that can be rebuilt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from labeler.store.schema import SCHEMA_VERSION, StoreBusy, StoreError, connect, init_db, now, transaction

__all__ = ["SCHEMA_VERSION", "StoreBusy", "StoreError", "connect", "init_db", "now", "transaction"]


def __getattr__(name: str) -> object:
    # Loaded on first use: the command line imports ``labeler.store.vocabulary`` at start-up,
    # and the schema (with sqlite_utils) only when a command opens a project.
    if name in __all__:
        from labeler.store import schema

        return getattr(schema, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
