"""``goldpool demo``: build the demo project and open the labelling app on it."""

from __future__ import annotations

from pathlib import Path

import click

from labeler.commands import serve
from labeler.commands.common import handles_errors, host_option, no_progress_option, port_option


@click.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("goldpool-demo"),
    show_default=True,
    help="Folder for the demo project (reused if it exists; no label is ever lost).",
)
@host_option
@port_option
@click.option("--no-serve", is_flag=True, help="Build the project and print the tokens, but do not start the app.")
@no_progress_option
@handles_errors
def demo(directory: Path, host: str, port: int, no_serve: bool, no_progress: bool) -> None:
    """Build a demo project from data/demo and open the labelling app on it.

    The corpus is 1,159 chunks of Python's own documentation with 46 questions; the pool is
    BM25 top-50 and dense (all-MiniLM-L6-v2) top-50 per question. Prints one access token
    per demo user to paste into the app's "Access token" field: demo-admin lands on Progress
    (Label in the sidebar labels), alice and bob land on Label.
    """
    from labeler.retrieval.demo import build_demo_project  # lazy: start-up

    project = build_demo_project(directory, progress=not no_progress, say=click.echo)
    click.echo(
        f"\nDemo project: {project.db_path} ({project.n_documents} chunks, "
        f"{project.n_queries} queries, {project.n_pool} pool entries)"
    )
    click.echo("Access tokens (shown once; a new run issues new ones):")
    for name, token in project.tokens.items():
        click.echo(f"  {name:<11} {token}")
    if no_serve:
        click.echo(f"\nStart the app with: goldpool serve {project.db_path}")
        click.echo(_WHERE_TOKENS_LEAD)
        return
    click.echo(f"\nOpen http://{host}:{port} and paste a token. {_WHERE_TOKENS_LEAD} Ctrl+C stops the app.")
    serve.run_app(project.db_path, host, port)


# Admins land on Progress (the task pages hand out work, so an admin gets it only by choosing it).
_WHERE_TOKENS_LEAD = (
    "demo-admin lands on Progress: open Label in the sidebar to label; alice and bob land on Label, "
    "ready to label with the keys 0-3."
)


COMMANDS: list[click.Command] = [demo]
