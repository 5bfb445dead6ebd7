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
  annotator_id) counts (view ``current_judgments``).
- ``skips``: id, query_id, doc_id, annotator_id, at, seconds, note. Append-only.
- ``adjudications``: id, query_id, doc_id, annotator_id (the admin), relevance, note, at.
  Append-only; the latest row per (query_id, doc_id) is the final grade (view
  ``current_adjudications``).
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
  (``app`` | ``import``). Append-only; the latest row per (item_id, annotator_id) counts (view
  ``current_human_verdicts``).
- ``judge_verdicts``: id, judge, task (``relevance`` | ``faithfulness`` | ``pairwise``),
  item_id (or query_id, doc_id for relevance), model, prompt_hash, shown_order, verdict
  (``0``-``3`` for relevance; NULL when the reply could not be parsed or the call failed),
  parseable, raw (the reply, API key masked, cut to a bounded length), tokens_in, tokens_out,
  latency, error, at, source (``run`` | ``import``), raw_length (the reply's length in
  characters when raw holds only its start; NULL when raw is whole). Append-only; never shares
  a table with human verdicts. The latest row per (judge, task, item_id, query_id, doc_id,
  shown_order) counts (view ``current_judge_verdicts``).
- ``judge_cache``: model, prompt_hash, content_hash, shown_order ('' when there is no order),
  raw, verdict, parseable, tokens_in, tokens_out, latency, at, raw_length: one row per call made.
- ``golden_versions``: id, name (unique), created_at, parent (name of the previous version),
  rule, content_hash (sha256 of the sorted aggregated rows), manifest (JSON), annotator_id
  (who froze it; NULL for the project owner). Immutable: no UPDATE or DELETE, and no INSERT
  (OR REPLACE) over a stored version (triggers).
- ``golden_rows``: version, query_id, doc_id, relevance (the aggregated grade), labels (JSON
  list of the raw labels: annotator, relevance, at), adjudicated (0/1), posterior (JSON
  grade -> probability under dawid-skene, else NULL), sources (JSON pool provenance).
  Immutable: no UPDATE or DELETE, and no INSERT into a stored version (triggers).
