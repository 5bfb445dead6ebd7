"""Answers come in batches (a week's traces, a release's answers): ``answers.batch`` names the
batch an answer was imported in, by default the import's date (UTC, ``YYYY-MM-DD``). Answers
stored before take the date they were added. Answers never change, so the trigger that says so
is set aside for this one step and put back as it was.
"""

from __future__ import annotations

SQL = """
        ALTER TABLE answers ADD COLUMN batch TEXT NOT NULL DEFAULT '';
        DROP TRIGGER IF EXISTS answers_no_update;
        UPDATE answers SET batch = substr(added_at, 1, 10) WHERE batch = '';
        CREATE TRIGGER IF NOT EXISTS answers_no_update BEFORE UPDATE ON answers
            BEGIN SELECT RAISE(ABORT, 'answers do not change; import changed text under a new answer_id'); END;
        CREATE INDEX IF NOT EXISTS answers_batch ON answers(system, batch, answer_id);
"""
