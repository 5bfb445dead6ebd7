"""Verdict commands: faithfulness and pairwise items, human and judge verdicts in and out."""

from __future__ import annotations

import sys

import click

from labeler.commands.common import Project, file_argument, output_file, output_option, with_project, judge_option
from labeler.store.vocabulary import OWNER


@click.command("import-items")
@with_project
@file_argument
def import_items(project: Project, file: str) -> None:
    """Add the faithfulness and pairwise items of a JSONL FILE to DB.

    \b
    faithfulness: {"item_id", "kind": "faithfulness", "question", "contexts": [...], "response"}
    pairwise:     {"item_id", "kind": "pairwise", "question", "context"?, "response_a",
                   "response_b", "model_a"?, "model_b"?}

    A response may be "" (the model answered with nothing). Importing the same file again
    changes nothing; changed text under an existing item_id is refused (verdicts were given on
    the stored text). Other keys are kept as metadata.
    """
    from labeler.judges.verdict_files import import_items as run  # lazy: start-up

    result = run(project.db, file, caller=OWNER)
    click.echo(f"{file}: {result.added} item{'s' if result.added != 1 else ''} added, {result.unchanged} unchanged")


@click.command("import-verdicts")
@with_project
@file_argument
@click.option("--annotator", default=None, help="Import as this annotator's verdicts (created if new).")
@judge_option(help="Import as the verdicts of the judge called NAME.")
def import_verdicts(project: Project, file: str, annotator: str | None, judge: str | None) -> None:
    """Import verdicts from FILE as one annotator's (--annotator) or one judge's (--judge).

    \b
    faithfulness: {"item_id", "verdict": "SUPPORTED" | "UNSUPPORTED"}
    pairwise:     {"item_id", "verdict": "A" | "B" | "tie", "order"?: "AB" | "BA"}
    relevance:    {"query_id", "doc_id", "relevance": 0-3}, or a TREC qrels file
    claims:       {"item_id": "ANSWER_ID#N", "verdict": "SUPPORTED" | "UNSUPPORTED" | "NOT_ONE_CLAIM"}
    correctness:  {"item_id": ANSWER_ID, "verdict": "CORRECT" | "INCORRECT"}
    answer-relevance: {"item_id": ANSWER_ID, "verdict": "ADDRESSES" | "MISSES" | "DECLINES"}
    nuggets:      {"answer_id", "nugget_id", "verdict": "support" | "partial_support" | "not_support"}

    NOT_ONE_CLAIM (a claim that is not one checkable claim) comes from people only.

    A pairwise verdict names the response, not the slot; "order" says which response was shown
    first. Optional keys: note, seconds, at, prompt_hash; for judges also model, raw,
    tokens_in, tokens_out, latency, and "verdict": null for a reply that could not be parsed.
    "at" is an ISO 8601 date or time. A file gives one verdict per item (per item and order,
    for a judge). A record equal to the latest one on the same item and order is skipped.
    The file is read as it is written in, in one transaction: a bad line anywhere writes nothing.
    """
    from labeler.judges.verdict_files import import_verdicts as run  # lazy: start-up

    if (annotator is None) == (judge is None):
        raise click.UsageError("give exactly one of --annotator NAME or --judge NAME")
    result = run(project.db, file, annotator=annotator, judge=judge, caller=OWNER)
    who = f"annotator {annotator!r}" if annotator is not None else f"judge {judge!r}"
    if result.created_annotator:
        who += " (new annotator)"
    click.echo(f"{file}: {result.added} verdict{'s' if result.added != 1 else ''} added for {who}, {result.unchanged} unchanged")


@click.command("export-verdicts")
@with_project
@output_option
def export_verdicts(project: Project, output: str | None) -> None:
    """Write every human and judge verdict in DB as JSONL, history included.

    Keys: who (annotator | judge), name, task, item_id or query_id and doc_id, verdict (or
    relevance), order, prompt_hash, at; judges also model, parseable, raw, tokens, latency,
    error. The file imports back with `goldpool import-verdicts`.
    """
    from labeler.store.verdict_io import export_verdicts as run  # lazy: start-up

    store = project.db
    if output is None:
        run(store, sys.stdout, caller=OWNER)
        return
    with output_file(output) as handle:
        n = run(store, handle, caller=OWNER)
    click.echo(f"{output}: {n} verdict{'s' if n != 1 else ''} written", err=True)


COMMANDS: list[click.Command] = [import_items, import_verdicts, export_verdicts]
