"""Judge commands: run a judge model over the project, and prediction-powered estimates."""

from __future__ import annotations

import click

from labeler.commands.common import db_argument, user_errors


@click.command("run-judge")
@db_argument
@click.option("--judge", required=True, help="Name the verdicts are stored under (e.g. llama3-8b-v1).")
@click.option("--model", required=True, help="Model name the endpoint serves.")
@click.option("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")
@click.option("--task", type=click.Choice(["relevance", "faithfulness", "pairwise"]), default="relevance", show_default=True,
              help="relevance: pool entries, 0-3; faithfulness: SUPPORTED/UNSUPPORTED; pairwise: A/B/TIE in both orders.")
@click.option("--prompt", "prompt_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Prompt template file ({query} {passage} {rubric} {scale}; {question} {contexts} {response}; "
                   "{question} {context} {first} {second}). Default: the built-in prompt of the task.")
@click.option("--concurrency", type=click.IntRange(min=1, max=256), default=4, show_default=True, help="Calls in flight.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Judge at most N more items this run.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True, help="Seconds per attempt.")
@click.option("--attempts", type=click.IntRange(min=1), default=5, show_default=True,
              help="Tries per call on 5xx, rate limits, timeouts and broken replies (exponential backoff).")
@click.option("--max-tokens", type=click.IntRange(min=1), default=16, show_default=True, help="Reply budget per call.")
def run_judge(db, judge, model, base_url, task, prompt_file, concurrency, limit, timeout, attempts, max_tokens) -> None:
    """Ask a judge model for a verdict on every item of a task in DB, and store them.

    The key is read from OPENAI_API_KEY (a local server needs none) and is never written to a
    file or shown. Every verdict keeps the prompt's content hash, the raw reply, tokens and
    latency; a reply that is not exactly one allowed token is stored as unparseable. Calls are
    cached by (model, prompt hash, item content, order): a rerun makes no calls, and an
    interrupted run resumes where it stopped.
    """
    from pathlib import Path

    from labeler.judge.client import Endpoint
    from labeler.judge.run import run_judge as run
    from labeler.store import connect
    from labeler.store.access import OWNER

    with user_errors():
        prompt_text = None
        if prompt_file is not None:
            try:
                prompt_text = Path(prompt_file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise click.ClickException(f"{prompt_file}: cannot read the prompt ({exc})") from None
        endpoint = Endpoint(base_url, timeout=timeout, attempts=attempts, max_tokens=max_tokens)
        s = run(connect(db), judge=judge, model=model, endpoint=endpoint, task=task, prompt_text=prompt_text,
                concurrency=concurrency, limit=limit, caller=OWNER)
    per = f", {s.seconds / s.calls:.2f} s per call" if s.calls else ""
    click.echo(
        f"{judge} ({task}, prompt {s.prompt_hash}): {s.total} to judge, {s.already_done} already done, "
        f"{s.from_cache} from the cache, {s.calls} calls ({s.requests} requests), {s.errors} errors, "
        f"{s.unparseable} unparseable, tokens {s.tokens_in} in / {s.tokens_out} out{per}"
    )


def calibrate_judges(db: str, judges: tuple[str, ...], as_json: bool, html_path: str | None, n_boot: int, seed: int) -> None:
    """Body of ``goldpool calibrate DB --judge NAME...``: each judge against the project's people."""
    import json

    from labeler.commands.common import output_file
    from labeler.judge.report import judge_report, to_dict, to_html, to_markdown
    from labeler.store import connect
    from labeler.store.access import OWNER

    with user_errors():
        database = connect(db)
        try:
            report = judge_report(database, list(dict.fromkeys(judges)), caller=OWNER, n_boot=n_boot, seed=seed)
        finally:
            database.close()
    if html_path is not None:
        with output_file(html_path) as handle:
            handle.write(to_html(report))
    click.echo(json.dumps(to_dict(report), indent=2, default=str) if as_json else to_markdown(report), nl=False)


COMMANDS: list[click.Command] = [run_judge]