- ``verdict_assignments``: item_id, annotator_id, kind, batch (the annotator's batch number),
  shown_order (per-annotator shuffle within the kind), slot_order (pairwise: ``AB`` when
  response A is shown on the left, ``BA`` otherwise), assigned_at. One row per (item_id,
  annotator_id).
- ``verdict_skips``: id, item_id, annotator_id, at, seconds, note. Append-only.
- ``imports``: id, path, started_at, finished_at (NULL while running), pid, host. A corpus
  import writes its documents in many short transactions, each row carrying the import's id
  (``documents.import_id``); rows of an import that has not finished are invisible
  (:data:`VISIBLE_DOCUMENTS`), and are deleted when it fails, or, after ``kill -9``, by the
  next import once the process named by ``pid`` on ``host`` is gone.
- ``sessions``: id, secret_hash (sha256 of the browser's random session secret; the secret
  itself is never stored), annotator_id, token_fingerprint (of the access token in force at
  sign-in, so a new token ends the session), created_at, expires_at. A sign-in kept across
  reloads; deleted by sign-out, deactivation and a new token.
- ``preferences``: annotator_id, key, value (JSON). One annotator's own display choices.
- ``overlap_waiting``: query_id, doc_id. Overlap entries handed out to fewer annotators than
  ``overlap_k``: their next copies go to the next other annotator who asks for work.
- ``candidates``: query_id, source, doc_id, rank (1-based): each pool source's ranking of a
  query to the candidate depth (``build-pool --candidate-depth``), deeper than the pool. What
  an adaptive pooling strategy may draw from; a build replaces the rankings of the sources it
  ran. One row per (query_id, source, doc_id).
- ``systems``: name, added_at. A generating system whose answers were imported.
- ``answers``: answer_id, system, query_id (the project query the question is, or NULL),
  question, response ('' for an abstention), contexts (JSON list of the texts given to the
  generator), retrieved_ids (JSON list of ranked doc_ids of the corpus), reference (NULL when
  none), content_hash (sha256 of the texts and claims given), meta (JSON), added_at. No UPDATE
  or DELETE (triggers): labels are given on the stored text.
- ``claims``: claim_id (``ANSWER_ID#N``), answer_id, n (1-based, in answer order), text,
  source (``file`` | ``judge`` | ``sentence``), method (the splitter's version or the judge
  prompt's hash; '' for claims from the file), meta (JSON: the judge's name and model),
  added_at. One decomposition per answer; no UPDATE or DELETE (triggers).
- ``samples``: name, design (``queries`` | ``stratified``), judge (whose grades shaped the
  strata, or NULL), seed, params (JSON: share, budget, pool size, queries), created_at.
- ``sample_items``: sample, query_id, doc_id, probability (the entry's inclusion probability,
  in (0, 1]): the pool entries people label under the sample. Neither table changes once
  written (triggers).

Views: ``current_judgments``, ``current_adjudications``, ``current_human_verdicts`` and
``current_judge_verdicts`` hold the current row of each append-only table: its highest id per
item and person, with the table's columns (a migration that adds a column re-creates the view).
Every reader of current labels or verdicts selects from them; none spells "the latest row" in
its own SQL.

Times are UTC ISO-8601 strings with microseconds (``2026-11-30T18:00:00.123456+00:00``).
"""

from __future__ import annotations

import hashlib
import os
import reprlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

import sqlite_utils


def _located(message: str, *, path: str | Path | None, line: int | None, field: str | None) -> str:
    """``message`` prefixed with where the problem is: ``file, line 3, field 'text': ...``
    (the same form as :func:`pooling.located`, which the store does not import)."""
    where = ""
    if path is not None:
        where = str(path) if line is None else f"{path}, line {line}"
    if field is not None:
        where = f"{where}, field '{field}'" if where else f"field '{field}'"
    return f"{where}: {message}" if where else message


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
        super().__init__(_located(message, path=path, line=line, field=field))


class StoreBusy(StoreError):
    """Another process held the project's write lock for longer than the busy timeout.

    Nothing was written; the same call can simply be made again later.
    """


class StoreReadOnly(StoreError):
    """A write to a project opened read-only (an archived file or directory): every read works."""


#: Environment variable: seconds a write waits for another writer's lock before giving up
#: with :class:`StoreBusy` (default :data:`DEFAULT_BUSY_TIMEOUT`).
BUSY_TIMEOUT_ENV = "GOLDPOOL_BUSY_TIMEOUT"
DEFAULT_BUSY_TIMEOUT = 30.0


def busy_timeout() -> float:
    """The busy timeout in seconds: ``GOLDPOOL_BUSY_TIMEOUT`` if set, else 30.

    Raises:
        StoreError: the variable is set but is not a number of seconds >= 0.
    """
    raw = os.environ.get(BUSY_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_BUSY_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise StoreError(f"{BUSY_TIMEOUT_ENV}={raw!r}: expected a number of seconds (0 or more)")
    return seconds


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite giving up on a lock another connection holds."""
    return isinstance(exc, sqlite3.OperationalError) and (
        "database is locked" in str(exc) or "database is busy" in str(exc)
    )


def busy_error(conn: sqlite3.Connection, exc: BaseException | None = None) -> StoreBusy:
    """The one-line :class:`StoreBusy` for the project open on ``conn``."""
    main = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "") or "the project"
    waited = conn.execute("PRAGMA busy_timeout").fetchone()[0] / 1000
    return StoreBusy(
        f"{main}: the project is busy (another process has held its write lock for more than "
        f"{waited:g} s); nothing was written, try again in a moment"
    )


_QUOTE = reprlib.Repr()
_QUOTE.maxstring = _QUOTE.maxother = 60
_QUOTE.maxlist = _QUOTE.maxdict = _QUOTE.maxtuple = 4


def shown(value: object) -> str:
    """``value`` as a store error quotes it: its ``repr``, cut in the middle past 60 characters.

    The store's copy of :func:`pooling.shown` (the store imports nothing outside itself): a
    value read from a file may be megabytes long, and an error stays one readable line.
    """
    text = _QUOTE.repr(value)
    if isinstance(value, str) and (len(value) > _QUOTE.maxstring or text != repr(value)):
        text += f" ({len(value)} characters)"
    return text


def now() -> str:
    """The current UTC time as the store writes it."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


@contextmanager
def transaction(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """One short write transaction: everything inside commits together or not at all.

    ``BEGIN IMMEDIATE`` takes the write lock up front, so two writers queue on
    ``busy_timeout`` instead of one failing half-way with "database is locked".

    Raises:
        StoreBusy: another process kept the write lock past the busy timeout (at the start,
            or at any statement inside); nothing of the block was written.
    """
    try:
        db.conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise _lock_error(db.conn, exc) from exc
    try:
        yield db
        db.conn.execute("COMMIT")
    except BaseException as exc:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.OperationalError):
            raise _lock_error(db.conn, exc) from exc
        raise


def _lock_error(conn: sqlite3.Connection, exc: sqlite3.OperationalError) -> Exception:
    """What a user is told when a write cannot start or finish: busy, read-only, or the
    original error (a bug) unchanged."""
    if is_busy(exc):
        return busy_error(conn, exc)
    if "readonly" in str(exc) or "read-only" in str(exc):
        main = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
        return StoreReadOnly(f"{main or 'the project'}: the project is read-only here; it can be read, not changed")
    return exc


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

# A corpus import commits in short transactions so labelling never waits on it: its rows
# carry the import's id and stay invisible until the import is marked finished.
_M_IMPORTS = """
        CREATE TABLE imports (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL
        );
        ALTER TABLE documents ADD COLUMN import_id INTEGER REFERENCES imports(id);
        CREATE INDEX documents_import ON documents(import_id);
"""

#: SQL condition true for a ``documents`` row that belongs to the project: added before
#: imports were tracked, or by an import that finished. Every reader of the whole corpus
#: (counts, builds, id checks) filters on it.
VISIBLE_DOCUMENTS = "coalesce(import_id, 0) NOT IN (SELECT id FROM imports WHERE finished_at IS NULL)"

# Sign-ins kept across reloads, per-annotator display choices, and overlap copies waiting for
# an annotator who has not arrived yet (filled from the assignments made so far).
_M_SESSIONS = """
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            secret_hash TEXT NOT NULL UNIQUE,
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            token_fingerprint TEXT NOT NULL,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL
        );
        CREATE INDEX sessions_annotator ON sessions(annotator_id);
        CREATE TABLE preferences (
            annotator_id INTEGER NOT NULL REFERENCES annotators(id),
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (annotator_id, key)
        ) WITHOUT ROWID;
        CREATE TABLE overlap_waiting (
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            PRIMARY KEY (query_id, doc_id),
            FOREIGN KEY (query_id, doc_id) REFERENCES pool(query_id, doc_id)
        ) WITHOUT ROWID;
        INSERT INTO overlap_waiting (query_id, doc_id)
            SELECT a.query_id, a.doc_id FROM assignments a
            WHERE NOT EXISTS (SELECT 1 FROM reservations r WHERE r.query_id = a.query_id AND r.doc_id = a.doc_id)
            GROUP BY a.query_id, a.doc_id
            HAVING count(*) < coalesce((SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'overlap_k'), 2);
