"""Tables of a goldpool project, their migrations, and how a connection is opened.

Migrations are numbered and recorded in SQLite's ``user_version``; each runs once, inside one
transaction, so applying them twice is a no-op and a failed one leaves the file untouched.

Tables (IR vocabulary: ``query_id``, ``doc_id``, ``relevance``):

- ``documents``: doc_id, title, text, meta (JSON), content_hash (sha256 of title + text).
- ``queries``: query_id, text, meta (JSON), content_hash.
- ``runs``: name, path, content_hash (of the file), imported_at, n_rows, meta (JSON).
- ``run_entries``: run, query_id, doc_id, rank (1-based, trec_eval order), score.
- ``pool``: query_id, doc_id, sources (JSON ``{source: rank}``), priority (reciprocal-rank
  fusion), position (1-based order of labelling within the query), added_at, build_id.
- ``pool_builds``: id, at, params (JSON: depths, model, sources, counts).
- ``annotators``: id, name, role (``annotator`` | ``admin``), token_salt, token_hash, active,
  created_at.
- ``assignments``: query_id, doc_id, annotator_id, shown_order (per-annotator shuffle),
  assigned_at.
- ``reservations``: query_id, doc_id, annotator_id, expires_at (single-label items only).
- ``judgments``: id, query_id, doc_id, annotator_id, relevance (0-3), note, at, seconds,
  rubric_hash. Append-only: a change is a new row; the latest row per (query_id, doc_id,
  annotator_id) counts (``LATEST_JUDGMENTS``, the one query every reader of current labels uses).
- ``skips``: id, query_id, doc_id, annotator_id, at, seconds, note. Append-only.
- ``adjudications``: id, query_id, doc_id, annotator_id (the admin), relevance, note, at.
  Append-only; the latest row per (query_id, doc_id) is the final grade.
- ``rubrics``: hash, text, created_at (first use), annotator_id. One row per distinct text.
- ``rubric_changes``: id, hash, at, annotator_id. Append-only; the latest row is the rubric
  in force.
- ``settings``: key, value (JSON).
- ``verdict_items``: item_id, kind (``faithfulness`` | ``pairwise``), question, contexts
  (JSON list, faithfulness), context (pairwise, optional), response (faithfulness),
  response_a, response_b, model_a, model_b, content_hash (sha256 of the texts), meta (JSON),
  added_at.
- ``human_verdicts``: id, item_id, annotator_id, verdict (``SUPPORTED`` | ``UNSUPPORTED`` |
  ``A`` | ``B`` | ``TIE``, naming the response, not the slot), shown_order (``AB`` | ``BA``
  for pairwise: which response was shown first), note, at, seconds, rubric_hash, source
  (``app`` | ``import``). Append-only; the latest row per (item_id, annotator_id) counts.
- ``judge_verdicts``: id, judge, task (``relevance`` | ``faithfulness`` | ``pairwise``),
  item_id (or query_id, doc_id for relevance), model, prompt_hash, shown_order, verdict
  (``0``-``3`` for relevance; NULL when the reply could not be parsed or the call failed),
  parseable, raw (the reply), tokens_in, tokens_out, latency, error, at, source (``run`` |
  ``import``). Append-only; never shares a table with human verdicts.
- ``judge_cache``: model, prompt_hash, content_hash, shown_order ('' when there is no order),
  raw, verdict, parseable, tokens_in, tokens_out, latency, at: one row per call made.
- ``golden_versions``: id, name (unique), created_at, parent (name of the previous version),
  rule, content_hash (sha256 of the sorted aggregated rows), manifest (JSON), annotator_id
  (who froze it; NULL for the project owner). Immutable: no UPDATE or DELETE.
- ``golden_rows``: version, query_id, doc_id, relevance (the aggregated grade), labels (JSON
  list of the raw labels: annotator, relevance, at), adjudicated (0/1), posterior (JSON
  grade -> probability under dawid-skene, else NULL), sources (JSON pool provenance).
  Immutable: no UPDATE or DELETE.
- ``verdict_assignments``: item_id, annotator_id, kind, batch (the annotator's batch number),
  shown_order (per-annotator shuffle within the kind), slot_order (pairwise: ``AB`` when
  response A is shown on the left, ``BA`` otherwise), assigned_at. One row per (item_id,
  annotator_id).
- ``verdict_skips``: id, item_id, annotator_id, at, seconds, note. Append-only.
- ``candidates``: query_id, source, doc_id, rank (1-based): each pool source's ranking of a
  query to the candidate depth (``build-pool --candidate-depth``), deeper than the pool. What
  an adaptive pooling strategy may draw from; a build replaces the rankings of the sources it
  ran. One row per (query_id, source, doc_id).

Times are UTC ISO-8601 strings with microseconds (``2026-11-30T18:00:00.123456+00:00``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import sqlite_utils

from pooling import located


class StoreError(Exception):
    """A project database problem a user can fix (missing file, wrong schema, bad request).

    Attributes:
        path: the input file, when the problem is a record read from one.
        line: 1-based line of that record.
        field: the field at fault.
    """

    def __init__(
        self, message: str, *, path: str | Path | None = None, line: int | None = None, field: str | None = None
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        super().__init__(located(message, path=path, line=line, field=field))


def now() -> str:
    """The current UTC time as the store writes it."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


