"""Answers come in batches (a week's traces, a release's answers): ``answers.batch`` names the
batch an answer was imported in, by default the import's date (UTC, ``YYYY-MM-DD``). Answers
stored before take the date they were added. Answers never change, so the trigger that says so
is set aside for this one step and put back as it was.

Designed samples of answers (``sample-answers``): which answers people label for the
generation tasks, each with its inclusion probability. A sample never changes once drawn.
"""

from __future__ import annotations

SQL = """
        ALTER TABLE answers ADD COLUMN batch TEXT NOT NULL DEFAULT '';
        DROP TRIGGER IF EXISTS answers_no_update;
        UPDATE answers SET batch = substr(added_at, 1, 10) WHERE batch = '';
        CREATE TRIGGER IF NOT EXISTS answers_no_update BEFORE UPDATE ON answers
            BEGIN SELECT RAISE(ABORT, 'answers do not change; import changed text under a new answer_id'); END;
        CREATE INDEX IF NOT EXISTS answers_batch ON answers(system, batch, answer_id);
        CREATE TABLE IF NOT EXISTS answer_samples (
            name TEXT PRIMARY KEY,
            system TEXT NOT NULL REFERENCES systems(name),
            design TEXT NOT NULL CHECK (design IN ('random', 'stratified')),
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
