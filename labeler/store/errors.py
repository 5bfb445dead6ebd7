"""The errors the store raises, and how they quote a value read from a file.

The store raises only :class:`StoreError` and its kinds: a user can fix each (a missing file,
a busy or read-only project, a bad record of an input file).
"""

from __future__ import annotations

import reprlib
from pathlib import Path


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


class InputError(StoreError):
    """A bad record in an input file, located as ``file, line N, field 'f': message``."""

    def __init__(self, message: str, path: str | Path, line: int | None = None, field: str | None = None) -> None:
        where = str(path) if line is None else f"{path}, line {line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {message}")


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

