"""Nugget commands: people's nuggets in, a judge's proposals, and the nugget scores per system."""

from __future__ import annotations

import click

from labeler.commands.common import (
    endpoint_options,
    Project,
    echo_json,
    file_argument,
    handles_errors,
    html_option,
    json_option,
    judge_option,
    output_file,
    plural,
    relevance_level_option,
    with_project,
)
from labeler.commands.judge import clear_text_warning, report_calls
from labeler.store.vocabulary import OWNER


@click.command("import-nuggets")
@with_project
@file_argument
def import_nuggets(project: Project, file: str) -> None:
    """Add people's nuggets from a JSONL FILE to DB: one nugget a line.

    \b
    {"query_id", "text", "importance": "vital" | "okay", "nugget_id"?, "doc_ids"?}

    Importance in any case; doc_ids lists the chunks the nugget came from. A nugget without
    nugget_id is QUERY_ID/nK, K its place among the file's nuggets of that query (n1, n2, ...
    in file order). Importing the same file again changes nothing; a nugget_id already in the
    project with another text, importance or query is refused. Bad input stops the import with
    its file, line and field, and nothing is written.
    """
    from labeler.generation.nuggets import import_nuggets as run  # lazy: start-up

    r = run(project.db, file, caller=OWNER)
    click.echo(f"{file}: {plural(r.added, 'nugget')} added for {plural(r.queries, 'query', 'queries')}, "
               f"{r.unchanged} unchanged")


@click.command("nugget-metrics")
@click.argument("golden", metavar="DB[@VERSION]")
@click.option("--system", "systems", multiple=True, metavar="NAME",
              help="A system to report (repeat for several; default: every one).")
@judge_option(help="The judge whose support verdicts give the judge's values and, with people's, PPI++.")
@click.option("--ci", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True, help="Coverage of the intervals.")
@json_option
@html_option
@handles_errors
def nugget_metrics(golden: str, systems: tuple[str, ...], judge: str | None, ci: float, as_json: bool,
                   html_path: str | None) -> None:
    """The nugget scores of each system in DB: all, vital, strict_all, strict_vital.

    Per answer, the mean support of its question's nuggets (support 1, partial support 0.5,
    none 0), over all nuggets or the vital ones; the strict scores count full support only
    (castorini's nuggetizer's definitions). DB@VERSION scores against the nuggets that version
    froze, DB alone against the current ones. Per system, each score is a mean over answers,
    from people (the majority of annotators on each nugget), from --judge, and by PPI++ (people
    on the questions they labelled, the judge on all: label a random sample of questions), with
    question-clustered intervals inside [0, 1] and the answers' mean length in words. Systems
    that answered the same questions are compared paired, with the MDD. Answers to questions
    without nuggets are left out and counted, and so are answers to questions without a vital
    nugget from the vital scores (nuggetizer scores both 0); an empty answer scores 0.

    \b
    JSON: {"systems": {NAME: {METRIC: {"people" | "judge" | "ppi": {value, low, high, n,
    words, questions, interval, left_out, ...}}}}, "pairs": [{a, b, metric, source,
    difference, low, high, mdd, n}], "answers": {NAME: {n, words, no_nuggets}}, "judge",
    "ci", "metrics", "version", "nuggets": {queries, nuggets, vital, hash}, "judge_card"};
    METRIC is all, vital, strict_all or strict_vital; an undefined number is null.
    """
    from labeler.commands.reports.nuggets import to_html, to_text  # lazy: start-up (calibration.report loads numpy)
    from labeler.generation.nuggets import nugget_metrics as run  # lazy: start-up
    from labeler.project import parse_golden  # lazy: start-up
    from labeler.judges.card import card_line  # lazy: start-up

    path, version = parse_golden(golden)
    project = Project(path)
    try:
        m = run(project.db, systems, version=version, judge=judge, ci=ci, caller=OWNER)
        card = None
        if judge is not None:
            card = card_line(project.db, judge)
    finally:
        project.close()
    if html_path is not None:
        with output_file(html_path) as handle:
            handle.write(to_html(m))
    if as_json:
        echo_json({**m.as_dict(), "judge_card": card})
        return
    click.echo(to_text(m), nl=False)
    if card:
        click.echo(card)


@click.command("nuggetize")
@with_project
@judge_option(required=True, help="Name the proposals are stored under (the nuggetizer measured by calibrate).")
@click.option("--model", required=True, help="Model name the endpoint serves.")
@click.option("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")
@click.option("--max-nuggets", type=click.IntRange(1, 100), default=20, show_default=True,
              help="Nuggets proposed per question at most.")
@click.option("--max-chunks", type=click.IntRange(1, 200), default=20, show_default=True,
              help="Relevant chunks given per question at most (best grade first).")
@relevance_level_option
@endpoint_options("Propose for at most N more questions this run.", timeout=120.0, max_tokens=1024)
@json_option
def nuggetize(project: Project, judge: str, model: str, base_url: str, max_nuggets: int, max_chunks: int,
              relevance_level: int, concurrency: int, limit: int | None, timeout: float, attempts: int,
              max_tokens: int, as_json: bool) -> None:
    """Ask a judge model to propose each question's nuggets from its relevant chunks.

    Per question with chunks graded --relevance-level or above (by the current labels), two
    calls in the spirit of AutoNuggetizer: the first writes at most --max-nuggets atomic facts
    a good answer must contain, from the question and its relevant chunks; the second marks
    each vital or okay. Both prompts are versioned by their hash. The proposals are stored
    apart from people's nuggets: people accept, edit or drop them, and `calibrate --judge NAME`
    reports the shares kept, edited, dropped and missed. Calls go through run-judge's client:
    the key from OPENAI_API_KEY, the texts framed as data, a cache by (model, prompt, texts),
    resumption (a question the judge proposed for is done), errors counted; a run whose every
    call fails exits with an error.

    JSON keys: judge, prompt_hash, questions (with relevant chunks), already_done, proposed
    (questions given proposals this run), nuggets, from_cache, calls, requests, errors,
    unparseable, cut_short.
    """
    from labeler.judges.client import Endpoint  # lazy: start-up
    from labeler.judges.nuggetize import nuggetize as run  # lazy: start-up

    warning = clear_text_warning(base_url)
    if warning:
        click.echo(warning, err=True)
    with Endpoint(base_url, timeout=timeout, attempts=attempts, max_tokens=max_tokens) as endpoint:
        s = run(project.db, judge=judge, model=model, endpoint=endpoint, max_nuggets=max_nuggets, max_chunks=max_chunks,
                relevance_level=relevance_level, concurrency=concurrency, limit=limit, caller=OWNER)
    if as_json:
        echo_json(s.as_dict())
    else:
        click.echo(f"{judge} (nuggets, prompt {s.prompt_hash}): {plural(s.questions, 'question')} with relevant chunks, "
                   f"{s.already_done} already done, {plural(s.nuggets, 'nugget')} proposed for "
                   f"{plural(s.proposed, 'question')}; {s.from_cache} from the cache, {s.calls} calls "
                   f"({s.requests} requests), {s.errors} errors, {s.unparseable} unparseable")
    report_calls(s.calls, s.errors, s.first_error, s.cut, outcome="counted as unparseable, nothing proposed")


COMMANDS: list[click.Command] = [import_nuggets, nugget_metrics, nuggetize]
