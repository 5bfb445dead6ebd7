"""Who judges which verdict item, in which batch and order (and, for pairwise items, which
response is shown on the left), and the verdict items skipped.
"""

from __future__ import annotations

SQL = """
        CREATE TABLE verdict_assignments (
            item_id TEXT NOT NULL REFERENCES verdict_items(item_id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            kind TEXT NOT NULL CHECK (kind IN ('faithfulness', 'pairwise')),
            batch INTEGER NOT NULL,
            shown_order INTEGER NOT NULL,
            slot_order TEXT CHECK (slot_order IN ('AB', 'BA')),
            assigned_at TEXT NOT NULL,
            PRIMARY KEY (item_id, annotator_id),
            CHECK ((kind = 'pairwise') = (slot_order IS NOT NULL))
        );
        CREATE INDEX verdict_assignments_queue ON verdict_assignments(annotator_id, kind, shown_order);
        CREATE TABLE verdict_skips (
            id INTEGER PRIMARY KEY,
            item_id TEXT NOT NULL REFERENCES verdict_items(item_id),
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            at TEXT NOT NULL,
            seconds REAL,
            note TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX verdict_skips_annotator ON verdict_skips(annotator_id, item_id, id);
        CREATE TRIGGER verdict_skips_no_update BEFORE UPDATE ON verdict_skips
            BEGIN SELECT RAISE(ABORT, 'skips are append-only'); END;
        CREATE TRIGGER verdict_skips_no_delete BEFORE DELETE ON verdict_skips
            BEGIN SELECT RAISE(ABORT, 'skips are append-only'); END;
"""
