"""The project as a whole: what names a golden set in it (:func:`parse_golden`), and backups.

Backups: a consistent copy of the open project, written where nothing can redirect it.

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
from pooling.files import UnsafeTarget, check_target, private_folder


def backup(db: sqlite_utils.Database, dest: str | Path) -> int:
    """Copy the project to ``dest`` while others keep working; return the pages copied.

    ``dest`` may not be the project itself, its ``-wal``, ``-shm`` or ``-journal`` file, nor a
    link or another name (hard link) for any of them: replacing the open project under its
    users would lose what they commit meanwhile.

    Raises:
        StoreError: ``dest`` is the project or one of its files, a symbolic link or a read-only
            file; it cannot be written; or the copy fails its integrity check.
    """
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


def parse_golden(text: str, *, project_for: str | None = None) -> tuple[str, str | None]:
    """The project file and version that a GOLDEN argument names: ``DB@VERSION`` gives
    ``(DB, VERSION)``; anything else (a qrels file, a folder ``goldpool export`` wrote, a
    project file alone) gives ``(text, None)``. The one reading of GOLDEN, for every command.

    ``text`` is ``DB@VERSION`` when it is not itself an existing file or folder and, split at
    its last ``@``, DB is an existing file; the version after the ``@`` may not be empty. With
    ``project_for`` (why a project is needed), anything but ``DB@VERSION`` is refused.

    >>> parse_golden("qrels.txt")
    ('qrels.txt', None)

    Raises:
        StoreError: ``DB@`` without a version; with ``project_for``, not ``DB@VERSION``.
    """
    if not Path(text).exists():
        base, at, version = text.rpartition("@")
        if at and base and Path(base).is_file():
            if not version:
                raise StoreError(f"golden set {text!r}: no version after '@': give DB@VERSION")
            return base, version
    if project_for is None:
        return text, None
    base, at, version = text.rpartition("@")
    if at and base and version and not Path(base).exists():
        raise StoreError(f"golden set {text!r}: no project file {base!r}")
    raise StoreError(f"golden set {text!r}: give DB@VERSION ({project_for})")