"""

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

# A frozen version cannot be changed by any SQL: UPDATE and DELETE are refused above, and an
# INSERT (plain, OR REPLACE, OR IGNORE) may neither take the name or id of a stored version nor
# add a row to one. INSERT OR REPLACE deletes the conflicting row without firing DELETE
# triggers (unless recursive_triggers is on), so the check has to run BEFORE INSERT. A freeze
# writes a version's rows first and its golden_versions row last, in one transaction. IF NOT
# EXISTS: replaying this step on a database that already has the triggers changes nothing.
_M_GOLDEN_SEALED = """
        CREATE TRIGGER IF NOT EXISTS golden_versions_no_replace BEFORE INSERT ON golden_versions
            WHEN EXISTS (SELECT 1 FROM golden_versions WHERE name = NEW.name OR id = NEW.id)
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
        CREATE TRIGGER IF NOT EXISTS golden_rows_frozen BEFORE INSERT ON golden_rows
            WHEN EXISTS (SELECT 1 FROM golden_versions WHERE name = NEW.version)
              OR EXISTS (SELECT 1 FROM golden_rows WHERE version = NEW.version
                         AND query_id = NEW.query_id AND doc_id = NEW.doc_id)
            BEGIN SELECT RAISE(ABORT, 'golden versions are immutable'); END;
