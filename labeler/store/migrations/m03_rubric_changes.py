"""Which rubric was in force when, and who put it there: one row per change, append-only, so
going back to an earlier text records the return instead of re-dating the earlier row.
"""

from __future__ import annotations

SQL = """
        CREATE TABLE rubric_changes (
            id INTEGER PRIMARY KEY,
            hash TEXT NOT NULL REFERENCES rubrics(hash),
            at TEXT NOT NULL,
            annotator_id INTEGER REFERENCES annotators(id)
        );
        INSERT INTO rubric_changes (hash, at, annotator_id)
            SELECT hash, created_at, annotator_id FROM rubrics ORDER BY created_at, rowid;
        CREATE TRIGGER rubric_changes_no_update BEFORE UPDATE ON rubric_changes
            BEGIN SELECT RAISE(ABORT, 'rubric changes are append-only'); END;
        CREATE TRIGGER rubric_changes_no_delete BEFORE DELETE ON rubric_changes
            BEGIN SELECT RAISE(ABORT, 'rubric changes are append-only'); END;
        CREATE TRIGGER rubrics_no_update BEFORE UPDATE ON rubrics
            BEGIN SELECT RAISE(ABORT, 'rubric texts are append-only'); END;
"""
