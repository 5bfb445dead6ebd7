"""Answer commands: a generating system's answers in, their claims cut."""

from __future__ import annotations

import click

from labeler.commands.common import Project, echo_json, file_argument, json_option, plural, with_project


@click.command("import-answers")
@with_project
@file_argument
@click.option("--system", required=True, help="Name of the system that generated the answers.")
@json_option
def import_answers(project: Project, file: str, system: str, as_json: bool) -> None:
    """Add the answers of one SYSTEM from a JSONL or Parquet FILE to DB.

    \b
    {"question" | "query_id", "response", "contexts"?: [...], "retrieved_ids"?: [...],
     "reference"?, "claims"?: [...], "answer_id"?}

    RAGAS's columns (user_input, retrieved_contexts, response, reference) are read as they
    are. "response" may be "" (an abstention). retrieved_ids are doc_ids of the project's
    corpus, best first. A question equal to a project query's text (whitespace aside) is
    linked to it. Without answer_id, the id is derived from the system and the query_id or
    question, so a system answers each question once. Importing the same file again changes
    nothing; changed text under an existing answer_id is refused. Other keys are kept as
    metadata.

    JSON keys: file, system, added, unchanged, claims (added from the file), linked (answers
    of the file that are project queries).
    """
    from labeler.answers import import_answers as run
    from labeler.store.access import OWNER

    result, linked = run(project.db, file, system, caller=OWNER)
    if as_json:
        echo_json({"file": file, "system": system, "added": result.added, "unchanged": result.unchanged,
                   "claims": result.claims, "linked": linked})
        return
    click.echo(f"{file}: {plural(result.added, 'answer')} of {system!r} added, {result.unchanged} unchanged, "
               f"{plural(result.claims, 'claim')} from the file; {linked} linked to project queries")


@click.command("split-claims")
@with_project
@click.option("--system", required=True, help="The system whose answers are cut into claims.")
@click.option("--sentences", is_flag=True, help="Cut each response into its sentences (offline, no model).")
@json_option
def split_claims(project: Project, system: str, sentences: bool, as_json: bool) -> None:
    """Give each answer of SYSTEM in DB that has no claims yet its claims, ANSWER_ID#N.

    --sentences cuts the response into sentences (marked as sentence-level claims). Answers
    whose file gave claims keep them; running it again adds nothing.

    JSON keys: system, answers (answers given claims), claims (claims added), skipped.
    """
    from labeler.answers import split_claims as run
    from labeler.store.access import OWNER

    if not sentences:
        raise click.UsageError("say how to split: --sentences")
    counts = run(project.db, system, caller=OWNER)
    if as_json:
        echo_json({"system": system, **counts})
        return
    click.echo(f"{system}: {plural(counts['claims'], 'claim')} added to {plural(counts['answers'], 'answer')}, "
               f"{counts['skipped']} skipped (claims already, or no sentence)")


COMMANDS: list[click.Command] = [import_answers, split_claims]
