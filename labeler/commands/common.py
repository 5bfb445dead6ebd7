"""Pieces shared by every command module: the database argument, error translation and
output files."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO, TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])

def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and the noun in the right number: ``1 item``, ``2 items``, ``3 queries``.

    >>> plural(1, "item"), plural(2, "item"), plural(3, "query", "queries")
    ('1 item', '2 items', '3 queries')
    """
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


#: The project database, first argument of every command that has one.
db_argument = click.argument("db", type=click.Path(dir_okay=False))


#: The root error of each package, by module: what a user can fix. Anything else is a bug
#: and keeps its traceback.
ERROR_ROOTS: tuple[tuple[str, str], ...] = (
    ("pooling", "PoolingError"),
    ("calibration", "CalibrationError"),
    ("labeler.store.schema", "StoreError"),
    ("labeler.demo", "DemoError"),
)


def _roots() -> tuple[type[Exception], ...]:
    # Only modules already loaded can have raised their error, so nothing is imported here.
    return tuple(getattr(sys.modules[module], name) for module, name in ERROR_ROOTS if module in sys.modules)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the packages' root errors into a one-line ``click.ClickException``."""
    try:
        yield
    except Exception as exc:
        if isinstance(exc, _roots()):
            raise click.ClickException(str(exc)) from exc
        raise


@contextmanager
def output_file(path: str | Path) -> Iterator[TextIO]:
    """``path`` opened for writing (UTF-8), the one way every command writes a file.

    The text goes to ``<path>.partial``, created exclusively and moved into place only when
    the block succeeds, so a failure never leaves half a file. A path that is a symbolic
    link, a read-only file, or whose ``.partial`` is a link or another user's file is
    refused before anything is written; so is an unwritable path: one line naming it.
    """
    from pooling.files import UnsafeTarget, atomic_write

    try:
        with atomic_write(path) as handle:
            yield handle
    except UnsafeTarget as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot write ({exc.strerror or exc})") from exc
