"""Pieces shared by every command module: the database argument and error translation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO, TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])

#: The project database, first argument of every command that has one.
db_argument = click.argument("db", type=click.Path(dir_okay=False))


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the libraries' user-facing errors into a one-line ``click.ClickException``."""
    from calibration import CalibrationError
    from labeler.store import StoreError
    from pooling import PoolingError

    try:
        yield
    except (StoreError, PoolingError, CalibrationError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc


@contextmanager
def output_file(path: str | Path) -> Iterator[TextIO]:
    """``path`` opened for writing (UTF-8); an unwritable path is a one-line error naming it."""
    try:
        with Path(path).open("w", encoding="utf-8") as handle:
            yield handle
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot write ({exc.strerror or exc})") from exc
