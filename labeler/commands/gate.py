"""The regression gate for CI: gate."""

from __future__ import annotations

import os

import click

from labeler.commands.common import echo_json, json_option, output_file, relevance_level_option, seed_option, user_errors, judge_option

#: Exit status of the gate: no detectable drop, a detectable drop, bad input.
PASS, FAIL, BAD_INPUT = 0, 1, 2


class BadInput(click.ClickException):
    """Bad input of the gate: one line naming what is wrong, exit status 2 (1 means a drop)."""

    exit_code = BAD_INPUT


@click.command("gate")
@click.argument("golden")
@click.option("--baseline", required=True, metavar="RUN|SYSTEM",
              help="What the candidate must not fall below: a TREC run file, or a system imported into the project.")
@click.option("--candidate", required=True, metavar="RUN|SYSTEM", help="The run file or system under test.")
@click.option("--metric", "metrics", required=True, multiple=True, metavar="M",
              help="An ir-measures name (nDCG@10, R@100, P@10, RR, AP) or a generation metric (correctness, "
                   "answer-relevance, faithfulness, or a nugget score: all, vital, strict_all, strict_vital); repeatable (the p-values are then Holm-corrected).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True,
              help="Significance level of the one-sided paired test.")
@click.option("--tolerance", type=click.FloatRange(min=0), default=None, metavar="T",
              help="The smallest drop that fails the gate (default: the minimum detectable difference of this set "
                   "for the metric, at --alpha and 80% power).")
@judge_option(help="Generation metrics: this judge's verdicts stand in for people's on answers people did not judge.")
@click.option("--summary", "summary_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the report as Markdown for a CI job summary (e.g. \"$GITHUB_STEP_SUMMARY\").")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), default=None,
              help="Also write a JUnit XML report: one testcase per metric, a failure on each that dropped.")
@relevance_level_option
@seed_option
@json_option
@click.pass_context
def gate(ctx: click.Context, golden: str, baseline: str, candidate: str, metrics: tuple[str, ...], alpha: float,
         tolerance: float | None, judge: str | None, summary_path: str | None, junit_path: str | None,
         relevance_level: int, seed: int, as_json: bool) -> None:
    """Fail (exit 1) when CANDIDATE scores detectably worse than BASELINE on GOLDEN.

    GOLDEN is DB@VERSION, a folder `goldpool export` wrote, or a qrels file; for systems or
    generation metrics, the project (DB or DB@VERSION). Per question, a question a side does not
    answer scores 0 there (as trec_eval -c). The test is a one-sided paired randomisation test;
    the gate fails when it is significant at --alpha and the drop is at least --tolerance
    (default: the smallest drop this set resolves). A smaller drop passes with a warning saying
    so. Generation metrics take people's verdicts, and --judge's where people gave none.

    Exit status: 0 no detectable drop, 1 a detectable drop, 2 bad input.

    --json prints {"golden", "content_hash", "baseline", "candidate", "relevance_level",
    "judge", "status", "results": [...]}; each result has metric, n, mean_baseline,
    mean_candidate, drop, low, high, p_value, p_adjusted, sd, mdd, tolerance, tolerance_is_mdd,
    alpha, power, status, warning, missing, left_out, source and reason.
    """
    from labeler.commands.reports.gate import junit, markdown, text_report  # lazy: start-up
    from labeler.diagnosis.gate import run_gate  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    try:
        with user_errors():
            result = run_gate(golden, baseline, candidate, metrics, alpha=alpha, tolerance=tolerance,
                              relevance_level=relevance_level, judge=judge, seed=seed, caller=OWNER)
        if as_json:
            echo_json(result.as_dict())
        else:
            for line in text_report(result):
                click.echo(line)
        annotate = os.environ.get("GITHUB_ACTIONS") == "true"
        for r in result.results:
            if r.warning:
                click.echo(f"warning: {r.metric}: {r.warning}", err=True)
            if annotate and (r.warning or r.failed):
                # One workflow command per line: a newline in a name would end it early.
                kind = "error" if r.failed else "warning"
                click.echo(f"::{kind} title=goldpool gate::{r.reason}".replace("\n", " ").replace("\r", " "))
        if summary_path:
            with output_file(summary_path) as handle:
                handle.write(markdown(result))
        if junit_path:
            with output_file(junit_path) as handle:
                handle.write(junit(result))
    except click.ClickException as exc:
        message = exc.format_message()
        _report_bad_input(message, golden, baseline, candidate, summary_path, junit_path)
        raise exc if isinstance(exc, BadInput) else BadInput(message) from exc
    ctx.exit(FAIL if result.failed else PASS)


def _report_bad_input(message: str, golden: str, baseline: str, candidate: str, summary_path: str | None,
                      junit_path: str | None) -> None:
    """On exit 2, --summary and --junit still get a report (saying nothing was compared), so a CI
    step that uploads them never shows a previous run's."""
    from labeler.commands.reports.gate import bad_input_junit, bad_input_markdown  # lazy: start-up
    for path, render in ((summary_path, bad_input_markdown), (junit_path, bad_input_junit)):
        if not path:
            continue
        try:
            with output_file(path) as handle:
                handle.write(render(message, golden, baseline, candidate))
        except (OSError, click.ClickException) as exc:  # the input error stays the one reported
            click.echo(f"warning: could not write {path}: {exc}", err=True)


COMMANDS = [gate]
