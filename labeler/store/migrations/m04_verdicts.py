"""Verdicts on faithfulness and pairwise items, and a judge's verdicts (any task) with the
cache of its calls. Human and judge verdicts live in separate tables.
"""

from __future__ import annotations

SQL = """
        CREATE TABLE verdict_items (
            item_id TEXT PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('faithfulness', 'pairwise')),
            question TEXT NOT NULL,
            contexts TEXT NOT NULL DEFAULT '[]',
            context TEXT,
            response TEXT,
            response_a TEXT,
            response_b TEXT,
            model_a TEXT,
            model_b TEXT,
            content_hash TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}',
            added_at TEXT NOT NULL
        );
        CREATE TABLE human_verdicts (
            id INTEGER PRIMARY KEY,
            item_id TEXT NOT NULL REFERENCES verdict_items(item_id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            verdict TEXT NOT NULL CHECK (verdict IN ('SUPPORTED', 'UNSUPPORTED', 'A', 'B', 'TIE')),
            shown_order TEXT CHECK (shown_order IN ('AB', 'BA')),
            note TEXT NOT NULL DEFAULT '',
            at TEXT NOT NULL,
            seconds REAL,
            rubric_hash TEXT,
            source TEXT NOT NULL DEFAULT 'app'
        );
        CREATE INDEX human_verdicts_item ON human_verdicts(item_id, annotator_id, id);
        CREATE INDEX human_verdicts_annotator ON human_verdicts(annotator_id, id);
        CREATE TABLE judge_verdicts (
            id INTEGER PRIMARY KEY,
            judge TEXT NOT NULL,
            task TEXT NOT NULL CHECK (task IN ('relevance', 'faithfulness', 'pairwise')),
            item_id TEXT REFERENCES verdict_items(item_id),
            query_id TEXT,
            doc_id TEXT,
            model TEXT NOT NULL DEFAULT '',
            prompt_hash TEXT NOT NULL DEFAULT '',
            shown_order TEXT CHECK (shown_order IN ('AB', 'BA')),
            verdict TEXT CHECK (verdict IN ('0', '1', '2', '3', 'SUPPORTED', 'UNSUPPORTED', 'A', 'B', 'TIE')),
            parseable INTEGER NOT NULL DEFAULT 1,
            raw TEXT,
            tokens_in INTEGER,
            tokens_out INTEGER,
            latency REAL,
            error TEXT,
            at TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT 'run',
            FOREIGN KEY (query_id, doc_id) REFERENCES pool(query_id, doc_id),
            CHECK ((task = 'relevance') = (item_id IS NULL AND query_id IS NOT NULL AND doc_id IS NOT NULL))
        );
        CREATE INDEX judge_verdicts_item ON judge_verdicts(judge, item_id, shown_order, id);
        CREATE INDEX judge_verdicts_pair ON judge_verdicts(judge, query_id, doc_id, id);
        CREATE TABLE judge_cache (
            model TEXT NOT NULL,
            prompt_hash TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            shown_order TEXT NOT NULL DEFAULT '',
            raw TEXT NOT NULL,
            verdict TEXT,
            parseable INTEGER NOT NULL,
            tokens_in INTEGER,
            tokens_out INTEGER,
            latency REAL,
            at TEXT NOT NULL,
            PRIMARY KEY (model, prompt_hash, content_hash, shown_order)
        ) WITHOUT ROWID;
        CREATE TRIGGER human_verdicts_no_update BEFORE UPDATE ON human_verdicts
            BEGIN SELECT RAISE(ABORT, 'human verdicts are append-only'); END;
        CREATE TRIGGER human_verdicts_no_delete BEFORE DELETE ON human_verdicts
            BEGIN SELECT RAISE(ABORT, 'human verdicts are append-only'); END;
        CREATE TRIGGER judge_verdicts_no_update BEFORE UPDATE ON judge_verdicts
            BEGIN SELECT RAISE(ABORT, 'judge verdicts are append-only'); END;
        CREATE TRIGGER judge_verdicts_no_delete BEFORE DELETE ON judge_verdicts
            BEGIN SELECT RAISE(ABORT, 'judge verdicts are append-only'); END;
        CREATE TRIGGER verdict_items_no_update BEFORE UPDATE ON verdict_items
            BEGIN SELECT RAISE(ABORT, 'verdict items do not change; import changed text under a new item_id'); END;
"""
