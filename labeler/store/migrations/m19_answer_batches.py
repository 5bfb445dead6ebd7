"""Answers come in batches (a week's traces, a release's answers): ``answer_batches`` names
the batch each answer was imported in, by default the import's date (UTC, ``YYYY-MM-DD``).
Answers stored before take the date they were added. A table of its own, as the answers never
change; IF NOT EXISTS and OR IGNORE: replaying the step changes nothing.

Designed samples of answers (``sample-answers``): which answers people label for the
generation tasks, each with its inclusion probability. A sample never changes once drawn.
"""

from __future__ import annotations

SQL = """
        CREATE TABLE IF NOT EXISTS answer_batches (
            answer_id TEXT PRIMARY KEY REFERENCES answers(answer_id),
            batch TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS answer_batches_batch ON answer_batches(batch, answer_id);
        INSERT OR IGNORE INTO answer_batches (answer_id, batch) SELECT answer_id, substr(added_at, 1, 10) FROM answers;
        CREATE TRIGGER IF NOT EXISTS answer_batches_no_update BEFORE UPDATE ON answer_batches
            BEGIN SELECT RAISE(ABORT, 'an answer belongs to one batch; import it under a new answer_id'); END;
        CREATE TRIGGER IF NOT EXISTS answer_batches_no_delete BEFORE DELETE ON answer_batches
            BEGIN SELECT RAISE(ABORT, 'an answer belongs to one batch; import it under a new answer_id'); END;
        CREATE TABLE IF NOT EXISTS answer_samples (
            name TEXT PRIMARY KEY,
            system TEXT NOT NULL REFERENCES systems(name),
            design TEXT NOT NULL CHECK (design IN ('random', 'stratified', 'judge-uncertain')),
            seed INTEGER NOT NULL,
            params TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS answer_sample_items (
            sample TEXT NOT NULL REFERENCES answer_samples(name),
            answer_id TEXT NOT NULL REFERENCES answers(answer_id),
            probability REAL NOT NULL CHECK (probability > 0 AND probability <= 1),
            stratum TEXT,
            PRIMARY KEY (sample, answer_id)
        ) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS answer_samples_no_update BEFORE UPDATE ON answer_samples
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; draw a new one under another name'); END;
        CREATE TRIGGER IF NOT EXISTS answer_samples_no_delete BEFORE DELETE ON answer_samples
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; draw a new one under another name'); END;
        CREATE TRIGGER IF NOT EXISTS answer_sample_items_no_update BEFORE UPDATE ON answer_sample_items
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; draw a new one under another name'); END;
        CREATE TRIGGER IF NOT EXISTS answer_sample_items_no_delete BEFORE DELETE ON answer_sample_items
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; draw a new one under another name'); END;
"""
