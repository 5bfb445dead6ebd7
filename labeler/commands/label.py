"""Labelling commands: annotators and their tokens, assignment settings, progress, export."""

from __future__ import annotations

import sys

import click

from labeler.commands.common import Project, output_file, output_option, with_project
from labeler.store.vocabulary import OWNER

_name_argument = click.argument("name")


@click.command("add-annotator")
@with_project
@_name_argument
@click.option(
    "--role",
    type=click.Choice(["annotator", "admin"]),
    default="annotator",
    show_default=True,
    help="An admin also sees progress, agreement, adjudication, annotators and the rubric.",
)
def add_annotator(project: Project, name: str, role: str) -> None:
    """Add annotator NAME to DB and print their one-time access token.

    Only a salted hash of the token is kept: copy it now and hand it to NAME, who pastes it
    into the "Access token" field of the app (`goldpool serve DB`).
    """
    from labeler.store import access  # lazy: start-up

    annotator, token = access.add_annotator(project.db, name, role=role)  # type: ignore[arg-type]
    click.echo(f"Added {annotator.role} {annotator.name!r} (id {annotator.id}).")
    click.echo(f"Access token (shown once, not stored): {token}")
    click.echo(f'To label: goldpool serve {project.path}, then paste the token into "Access token".')


@click.command("new-token")
@with_project
@_name_argument
def new_token(project: Project, name: str) -> None:
    """Issue annotator NAME a new access token; the old one stops working at once.

    For a lost token: labels and assignments are kept.
    """
    from labeler.store import access  # lazy: start-up

    token = access.rotate_token(project.db, name)
    click.echo(f"New access token for {name!r} (shown once, not stored): {token}")


@click.command()
@with_project
def annotators(project: Project) -> None:
    """List the annotators of DB with their role, status and labels so far.

    Labels count whether made in the app or imported (an import assigns nothing, so labelled
    can exceed assigned); verdicts of the faithfulness and pairwise tasks follow when any.
    """
    from labeler.store import review  # lazy: start-up

    report = review.progress_report(project.db, caller=OWNER)
    if not report.annotators:
        click.echo("No annotators yet: add one with `goldpool add-annotator DB NAME`.")
        return
    verdicts = {t.task: dict(t.per_annotator) for t in report.tasks if t.task != "relevance"}
    width = max(len(a.name) for a in report.annotators)
    for a in report.annotators:
        status = "active" if a.active else "inactive"
        more = "".join(f", {task} {counts[a.name]:,}" for task, counts in verdicts.items() if counts.get(a.name))
        click.echo(f"{a.annotator_id:>4}  {a.name:<{width}}  {a.role:<9}  {status:<8}  "
                   f"{a.done:,} labelled, {a.assigned:,} assigned{more}")


def _set_active(project: Project, name: str, active: bool) -> None:
    from labeler.store import access  # lazy: start-up

    annotator = access.find_annotator(project.db, name)
    access.set_active(project.db, annotator.id, active, caller=OWNER)
    if active:
        click.echo(f"{name!r} is active: their token works again.")
    else:
        click.echo(f"{name!r} is deactivated: their token stops working at their next click; labels are kept.")


@click.command()
@with_project
@_name_argument
def deactivate(project: Project, name: str) -> None:
    """Stop annotator NAME's token from working (their labels are kept)."""
    _set_active(project, name, False)


@click.command()
@with_project
@_name_argument
def activate(project: Project, name: str) -> None:
    """Let annotator NAME's token work again."""
    _set_active(project, name, True)


@click.command()
@with_project
@_name_argument
def release(project: Project, name: str) -> None:
    """Hand back the pool entries annotator NAME was given and has not labelled.

    Their holds lapse and their overlap copies leave their queue at once, so the next
    annotator who asks gets the entries; NAME's labels are kept and NAME goes on getting new
    work. For someone who stopped labelling a batch others are waiting for.
    """
    from labeler.store import labels  # lazy: start-up

    n = labels.release_annotator(project.db, name, caller=OWNER)
    click.echo(f"{name}: released {n} unlabelled entr{'y' if n == 1 else 'ies'}; the next annotator who asks gets "
               f"{'it' if n == 1 else 'them'}")


