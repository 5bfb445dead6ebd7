"""Diagnosis commands: which stage of a RAG system fails, the gold-context test, and why each
wrong answer is wrong."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import click

from labeler.commands.common import endpoint_options, each_system, echo_json, handles_errors, html_option, json_option, output_file, plural, judge_option
from labeler.commands.judge import CallOptions, call_options, clear_text_warning, report_calls
from labeler.store.vocabulary import RELEVANCE_LEVEL

_k_option = click.option("--k", "k", type=click.IntRange(min=1), default=10, show_default=True,
                         help="How many retrieved chunks count: the k the system feeds its generator.")
_level_option = click.option(
    "--relevance-level", "relevance_level", type=click.IntRange(min=1, max=3), default=RELEVANCE_LEVEL, show_default=True,
    metavar="N", help="Grade from which a chunk counts as relevant, the same level as every command's (2: only chunks that "
                      "at least partly answer the question).")


def _card(db: Any, judge: str | None) -> str | None:
    """The judge's calibration card line (correctness: the task these commands rest on)."""
    from labeler.judges.card import card_line  # lazy: start-up

    return None if judge is None else card_line(db, judge, "correctness")


def _written(report: Any, to_html: Any, html_path: str | None, as_json: bool, card: str | None) -> bool:
    """Write the report's HTML page when asked; print its JSON (True: nothing more to print),
    else the judge's card line, which the text report goes on under."""
    if html_path:
        with output_file(html_path) as handle:
            handle.write(to_html(report))
    if as_json:
        echo_json({**report.as_dict(), "judge_card": card})
        return True
    if card:
        click.echo(card)
    return False


_judge_option = judge_option(help="Take this judge's verdicts on answers people have no verdict on (said in the output).")


@contextmanager
def _golden(spec: str) -> Iterator[tuple[Any, Any]]:
    """The project of GOLDEN (DB@VERSION), opened for the command and closed after it."""
    from labeler.diagnosis.golden_answers import golden_spec  # lazy: start-up
    from labeler.store import connect  # lazy: start-up

    found = golden_spec(spec)
    db = connect(found.db_path)
    try:
        yield db, found
    finally:
        db.close()


@click.command("stages")
@click.argument("golden")
@click.option("--system", "systems", multiple=True, required=True,
              help="A system whose answers were imported with retrieved_ids; give it twice to compare two (B against A).")
@_k_option
@_level_option
@_judge_option
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap and randomisation test.")
@html_option
@json_option
@handles_errors
def stages(golden: str, systems: tuple[str, ...], k: int, relevance_level: int, judge: str | None, seed: int,
           html_path: str | None, as_json: bool) -> None:
    """Per-stage numbers of one system (or two, compared) on GOLDEN (DB@VERSION).

    \b
    retrieval:  recall@k, nDCG@k, P@k of each answer's retrieved_ids against the version
    generation: correctness given a relevant chunk in the top k, and without one
    faithfulness, and end-to-end correctness

    Each value is a mean over questions with a 95% bootstrap interval and n. Verdicts are
    people's; with --judge, that judge's where people gave none (the counts say how many came
    from each). With two systems, each stage is compared paired, question by question (mean
    difference, interval, randomisation-test p, minimum detectable difference), and one
    sentence says which stage the change is in.

    JSON keys: golden, version, content_hash, k, relevance_level, judge, systems {NAME:
    {questions, no_relevant, unlinked, no_retrieved, abstained, mean_words, sources, stages
    {KEY: {name, mean, low, high, n}}, per_question}}, comparison {baseline, system, sentence,
    stages {KEY: {name, n, delta, low, high, p_value, mdd, ...}}} or null.
    """
    from labeler.commands.reports.stages import to_html, to_text  # lazy: start-up
    from labeler.diagnosis.stages import stages as run  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    with _golden(golden) as (db, spec):
        report = run(db, spec, list(systems), k=k, relevance_level=relevance_level, judge=judge, seed=seed, caller=OWNER)
        card = _card(db, judge)
    if not _written(report, to_html, html_path, as_json, card):
        for line in to_text(report):
            click.echo(line)


