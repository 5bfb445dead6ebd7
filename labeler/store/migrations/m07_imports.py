"""A corpus import commits in short transactions so labelling never waits on it: its rows
carry the import's id and stay invisible until the import is marked finished.
"""

from __future__ import annotations

SQL = """
        CREATE TABLE imports (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL
        );
        ALTER TABLE documents ADD COLUMN import_id INTEGER REFERENCES imports(id);
        CREATE INDEX documents_import ON documents(import_id);
"""
