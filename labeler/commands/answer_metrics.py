"""The generation metrics command: per system, from people, a judge and both."""

from __future__ import annotations

import click

from labeler.commands.common import Project, echo_json, html_option, json_option, output_file, with_project, judge_option
from labeler.commands.reports.answer_metrics import to_html, to_text


@click.command("answer-metrics")
@with_project
@click.option("--system", "systems", multiple=True, help="A system to report (repeat for several; default: every one).")
@judge_option(help="The judge whose verdicts give the judge's values and, with people's, PPI++.")
@click.option("--ci", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True, help="Coverage of the intervals.")
@json_option
@html_option
def answer_metrics(project: Project, systems: tuple[str, ...], judge: str | None, ci: float, as_json: bool,
                   html_path: str | None) -> None:
    """Faithfulness, supported answers, correctness, answer relevance and abstention rate of each system in DB.

    Each rate is a mean over answers: from people (the majority of annotators), from --judge,
    and by PPI++ (people on the answers they labelled, the judge everywhere; label a random
    sample of questions). Intervals are clustered by question and stay inside [0, 1].
    Faithfulness (supported / judged claims, per answer) always comes with correctness, answer
    relevance, the abstention rate and the answers' mean length in words. Systems that answered
    the same questions are compared paired: the mean per-question difference, its interval and
    the minimum detectable difference (MDD, 80% power at alpha 0.05). An empty response has
    nothing to label: it is incorrect (with a reference) and misses the question, and counts
    by its share of the answers when people labelled only some of the others.

    \b
    JSON: {"systems": {NAME: {METRIC: {"people" | "judge" | "ppi": {value, low, high, n,
    words, questions, interval, ...}}}}, "pairs": [{a, b, metric, source, difference, low,
    high, mdd, n}], "answers": {NAME: {n, words}}, "judge", "ci", "metrics"}; METRIC is
    faithfulness (with claims, claims_per_answer, claim_weighted, flagged, flag_rate: the
    claims of the answers counted; flagged_left_out; left_out: reason -> answers),
    supported_answers (the share of answers wholly supported: the whole-answer verdict on
    ANSWER_ID@faithfulness where given, else every claim SUPPORTED; from_whole, from_claims,
    disagree, left_out), correctness, answer-relevance (DECLINES counts as not addressing),
    abstention (sources "text": the text rule, with "agreement": {n, both, text_only,
    people_only, neither, agree, disagree, agreement, kappa, kappa_low, kappa_high,
    sensitivity, precision} against people; "people", "judge", "ppi": the answer relevance
    verdict DECLINES); "judge_card": the judge's calibration card line
    (or that it is uncalibrated), null without --judge; an undefined number is null.
    """
    from labeler.generation.metrics import answer_metrics as run  # lazy: start-up
    from labeler.judges.card import card_line  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    m = run(project.db, systems, judge=judge, ci=ci, caller=OWNER)
    card = None
    if judge is not None:
        card = card_line(project.db, judge)  # how far the judge's numbers can be trusted
    if html_path is not None:
        with output_file(html_path) as handle:
            handle.write(to_html(m, card=card))
    if as_json:
        echo_json({**m.as_dict(), "judge_card": card})
    else:
        click.echo(to_text(m), nl=False)
        if card:
            click.echo(card)


COMMANDS: list[click.Command] = [answer_metrics]
