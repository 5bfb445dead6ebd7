"""``goldpool backup``: a consistent copy of a project while people keep labelling."""

from __future__ import annotations

from pathlib import Path

import click

from labeler.commands.common import db_argument, user_errors


@click.command("backup")
@db_argument
@click.argument("dest", type=click.Path(dir_okay=False))
def backup(db: str, dest: str) -> None:
    """Copy project DB to DEST with SQLite's online backup (safe while the app is in use).

    DEST is replaced only once the copy is whole and checked; a copy of the file with `cp`
    can catch half a transaction and misses what still sits in DB-wal.
    """
    from labeler.store import connect
    from labeler.store.schema import backup as run

    with user_errors():
        store = connect(db)
        try:
            pages = run(store, dest)
        finally:
            store.close()
    size = Path(dest).stat().st_size
    click.echo(f"{dest}: backup of {db} ({pages} pages, {size / 1e6:.1f} MB)")


COMMANDS: list[click.Command] = [backup]
