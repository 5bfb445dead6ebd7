"""Frozen, named versions of the golden set: one row per version, one row per item of it.
"""

from __future__ import annotations

SQL = """
        CREATE TABLE golden_versions (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL,
            parent TEXT REFERENCES golden_versions(name),
            rule TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            manifest TEXT NOT NULL,
            annotator_id INTEGER REFERENCES annotators(id)
        );
        CREATE TABLE golden_rows (
            version TEXT NOT NULL REFERENCES golden_versions(name),
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            relevance INTEGER NOT NULL,
            labels TEXT NOT NULL,
            adjudicated INTEGER NOT NULL DEFAULT 0,
            posterior TEXT,
            sources TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (version, query_id, doc_id)
        ) WITHOUT ROWID;
        CREATE TRIGGER golden_versions_no_update BEFORE UPDATE ON golden_versions
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
        CREATE TRIGGER golden_versions_no_delete BEFORE DELETE ON golden_versions
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
        CREATE TRIGGER golden_rows_no_update BEFORE UPDATE ON golden_rows
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
        CREATE TRIGGER golden_rows_no_delete BEFORE DELETE ON golden_rows
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
"""
