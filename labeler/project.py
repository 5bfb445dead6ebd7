"""Backups: a consistent copy of the open project, written where nothing can redirect it.

The store takes the snapshot (:func:`labeler.store.connection.snapshot`); this module decides
where it goes. The copy, with the journal SQLite keeps beside it, is made inside a private
temporary folder beside ``dest`` (so a link planted in a shared folder redirects neither) and
moved onto ``dest`` only once whole and checked: ``dest`` is either the previous file or a
whole, valid project. A backup that replaces a file keeps that file's permissions.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import sqlite_utils

from labeler.store.connection import refuse_project_file, snapshot
from labeler.store.errors import StoreError


def backup(db: sqlite_utils.Database, dest: str | Path) -> int:
    """Copy the project to ``dest`` while others keep working; return the pages copied.

    ``dest`` may not be the project itself, its ``-wal``, ``-shm`` or ``-journal`` file, nor a
    link or another name (hard link) for any of them: replacing the open project under its
    users would lose what they commit meanwhile.

    Raises:
        StoreError: ``dest`` is the project or one of its files, a symbolic link or a read-only
            file; it cannot be written; or the copy fails its integrity check.
    """
    from pooling.files import UnsafeTarget, check_target, private_folder

    target = Path(dest)
    refuse_project_file(db, target)
    work = None
    try:
        existing = check_target(target)
        work = private_folder(target, "partial")
        partial = work / target.name
        pages = snapshot(db, partial)
        if existing is not None:
            os.chmod(partial, stat.S_IMODE(existing.st_mode))
        check_target(target)  # a link planted during the copy is refused too
        os.replace(partial, target)
    except UnsafeTarget as exc:
        raise StoreError(str(exc)) from exc
    except OSError as exc:
        raise StoreError(f"{target}: cannot write the backup ({exc.strerror or exc})") from exc
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    return pages
