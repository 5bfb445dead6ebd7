"""A frozen version cannot be changed by any SQL: UPDATE and DELETE are refused above, and an
INSERT (plain, OR REPLACE, OR IGNORE) may neither take the name or id of a stored version nor
add a row to one. INSERT OR REPLACE deletes the conflicting row without firing DELETE
triggers (unless recursive_triggers is on), so the check has to run BEFORE INSERT. A freeze
writes a version's rows first and its golden_versions row last, in one transaction. IF NOT
EXISTS: replaying this step on a database that already has the triggers changes nothing.
"""

from __future__ import annotations

SQL = """
        CREATE TRIGGER IF NOT EXISTS golden_versions_no_replace BEFORE INSERT ON golden_versions
            WHEN EXISTS (SELECT 1 FROM golden_versions WHERE name = NEW.name OR id = NEW.id)
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
        CREATE TRIGGER IF NOT EXISTS golden_rows_frozen BEFORE INSERT ON golden_rows
            WHEN EXISTS (SELECT 1 FROM golden_versions WHERE name = NEW.version)
              OR EXISTS (SELECT 1 FROM golden_rows WHERE version = NEW.version
                         AND query_id = NEW.query_id AND doc_id = NEW.doc_id)
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
"""