"""

# A judge's reply is stored cut to a bounded length; raw_length keeps the length it had.
_M_REPLY_LENGTH = """
        ALTER TABLE judge_verdicts ADD COLUMN raw_length INTEGER;
        ALTER TABLE judge_cache ADD COLUMN raw_length INTEGER;
"""

# The current row of each append-only table: its highest id per (item, person), with the
# table's columns. The grouping keys are read from the grouped subquery, so a reader's condition
# on them (one query, one item, one annotator) is applied inside it: such a reader reads only
# the rows it names, and a reader of everything groups the table once. GROUP BY counts NULLs
# as equal, as the key of a judge verdict needs (item_id or query_id, doc_id; shown_order).
# Judge verdicts get the index of their whole key, so grouping one judge's rows needs no sort.
_M_CURRENT_ROWS = """
        CREATE INDEX judge_verdicts_unit ON judge_verdicts(judge, task, item_id, query_id, doc_id, shown_order, id);
        CREATE VIEW current_judgments AS
            SELECT j.id, c.query_id, c.doc_id, c.annotator_id, j.relevance, j.note, j.at, j.seconds, j.rubric_hash
            FROM (SELECT query_id, doc_id, annotator_id, max(id) AS id FROM judgments
                  GROUP BY query_id, doc_id, annotator_id) c
            JOIN judgments j ON j.id = c.id;
        CREATE VIEW current_adjudications AS
            SELECT a.id, c.query_id, c.doc_id, a.annotator_id, a.relevance, a.note, a.at
            FROM (SELECT query_id, doc_id, max(id) AS id FROM adjudications GROUP BY query_id, doc_id) c
            JOIN adjudications a ON a.id = c.id;
        CREATE VIEW current_human_verdicts AS
            SELECT h.id, c.item_id, c.annotator_id, h.verdict, h.shown_order, h.note, h.at, h.seconds, h.rubric_hash,
                   h.source
            FROM (SELECT item_id, annotator_id, max(id) AS id FROM human_verdicts GROUP BY item_id, annotator_id) c
            JOIN human_verdicts h ON h.id = c.id;
        CREATE VIEW current_judge_verdicts AS
            SELECT v.id, c.judge, c.task, c.item_id, c.query_id, c.doc_id, v.model, v.prompt_hash, c.shown_order,
                   v.verdict, v.parseable, v.raw, v.tokens_in, v.tokens_out, v.latency, v.error, v.at, v.source,
                   v.raw_length
            FROM (SELECT judge, task, item_id, query_id, doc_id, shown_order, max(id) AS id FROM judge_verdicts
                  GROUP BY judge, task, item_id, query_id, doc_id, shown_order) c
            JOIN judge_verdicts v ON v.id = c.id;
"""

# The answers of generating systems and their claims: what generation metrics are computed
# on. An answer or a claim never changes once stored (people label the stored text); a new
# text comes in under a new answer_id. IF NOT EXISTS: replaying the step changes nothing.
_M_ANSWERS = """
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

# Tasks on answers (claims, correctness, answer relevance) join the verdict tasks. The tasks
# and the verdicts each takes become rows (``tasks``, ``task_verdicts``) instead of CHECK
# constraints, so a later task is a migration of INSERTs: the four verdict tables are rebuilt
# once, their kind/task columns referencing ``tasks`` and every verdict checked against the
# task of its item by a trigger. The old tables are renamed away first (which points the
# other tables' references at them), the new ones filled from them, then the old dropped.
# Answers and claims stored before this step get their items (``goldpool_sha256`` is
# registered on the connection by :func:`migrate`); an answer's item keeps no copy of the
# answer's texts (``answer_id`` leads to them). Replaying the step changes nothing.
_M_ANSWER_TASKS = """
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
        CREATE VIEW current_human_verdicts AS
            SELECT h.id, c.item_id, c.annotator_id, h.verdict, h.shown_order, h.note, h.at, h.seconds, h.rubric_hash,
                   h.source
            FROM (SELECT item_id, annotator_id, max(id) AS id FROM human_verdicts GROUP BY item_id, annotator_id) c
            JOIN human_verdicts h ON h.id = c.id;
        CREATE VIEW current_judge_verdicts AS
            SELECT v.id, c.judge, c.task, c.item_id, c.query_id, c.doc_id, v.model, v.prompt_hash, c.shown_order,
                   v.verdict, v.parseable, v.raw, v.tokens_in, v.tokens_out, v.latency, v.error, v.at, v.source,
                   v.raw_length
            FROM (SELECT judge, task, item_id, query_id, doc_id, shown_order, max(id) AS id FROM judge_verdicts
                  GROUP BY judge, task, item_id, query_id, doc_id, shown_order) c
            JOIN judge_verdicts v ON v.id = c.id;

"""

