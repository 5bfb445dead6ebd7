"""How a project database is opened, written and copied.

Opening (:func:`connect`, :func:`init_db`; a read-only project is opened for reading), the
one write transaction (:func:`transaction`), what a user is told when another process holds
the write lock (the busy helpers), the app's checkpointer thread, and the online backup.
Every connection runs :func:`labeler.store.migrations.migrate` on opening.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import sqlite_utils

from labeler.store.errors import StoreBusy, StoreError, StoreReadOnly
from labeler.store.migrations import SCHEMA_VERSION, migrate

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



def busy_error_for(path: Path) -> StoreBusy:
    """:class:`StoreBusy` for ``path`` when no connection is at hand."""
    return StoreBusy(f"{path}: the project is busy (another process holds its write lock); try again in a moment")



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

def _configure(conn: sqlite3.Connection, timeout: float) -> None:
    # WAL lets annotators read while one of them writes; busy_timeout makes concurrent
    # writers wait their turn instead of failing with "database is locked".
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")



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
