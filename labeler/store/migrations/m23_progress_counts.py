"""What the admin's Progress page reads, kept as the store writes, so the page costs the same on a
project of a thousand labels as on one of a million:

- ``label_counts(task, annotator_id, n)``: the items of a task each person has labelled (a
  changed label counts once), imported labels and verdicts included;
- ``overlap_counts(task, people, n)``: how many items of a task have labels from exactly
  ``people`` persons, so the items labelled and the overlap done (at least ``overlap_k``
  people, a setting that may change) are sums over a handful of rows;
- ``query_counts(query_id, pool, labelled, assigned)``: each query's pool entries, those
  labelled by anyone and those handed out (on screen, ``shown_order > 0``) to anyone;
- ``assignment_counts(annotator_id, n)``: the pool entries handed out to each person;
- ``judgments(annotator_id, seconds)`` for the timed labels: a person's median seconds a label
  is read from the index at its middle, not by reading every label;
- ``current_nuggets`` re-created from each nugget (``schema.CURRENT_NUGGETS_BY_NUGGET``), so one
  question's nuggets are read by that question: making a question's support items, a new
  nugget's position and a support hand-out no longer group every revision of the project;
- ``judge_verdicts(item_id)`` and ``golden_nuggets(nugget_id)``: whether a nugget's text is fixed
  (a judge's verdict on one of its items, or a version that froze it), asked for each nugget
  the nugget page shows, is a probe, not a read of every judge verdict.

Labels and verdicts are append-only and a pool entry is deleted only while unlabelled (a run's
removal), so the insert triggers below and the pool's delete trigger keep those counts; a
hand-out is inserted, updated (its ``shown_order`` negated when it is released) and deleted, and
has a trigger for each. The counts are rebuilt from the tables here, so the step may safely run
again. The project's totals (``work_counts``, m22) stay beside the per-query counts: the
labelling page reads them on every key press, one row instead of a sum over the queries.
"""

from __future__ import annotations

from labeler.store.schema import CURRENT_NUGGETS_BY_NUGGET

# People on one relevance item / one verdict item, the new label included (trigger bodies).
_RELEVANCE_PEOPLE = (
    "(SELECT count(DISTINCT annotator_id) FROM judgments WHERE query_id = NEW.query_id AND doc_id = NEW.doc_id)"
)
_VERDICT_PEOPLE = "(SELECT count(DISTINCT annotator_id) FROM human_verdicts WHERE item_id = NEW.item_id)"
_KIND = "(SELECT kind FROM verdict_items WHERE item_id = NEW.item_id)"
# Whether someone else has the hand-out's pool entry on screen; +1 or -1 as it comes or goes.
_OTHER_ON_SCREEN = (
    "EXISTS (SELECT 1 FROM assignments a WHERE a.query_id = NEW.query_id AND a.doc_id = NEW.doc_id"
    " AND a.annotator_id <> NEW.annotator_id AND a.shown_order > 0)"
)
_STEP = "(CASE WHEN NEW.shown_order > 0 THEN 1 ELSE -1 END)"