# A judge's card: its calibration against people as saved by ``calibrate --judge NAME --save``,
# one row per task, with the model and prompt hashes its verdicts were made under, so a later
# number resting on the judge can say how far to trust it, or that its prompt has changed since.
# Append-only; the latest row of a (judge, task) is the card. IF NOT EXISTS: replaying the step
# changes nothing.
_M_JUDGE_CARDS = """
        CREATE TABLE IF NOT EXISTS judge_cards (
            id INTEGER PRIMARY KEY,
            judge TEXT NOT NULL,
            task TEXT NOT NULL REFERENCES tasks(name),
            models TEXT NOT NULL,
            prompt_hashes TEXT NOT NULL,
            calibrated_at TEXT NOT NULL,
            n INTEGER NOT NULL,
            n_pairs INTEGER NOT NULL,
            agreement REAL, agreement_low REAL, agreement_high REAL,
            kappa REAL, kappa_low REAL, kappa_high REAL,
            ceiling_n INTEGER NOT NULL,
            ceiling_agreement REAL, ceiling_agreement_low REAL, ceiling_agreement_high REAL,
            ceiling_kappa REAL, ceiling_kappa_low REAL, ceiling_kappa_high REAL,
            details TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX IF NOT EXISTS judge_cards_judge ON judge_cards(judge, task, id);
        CREATE TRIGGER IF NOT EXISTS judge_cards_no_update BEFORE UPDATE ON judge_cards
            BEGIN SELECT RAISE(ABORT, 'judge cards are append-only: save a new one'); END;
        CREATE TRIGGER IF NOT EXISTS judge_cards_no_delete BEFORE DELETE ON judge_cards
            BEGIN SELECT RAISE(ABORT, 'judge cards are append-only: save a new one'); END;
"""

# Designed samples of the pool for people to label, with each entry's inclusion probability
# (what a judge-assisted estimate weighs it by). A sample never changes once planned.
# IF NOT EXISTS: replaying the step changes nothing.
_M_SAMPLES = """
        CREATE TABLE IF NOT EXISTS samples (
            name TEXT PRIMARY KEY,
            design TEXT NOT NULL CHECK (design IN ('queries', 'stratified')),
            judge TEXT,
            seed INTEGER NOT NULL,
            params TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS sample_items (
            sample TEXT NOT NULL REFERENCES samples(name),
            query_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            probability REAL NOT NULL CHECK (probability > 0 AND probability <= 1),
            PRIMARY KEY (sample, query_id, doc_id)
        ) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS samples_no_update BEFORE UPDATE ON samples
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; plan a new one under another name'); END;
        CREATE TRIGGER IF NOT EXISTS samples_no_delete BEFORE DELETE ON samples
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; plan a new one under another name'); END;
        CREATE TRIGGER IF NOT EXISTS sample_items_no_update BEFORE UPDATE ON sample_items
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; plan a new one under another name'); END;
        CREATE TRIGGER IF NOT EXISTS sample_items_no_delete BEFORE DELETE ON sample_items
            BEGIN SELECT RAISE(ABORT, 'a sample does not change; plan a new one under another name'); END;
"""

# Whole-answer faithfulness: every answer with a response is also an item of the faithfulness
# task, ``ANSWER_ID@faithfulness`` (SUPPORTED when every statement of the response is supported
# by its contexts), keeping no copy of the answer's texts, as its other items. Answers stored
# before this step get theirs (an id an imported item already holds is left to that item).
# Replaying the step changes nothing.
_M_ANSWER_FAITHFULNESS = """
        INSERT OR IGNORE INTO verdict_items (item_id, kind, question, content_hash, added_at, answer_id)
            SELECT a.answer_id || '@faithfulness', 'faithfulness', '',
                   goldpool_sha256(a.content_hash || char(31) || 'faithfulness' || char(31)), a.added_at, a.answer_id
            FROM answers a WHERE a.response <> '';
"""

