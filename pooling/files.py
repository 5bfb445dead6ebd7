"""Writing the files a user names, safely: never through a link, never half a file.

Every file goldpool writes at a path a user chose is written with these helpers:
:func:`atomic_write` (one file), :func:`replace_folder` (an export folder), or
:func:`check_target` and :func:`private_folder` (a backup, which SQLite writes). They refuse,
before writing anything:

- a target that is a symbolic link (goldpool never writes through a link it did not make:
  in a shared folder a link can point at any file of the person running goldpool);
- a target file that is read-only (replacing it would quietly change its permissions), or a
  target folder holding one (replacing the folder would delete it);
- a ``NAME.partial`` that is a link or someone else's file.

The text goes to a temporary file created exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``:
never opened if something already sits at its name) and is renamed onto the target only when
complete, so the target is at every moment either the previous file or the new one whole.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class UnsafeTarget(OSError):
    """A path goldpool refuses to write; the message names it and says what to do."""


def check_target(path: str | Path) -> os.stat_result | None:
    """The ``lstat`` of ``path`` if it is an existing, writable regular file; None if absent.

    Raises:
        UnsafeTarget: ``path`` is a symbolic link, a folder or other non-file, or read-only.
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeTarget(f"{path}: is a symbolic link; goldpool does not write through links "
                           "(name the file itself, or remove the link)")
    if stat.S_ISDIR(st.st_mode):
        raise UnsafeTarget(f"{path}: is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeTarget(f"{path}: is not a regular file")
    # The mode bits too: for root os.access says every file is writable.
    if not st.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise UnsafeTarget(f"{path}: is read-only; goldpool does not replace it (make it writable, or name another file)")
    return st


def create_partial(target: str | Path, mode: int = 0o666) -> tuple[Path, int]:
    """Create ``<target>.partial`` exclusively; return its path and a descriptor open for writing.

    A ``.partial`` that is a regular file of the current user is what an interrupted write
    left behind: it is removed first. Anything else there (a link, a folder, another
    user's file) is refused, and a file that appears between the removal and the creation
    makes the exclusive creation fail: it is never opened.

    Raises:
        UnsafeTarget: something other than a leftover of ours sits at ``<target>.partial``.
        OSError: the folder cannot be written.
    """
    target = Path(target)
    partial = target.with_name(target.name + ".partial")
    try:
        st = os.lstat(partial)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a file of yours"
            raise UnsafeTarget(f"{partial}: already exists and is {what}; goldpool does not write through it "
                               "(remove it and try again)")
        os.unlink(partial)
    try:
        fd = os.open(partial, _NEW_FILE, mode)
    except FileExistsError as exc:
        raise UnsafeTarget(f"{partial}: appeared while goldpool was about to create it; "
                           "remove it and try again") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeTarget(f"{partial}: is a symbolic link; goldpool does not write through links") from exc
        raise
    return partial, fd


@contextmanager
def atomic_write(path: str | Path, *, binary: bool = False) -> Iterator[IO]:
    """``path`` opened for writing (UTF-8 text, or bytes with ``binary``), replaced only when
    the block succeeds.

    The data goes to ``<path>.partial`` (see :func:`create_partial`), is flushed to disk, and
    is renamed onto ``path`` at the end; on any error the partial file is removed and
    ``path`` is untouched. A file that is replaced keeps its permission bits.

    Raises:
        UnsafeTarget: ``path`` or its ``.partial`` is a link, a folder, read-only or not ours.
        OSError: the folder cannot be written.
    """
    target = Path(path)
    existing = check_target(target)
    partial, fd = create_partial(target)
    moved = False
    try:
        if existing is not None:
            os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        check_target(target)  # a link planted while the data was written is refused too
        os.replace(partial, target)
        moved = True
    finally:
        if not moved:
            with suppress(OSError):
                partial.unlink()


def private_folder(beside: str | Path, label: str) -> Path:
    """A new, empty folder only the current user can enter, created exclusively next to
    ``beside`` (``.<name>.<random>.<label>``): what is built inside cannot be redirected by
    anyone else, whatever the permissions of the shared folder around it."""
    beside = Path(beside)
    return Path(tempfile.mkdtemp(prefix=f".{beside.name}.", suffix=f".{label}", dir=beside.parent))


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths with Linux's ``renameat2(RENAME_EXCHANGE)``; False where the
    system or file system does not offer it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(a))


def replace_folder(target: str | Path, build: Callable[[Path], None]) -> None:
    """Build a folder with ``build(folder)`` and put it at ``target`` only once it is complete.

    ``build`` fills a new folder inside a private temporary folder next to ``target``. Then,
    if ``target`` does not exist, the new folder is renamed onto it. If it does, the two are
    exchanged in one atomic rename where the system allows (Linux), else the old folder is
    renamed aside, the new one renamed in, and the old one put back if that fails; the old
    folder is deleted last. So ``target`` is always either the previous folder whole or the
    new one whole (on systems without the atomic exchange, ``target`` is missing for the
    instant between the two renames, the old folder then sitting beside it under a
    ``.<name>.*.partial`` name). A build that fails or is killed never touches ``target``;
    a kill leaves the hidden ``.partial`` folder behind, which can be deleted.

    Raises:
        UnsafeTarget: ``target`` is a symbolic link or not a folder.
        OSError: the parent folder cannot be written, or whatever ``build`` raised.
    """
    target = Path(os.path.abspath(target))  # "." or "out/" still name a folder beside others
    check_folder(target)
    work = private_folder(target, "partial")
    try:
        fresh = work / target.name
        fresh.mkdir()
        build(fresh)
        check_folder(target)
        if not target.exists():
            os.rename(fresh, target)
            return
        os.chmod(fresh, stat.S_IMODE(os.lstat(target).st_mode))  # the folder's permissions carry over
        if _exchange(fresh, target):
            return  # the previous folder is now inside the private one, deleted below
        aside = work / ".previous"
        os.rename(target, aside)
        try:
            os.rename(fresh, target)
        except BaseException:
            os.rename(aside, target)
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_folder(target: str | Path) -> None:
    """Refuse a ``target`` folder path that is a symbolic link, exists as something else, or
    holds a read-only file: replacing the folder whole would remove that file, which
    :func:`check_target` refuses to replace on its own.

    Raises:
        UnsafeTarget: ``target`` is a link or not a folder, or a file inside it is read-only
            (the message names the first, relative to ``target``).
    """
    target = Path(target)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeTarget(f"{target}: is a symbolic link; goldpool does not write through links "
                           "(name the folder itself, or remove the link)")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeTarget(f"{target}: exists and is not a folder")
    for top, dirs, files in os.walk(target):  # links to folders are not followed
        dirs.sort()
        for name in sorted(files):
            path = Path(top) / name
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue  # a link or another non-file is removed, never written through
            try:
                check_target(path)
            except UnsafeTarget:
                raise UnsafeTarget(f"{target}: holds a read-only file, {path.relative_to(target)}; goldpool does not "
                                   "replace it (make it writable, or choose another folder)") from None
