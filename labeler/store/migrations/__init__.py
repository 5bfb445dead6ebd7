"""The project's migrations, one file per step, applied in order by :func:`migrate`.

Migrations are numbered and recorded in SQLite's ``user_version``; each runs once, inside one
transaction, so applying them twice is a no-op and a failed one leaves the file untouched.
Each step is an SQL script (``SQL`` of its module).
"""

from __future__ import annotations

import hashlib
import sqlite3

from labeler.store.errors import StoreError
from labeler.store.migrations import (
    m01_initial,
    m02_skip_notes,
    m03_rubric_changes,
    m04_verdicts,
    m05_golden,
    m06_verdict_queue,
    m07_imports,
    m08_sessions,
    m09_candidates,
    m10_golden_sealed,
    m11_reply_length,
    m12_current_rows,
    m13_answers,
    m14_answer_tasks,
    m15_judge_cards,
    m16_samples,
    m17_answer_faithfulness,
    m18_declines,
    m19_answer_batches,
    m20_nuggets,
    m21_judge_settings,
    m22_labelling_indexes,
    m23_progress_counts,
)

# Append new migrations (one module each); never edit or reorder a released one.
MIGRATIONS: list[str] = [
    m01_initial.SQL,
    m02_skip_notes.SQL,
    m03_rubric_changes.SQL,
    m04_verdicts.SQL,
    m05_golden.SQL,
    m06_verdict_queue.SQL,
    m07_imports.SQL,
    m08_sessions.SQL,
    m09_candidates.SQL,
    m10_golden_sealed.SQL,
    m11_reply_length.SQL,
    m12_current_rows.SQL,
    m13_answers.SQL,
    m14_answer_tasks.SQL,
    m15_judge_cards.SQL,
    m16_samples.SQL,
    m17_answer_faithfulness.SQL,
    m18_declines.SQL,
    m19_answer_batches.SQL,
    m20_nuggets.SQL,
    m21_judge_settings.SQL,
    m22_labelling_indexes.SQL,
    m23_progress_counts.SQL,
]
SCHEMA_VERSION = len(MIGRATIONS)


def _sha256(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def migrate(conn: sqlite3.Connection) -> int:
    """Apply every migration the database has not seen; return how many ran."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    # The step that gives stored answers their verdict items hashes their texts in SQL.
    conn.create_function("goldpool_sha256", 1, _sha256, deterministic=True)
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"database schema version {current} is newer than this goldpool "
            f"({SCHEMA_VERSION}); upgrade goldpool"
        )
    for version in range(current + 1, SCHEMA_VERSION + 1):
        # One script, one transaction: executescript would commit an outer transaction
        # before running, so BEGIN and COMMIT are part of the script itself.
        script = f"BEGIN IMMEDIATE;\n{MIGRATIONS[version - 1]}\nPRAGMA user_version={version};\nCOMMIT;"
        try:
            conn.executescript(script)
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION - current

