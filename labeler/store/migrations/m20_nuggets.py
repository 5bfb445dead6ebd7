"""Nugget evaluation: a question's nuggets (made by people, or proposed by a judge model and
taken up or dropped by people), their revisions, the support task on (answer, nugget) and the
nuggets a golden version froze.

The ``nuggets`` task and its verdicts join ``tasks`` and ``task_verdicts``, so support verdicts
are human and judge verdicts like any other, checked by their triggers. A judge's proposals
and people's nuggets never share a table; people's nuggets are append-only revisions (the
latest counts: ``current_nuggets``). IF NOT EXISTS: replaying the step changes nothing.
"""

from __future__ import annotations

from labeler.store.schema import CURRENT_NUGGETS

_TABLES = """
        INSERT OR IGNORE INTO tasks (name) VALUES ('nuggets');
        INSERT OR IGNORE INTO task_verdicts (task, verdict) VALUES
            ('nuggets', 'SUPPORT'), ('nuggets', 'PARTIAL_SUPPORT'), ('nuggets', 'NOT_SUPPORT');
        CREATE TABLE IF NOT EXISTS nugget_proposals (
            id INTEGER PRIMARY KEY,
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            judge TEXT NOT NULL,
            model TEXT NOT NULL DEFAULT '',
            prompt_hash TEXT NOT NULL DEFAULT '',
            n INTEGER NOT NULL CHECK (n >= 1),
            text TEXT NOT NULL,
            importance TEXT NOT NULL CHECK (importance IN ('vital', 'okay')),
            at TEXT NOT NULL,
            UNIQUE (query_id, judge, model, prompt_hash, n)
        );
        CREATE TABLE IF NOT EXISTS nuggets (
            nugget_id TEXT PRIMARY KEY,
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            origin TEXT NOT NULL CHECK (origin IN ('person', 'proposal', 'merge')),
            proposal_id INTEGER REFERENCES nugget_proposals(id),
            merged_from TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL,
            annotator_id INTEGER REFERENCES annotators(id),
            CHECK ((origin = 'proposal') = (proposal_id IS NOT NULL))
        );
        CREATE UNIQUE INDEX IF NOT EXISTS nuggets_proposal ON nuggets(proposal_id) WHERE proposal_id IS NOT NULL;
        CREATE INDEX IF NOT EXISTS nuggets_query ON nuggets(query_id);
        CREATE TABLE IF NOT EXISTS nugget_revisions (
            id INTEGER PRIMARY KEY,
            nugget_id TEXT NOT NULL REFERENCES nuggets(nugget_id),
            text TEXT NOT NULL,
            importance TEXT NOT NULL CHECK (importance IN ('vital', 'okay')),
            position INTEGER NOT NULL CHECK (position >= 1),
            status TEXT NOT NULL CHECK (status IN ('active', 'dropped', 'merged')),
            doc_ids TEXT NOT NULL DEFAULT '[]',
            merged_into TEXT REFERENCES nuggets(nugget_id),
            annotator_id INTEGER REFERENCES annotators(id),
            at TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT 'app' CHECK (source IN ('app', 'import')),
            CHECK ((status = 'merged') = (merged_into IS NOT NULL))
        );
        CREATE INDEX IF NOT EXISTS nugget_revisions_nugget ON nugget_revisions(nugget_id, id);
        CREATE TABLE IF NOT EXISTS nugget_items (
            item_id TEXT PRIMARY KEY REFERENCES verdict_items(item_id),
            answer_id TEXT NOT NULL REFERENCES answers(answer_id),
            nugget_id TEXT NOT NULL REFERENCES nuggets(nugget_id),
            UNIQUE (answer_id, nugget_id)
        );
        CREATE INDEX IF NOT EXISTS nugget_items_nugget ON nugget_items(nugget_id);
        CREATE TABLE IF NOT EXISTS golden_nuggets (
            version TEXT NOT NULL REFERENCES golden_versions(name),
            nugget_id TEXT NOT NULL,
            query_id TEXT NOT NULL,
            text TEXT NOT NULL,
            importance TEXT NOT NULL CHECK (importance IN ('vital', 'okay')),
            position INTEGER NOT NULL,
            doc_ids TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (version, nugget_id)
        );
"""

_TRIGGERS = """
        CREATE TRIGGER IF NOT EXISTS nugget_proposals_no_update BEFORE UPDATE ON nugget_proposals
            BEGIN SELECT RAISE(ABORT, 'nugget proposals do not change'); END;
        CREATE TRIGGER IF NOT EXISTS nugget_proposals_no_delete BEFORE DELETE ON nugget_proposals
            BEGIN SELECT RAISE(ABORT, 'nugget proposals do not change'); END;
        CREATE TRIGGER IF NOT EXISTS nuggets_no_update BEFORE UPDATE ON nuggets
            BEGIN SELECT RAISE(ABORT, 'nuggets change by a new revision'); END;
        CREATE TRIGGER IF NOT EXISTS nuggets_no_delete BEFORE DELETE ON nuggets
            BEGIN SELECT RAISE(ABORT, 'nuggets change by a new revision'); END;
        CREATE TRIGGER IF NOT EXISTS nugget_revisions_no_update BEFORE UPDATE ON nugget_revisions
            BEGIN SELECT RAISE(ABORT, 'nugget revisions are append-only'); END;
        CREATE TRIGGER IF NOT EXISTS nugget_revisions_no_delete BEFORE DELETE ON nugget_revisions
            BEGIN SELECT RAISE(ABORT, 'nugget revisions are append-only'); END;
        CREATE TRIGGER IF NOT EXISTS nugget_items_no_update BEFORE UPDATE ON nugget_items
            BEGIN SELECT RAISE(ABORT, 'nugget items do not change'); END;
        CREATE TRIGGER IF NOT EXISTS nugget_items_no_delete BEFORE DELETE ON nugget_items
            BEGIN SELECT RAISE(ABORT, 'nugget items do not change'); END;
        CREATE TRIGGER IF NOT EXISTS golden_nuggets_no_update BEFORE UPDATE ON golden_nuggets
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
        CREATE TRIGGER IF NOT EXISTS golden_nuggets_no_delete BEFORE DELETE ON golden_nuggets
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
        CREATE TRIGGER IF NOT EXISTS golden_nuggets_frozen BEFORE INSERT ON golden_nuggets
            WHEN EXISTS (SELECT 1 FROM golden_versions WHERE name = NEW.version)
              OR EXISTS (SELECT 1 FROM golden_nuggets WHERE version = NEW.version AND nugget_id = NEW.nugget_id)
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
"""

SQL = f"""{_TABLES}{_TRIGGERS}
        {CURRENT_NUGGETS}
"""