SQL = f"""
        CREATE TABLE IF NOT EXISTS label_counts (
            task TEXT NOT NULL,
            annotator_id INTEGER NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (task, annotator_id)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS overlap_counts (
            task TEXT NOT NULL,
            people INTEGER NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (task, people)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS query_counts (
            query_id TEXT PRIMARY KEY,
            pool INTEGER NOT NULL,
            labelled INTEGER NOT NULL,
            assigned INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS assignment_counts (
            annotator_id INTEGER PRIMARY KEY,
            n INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS judgments_timed ON judgments(annotator_id, seconds) WHERE seconds IS NOT NULL;
        CREATE INDEX IF NOT EXISTS judge_verdicts_by_item ON judge_verdicts(item_id);
        CREATE INDEX IF NOT EXISTS golden_nuggets_nugget ON golden_nuggets(nugget_id);
        DROP VIEW IF EXISTS current_nuggets;
        {CURRENT_NUGGETS_BY_NUGGET}

        DELETE FROM label_counts;
        DELETE FROM overlap_counts;
        DELETE FROM query_counts;
        DELETE FROM assignment_counts;
        INSERT INTO label_counts (task, annotator_id, n)
            SELECT 'relevance', annotator_id, count(*)
            FROM (SELECT DISTINCT query_id, doc_id, annotator_id FROM judgments) GROUP BY annotator_id;
        INSERT INTO label_counts (task, annotator_id, n)
            SELECT i.kind, h.annotator_id, count(*)
            FROM (SELECT DISTINCT item_id, annotator_id FROM human_verdicts) h
            JOIN verdict_items i ON i.item_id = h.item_id GROUP BY i.kind, h.annotator_id;
        INSERT INTO overlap_counts (task, people, n)
            SELECT 'relevance', people, count(*)
            FROM (SELECT count(DISTINCT annotator_id) AS people FROM judgments GROUP BY query_id, doc_id)
            GROUP BY people;
        INSERT INTO overlap_counts (task, people, n)
            SELECT kind, people, count(*)
            FROM (SELECT i.kind AS kind, count(DISTINCT h.annotator_id) AS people
                  FROM human_verdicts h JOIN verdict_items i ON i.item_id = h.item_id GROUP BY h.item_id)
            GROUP BY kind, people;
        INSERT INTO query_counts (query_id, pool, labelled)
            SELECT query_id, count(*), 0 FROM pool GROUP BY query_id;
        UPDATE query_counts SET labelled = (
            SELECT count(*) FROM (SELECT DISTINCT doc_id FROM judgments j WHERE j.query_id = query_counts.query_id));
        UPDATE query_counts SET assigned = (
            SELECT count(*) FROM assignments a WHERE a.query_id = query_counts.query_id AND a.shown_order > 0
            AND NOT EXISTS (SELECT 1 FROM assignments b WHERE b.query_id = a.query_id AND b.doc_id = a.doc_id
                            AND b.shown_order > 0 AND b.annotator_id < a.annotator_id));
        INSERT INTO assignment_counts (annotator_id, n)
            SELECT annotator_id, count(*) FROM assignments WHERE shown_order > 0 GROUP BY annotator_id;

        CREATE TRIGGER IF NOT EXISTS judgments_progress AFTER INSERT ON judgments
            WHEN NOT EXISTS (SELECT 1 FROM judgments j WHERE j.query_id = NEW.query_id AND j.doc_id = NEW.doc_id
                             AND j.annotator_id = NEW.annotator_id AND j.id <> NEW.id)
            BEGIN
                INSERT INTO label_counts (task, annotator_id, n) VALUES ('relevance', NEW.annotator_id, 1)
                    ON CONFLICT (task, annotator_id) DO UPDATE SET n = n + 1;
                UPDATE overlap_counts SET n = n - 1 WHERE task = 'relevance' AND people = {_RELEVANCE_PEOPLE} - 1;
                INSERT INTO overlap_counts (task, people, n) VALUES ('relevance', {_RELEVANCE_PEOPLE}, 1)
                    ON CONFLICT (task, people) DO UPDATE SET n = n + 1;
                UPDATE query_counts SET labelled = labelled + 1
                    WHERE query_id = NEW.query_id AND {_RELEVANCE_PEOPLE} = 1;
            END;
        CREATE TRIGGER IF NOT EXISTS human_verdicts_progress AFTER INSERT ON human_verdicts
            WHEN NOT EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = NEW.item_id
                             AND h.annotator_id = NEW.annotator_id AND h.id <> NEW.id)
            BEGIN
                INSERT INTO label_counts (task, annotator_id, n) VALUES ({_KIND}, NEW.annotator_id, 1)
                    ON CONFLICT (task, annotator_id) DO UPDATE SET n = n + 1;
                UPDATE overlap_counts SET n = n - 1 WHERE task = {_KIND} AND people = {_VERDICT_PEOPLE} - 1;
                INSERT INTO overlap_counts (task, people, n) VALUES ({_KIND}, {_VERDICT_PEOPLE}, 1)
                    ON CONFLICT (task, people) DO UPDATE SET n = n + 1;
            END;
        CREATE TRIGGER IF NOT EXISTS pool_progress AFTER INSERT ON pool
            BEGIN
                INSERT INTO query_counts (query_id, pool, labelled) VALUES (NEW.query_id, 1, 0)
                    ON CONFLICT (query_id) DO UPDATE SET pool = pool + 1;
            END;
        CREATE TRIGGER IF NOT EXISTS pool_unprogress AFTER DELETE ON pool
            BEGIN UPDATE query_counts SET pool = pool - 1 WHERE query_id = OLD.query_id; END;
        CREATE TRIGGER IF NOT EXISTS assignments_progress AFTER INSERT ON assignments WHEN NEW.shown_order > 0
            BEGIN
                INSERT INTO assignment_counts (annotator_id, n) VALUES (NEW.annotator_id, 1)
                    ON CONFLICT (annotator_id) DO UPDATE SET n = n + 1;
                UPDATE query_counts SET assigned = assigned + 1 WHERE query_id = NEW.query_id AND NOT {_OTHER_ON_SCREEN};
            END;
        CREATE TRIGGER IF NOT EXISTS assignments_unprogress AFTER DELETE ON assignments WHEN OLD.shown_order > 0
            BEGIN
                UPDATE assignment_counts SET n = n - 1 WHERE annotator_id = OLD.annotator_id;
                UPDATE query_counts SET assigned = assigned - 1 WHERE query_id = OLD.query_id
                    AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.query_id = OLD.query_id AND a.doc_id = OLD.doc_id
                                    AND a.shown_order > 0);
            END;
        CREATE TRIGGER IF NOT EXISTS assignments_reprogress AFTER UPDATE OF shown_order ON assignments
            WHEN (OLD.shown_order > 0) <> (NEW.shown_order > 0)
            BEGIN
                INSERT INTO assignment_counts (annotator_id, n) VALUES (NEW.annotator_id, {_STEP})
                    ON CONFLICT (annotator_id) DO UPDATE SET n = n + excluded.n;
                UPDATE query_counts SET assigned = assigned + {_STEP} WHERE query_id = NEW.query_id AND NOT {_OTHER_ON_SCREEN};
            END;
"""
