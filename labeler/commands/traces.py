"""Answers in from traces, and out again: ``import-traces``, ``export-answers``."""

from __future__ import annotations

import click

from labeler.commands.common import Project, echo_json, file_argument, json_option, output_option_for, plural, with_project

batch_option = click.option("--batch", default=None, metavar="NAME",
                            help="The batch the answers belong to (a week, a release; default: today's date, UTC).")


@click.command("import-traces")
@with_project
@file_argument
@click.option("--system", required=True, help="Name of the system whose traces FILE holds (one system a file).")
@batch_option
@json_option
def import_traces(project: Project, file: str, system: str, batch: str | None, as_json: bool) -> None:
    """Add one answer per trace of FILE (OTLP JSON or Phoenix's spans as Parquet) to DB as SYSTEM's.

    \b
    OTLP JSON: resourceSpans -> scopeSpans -> spans, one export request a line (the
    collector's file exporter) or one document. Phoenix: its spans dataframe saved with
    to_parquet(). Spans follow OpenInference: the root (or outermost CHAIN) span's input.value
    is the question and output.value the response; RETRIEVER spans give the documents
    (retrieval.documents.N.document.id/content/score); the last LLM span's llm.model_name the
    model. The trace id is the answer_id; session.id, user.id, metadata, tag.tags, the start
    time and every retrieved id and score are kept as metadata. Retrieved ids that are
    documents of the corpus become retrieved_ids; the contexts are kept as text either way.
    A trace with no such root or CHAIN span is skipped; one without a RETRIEVER span is read
    without contexts, one with several with all their documents: each counted, the first
    trace ids named. Importing the same file again changes nothing.

    JSON keys: file, system, batch, spans, traces, added, unchanged, linked, skipped,
    no_retriever, several_retrievers, documents, in_corpus, first_skipped, first_no_retriever,
    first_several_retrievers.
    """
    from labeler.generation.traces import import_traces as run
    from labeler.store.access import OWNER

    r = run(project.db, file, system, batch=batch, caller=OWNER)
    if as_json:
        echo_json(r.as_dict())
        return
    click.echo(f"{file}: {plural(r.traces, 'trace')} ({plural(r.spans, 'span')}): {plural(r.added, 'answer')} of "
               f"{system!r} added in batch {r.batch!r}, {r.unchanged} unchanged; {r.linked} linked to project queries; "
               f"{r.in_corpus} of {plural(r.documents, 'retrieved document')} in the corpus")
    for count, first, what in ((r.skipped, r.first_skipped, "skipped: no root or CHAIN span with input.value and "
                                "output.value"),
                               (r.no_retriever, r.first_no_retriever, "read without contexts: no RETRIEVER span"),
                               (r.several_retrievers, r.first_several_retrievers,
                                "read with the documents of several RETRIEVER spans, in the order they started")):
        if count:
            click.echo(f"{plural(count, 'trace')} {what} (first: {', '.join(first)})")


@click.command("export-answers")
@with_project
@click.option("--system", "systems", multiple=True, metavar="NAME", help="Only this system's answers (repeatable).")
@click.option("--batch", "batches", multiple=True, metavar="NAME", help="Only this batch's answers (repeatable).")
@output_option_for(required=True, help="JSONL file to write.")
def export_answers(project: Project, systems: tuple[str, ...], batches: tuple[str, ...], output: str) -> None:
    """Write the answers of DB as JSONL in RAGAS's columns, which import-answers reads back.

    \b
    {"user_input", "retrieved_contexts": [...], "response", "reference", "answer_id",
     "system", "batch", "retrieved_ids": [...], "meta": {...}}

    One line an answer, by system, batch and answer_id; a sample goes to RAGAS's
    EvaluationDataset or a notebook as it is. import-answers --system NAME reads the file back
    (each record's batch kept); a record of another system is refused.
    """
    from labeler.commands.common import output_file
    from labeler.generation.answers import export_answers as run
    from labeler.store.access import OWNER

    with output_file(output) as out:
        n = run(project.db, out, systems=systems, batches=batches, caller=OWNER)
    click.echo(f"{output}: {plural(n, 'answer')} written", err=True)


COMMANDS: list[click.Command] = [import_traces, export_answers]
