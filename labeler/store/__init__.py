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

from labeler.store.schema import SCHEMA_VERSION, StoreBusy, StoreError, connect, init_db, now, transaction

__all__ = ["SCHEMA_VERSION", "StoreBusy", "StoreError", "connect", "init_db", "now", "transaction"]
