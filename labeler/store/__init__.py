"""The project store: one SQLite file per labelling project.

Every SQL statement goldpool runs lives in this package, and it imports nothing of goldpool
outside itself: services (:mod:`labeler.retrieval.build`, :mod:`labeler.retrieval.golden_set`, :mod:`labeler.retrieval.scheduling`,
:mod:`labeler.retrieval.adaptive`, :mod:`labeler.judges.verdict_files`, :mod:`labeler.project`) read files, run retrieval and plan, then hand the store records, rows
and plans. The store raises only :class:`StoreError`. Functions that check rights take the
required keyword ``caller`` (an annotator, or ``OWNER`` for the command line).

- ``schema``: the data dictionary: tables, the views of current rows, times.
- ``migrations``: one module per migration, applied in order by ``migrate``.
- ``connection``: opening a project, transactions, busy and read-only projects, the
  checkpointer thread, the online backup.
- ``errors``: :class:`StoreError` and its kinds, and how an error quotes a value.
- ``vocabulary``: tasks and their verdicts, grades and their range, callers and roles.
- ``records``: the shapes of the records the store is handed, and the pool as recorded.
- ``corpus``: documents, queries and the pool.
- ``runs``: imported runs, and their removal from the pool's provenance.
- ``candidates``: candidate lists deeper than the pool, for adaptive pooling.
- ``access``: annotators, tokens and roles.
- ``assign``: hand-outs of pool entries, applying a scheduling plan.
- ``labels``: the labelling app's contract: items, judgments, skips, settings.
- ``review``: progress, the overlap for agreement, adjudication, judgment export.
- ``rubric``: the relevance rubric and its history.
- ``sessions``: sign-ins kept across reloads, display choices.
- ``verdicts``: verdict items, human and judge verdicts.
- ``verdict_queue``: who judges which verdict item, in which order.
- ``verdict_io``: import and export of verdicts.
- ``cards``: judge cards, a judge's saved calibration against people.
- ``versions``: frozen golden-set versions, imported labels, pool extensions.
- ``nuggets``: a question's nuggets, their revisions, the nuggets a version froze.
- ``nugget_proposals``: a judge model's proposed nuggets, and what people made of them.
- ``nugget_support``: the support items of (answer, nugget), people's queue, support labels.

Everything a person did is in the database; everything else (indexes, embeddings) is a cache
beside it that can be rebuilt.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from labeler.store.connection import connect, init_db, transaction
    from labeler.store.errors import StoreBusy, StoreError
    from labeler.store.migrations import SCHEMA_VERSION
    from labeler.store.schema import now

__all__ = ["SCHEMA_VERSION", "StoreBusy", "StoreError", "connect", "init_db", "now", "transaction"]


#: Names loaded on first use -> their module: the command line imports ``labeler.store.vocabulary``
#: at start-up, and the connection (with sqlite_utils) only when a command opens a project.
_EXPORTS: dict[str, str] = {
    "connect": "connection",
    "init_db": "connection",
    "transaction": "connection",
    "StoreBusy": "errors",
    "StoreError": "errors",
    "SCHEMA_VERSION": "migrations",
    "now": "schema",
}


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"labeler.store.{module}"), name)
    globals()[name] = value
    return value
