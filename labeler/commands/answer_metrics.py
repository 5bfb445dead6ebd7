"""The generation metrics command: per system, from people, a judge and both."""

from __future__ import annotations

import click

from labeler.commands.common import Project, echo_json, html_option, json_option, output_file, with_project, judge_option


@click.command("answer-metrics")
@with_project
@click.option("--system", "systems", multiple=True, help="A system to report (repeat for several; default: every one).")
@judge_option(help="The judge whose verdicts give the judge's values and, with people's, PPI++.")
@click.option("--ci", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True, help="Coverage of the intervals.")
@click.option("--by", "by", type=click.Choice(["batch"]), default=None,
              help="Report each system per batch, with the change between consecutive batches.")
@click.option("--sample", default=None, metavar="NAME",
              help="A sample of answers (sample-answers): people's values on it alone, each weighing 1/probability.")
@json_option
@html_option
def answer_metrics(project: Project, systems: tuple[str, ...], judge: str | None, ci: float, as_json: bool,
                   html_path: str | None, by: str | None, sample: str | None) -> None:
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

    --sample NAME: the sample's system over the answers it was drawn from; people's values on
    the sample's answers alone, each weighing 1/its inclusion probability (Hájek means, PPI++
    weighted the same way), so a sample drawn where the judge is least sure (sample-answers
    --design judge-uncertain) still estimates every answer's rate; their JSON carries
    "weighted": true and n_outside_sample (labelled answers outside the sample, left out).

    --by batch: per batch, and each batch's change from the one before, paired where questions
    repeat, else unpaired, with its MDD; JSON {"by", "batches", "systems": {NAME: {BATCH: ...}},
    "changes": [{system, metric, source, before, after, paired, difference, low, high, mdd, n}]}.
    """
    from labeler.commands.reports.answer_metrics import to_html, to_text  # lazy: start-up
    if by == "batch":
        return _by_batch(project, systems, judge, ci, as_json, html_path, sample)
    from labeler.generation.metrics import answer_metrics as run  # lazy: start-up
    from labeler.judges.card import card_line  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    m = run(project.db, systems, judge=judge, ci=ci, sample=sample, caller=OWNER)
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


def _by_batch(project: Project, systems: tuple[str, ...], judge: str | None, ci: float, as_json: bool,
              html_path: str | None, sample: str | None) -> None:
    from labeler.commands.reports.batches import to_html as batches_html, to_text as batches_text  # lazy: start-up
    from labeler.generation.batches import batch_metrics  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    d = batch_metrics(project.db, systems, judge=judge, ci=ci, sample=sample, caller=OWNER).as_dict()
    if html_path is not None:
        with output_file(html_path) as handle:
            handle.write(batches_html(d))
    if as_json:
        echo_json(d)
    else:
        click.echo(batches_text(d), nl=False)


COMMANDS: list[click.Command] = [answer_metrics]
