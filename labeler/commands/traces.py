"""Answers in from traces, out again, and a sample of them for people: ``import-traces``,
``export-answers``, ``sample-answers``."""

from __future__ import annotations

import click

from labeler.commands.common import (Project, echo_json, file_argument, judge_option, json_option, output_file,
                                     output_option_for, plural, with_project)

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
    from labeler.generation.traces import import_traces as run  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

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
    from labeler.generation.answers import export_answers as run  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    with output_file(output) as out:
        n = run(project.db, out, systems=systems, batches=batches, caller=OWNER)
    click.echo(f"{output}: {plural(n, 'answer')} written", err=True)


@click.command("sample-answers")
@with_project
@click.option("--system", required=True, metavar="NAME", help="The system whose answers are sampled (one).")
@click.option("--batch", default=None, metavar="B", help="Only this batch's answers (default: every batch).")
@click.option("--n", "n", type=click.IntRange(min=1), required=True, help="Answers to draw.")
@click.option("--design", type=click.Choice(["random", "stratified", "judge-uncertain"]), default="random",
              show_default=True,
              help="Simple random sample, one stratified --by a field, or more where --judge is least sure.")
@click.option("--by", "by", default=None, metavar="FIELD",
              help="With --design stratified: batch, query_id, or a metadata key (model, user_id, metadata.release...).")
@judge_option(help="With --design judge-uncertain: the judge whose split verdicts (repeats, orders) draw an answer more often.")
@click.option("--name", required=True, help="Name of the sample (label-settings DB answer_sample=NAME hands it out).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draw.")
@json_option
def sample_answers(project: Project, system: str, batch: str | None, n: int, design: str, by: str | None,
                   judge: str | None, name: str, seed: int, as_json: bool) -> None:
    """Draw N of SYSTEM's answers in DB for people to label, recording each one's inclusion probability.

    random: a simple random sample (probability N/answers for each). stratified --by FIELD:
    the answers split by the field's value, N shared out in proportion to the strata (each
    at least one answer when N allows), a random sample in each (probability drawn/size in
    its stratum). judge-uncertain --judge NAME: each answer drawn with probability in proportion
    to 0.25 + how split the judge's verdicts on it are (over repeats and orders; 1 when it gave
    none), exactly N drawn; answer-metrics --sample NAME weighs each labelled answer by 1/probability.
    `label-settings DB answer_sample=NAME` then hands out only these answers
    for the generation tasks (off: every answer). A sample never changes.

    JSON keys: name, system, batch, design, by, seed, population, drawn, strata (stratum, or
    the judge's uncertainty band -> answers, drawn, probability: its mean), judge.
    """
    from labeler.generation.sampling import sample_answers as run  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    r = run(project.db, system, n=n, name=name, design=design, by=by, batch=batch, judge=judge, seed=seed,
            caller=OWNER)  # type: ignore[arg-type]
    if as_json:
        echo_json(r.as_dict())
        return
    click.echo(f"sample {name!r}: {plural(r.drawn, 'answer')} of {r.population} of {system!r}"
               + (f" in batch {batch!r}" if batch else "") + f", {design}" + (f" by {by}" if by else "")
               + f"; hand them out with `goldpool label-settings DB answer_sample={name}`")
    if by or judge:
        for stratum, s in r.strata.items():
            click.echo(f"  {stratum}: {int(s['drawn'])} of {int(s['answers'])} (probability {s['probability']:.3f})")


COMMANDS: list[click.Command] = [import_traces, export_answers, sample_answers]
