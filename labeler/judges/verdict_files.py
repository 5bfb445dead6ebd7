"""Verdict items and verdicts from files into the project: :mod:`pooling` reads, the store writes.

An application service: ``import-items`` and ``import-verdicts`` read their file with
:func:`pooling.verdict_readers.read_items` and :func:`pooling.verdict_readers.read_verdicts` (the checks every
reader applies: ids, NUL, empty files, dates, one verdict per item), then hand the records to
:mod:`labeler.store.verdicts` and :mod:`labeler.store.verdict_io`, which match them against the
project and write them in one transaction.

Errors: :class:`pooling.PoolingError` for a bad file, :class:`labeler.store.StoreError` for
what the project refuses; either way nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import sqlite_utils

from labeler.store import StoreError, verdict_io, verdicts
from labeler.store.access import require_admin
from labeler.store.verdicts import Caller, ImportCount
from pooling.verdict_readers import read_items, read_verdicts


def import_items(db: sqlite_utils.Database, path: str | Path, *, caller: Caller) -> ImportCount:
    """Add the faithfulness and pairwise items of a JSONL file (admin only).

    Raises:
        PoolingError: a malformed record, a bad id or text, a duplicate item_id, an empty file.
        StoreError: changed text under an existing item_id; the caller is not an admin.
    """
    require_admin(db, caller)  # before the file is read: its errors would tell a non-admin about it
    items = list(read_items(path))  # the whole file checked before the store is asked to write
    return verdicts.add_items(db, path, items, caller=caller)


def import_verdicts(
    db: sqlite_utils.Database,
    path: str | Path,
    *,
    annotator: str | None = None,
    judge: str | None = None,
    caller: Caller,
) -> ImportCount:
    """Bring in verdicts as annotator ``annotator``'s (created when new) or judge ``judge``'s.

    Raises:
        PoolingError: a malformed record, a bad id, text or date, two different verdicts for
            one item, an empty file.
        StoreError: neither or both of annotator and judge, an unknown item or pool entry, a
            verdict the item does not take; the caller is not an admin.
    """
    require_admin(db, caller)
    if (annotator is None) == (judge is None):
        raise StoreError("give exactly one of an annotator name or a judge name")
    # Streamed: each record is checked and written as it is read, never the whole file held; a
    # bad line anywhere still leaves nothing written (one transaction).
    records = read_verdicts(path, per_order=judge is not None, task_of=verdict_io.answer_task)
    return verdict_io.add_verdicts(db, path, records, annotator=annotator, judge=judge, caller=caller)
