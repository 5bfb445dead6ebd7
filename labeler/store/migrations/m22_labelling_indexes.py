"""What a key press and a hand-out read, found through indexes, so labelling costs the same on a
project of a thousand items as on one of a million:

- ``verdict_items(kind)``: whether a task has items (the task pages open to annotators) is one
  probe per task, and a task's item count reads the index only;
- ``verdict_open``: the items of each task that may still be handed out, in import order
  (``seq`` is the item's rowid). An item joins when it is added (the trigger below) and leaves
  with the verdict that finishes it (``labeler.store.verdict_handout``), so the next batch is
  read from the first open items instead of from every item. Whether an item is an overlap
  item is a hash computed in Python, so on a project with verdicts already the list is settled
  by the first hand-out after this step (``state.verdict_open`` absent until then); on one
  without, every item is open, as written here;
- ``human_verdicts(annotator_id, at)``, ``verdict_skips(annotator_id, at)``: whether a holder
  gave a verdict or a skip lately (their holds stand);
- ``verdict_assignments(annotator_id, kind, batch)``: the items of the batch on screen;
- ``reservations(annotator_id, expires_at)``: whether someone holds anything (an admin's page
  lets their holds go on every run); ``sessions(expires_at)``: the ended sign-ins a sign-in
  deletes;
- ``work_counts``: the pool's size and its entries labelled by anyone, kept as the pool and
  the labels are written, for the progress line of the labelling page.
"""

from __future__ import annotations

SQL = """
        CREATE INDEX IF NOT EXISTS verdict_items_kind ON verdict_items(kind);
        CREATE INDEX IF NOT EXISTS human_verdicts_recent ON human_verdicts(annotator_id, at);
        CREATE INDEX IF NOT EXISTS verdict_skips_recent ON verdict_skips(annotator_id, at);
        CREATE INDEX IF NOT EXISTS verdict_assignments_batch ON verdict_assignments(annotator_id, kind, batch);
        CREATE INDEX IF NOT EXISTS reservations_annotator ON reservations(annotator_id, expires_at);
        CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions(expires_at);

        CREATE TABLE IF NOT EXISTS verdict_open (
            kind TEXT NOT NULL,
            seq INTEGER NOT NULL,
            item_id TEXT NOT NULL,
            PRIMARY KEY (kind, seq)
        ) WITHOUT ROWID;
        INSERT OR IGNORE INTO verdict_open (kind, seq, item_id) SELECT kind, rowid, item_id FROM verdict_items;
        CREATE TRIGGER IF NOT EXISTS verdict_items_open AFTER INSERT ON verdict_items
            BEGIN INSERT OR IGNORE INTO verdict_open (kind, seq, item_id) VALUES (NEW.kind, NEW.rowid, NEW.item_id); END;
        -- Without a verdict every item is open: the list is made, under the overlap settings of now
        -- (Settings' defaults where none is set).
        INSERT OR REPLACE INTO settings (key, value)
            SELECT 'state.verdict_open', json_object(
                'overlap', coalesce((SELECT json_extract(value, '$') FROM settings WHERE key = 'overlap'), 0.2),
                'overlap_k', coalesce((SELECT json_extract(value, '$') FROM settings WHERE key = 'overlap_k'), 2))
            WHERE NOT EXISTS (SELECT 1 FROM human_verdicts);

        CREATE TABLE IF NOT EXISTS work_counts (
            name TEXT PRIMARY KEY,
            n INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT OR REPLACE INTO work_counts (name, n) VALUES ('pool', (SELECT count(*) FROM pool));
        INSERT OR REPLACE INTO work_counts (name, n)
            VALUES ('pool_labelled', (SELECT count(*) FROM (SELECT DISTINCT query_id, doc_id FROM judgments)));
        CREATE TRIGGER IF NOT EXISTS pool_counted AFTER INSERT ON pool
            BEGIN UPDATE work_counts SET n = n + 1 WHERE name = 'pool'; END;
        CREATE TRIGGER IF NOT EXISTS pool_uncounted AFTER DELETE ON pool
            BEGIN UPDATE work_counts SET n = n - 1 WHERE name = 'pool'; END;
        CREATE TRIGGER IF NOT EXISTS judgments_counted AFTER INSERT ON judgments
            WHEN NOT EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = NEW.query_id AND j.doc_id = NEW.doc_id
                             AND j.id <> NEW.id)
            BEGIN UPDATE work_counts SET n = n + 1 WHERE name = 'pool_labelled'; END;
"""