@click.command("gold-context")
@click.argument("golden")
@each_system("The system whose wrong answers are tested.")
@click.option("--base-url", required=True, help="The generator's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")
@click.option("--model", required=True, help="Model name the endpoint serves.")
@click.option("--prompt", "prompt_file", type=click.Path(dir_okay=False), default=None,
              help="The team's prompt template: {question} and {contexts} are replaced, every other brace kept. "
                   "Default: a built-in template.")
@click.option("--all", "every", is_flag=True, help="Test every question, not only the wrong ones.")
@_judge_option
@endpoint_options("Ask at most N more questions this run.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
@json_option
@call_options
@handles_errors
def gold_context(golden: str, system: str, base_url: str, model: str, prompt_file: str | None, every: bool,
                 judge: str | None, concurrency: int, limit: int | None, timeout: float, attempts: int, max_tokens: int,
                 no_progress: bool, as_json: bool, calls: CallOptions) -> None:
    """The gold-context test of SYSTEM on GOLDEN (DB@VERSION).

    For each question SYSTEM got wrong (people's verdict, else --judge's; every question with
    --all), the generator receives the version's grade-3 chunks for the question (grade 2
    where none is 3) as its only context, in the prompt template. The replies are stored as
    answers of system SYSTEM+gold, with the original reference, so they become correctness
    items for people or run-judge like any answer; `goldpool diagnose` reads them. Calls are
    cached and each answer is committed as it arrives: an interrupted run resumes, a rerun
    makes no call (the cache is keyed on the endpoint, model, prompt, texts, --temperature,
    --max-tokens and --sampling). --dry-run counts the calls it would make and their prompt
    tokens and sends nothing; a run ends with the tokens the endpoint reported (and, with
    --price-in/--price-out, their cost). The key is read from OPENAI_API_KEY (a local server needs none). A reply
    cut short (at --max-tokens, or longer than the 10,000 characters kept) is not stored as an
    answer, and is said. --limit N asks N questions and says how many it left unasked.

    \b
    Template placeholders: {question}  the question, between <question id=ID> tags
                           {contexts}  the chunks, chunk n between <context_n id=ID>
                                       tags: its title (if any), a newline, its text;
                                       chunks apart by a blank line
    The question and the chunks are data: ID is a hash of the texts that none of them
    holds, so no text can close its own tags (the default template says so).

    JSON keys: system, gold_system, version, prompt_hash, questions, selected, unjudged,
    no_gold, already_done, stored, from_cache, calls, requests, errors, seconds, first_error,
    cut (replies cut short, not stored: length for finish_reason length, kept for longer than
    what is kept), left and left_chunks (questions, and their gold chunks, left unasked by
    --limit).
    """
    from labeler.diagnosis.gold_context import gold_context as run  # lazy: start-up
    from labeler.diagnosis.gold_context import read_template  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    prompt_text = read_template(prompt_file) if prompt_file is not None else None
    warning = clear_text_warning(base_url)
    if warning:
        click.echo(warning, err=True)
    with _golden(golden) as (db, spec), calls.endpoint(base_url, model=model, timeout=timeout, attempts=attempts,
                                                       max_tokens=max_tokens) as endpoint:
        try:
            s = run(db, spec.version, system, model=model, endpoint=endpoint, prompt_text=prompt_text, judge=judge,
                    every=every, concurrency=concurrency, limit=limit, progress=not no_progress, caller=OWNER)
        except KeyboardInterrupt:
            click.echo("\nInterrupted: the answers stored so far are kept; run the same command again to go on.",
                       err=True)
            raise click.exceptions.Exit(130) from None
    if endpoint.plan is not None:
        calls.finish(endpoint, as_json=as_json)
        return
    if as_json:
        echo_json(s.as_dict())
    else:
        for line in _gold_context_lines(s, golden, system, judge=judge, every=every, limit=limit):
            click.echo(line)
    report_calls(s.calls, s.errors, s.first_error, s.cut, outcome="no answer stored")
    calls.finish(endpoint, as_json=as_json)


def _gold_context_lines(s: Any, golden: str, system: str, *, judge: str | None, every: bool,
                        limit: int | None) -> list[str]:
    """What ``gold-context`` prints of its summary ``s``, and what to do next."""
    by = "every question" if every else ("wrong by people" + (f", else by judge {judge}" if judge else ""))
    lines = [f"{s.gold_system} (prompt {s.prompt_hash}): {s.selected} of {s.questions} questions selected ({by}); "
             f"{s.no_gold} without a grade-3 or grade-2 chunk, {s.already_done} already done, "
             f"{plural(s.stored, 'answer')} stored ({s.from_cache} from the cache, {s.calls} calls), "
             f"{s.errors} errors"]
    if s.unjudged:
        lines.append(f"{plural(s.unjudged, 'question')} without a correctness verdict left out (judge them, give "
                     "--judge, or --all)")
    if s.stored:
        lines.append(f"next: judge the correctness of {s.gold_system}'s answers (people, or run-judge), then "
                     f"`goldpool diagnose {golden} --system {system}`")
    if s.left:
        lines.append(f"{plural(s.left, 'question')} ({plural(s.left_chunks, 'gold chunk')}) left unasked by --limit "
                     f"{limit}: run the same command again to ask the next {min(limit, s.left)}, or without --limit "  # type: ignore[type-var]
                     "to ask them all")
    return lines


@click.command("diagnose")
@click.argument("golden")
@each_system("The system whose wrong answers are diagnosed.", one_html=True)
@_k_option
@_level_option
@_judge_option
@click.option("--depth", type=click.IntRange(min=1), default=20, show_default=True,
              help="How deep the BM25 search of the whole corpus looks for each reference answer.")
@click.option("--add-to-pool", is_flag=True,
              help="Add the chunks outside the relevant set that hold an answer to the pool (source answer-search), "
                   "so people label them.")
@html_option
@json_option
@handles_errors
def diagnose(golden: str, system: str, k: int, relevance_level: int, judge: str | None, depth: int, add_to_pool: bool,
             html_path: str | None, as_json: bool) -> None:
    """Why each wrong answer of SYSTEM on GOLDEN (DB@VERSION) is wrong: one outcome each.

    \b
    retrieval-miss     no relevant chunk in the top k; the gold-context answer is right
    context-ignored    a relevant chunk was retrieved; the gold-context answer is right
    generation         the gold-context answer is wrong too, and a relevant chunk holds the answer
    knowledge-gap      no chunk of the corpus holds the reference's distinctive words
                       (BM25 over the whole corpus, then a phrase / every-word check)
    incomplete-labels  only chunks outside the relevant set hold the answer (or the system
                       retrieved one of them): offered to the pool with --add-to-pool
    pending            the fact is in a relevant chunk but no judged gold-context answer exists

    The gold-context answers are SYSTEM+gold's (`goldpool gold-context`). Verdicts are
    people's; with --judge, that judge's where people gave none. Prints counts per outcome,
    what to fix first, and each question with its evidence.

    JSON keys: golden, version, system, gold_system, k, relevance_level, judge, answers,
    correct, wrong, unjudged, counts, first, advice, questions [...], offered {QUERY: [DOC]},
    pool ({added, already_pooled}, or null without --add-to-pool).
    """
    from labeler.commands.reports.diagnose import to_html, to_text  # lazy: start-up
    from labeler.diagnosis.diagnose import diagnose as run  # lazy: start-up
    from labeler.diagnosis.diagnose import offer_to_pool  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    with _golden(golden) as (db, spec):
        report = run(db, spec.label, spec.version, system, k=k, relevance_level=relevance_level, judge=judge,
                     depth=depth, caller=OWNER)
        if add_to_pool:
            report = replace(report, pool=offer_to_pool(db, report, caller=OWNER))
        card = _card(db, judge)
    if not _written(report, to_html, html_path, as_json, card):
        for line in to_text(report):
            click.echo(line)


COMMANDS: list[click.Command] = [stages, gold_context, diagnose]