@click.command("label-settings")
@with_project
@click.argument("assignments", nargs=-1, metavar="[KEY=VALUE]...")
def label_settings(project: Project, assignments: tuple[str, ...]) -> None:
    """Show or change how work is handed out in DB.

    \b
    overlap              share of pool entries labelled by several annotators (0.2)
    overlap_k            annotators per overlap entry (2)
    reservation_minutes  an idle hold on an entry lapses after this (30)
    batch_size           entries of one query (or verdict items) handed out at a time (10)
    tasks                task pages annotators see, e.g. tasks=relevance,pairwise
                         (default: every task the project has items for)
    strategy             how a query's next entries are chosen (depth): depth (pool
                         order), rrf, mtf, bandit, hedge or active, drawing on the
                         candidate lists kept by build-pool --candidate-depth
    stop_recall          stop offering a query's entries once the stopping rule says
                         this share of its relevant chunks is found (off)
    stop_confidence      ... with this confidence (0.9)
    stop_rule            which rule decides (sample): sample (a random check sample of
                         the unjudged candidates, a hypergeometric test), quantile (a
                         model of the unjudged) or knee (a heuristic, no confidence)
    sample               hand out only the entries of this designed sample
                         (goldpool plan-sample), blind as ever; off: the whole pool
    answer_sample        hand out only the answers of this sample on the generation
                         task pages (goldpool sample-answers); off: every answer

    Changes apply to work handed out from now on; setting a sample also releases the
    unlabelled entries outside it handed out before, and says how many, by annotator.
    """
    from dataclasses import asdict

    from labeler.retrieval import scheduling  # lazy: start-up

    values: dict[str, object] = {}
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        if not sep:
            raise click.BadParameter(f"{assignment!r}: write KEY=VALUE", param_hint="KEY=VALUE")
        values[key.strip()] = value.strip()
    from labeler.store.settings import enabled_tasks, get_settings  # lazy: start-up

    store = project.db
    change = scheduling.change_settings(store, values, caller=OWNER) if values else None
    current = change.settings if change else get_settings(store)
    if change and change.released is not None:
        n = sum(change.released.values())
        who = ", ".join(f"{name} {count}" for name, count in change.released.items())
        click.echo(f"sample {current.sample}: released {n} unlabelled entr{'y' if n == 1 else 'ies'} outside the sample "
                   f"from the queues they were handed out to before it" + (f" ({who})" if who else "")
                   + ("; they go out again when the sample is off" if n else ""))
    open_tasks = ",".join(enabled_tasks(store)) or "none"
    for key, value in asdict(current).items():
        if key == "tasks":
            value = open_tasks + (" (not chosen: every task with items)" if value is None else "")
        if key == "stop_recall" and value is None:
            value = "off"
        if key in ("sample", "answer_sample") and value is None:
            continue  # shown only when set: the whole pool is handed out
        click.echo(f"{key} = {value}")


@click.command("export-judgments")
@with_project
@output_option
def export_judgments(project: Project, output: str | None) -> None:
    """Write every raw label in DB as JSONL, history included, oldest first.

    Keys: query_id, doc_id, annotator, relevance, at, seconds, note, rubric_hash.
    """
    from labeler.store import review  # lazy: start-up

    store = project.db
    if output is None:
        review.export_judgments(store, sys.stdout, caller=OWNER)
        return
    with output_file(output) as out:
        n = review.export_judgments(store, out, caller=OWNER)
    click.echo(f"{output}: {n} judgment{'s' if n != 1 else ''} written", err=True)


COMMANDS: list[click.Command] = [add_annotator, new_token, annotators, activate, deactivate, release, label_settings,
                                 export_judgments]