# Answer relevance takes a third verdict, DECLINES: the response declines to answer (people's
# key "declines to answer" and a judge's reply), what the abstention rate counts beside the
# text rule. The trigger on verdicts reads task_verdicts, so one row is all it takes.
_M_DECLINES = """
        INSERT OR IGNORE INTO task_verdicts (task, verdict) VALUES ('answer-relevance', 'DECLINES');
"""

# Append new migrations (SQL scripts); never edit or reorder a released one.
MIGRATIONS: list[str] = [
    _M1_INITIAL, _M2_SKIP_NOTES, _M3_RUBRIC_CHANGES, _M_VERDICTS, _M_GOLDEN, _M_VERDICT_QUEUE,
    _M_IMPORTS, _M_SESSIONS, _M_CANDIDATES, _M_GOLDEN_SEALED, _M_REPLY_LENGTH, _M_CURRENT_ROWS, _M_ANSWERS,
    _M_ANSWER_TASKS, _M_JUDGE_CARDS, _M_SAMPLES, _M_ANSWER_FAITHFULNESS, _M_DECLINES,
]
SCHEMA_VERSION = len(MIGRATIONS)


def _configure(conn: sqlite3.Connection, timeout: float) -> None:
    # WAL lets annotators read while one of them writes; busy_timeout makes concurrent
    # writers wait their turn instead of failing with "database is locked".
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")