@contextmanager
def transaction(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """One short write transaction: everything inside commits together or not at all.

    ``BEGIN IMMEDIATE`` takes the write lock up front, so two writers queue on
    ``busy_timeout`` instead of one failing half-way with "database is locked".
    """
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.conn.execute("ROLLBACK")
        raise
    db.conn.execute("COMMIT")


_M1_INITIAL = """
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

# A note typed before pressing `s` (why the item was skipped) is kept with the skip.
_M2_SKIP_NOTES = """
        ALTER TABLE skips ADD COLUMN note TEXT NOT NULL DEFAULT '';
"""

# Which rubric was in force when, and who put it there: one row per change, append-only, so
# going back to an earlier text records the return instead of re-dating the earlier row.
_M3_RUBRIC_CHANGES = """
        CREATE TABLE rubric_changes (
            id INTEGER PRIMARY KEY,
            hash TEXT NOT NULL REFERENCES rubrics(hash),
            at TEXT NOT NULL,
            annotator_id INTEGER REFERENCES annotators(id)
        );
        INSERT INTO rubric_changes (hash, at, annotator_id)
            SELECT hash, created_at, annotator_id FROM rubrics ORDER BY created_at, rowid;
        CREATE TRIGGER rubric_changes_no_update BEFORE UPDATE ON rubric_changes
            BEGIN SELECT RAISE(ABORT, 'rubric changes are append-only'); END;
        CREATE TRIGGER rubric_changes_no_delete BEFORE DELETE ON rubric_changes
            BEGIN SELECT RAISE(ABORT, 'rubric changes are append-only'); END;
        CREATE TRIGGER rubrics_no_update BEFORE UPDATE ON rubrics
            BEGIN SELECT RAISE(ABORT, 'rubric texts are append-only'); END;
"""

# Verdicts on faithfulness and pairwise items, and a judge's verdicts (any task) with the
# cache of its calls. Human and judge verdicts live in separate tables.
_M_VERDICTS = """
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

_M_VERDICT_QUEUE = """
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

#: The current label of each (item, annotator): the judgments row with the highest id per
#: (query_id, doc_id, annotator_id), all its columns. Use it as a table:
#: ``f"SELECT ... FROM ({LATEST_JUDGMENTS}) j JOIN annotators n ON n.id = j.annotator_id"``.
LATEST_JUDGMENTS = (
    "SELECT j.* FROM judgments j JOIN "
    "(SELECT max(id) AS id FROM judgments GROUP BY query_id, doc_id, annotator_id) latest ON latest.id = j.id"
)

# Frozen, named versions of the golden set: one row per version, one row per item of it.
_M_GOLDEN = """
        CREATE TABLE golden_versions (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL,
            parent TEXT REFERENCES golden_versions(name),
            rule TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            manifest TEXT NOT NULL,
            annotator_id INTEGER REFERENCES annotators(id)
        );
        CREATE TABLE golden_rows (
            version TEXT NOT NULL REFERENCES golden_versions(name),
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            relevance INTEGER NOT NULL,
            labels TEXT NOT NULL,
            adjudicated INTEGER NOT NULL DEFAULT 0,
            posterior TEXT,
            sources TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (version, query_id, doc_id)
        ) WITHOUT ROWID;
        CREATE TRIGGER golden_versions_no_update BEFORE UPDATE ON golden_versions
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
        CREATE TRIGGER golden_versions_no_delete BEFORE DELETE ON golden_versions
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
        CREATE TRIGGER golden_rows_no_update BEFORE UPDATE ON golden_rows
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
        CREATE TRIGGER golden_rows_no_delete BEFORE DELETE ON golden_rows
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
"""

# Each pool source's ranking of a query to the candidate depth (adaptive pooling draws from it).
_M_CANDIDATES = """
        CREATE TABLE candidates (
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            source TEXT NOT NULL,
            doc_id TEXT NOT NULL REFERENCES documents(doc_id),
            rank INTEGER NOT NULL,
            PRIMARY KEY (query_id, source, doc_id)
        ) WITHOUT ROWID;
        CREATE INDEX candidates_rank ON candidates(query_id, source, rank);
"""

# Append new migrations (SQL scripts); never edit or reorder a released one.
MIGRATIONS: list[str] = [
    _M1_INITIAL, _M2_SKIP_NOTES, _M3_RUBRIC_CHANGES, _M_VERDICTS, _M_GOLDEN, _M_VERDICT_QUEUE,
    _M_CANDIDATES,
]
SCHEMA_VERSION = len(MIGRATIONS)


def _configure(conn: sqlite3.Connection) -> None:
    # WAL lets annotators read while one of them writes; busy_timeout makes concurrent
    # writers wait their turn instead of failing with "database is locked".
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")


def migrate(conn: sqlite3.Connection) -> int:
    """Apply every migration the database has not seen; return how many ran."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"database schema version {current} is newer than this goldpool "
            f"({SCHEMA_VERSION}); upgrade goldpool"
        )
    for version in range(current + 1, SCHEMA_VERSION + 1):
        # One script, one transaction: executescript would commit an outer transaction
        # before running, so BEGIN and COMMIT are part of the script itself.
        script = f"BEGIN IMMEDIATE;\n{MIGRATIONS[version - 1]}\nPRAGMA user_version={version};\nCOMMIT;"
        try:
            conn.executescript(script)
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION - current


