"""The first schema: corpus, runs, the pool, annotators, hand-outs, judgments, skips,
adjudications, rubrics and settings. Labels are append-only (triggers).
"""

from __future__ import annotations

SQL = """
        CREATE TABLE documents (
            doc_id TEXT PRIMARY KEY,
            title TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}',
            content_hash TEXT NOT NULL
        );
        CREATE TABLE queries (
            query_id TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}',
            content_hash TEXT NOT NULL
        );
        CREATE TABLE runs (
            name TEXT PRIMARY KEY,
            path TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            imported_at TEXT NOT NULL,
            n_rows INTEGER NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE run_entries (
            run TEXT NOT NULL REFERENCES runs(name),
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            doc_id TEXT NOT NULL REFERENCES documents(doc_id),
            rank INTEGER NOT NULL,
            score REAL NOT NULL,
            PRIMARY KEY (run, query_id, doc_id)
        ) WITHOUT ROWID;
        CREATE INDEX run_entries_rank ON run_entries(run, query_id, rank);
        CREATE TABLE pool_builds (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            params TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE pool (
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            doc_id TEXT NOT NULL REFERENCES documents(doc_id),
            sources TEXT NOT NULL,
            priority REAL NOT NULL,
            position INTEGER NOT NULL,
            added_at TEXT NOT NULL,
            build_id INTEGER REFERENCES pool_builds(id),
            PRIMARY KEY (query_id, doc_id)
        ) WITHOUT ROWID;
        CREATE INDEX pool_position ON pool(query_id, position);
        CREATE TABLE annotators (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            role TEXT NOT NULL CHECK (role IN ('annotator', 'admin')),
            token_salt TEXT NOT NULL,
            token_hash TEXT NOT NULL,
            active INTEGER NOT NULL DEFAULT 1,
            created_at TEXT NOT NULL
        );
        CREATE TABLE assignments (
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            shown_order INTEGER NOT NULL,
            assigned_at TEXT NOT NULL,
            PRIMARY KEY (query_id, doc_id, annotator_id),
            FOREIGN KEY (query_id, doc_id) REFERENCES pool(query_id, doc_id)
        ) WITHOUT ROWID;
        CREATE INDEX assignments_annotator ON assignments(annotator_id, shown_order);
        CREATE TABLE reservations (
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            expires_at TEXT NOT NULL,
            PRIMARY KEY (query_id, doc_id)
        ) WITHOUT ROWID;
        CREATE TABLE rubrics (
            hash TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            created_at TEXT NOT NULL,
            annotator_id INTEGER REFERENCES annotators(id)
        );
        CREATE TABLE judgments (
            id INTEGER PRIMARY KEY,
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            relevance INTEGER NOT NULL CHECK (relevance BETWEEN 0 AND 3),
            note TEXT NOT NULL DEFAULT '',
            at TEXT NOT NULL,
            seconds REAL,
            rubric_hash TEXT REFERENCES rubrics(hash),
            FOREIGN KEY (query_id, doc_id) REFERENCES pool(query_id, doc_id)
        );
        CREATE INDEX judgments_item ON judgments(query_id, doc_id, annotator_id, id);
        CREATE INDEX judgments_annotator ON judgments(annotator_id, id);
        CREATE TABLE skips (
            id INTEGER PRIMARY KEY,
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            at TEXT NOT NULL,
            seconds REAL
        );
        CREATE INDEX skips_annotator ON skips(annotator_id, query_id, doc_id);
        CREATE TABLE adjudications (
            id INTEGER PRIMARY KEY,
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            relevance INTEGER NOT NULL CHECK (relevance BETWEEN 0 AND 3),
            note TEXT NOT NULL DEFAULT '',
            at TEXT NOT NULL
        );
        CREATE INDEX adjudications_item ON adjudications(query_id, doc_id, id);
        CREATE TABLE settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        -- Labels are append-only: the database itself refuses to change or delete them.
        CREATE TRIGGER judgments_no_update BEFORE UPDATE ON judgments
            BEGIN SELECT RAISE(ABORT, 'judgments are append-only'); END;
        CREATE TRIGGER judgments_no_delete BEFORE DELETE ON judgments
            BEGIN SELECT RAISE(ABORT, 'judgments are append-only'); END;
        CREATE TRIGGER adjudications_no_update BEFORE UPDATE ON adjudications
            BEGIN SELECT RAISE(ABORT, 'adjudications are append-only'); END;
        CREATE TRIGGER adjudications_no_delete BEFORE DELETE ON adjudications
            BEGIN SELECT RAISE(ABORT, 'adjudications are append-only'); END;
"""
