"""Designed samples of the pool for people to label, with each entry's inclusion probability
(what a judge-assisted estimate weighs it by). A sample never changes once planned.
IF NOT EXISTS: replaying the step changes nothing.
"""

from __future__ import annotations

SQL = """
        CREATE TABLE IF NOT EXISTS samples (
            name TEXT PRIMARY KEY,
            design TEXT NOT NULL CHECK (design IN ('queries', 'stratified')),
            judge TEXT,
            seed INTEGER NOT NULL,
            params TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS sample_items (
            sample TEXT NOT NULL REFERENCES samples(name),
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            probability REAL NOT NULL CHECK (probability > 0 AND probability <= 1),
            PRIMARY KEY (sample, query_id, doc_id)
        ) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS samples_no_update BEFORE UPDATE ON samples
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; plan a new one under another name'); END;
        CREATE TRIGGER IF NOT EXISTS samples_no_delete BEFORE DELETE ON samples
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; plan a new one under another name'); END;
        CREATE TRIGGER IF NOT EXISTS sample_items_no_update BEFORE UPDATE ON sample_items
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; plan a new one under another name'); END;
        CREATE TRIGGER IF NOT EXISTS sample_items_no_delete BEFORE DELETE ON sample_items
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; plan a new one under another name'); END;
"""