def _open(path: Path, *, existing: bool = False) -> sqlite_utils.Database:
    """Connect to ``path``; with ``existing``, refuse a file that is no goldpool project
    before changing anything in it (WAL mode is written into the file)."""
    try:
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE ... COMMIT), so a
        # write never waits on an implicit transaction another statement left open.
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the project database ({exc})") from exc
    try:
        if existing and conn.execute("PRAGMA user_version").fetchone()[0] == 0:
            raise StoreError(f"{path}: not a goldpool project (create one with `goldpool init`)")
        _configure(conn)
    except sqlite3.OperationalError as exc:
        conn.close()
        raise StoreError(f"{path}: cannot open the project database ({exc})") from exc
    except sqlite3.DatabaseError as exc:
        # SQLite's "file is not a database": a corpus or run file given in place of DB.
        conn.close()
        raise StoreError(f"{path}: not a goldpool project database ({exc})") from exc
    except StoreError:
        conn.close()
        raise
    return sqlite_utils.Database(conn)


def init_db(path: str | Path) -> sqlite_utils.Database:
    """Create the project database at ``path`` (or bring an existing one up to date).

    Raises:
        StoreError: the directory is missing, or ``path`` is a file that is not a database.
    """
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise StoreError(f"{path.parent}: directory does not exist")
    db = _open(path)
    migrate(db.conn)
    return db


def connect(path: str | Path) -> sqlite_utils.Database:
    """Open an existing project database, refusing a file that is not one.

    Raises:
        StoreError: the file is missing or is not a goldpool project.
    """
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"{path}: no such project database (create it with `goldpool init {path}`)")
    db = _open(path, existing=True)
    migrate(db.conn)
    return db
