"""``goldpool backup``: a consistent copy of a project while people keep labelling."""

from __future__ import annotations

from pathlib import Path

import click

from labeler.commands.common import Project, with_project


@click.command("backup")
@with_project
@click.argument("dest", type=click.Path(dir_okay=False))
def backup(project: Project, dest: str) -> None:
    """Copy project DB to DEST with SQLite's online backup (safe while the app is in use).

    DEST is replaced only once the copy is whole and checked; a copy of the file with `cp`
    can catch half a transaction and misses what still sits in DB-wal.
    """
    from labeler.project import backup as run  # lazy: start-up

    pages = run(project.db, dest)
    size = Path(dest).stat().st_size
    click.echo(f"{dest}: backup of {project.path} ({pages} pages, {size / 1e6:.1f} MB)")


COMMANDS: list[click.Command] = [backup]