def _sha256(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def migrate(conn: sqlite3.Connection) -> int:
    """Apply every migration the database has not seen; return how many ran."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    # The step that gives stored answers their verdict items hashes their texts in SQL.
    conn.create_function("goldpool_sha256", 1, _sha256, deterministic=True)
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


def _open(path: Path, *, existing: bool = False, timeout: float | None = None) -> sqlite_utils.Database:
    """Connect to ``path``; with ``existing``, refuse a file that is no goldpool project
    before changing anything in it (WAL mode is written into the file)."""
    try:
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE ... COMMIT), so a
        # write never waits on an implicit transaction another statement left open.
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the project database ({exc})") from exc
    try:
        _configure(conn, busy_timeout() if timeout is None else timeout)
        if existing and conn.execute("PRAGMA user_version").fetchone()[0] == 0:
            raise StoreError(f"{path}: not a goldpool project (create one with `goldpool init`)")
        conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError as exc:
        conn.close()
        if is_busy(exc):
            raise busy_error_for(path) from exc
        raise StoreError(f"{path}: cannot open the project database ({exc})") from exc
    except sqlite3.DatabaseError as exc:
        # SQLite's "file is not a database": a corpus or run file given in place of DB.
        conn.close()
        raise StoreError(f"{path}: not a goldpool project database ({exc})") from exc
    except StoreError:
        conn.close()
        raise
    return sqlite_utils.Database(conn)


def _writable(path: Path) -> bool:
    """Whether SQLite can write ``path`` and create its -wal and -shm files beside it."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def _open_readonly(path: Path) -> sqlite_utils.Database:
    """Open an archived (read-only) project for reading.

    A WAL database is read through its ``-shm`` index; when that cannot be created (a
    read-only directory, a project closed cleanly so the file is gone), the file is opened
    ``immutable``: nobody can write it, so SQLite may skip locking altogether.
    """
    uri = path.resolve().as_uri()
    last: sqlite3.Error | None = None
    for query in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(f"{uri}?{query}", uri=True, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            last = exc
            continue
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.OperationalError as exc:
            conn.close()
            last = exc
            continue
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{path}: not a goldpool project database ({exc})") from exc
        if version == 0:
            conn.close()
            raise StoreError(f"{path}: not a goldpool project (create one with `goldpool init`)")
        if version != SCHEMA_VERSION:
            conn.close()
            raise StoreError(
                f"{path}: read-only project at schema version {version}, this goldpool reads "
                f"{SCHEMA_VERSION}; make the file writable once to {'upgrade it' if version < SCHEMA_VERSION else 'check'}"
            )
        return sqlite_utils.Database(conn)
    raise StoreError(f"{path}: cannot open the read-only project database ({last})")


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


def connect(
    path: str | Path, *, busy_timeout: float | None = None, autocheckpoint: bool = True
) -> sqlite_utils.Database:
    """Open an existing project database, refusing a file that is not one.

    A file that cannot be written (an archived project: a read-only file or directory) is
    opened read-only: every read works, every write is refused with a :class:`StoreError`.

    Args:
        path: the project database.
        busy_timeout: seconds a write waits for another writer before :class:`StoreBusy`;
            ``GOLDPOOL_BUSY_TIMEOUT`` (else 30 s) when None.
        autocheckpoint: let this connection's commits copy the WAL into the database file
            when it has grown (SQLite's default). The app turns it off for its sessions and
            runs :func:`start_checkpointer` instead, so a key press never pays for copying
            the pages of an import that ran meanwhile.

    Raises:
        StoreError: the file is missing or is not a goldpool project.
        StoreBusy: another process holds the lock needed to open or upgrade it.
    """
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"{path}: no such project database (create it with `goldpool init {path}`)")
    if not _writable(path):
        return _open_readonly(path)
    db = _open(path, existing=True, timeout=busy_timeout)
    if not autocheckpoint:
        db.conn.execute("PRAGMA wal_autocheckpoint=0")
    try:
        migrate(db.conn)
    except sqlite3.OperationalError as exc:
        db.close()
        if is_busy(exc):
            raise busy_error_for(path) from exc
        raise StoreError(f"{path}: cannot upgrade the project database ({exc})") from exc
    return db


def start_checkpointer(path: str | Path, every: float = 1.0) -> threading.Thread:
    """A daemon thread that copies the project's WAL into its file every ``every`` seconds.

    A passive checkpoint never waits for nor blocks readers or writers; it copies what no
    reader still needs. With it, connections opened with ``autocheckpoint=False`` keep the
    WAL bounded without any of their own commits doing the copying.
    """

    def run() -> None:
        db = connect(path)
        while True:
            time.sleep(every)
            try:
                db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error:
                pass  # read-only or busy: nothing to do now; try again next time

    thread = threading.Thread(target=run, name="goldpool-checkpoint", daemon=True)
    thread.start()
    return thread


def busy_error_for(path: Path) -> StoreBusy:
    """:class:`StoreBusy` for ``path`` when no connection is at hand."""
    return StoreBusy(f"{path}: the project is busy (another process holds its write lock); try again in a moment")


def snapshot(db: sqlite_utils.Database, path: str | Path) -> int:
    """Copy the project into the new file ``path`` with SQLite's online backup; check the copy.

    The copy is one consistent snapshot (a read transaction: in WAL mode writers go on
    meanwhile), a project file like any other: the rows still in the ``-wal`` file folded in,
    nothing beside it. A plain file copy of a database being written can catch half a
    transaction, or miss what still sits in the ``-wal`` file. Where ``path`` goes and how it
    is moved into place is the caller's (:mod:`labeler.project`).

    Returns:
        The number of pages copied.

    Raises:
        StoreError: the copy cannot be written, or fails its integrity check.
    """
    copy = None
    try:
        copy = sqlite3.connect(str(path), isolation_level=None)
        db.conn.backup(copy)
        copy.execute("PRAGMA journal_mode=DELETE")
        pages = copy.execute("PRAGMA page_count").fetchone()[0]
        verdict = copy.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot write the backup ({exc})") from exc
    finally:
        if copy is not None:
            copy.close()
    if verdict != "ok":
        raise StoreError(f"{path}: the backup failed its integrity check ({verdict})")
    return int(pages)


def refuse_project_file(db: sqlite_utils.Database, target: Path) -> None:
    """Refuse a backup destination that is, resolves to, or is another name of a file of the
    open project (the database or its -wal, -shm, -journal)."""
    main = next((row[2] for row in db.conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    if not main:
        return
    resolved = os.path.realpath(target)
    try:
        dest_stat = os.stat(target)
    except OSError:
        dest_stat = None
    for suffix in ("", "-wal", "-shm", "-journal"):
        own = Path(main + suffix)
        same = resolved == os.path.realpath(own)
        if not same and dest_stat is not None:
            with suppress(OSError):
                same = os.path.samestat(dest_stat, os.stat(own))
        if same:
            what = "the project database itself" if not suffix else f"the project's {suffix[1:]} file"
            raise StoreError(f"{target}: is {what} ({own}); back up to another file")
