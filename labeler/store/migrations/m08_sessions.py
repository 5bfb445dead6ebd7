"""Sign-ins kept across reloads, per-annotator display choices, and overlap copies waiting for
an annotator who has not arrived yet (filled from the assignments made so far).
"""

from __future__ import annotations

SQL = """
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            secret_hash TEXT NOT NULL UNIQUE,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            token_fingerprint TEXT NOT NULL,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL
        );
        CREATE INDEX sessions_annotator ON sessions(annotator_id);
        CREATE TABLE preferences (
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (annotator_id, key)
        ) WITHOUT ROWID;
        CREATE TABLE overlap_waiting (
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            PRIMARY KEY (query_id, doc_id),
            FOREIGN KEY (query_id, doc_id) REFERENCES pool(query_id, doc_id)
        ) WITHOUT ROWID;
        INSERT INTO overlap_waiting (query_id, doc_id)
            SELECT a.query_id, a.doc_id FROM assignments a
            WHERE NOT EXISTS (SELECT 1 FROM reservations r WHERE r.query_id = a.query_id AND r.doc_id = a.doc_id)
            GROUP BY a.query_id, a.doc_id
            HAVING count(*) < coalesce((SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'overlap_k'), 2);
"""
