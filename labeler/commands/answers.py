"""Answer commands: a generating system's answers in, their claims cut."""

from __future__ import annotations

from typing import Any

import click

from labeler.commands.common import endpoint_options, Project, each_system, echo_json, file_argument, json_option, plural, with_project, judge_option
from labeler.commands.judge import CallOptions, call_options, clear_text_warning, report_calls


@click.command("import-answers")
@with_project
@file_argument
@click.option("--system", required=True,
              help="Name of the system that generated the answers (one: a file holds one system's answers).")
@click.option("--batch", default=None, metavar="NAME",
              help="The batch the answers belong to (a week, a release; default: each record's batch, else today's date, "
                   "UTC).")
@json_option
def import_answers(project: Project, file: str, system: str, batch: str | None, as_json: bool) -> None:
    """Add the answers of one SYSTEM from a JSONL, CSV or Parquet FILE to DB.

    \b
    {"question" | "query_id", "response", "contexts"?: [...], "retrieved_ids"?: [...],
     "reference"?, "claims"?: [...], "answer_id"?}

    The format is told from the content, whatever the name: Parquet by its PAR1 start, JSONL
    when the first character is "{", else CSV with a header row (TSV if named .tsv). In CSV a
    list is a JSON array or a Python list of strings, as RAGAS's to_csv writes it.
    RAGAS's columns (user_input, retrieved_contexts, response, reference; before 0.2
    question, contexts, answer, ground_truth) are read as they are. "response" may be ""
    (an abstention). retrieved_ids are doc_ids of the project's
    corpus, best first. A question equal to a project query's text (whitespace aside) is
    linked to it. Without answer_id, the id is derived from the system and the query_id or
    question, so a system answers each question once. Importing the same file again changes
    nothing; changed text under an existing answer_id is refused. Other keys are kept as
    metadata; one that looks like a field (Question, ground_truths...) is named in a warning.
    Answers go into --batch NAME (a record's own "batch", as export-answers writes it, must
    agree), else their record's batch, else the import's date; with a batch named, an answer
    without answer_id is told apart by its batch too, so a question asked again in a later
    batch is a new answer. A record's "system" must be SYSTEM.

    JSON keys: file, system, added, unchanged, claims (added from the file), linked (answers
    of the file that are project queries).
    """
    from labeler.generation.answers import ImportReport  # lazy: start-up
    from labeler.generation.answers import import_answers as run  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    result, linked = run(project.db, file, system, caller=OWNER, batch=batch)
    for warning in result.warnings:
        click.echo(f"warning: {file}: {warning}", err=True)
    r = ImportReport(file, system, result.added, result.unchanged, result.claims, linked)
    if as_json:
        echo_json(r.as_dict())
        return
    click.echo(f"{file}: {plural(r.added, 'answer')} of {system!r} added, {r.unchanged} unchanged, "
               f"{plural(r.claims, 'claim')} from the file; {r.linked} linked to project queries")


