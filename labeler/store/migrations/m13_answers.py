"""The answers of generating systems and their claims: what generation metrics are computed
on. An answer or a claim never changes once stored (people label the stored text); a new
text comes in under a new answer_id. IF NOT EXISTS: replaying the step changes nothing.
"""

from __future__ import annotations

SQL = """
        CREATE TABLE IF NOT EXISTS systems (
            name TEXT PRIMARY KEY,
            added_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS answers (
            answer_id TEXT PRIMARY KEY,
            system TEXT NOT NULL REFERENCES systems(name),
            query_id TEXT REFERENCES queries(query_id),
            question TEXT NOT NULL,
            response TEXT NOT NULL,
            contexts TEXT NOT NULL DEFAULT '[]',
            retrieved_ids TEXT NOT NULL DEFAULT '[]',
            reference TEXT,
            content_hash TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}',
            added_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS answers_system ON answers(system, answer_id);
        CREATE INDEX IF NOT EXISTS answers_query ON answers(query_id);
        CREATE TABLE IF NOT EXISTS claims (
            claim_id TEXT PRIMARY KEY,
            answer_id TEXT NOT NULL REFERENCES answers(answer_id),
            n INTEGER NOT NULL CHECK (n >= 1),
            text TEXT NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('file', 'judge', 'sentence')),
            method TEXT NOT NULL DEFAULT '',
            meta TEXT NOT NULL DEFAULT '{}',
            added_at TEXT NOT NULL,
            UNIQUE (answer_id, n),
            CHECK (claim_id = answer_id || '#' || n)
        );
        CREATE TRIGGER IF NOT EXISTS answers_no_update BEFORE UPDATE ON answers
            BEGIN SELECT RAISE(ABORT, 'answers do not change; import changed text under a new answer_id'); END;
        CREATE TRIGGER IF NOT EXISTS answers_no_delete BEFORE DELETE ON answers
            BEGIN SELECT RAISE(ABORT, 'answers do not change; import changed text under a new answer_id'); END;
        CREATE TRIGGER IF NOT EXISTS claims_no_update BEFORE UPDATE ON claims
            BEGIN SELECT RAISE(ABORT, 'claims do not change'); END;
        CREATE TRIGGER IF NOT EXISTS claims_no_delete BEFORE DELETE ON claims
            BEGIN SELECT RAISE(ABORT, 'claims do not change'); END;
"""
