"""Tasks on answers (claims, correctness, answer relevance) join the verdict tasks. The tasks
and the verdicts each takes become rows (``tasks``, ``task_verdicts``) instead of CHECK
constraints, so a later task is a migration of INSERTs: the four verdict tables are rebuilt
once, their kind/task columns referencing ``tasks`` and every verdict checked against the
task of its item by a trigger. The old tables are renamed away first (which points the
other tables' references at them), the new ones filled from them, then the old dropped.
Answers and claims stored before this step get their items (``goldpool_sha256`` is
registered on the connection by :func:`labeler.store.migrations.migrate`); an answer's item
keeps no copy of the answer's texts (``answer_id`` leads to them).
Replaying the step changes nothing.
"""

from __future__ import annotations

from labeler.store.schema import CURRENT_HUMAN_VERDICTS, CURRENT_JUDGE_VERDICTS

_REBUILD = """
        CREATE TABLE IF NOT EXISTS tasks (name TEXT PRIMARY KEY) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS task_verdicts (
            task TEXT NOT NULL REFERENCES tasks(name),
            verdict TEXT NOT NULL,
            PRIMARY KEY (task, verdict)
        ) WITHOUT ROWID;
        INSERT OR IGNORE INTO tasks (name) VALUES
            ('relevance'), ('faithfulness'), ('pairwise'), ('claims'), ('correctness'), ('answer-relevance');
        INSERT OR IGNORE INTO task_verdicts (task, verdict) VALUES
            ('relevance', '0'), ('relevance', '1'), ('relevance', '2'), ('relevance', '3'),
            ('faithfulness', 'SUPPORTED'), ('faithfulness', 'UNSUPPORTED'),
            ('pairwise', 'A'), ('pairwise', 'B'), ('pairwise', 'TIE'),
            ('claims', 'SUPPORTED'), ('claims', 'UNSUPPORTED'), ('claims', 'NOT_ONE_CLAIM'),
            ('correctness', 'CORRECT'), ('correctness', 'INCORRECT'),
            ('answer-relevance', 'ADDRESSES'), ('answer-relevance', 'MISSES');

        DROP VIEW IF EXISTS current_human_verdicts;
        DROP VIEW IF EXISTS current_judge_verdicts;
        DROP TRIGGER IF EXISTS human_verdicts_no_update;
        DROP TRIGGER IF EXISTS human_verdicts_no_delete;
        DROP TRIGGER IF EXISTS human_verdicts_fit_task;
        DROP TRIGGER IF EXISTS judge_verdicts_no_update;
        DROP TRIGGER IF EXISTS judge_verdicts_no_delete;
        DROP TRIGGER IF EXISTS judge_verdicts_fit_task;
        DROP TRIGGER IF EXISTS verdict_items_no_update;
        DROP TRIGGER IF EXISTS verdict_items_no_delete;
        DROP TRIGGER IF EXISTS verdict_skips_no_update;
        DROP TRIGGER IF EXISTS verdict_skips_no_delete;
        DROP INDEX IF EXISTS human_verdicts_item;
        DROP INDEX IF EXISTS human_verdicts_annotator;
        DROP INDEX IF EXISTS judge_verdicts_item;
        DROP INDEX IF EXISTS judge_verdicts_pair;
        DROP INDEX IF EXISTS judge_verdicts_unit;
        DROP INDEX IF EXISTS verdict_assignments_queue;
        DROP INDEX IF EXISTS verdict_skips_annotator;
        DROP INDEX IF EXISTS verdict_items_answer;
        ALTER TABLE verdict_items RENAME TO old_verdict_items;
        ALTER TABLE human_verdicts RENAME TO old_human_verdicts;
        ALTER TABLE judge_verdicts RENAME TO old_judge_verdicts;
        ALTER TABLE verdict_assignments RENAME TO old_verdict_assignments;
        ALTER TABLE verdict_skips RENAME TO old_verdict_skips;

        CREATE TABLE verdict_items (
            item_id TEXT PRIMARY KEY,
            kind TEXT NOT NULL REFERENCES tasks(name) CHECK (kind <> 'relevance'),
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
            added_at TEXT NOT NULL,
            answer_id TEXT REFERENCES answers(answer_id),
            claim TEXT,
            reference TEXT
        );
        INSERT INTO verdict_items (rowid, item_id, kind, question, contexts, context, response, response_a,
                                   response_b, model_a, model_b, content_hash, meta, added_at, answer_id, claim,
                                   reference)
            SELECT rowid, item_id, kind, question, contexts, context, response, response_a, response_b, model_a,
                   model_b, content_hash, meta, added_at, NULL, NULL, NULL
            FROM old_verdict_items WHERE kind IN ('faithfulness', 'pairwise');
        CREATE INDEX verdict_items_answer ON verdict_items(answer_id, kind);
        INSERT OR IGNORE INTO verdict_items (item_id, kind, question, content_hash, added_at, answer_id, claim)
            SELECT c.claim_id, 'claims', '',
                   goldpool_sha256(a.content_hash || char(31) || 'claims' || char(31) || c.text), c.added_at,
                   a.answer_id, c.text
            FROM claims c JOIN answers a ON a.answer_id = c.answer_id WHERE a.response <> '';
        INSERT OR IGNORE INTO verdict_items (item_id, kind, question, content_hash, added_at, answer_id)
            SELECT a.answer_id || '@correctness', 'correctness', '',
                   goldpool_sha256(a.content_hash || char(31) || 'correctness' || char(31)), a.added_at, a.answer_id
            FROM answers a WHERE a.response <> '' AND a.reference IS NOT NULL AND a.reference <> '';
        INSERT OR IGNORE INTO verdict_items (item_id, kind, question, content_hash, added_at, answer_id)
            SELECT a.answer_id || '@answer-relevance', 'answer-relevance', '',
                   goldpool_sha256(a.content_hash || char(31) || 'answer-relevance' || char(31)), a.added_at,
                   a.answer_id
            FROM answers a WHERE a.response <> '';

        CREATE TABLE human_verdicts (
            id INTEGER PRIMARY KEY,
            item_id TEXT NOT NULL REFERENCES verdict_items(item_id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            verdict TEXT NOT NULL,
            shown_order TEXT CHECK (shown_order IN ('AB', 'BA')),
            note TEXT NOT NULL DEFAULT '',
            at TEXT NOT NULL,
            seconds REAL,
            rubric_hash TEXT,
            source TEXT NOT NULL DEFAULT 'app'
        );
        INSERT INTO human_verdicts (id, item_id, annotator_id, verdict, shown_order, note, at, seconds, rubric_hash,
                                    source)
            SELECT id, item_id, annotator_id, verdict, shown_order, note, at, seconds, rubric_hash, source
            FROM old_human_verdicts;

        CREATE TABLE judge_verdicts (
            id INTEGER PRIMARY KEY,
            judge TEXT NOT NULL,
            task TEXT NOT NULL REFERENCES tasks(name),
            item_id TEXT REFERENCES verdict_items(item_id),
            query_id TEXT,
            doc_id TEXT,
            model TEXT NOT NULL DEFAULT '',
            prompt_hash TEXT NOT NULL DEFAULT '',
            shown_order TEXT CHECK (shown_order IN ('AB', 'BA')),
            verdict TEXT,
            parseable INTEGER NOT NULL DEFAULT 1,
            raw TEXT,
            tokens_in INTEGER,
            tokens_out INTEGER,
            latency REAL,
            error TEXT,
            at TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT 'run',
            raw_length INTEGER,
            FOREIGN KEY (query_id, doc_id) REFERENCES pool(query_id, doc_id),
            CHECK ((task = 'relevance') = (item_id IS NULL AND query_id IS NOT NULL AND doc_id IS NOT NULL))
        );
        INSERT INTO judge_verdicts (id, judge, task, item_id, query_id, doc_id, model, prompt_hash, shown_order,
                                    verdict, parseable, raw, tokens_in, tokens_out, latency, error, at, source,
                                    raw_length)
            SELECT id, judge, task, item_id, query_id, doc_id, model, prompt_hash, shown_order, verdict, parseable,
                   raw, tokens_in, tokens_out, latency, error, at, source, raw_length
            FROM old_judge_verdicts;

        CREATE TABLE verdict_assignments (
            item_id TEXT NOT NULL REFERENCES verdict_items(item_id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            kind TEXT NOT NULL REFERENCES tasks(name),
            batch INTEGER NOT NULL,
            shown_order INTEGER NOT NULL,
            slot_order TEXT CHECK (slot_order IN ('AB', 'BA')),
            assigned_at TEXT NOT NULL,
            PRIMARY KEY (item_id, annotator_id),
            CHECK ((kind = 'pairwise') = (slot_order IS NOT NULL))
        );
        INSERT INTO verdict_assignments (item_id, annotator_id, kind, batch, shown_order, slot_order, assigned_at)
            SELECT item_id, annotator_id, kind, batch, shown_order, slot_order, assigned_at
            FROM old_verdict_assignments;

        CREATE TABLE verdict_skips (
            id INTEGER PRIMARY KEY,
            item_id TEXT NOT NULL REFERENCES verdict_items(item_id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            at TEXT NOT NULL,
            seconds REAL,
            note TEXT NOT NULL DEFAULT ''
        );
        INSERT INTO verdict_skips (id, item_id, annotator_id, at, seconds, note)
            SELECT id, item_id, annotator_id, at, seconds, note FROM old_verdict_skips;

        DROP TABLE old_verdict_skips;
        DROP TABLE old_verdict_assignments;
        DROP TABLE old_judge_verdicts;
        DROP TABLE old_human_verdicts;
        DROP TABLE old_verdict_items;

        CREATE INDEX human_verdicts_item ON human_verdicts(item_id, annotator_id, id);
        CREATE INDEX human_verdicts_annotator ON human_verdicts(annotator_id, id);
        CREATE INDEX judge_verdicts_item ON judge_verdicts(judge, item_id, shown_order, id);
        CREATE INDEX judge_verdicts_pair ON judge_verdicts(judge, query_id, doc_id, id);
        CREATE INDEX judge_verdicts_unit ON judge_verdicts(judge, task, item_id, query_id, doc_id, shown_order, id);
        CREATE INDEX verdict_assignments_queue ON verdict_assignments(annotator_id, kind, shown_order);
        CREATE INDEX verdict_skips_annotator ON verdict_skips(annotator_id, item_id, id);
        CREATE TRIGGER human_verdicts_fit_task BEFORE INSERT ON human_verdicts
            WHEN NOT EXISTS (SELECT 1 FROM verdict_items i JOIN task_verdicts t ON t.task = i.kind
                             WHERE i.item_id = NEW.item_id AND t.verdict = NEW.verdict)
            BEGIN SELECT RAISE(ABORT, 'the verdict is not one the item''s task takes'); END;
        CREATE TRIGGER judge_verdicts_fit_task BEFORE INSERT ON judge_verdicts
            WHEN (NEW.verdict IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM task_verdicts WHERE task = NEW.task AND verdict = NEW.verdict))
              OR (NEW.item_id IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM verdict_items WHERE item_id = NEW.item_id AND kind = NEW.task))
            BEGIN SELECT RAISE(ABORT, 'the verdict is not one the task takes, or the item is of another task'); END;
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
        CREATE TRIGGER verdict_skips_no_update BEFORE UPDATE ON verdict_skips
            BEGIN SELECT RAISE(ABORT, 'skips are append-only'); END;
        CREATE TRIGGER verdict_skips_no_delete BEFORE DELETE ON verdict_skips
            BEGIN SELECT RAISE(ABORT, 'skips are append-only'); END;
"""

# The views of the rebuilt tables' current rows, dropped at the start, made again.
SQL = f"""{_REBUILD}        {CURRENT_HUMAN_VERDICTS}
        {CURRENT_JUDGE_VERDICTS}

"""