@click.command("split-claims")
@with_project
@each_system("The system whose answers are cut into claims.")
@click.option("--sentences", is_flag=True, help="Cut each response into its sentences (offline, no model).")
@judge_option(help="Ask a judge model, stored under this name, for one claim per line.")
@click.option("--model", default=None, help="Model name the endpoint serves (with --judge).")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (with --judge).")
@endpoint_options("Split at most N more answers this run (--judge).")
@json_option
@call_options
def split_claims(project: Project, system: str, sentences: bool, judge: str | None, model: str | None,
                 base_url: str | None, concurrency: int, limit: int | None, timeout: float, attempts: int,
                 max_tokens: int, as_json: bool, calls: CallOptions) -> None:
    """Give each answer of SYSTEM in DB that has no claims yet its claims, ANSWER_ID#N.

    --sentences cuts the response into sentences (claims marked as sentence-level).
    --judge NAME --model M --base-url URL asks a judge model for one checkable fact per line
    (a versioned prompt; its hash is stored with every claim). The key is read from
    OPENAI_API_KEY, calls are cached by everything that changes a reply (endpoint, model, prompt
    hash, question and response, --temperature, --max-tokens, --sampling), and an interrupted
    run resumes: an answer that has claims is done. --dry-run counts the calls it would make and
    their prompt tokens, and sends nothing; a run ends with the tokens the endpoint reported. A reply that is not one claim
    per line (or NONE) is counted as unparseable and gives no claims, and so is a reply cut short
    (the model stopped at --max-tokens, or it is longer than the 10,000 characters kept: said,
    and a rerun with a larger --max-tokens asks those cut at the budget again). The question and
    the response reach the model as data, between tags they cannot forge. A run whose every
    call fails exits with an error naming the first. A response that declines
    to answer (empty, or declining by the text rule, as answer-metrics's abstention reads it)
    gets no claims and is counted as skipped. Answers whose file gave claims keep them; running it again
    adds nothing.

    JSON keys: system, method (the splitter's version or the prompt's hash), answers (answers
    given claims), claims (claims added), skipped (answers not given claims), calls,
    from_cache, errors, unparseable, cut_short (replies cut short among the unparseable, by why:
    length for finish_reason length, kept for longer than what is kept).
    """
    from labeler.generation.sentences import SPLITTER  # lazy: start-up
    from labeler.generation.answers import SplitReport  # lazy: start-up
    from labeler.generation.answers import split_claims as run  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    if sentences == (judge is not None):
        raise click.UsageError("say how to split: --sentences, or --judge NAME --model M --base-url URL")
    if judge is not None and (model is None or base_url is None):
        raise click.UsageError("--judge needs --model and --base-url")
    if sentences:
        r = SplitReport(system, SPLITTER, **run(project.db, system, caller=OWNER))
    else:
        s, endpoint = _split_by_judge(project, system, judge, model, base_url, calls,  # type: ignore[arg-type]
                                      concurrency=concurrency, limit=limit, caller=OWNER,
                                      endpoint={"timeout": timeout, "attempts": attempts, "max_tokens": max_tokens})
        if endpoint.plan is not None:
            calls.finish(endpoint, as_json=as_json)
            return
        r = SplitReport(system, s.prompt_hash, s.answers, s.claims, s.total - s.answers, s.calls, s.from_cache,
                        s.errors, s.unparseable, s.cut)
    if as_json:
        echo_json(r.as_dict())
    else:
        line = (f"{system} ({r.method}): {plural(r.claims, 'claim')} added to "
                f"{plural(r.answers, 'answer')}, {r.skipped} skipped (claims already, declines to answer, or none found)")
        if judge is not None:
            line += f"; {r.from_cache} from the cache, {r.calls} calls, {r.errors} errors, {r.unparseable} unparseable"
        click.echo(line)
    if judge is not None:
        report_calls(s.calls, s.errors, s.first_error, s.cut, outcome="counted as unparseable, no claims stored")
        calls.finish(endpoint, as_json=as_json)


def _split_by_judge(project: Project, system: str, judge: str, model: str, base_url: str, calls: CallOptions, *,
                    concurrency: int, limit: int | None, endpoint: dict[str, Any], caller: Any) -> tuple[Any, Any]:
    """Ask the judge model at ``base_url`` for the claims (a warning first when the key would go
    out in clear text): the summary and the endpoint called (its plan, on a dry run)."""
    from labeler.judges.claims import split_with_judge  # lazy: start-up

    warning = clear_text_warning(base_url)
    if warning:
        click.echo(warning, err=True)
    with calls.endpoint(base_url, model=model, **endpoint) as client:
        s = split_with_judge(project.db, system, judge=judge, model=model, endpoint=client,
                             concurrency=concurrency, limit=limit, caller=caller)
    return s, client


COMMANDS: list[click.Command] = [import_answers, split_claims]
