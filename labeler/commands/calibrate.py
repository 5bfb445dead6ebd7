"""Calibration commands: ``agree`` (two label files), ``plan`` (power), ``calibrate`` (a project)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from labeler.commands.common import (
    judge_option,
    Project,
    echo_json,
    handles_errors,
    html_option,
    json_option,
    n_boot_option,
    output_file,
    plural,
    relevance_level_option,
    seed_option,
    with_project,
)
from labeler.commands.judge import calibrate_judges, compare_judges
from labeler.store.vocabulary import GRADES, OWNER
from pooling import PoolingError

if TYPE_CHECKING:
    from calibration.bootstrap import Estimate
    from calibration.summary import RaterComparison
    from pooling.qrels import LabelFile

_WEIGHTS = {"none": None, "linear": "linear", "quadratic": "quadratic"}
_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _row(name: str, estimate: Estimate, width: int = 22) -> str:
    from calibration import format_estimate  # lazy: start-up

    return f"{name:<{width}}{format_estimate(estimate, why=False):<28}{estimate.n:>8}"


def _agree_text(pair: RaterComparison) -> list[str]:
    from calibration import format_estimate  # lazy: start-up
    from calibration.report import interval_note, undefined_notes  # lazy: start-up

    summary, ceiling = pair.comparison.summary, pair.comparison.ceiling
    counts = pair.counts
    header = f"{'statistic':<22}{'value [95% interval]':<28}{'n':>8}"
    lines = [
        f"A: {pair.a}",
        f"B: {pair.b}",
        f"joined {plural(counts['n'], 'item')} (only in A: {counts['only_a']}, only in B: {counts['only_b']})",
        interval_note(summary.n_boot, summary.n_groups, summary.ci, summary.seed),
        "",
        header,
    ]
    lines += [_row(e.statistic, e) for e in summary.statistics]
    lines += undefined_notes(summary.statistics)
    if ceiling is not None:
        lines += ["", f"human ceiling: A against C on the same {plural(ceiling.n, 'item')} (both tables use the items all three files label)", header]
        lines += [_row(e.statistic, e) for e in ceiling.statistics]
        lines += undefined_notes(ceiling.statistics)
    lines += ["", "B against A, per label:", f"{'label':<8}{'support':>8}  {'precision [95% interval]':<28}{'recall [95% interval]'}"]
    for c in summary.classes:
        lines.append(f"{c.label!s:<8}{c.support:>8}  {format_estimate(c.precision, why=False):<28}{format_estimate(c.recall, why=False)}")
    labels = summary.confusion.labels
    lines += ["", "confusion (rows A, columns B):", " " * 8 + "".join(f"{lab!s:>8}" for lab in labels)]
    for lab, row in zip(labels, summary.confusion.table, strict=True):
        lines.append(f"{lab!s:<8}" + "".join(f"{int(x):>8}" for x in row))
    return lines


def _scale(text: str | None) -> tuple[int, ...] | None:
    """The grades of ``--grades 0,1,2,3``."""
    if text is None:
        return None
    try:
        grades = tuple(int(g) for g in text.split(","))
    except ValueError:
        raise click.BadParameter(f"{text!r}: give whole numbers separated by commas, e.g. 0,1,2,3", param_hint="--grades") from None
    if len(set(grades)) != len(grades):
        raise click.BadParameter(f"{text!r} names a grade twice", param_hint="--grades")
    return grades


@click.command("agree")
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@click.option("--weights", "weights", type=click.Choice(list(_WEIGHTS)), multiple=True,
              help="Kappa weightings to report (repeatable; default: none, linear, quadratic).")
@click.option("--level", "levels", type=click.Choice(_LEVELS), multiple=True,
              help="Krippendorff alpha levels to report (repeatable; default: ordinal).")
@click.option("--format", "fmt", type=click.Choice(["auto", "trec", "jsonl", "csv", "tsv"]), default="auto",
              show_default=True, help="File format; auto: .jsonl/.json, .csv, .tsv, otherwise TREC qrels.")
@click.option("--key", "keys", multiple=True, default=("query_id", "doc_id"), show_default=True,
              help="Key column of JSONL/CSV/TSV files (repeatable); the first one groups items for the bootstrap.")
@click.option("--label", default="relevance", show_default=True, help="Label column of JSONL/CSV/TSV files.")
@click.option("--grades", default=None, metavar="0,1,2,3",
              help="The grade scale: any other grade is refused with its file and line. Without it, negative "
                   "grades and grades only one file uses are warned about.")
@click.option("--annotator", "annotators", multiple=True, metavar="NAME",
              help="In a goldpool export-judgments file, compare only this annotator (repeatable). "
                   "Default: every annotator.")
@click.option("--adjudicated", is_flag=True,
              help="In a goldpool export-judgments file, compare the final grade: the adjudicated one, else the "
                   "grade all annotators agree on (with --annotator: as well as those annotators).")
@click.option("--ceiling", type=click.Path(dir_okay=False), default=None,
              help="A second human's labels: shows A against C beside A against B on the items all three label.")
@click.option("--resample", type=click.Choice(["queries", "items"]), default="queries", show_default=True,
              help="Unit of the bootstrap: queries (cluster bootstrap over the first key) or items.")
@n_boot_option
@seed_option
@json_option
@handles_errors
def agree(
    a: str,
    b: str,
    weights: tuple[str, ...],
    levels: tuple[str, ...],
    fmt: str,
    keys: tuple[str, ...],
    label: str,
    grades: str | None,
    annotators: tuple[str, ...],
    adjudicated: bool,
    ceiling: str | None,
    resample: str,
    n_boot: int,
    seed: int,
    as_json: bool,
) -> None:
    """Agreement between two label files A (reference, e.g. human qrels) and B (e.g. a judge).

    Files are TREC qrels (query_id 0 doc_id relevance), JSONL, CSV or TSV, joined on their keys.
    Prints n joined, n found on one side only, and every statistic with its interval and n.

    A goldpool export-judgments file (several annotators per item, history included) counts
    each annotator's latest label as one rater; every rater of A is compared with every rater
    of B (all pairs of annotators when A and B are the same export), one table per pair.

    --json prints {"pairs": [PAIR, ...]} with the first pair's keys also at the top level, for
    one pair as for many. PAIR: a, b, n, only_a, only_b, resampled, interval_warning, n_groups,
    n_boot, seed, each statistic as {value, low, high, n}, ceiling (with --ceiling), per_class,
    confusion.
    """
    from calibration.summary import RaterComparisons  # lazy: start-up
    from pooling.qrels import is_judgments_export, read_labels, read_raters, rater_pairs  # lazy: start-up

    scale = _scale(grades)
    read = dict(fmt=fmt, keys=keys, label=label, grades=scale)
    if (annotators or adjudicated) and not any(is_judgments_export(p, fmt) for p in (a, b)):  # type: ignore[arg-type]
        raise click.UsageError("--annotator and --adjudicated apply to a goldpool export-judgments file")
    sides = [read_raters(p, **read, annotators=annotators, adjudicated=adjudicated) for p in (a, b)]  # type: ignore[arg-type]
    third = None if ceiling is None else read_labels(ceiling, **read)  # type: ignore[arg-type]
    results = _compare_pairs(rater_pairs(*sides), third, scale, weights, levels, resample, n_boot, seed)
    for warning in (w for r in results for w in r.warnings):
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        echo_json(RaterComparisons(tuple(results)).as_dict())
        return
    click.echo("\n\n".join("\n".join(_agree_text(r)) for r in results))


def _compare_pairs(
    pairs: list[tuple[LabelFile, LabelFile]],
    third: LabelFile | None,
    scale: tuple[int, ...] | None,
    weights: tuple[str, ...],
    levels: tuple[str, ...],
    resample: str,
    n_boot: int,
    seed: int,
) -> list[RaterComparison]:
    """Join and compare each pair of raters; a pair sharing no item is left out unless it is the only one."""
    from calibration import compare_labels  # lazy: start-up
    from calibration.summary import RaterComparison  # lazy: start-up
    from pooling.qrels import join_labels, scale_warnings  # lazy: start-up

    results: list[RaterComparison] = []
    refused: list[PoolingError] = []
    for x, y in pairs:
        try:
            joined = join_labels(x, y, third)
        except PoolingError as exc:
            refused.append(exc)
            continue
        comparison = compare_labels(
            joined.a, joined.b, joined.c,
            groups=joined.groups if resample == "queries" else None,
            weights=[_WEIGHTS[w] for w in weights] or [None, "linear", "quadratic"],
            levels=levels or ("ordinal",),
            n_boot=n_boot,
            seed=seed,
            scale=scale or (),
        )
        warnings = tuple(scale_warnings(x, y)) if scale is None else ()
        results.append(RaterComparison(x.name, y.name, joined.counts(), resample, comparison, warnings))
    if not results:
        raise refused[0] if refused else PoolingError("no pair of raters to compare")
    return results


@click.command("plan")
@click.option("--n", "n", type=click.IntRange(min=1), default=None, help="Questions in the golden set.")
@click.option("--p", "p", type=float, default=None,
              help="Expected accuracy, as a proportion (0.7). Default, when no design is given: 0.5, the widest.")
@click.option("--paired", is_flag=True, help="Two systems on the same questions (needs --discordant).")
@click.option("--discordant", type=float, default=None, help="Share of questions on which two systems differ.")
@click.option("--sd", type=float, default=None, help="SD of per-query metric differences of two runs (graded metrics).")
@click.option("--delta", type=float, default=None, help="Target difference, as a proportion (0.03 = 3 points).")
@click.option("--power", type=float, default=0.8, show_default=True, help="Power, 1 - β.")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Two-sided significance level.")
@click.option("--judge-sensitivity", "se", type=float, default=None, help="Judge sensitivity against humans.")
@click.option("--judge-specificity", "sp", type=float, default=None, help="Judge specificity against humans.")
@judge_option(help="With --width and --db: human judgments for that width with this judge's relevance grades on the "
                   "pool, against people alone, from the entries both have graded so far.")
@click.option("--width", type=float, default=None, help="Full width of the 95%% interval wanted (0.1 = ±0.05).")
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None,
              help="The project holding the judge's grades and the people's labels (with --judge).")
@json_option
@handles_errors
def plan_command(
    n: int | None,
    p: float | None,
    paired: bool,
    discordant: float | None,
    sd: float | None,
    delta: float | None,
    power: float,
    alpha: float,
    se: float | None,
    sp: float | None,
    judge: str | None,
    width: float | None,
    db_path: str | None,
    as_json: bool,
) -> None:
    """Half-widths, the minimum detectable difference, or the questions needed for a difference.

    All inputs are proportions; output is in points (0.07 = 7 points). An imperfect binary judge
    (--judge-sensitivity/--judge-specificity) widens everything by 1/(Se+Sp-1). --json gives the
    numbers (half_width, mdd, n_required and the design).

    With --judge J --width W --db DB: how many human judgments give a 95% interval of full width
    W with judge J labelling the pool (a difference estimator on the people-minus-judge
    residuals), against people alone; --json: {"judge", "width", "pairs", "sd_people",
    "sd_residual", "people_alone", "with_judge", "ratio", "basis"}.
    """
    from calibration import plan_summary, plan_text  # lazy: start-up

    if judge or width is not None:
        _plan_with_judge(judge, width, db_path, as_json)
        return

    if paired and discordant is None:
        raise click.UsageError("--paired needs --discordant D, the share of questions on which the systems differ")
    if sd is None and discordant is None and p is None:
        p = 0.5  # the widest interval: what n questions resolve whatever the accuracy turns out to be
    if n is None and delta is None:
        raise click.UsageError("give --n N (what n questions resolve) or --delta X (questions needed), or both")
    summary = plan_summary(n, delta, p=p, discordant=discordant, sd=sd, alpha=alpha, power=power,
                           sensitivity=se, specificity=sp)
    if as_json:
        echo_json(summary.as_dict())
    else:
        click.echo("\n".join(plan_text(summary)))


def _plan_with_judge(judge: str | None, width: float | None, db_path: str | None, as_json: bool) -> None:
    """``plan --judge J --width W --db DB``: judgments needed with the judge and without."""
    if not (judge and width is not None and db_path):
        raise click.UsageError("--judge, --width and --db go together: the plan reads the judge's grades and the "
                               "people's labels from the project")
    from labeler.retrieval.judge_assisted import plan_budget  # lazy: start-up

    project = Project(db_path)
    try:
        result = plan_budget(project.db, judge, width, caller=OWNER)
    finally:
        project.close()
    if as_json:
        echo_json(result.as_dict())
        return
    click.echo(f"95% interval of full width {width:g} (±{width / 2:g}) on a mean grade, from {result.pairs} entries graded "
               f"by both people and {judge}:")
    click.echo(f"  people alone:            {result.people_alone} judgments (sd of a grade {result.sd_people:.3f})")
    click.echo(f"  with {judge} on the pool: {result.with_judge} judgments (sd of people minus the calibrated judge "
               f"{result.sd_residual:.3f}), {result.with_judge / result.people_alone:.0%} of people alone")
    click.echo(f"  basis: {result.basis}")


@click.command("calibrate")
@with_project
@json_option
@html_option
@judge_option(multiple=True, help="Calibrate this judge against the annotators instead (repeatable: judges side by side).")
@click.option("--save", is_flag=True,
              help="With --judge: store each judge's calibration in DB as its card, which every later number "
                   "resting on the judge prints beside it.")
@click.option("--paired", is_flag=True,
              help="With --judge A --judge B: the difference in agreement and kappa with people on the same items, "
                   "with a paired bootstrap interval (two prompt versions, two models).")
@click.option("--price-in", type=click.FloatRange(min=0), default=None,
              help="With --save: the price of a million prompt tokens, for the cost the card carries.")
@click.option("--price-out", type=click.FloatRange(min=0), default=None,
              help="With --save: the price of a million reply tokens.")
@relevance_level_option
@n_boot_option
@seed_option
def calibrate(project: Project, as_json: bool, html_path: str | None, judges: tuple[str, ...], save: bool,
              paired: bool, price_in: float | None, price_out: float | None,
              relevance_level: int, n_boot: int, seed: int) -> None:
    """Agreement between the annotators of project DB, label distributions, and what it resolves.

    Agreement is measured on items labelled by two or more annotators (quadratic kappa and
    ordinal alpha), with intervals from a cluster bootstrap over queries. With --judge NAME:
    that judge against the annotators per task, beside the human ceiling, with its biases,
    cost and the smallest system difference it resolves; its sensitivity and specificity on
    relevance count a grade at or above --relevance-level as relevant (people's agreement
    compares whole grades and does not depend on it). On nuggets, the support kappa has linear
    weights, and the run level adds Kendall's tau between the systems' order by the judge and
    by people (bootstrap over questions) and, for a judge that proposed nuggets (nuggetize), the
    shares of its proposals people kept, edited and dropped, and of people's nuggets it missed:
    --json "nuggets": {NAME: {"order": {SCORE: {value, low, high, n}}, "systems", "nuggetizer"}}.

    The relevance counts are judgments of pool entries; people's verdicts on every other task
    (faithfulness, with answers' whole-answer items, pairwise, claims, correctness, answer
    relevance) are counted apart, per task, with people's agreement on items two or more
    labelled. Every n of an agreement counts annotator pairs on shared items (an item three
    people labelled gives three pairs), as the confusion matrix of --html does.

    --json keys, whatever the number of annotators: n_judgments, n_items, n_queries,
    annotators, n_overlap_items, interval, agreement (agreement, majority_baseline,
    kappa_quadratic, gwet_ac1, gwet_ac2_quadratic, alpha_ordinal: each {value, low, high, n},
    null without two annotators on an item), per_annotator, per_pair, distributions, power
    (numbers null without a labelled query), tasks ({TASK: {n_verdicts, n_items, annotators,
    n_overlap_items, n_pairs, agreement, kappa}} for the tasks people gave verdicts on). With --judge: {"judges": {NAME: {TASK: {...}}},
    "n_boot", "seed", "relevance_level"}, one entry per judge and task, the same keys for every
    count.

    --save (with --judge) stores each judge's card: per task the model, prompt hash, date,
    agreement and kappa with intervals, the human ceiling and n; --json then adds "cards":
    {NAME: {"line", "tasks": {TASK: {...}}}}. A judge whose prompt changes afterwards is
    reported as uncalibrated until it is calibrated again. A card also carries the settings and
    repeats of the verdicts, their test-retest agreement, the tokens the endpoint reported for
    them and, with --price-in/--price-out, their cost.

    Each judge's task also has "retest": the judge against itself over the repeats of
    run-judge --repeats ({repeats, n, n_pairs, kappa, kappa_weights, agreement, flip_rate (the
    share of pairs of repeats of one item that differ), ties}; repeats 1 and nulls for a judge
    asked once).

    --paired with --judge A --judge B: {"paired": {a, b, tasks: {TASK: {n, n_pairs, n_changed,
    kappa_weights, agreement: {a, b, difference}, kappa: {a, b, difference}}}, skipped, n_boot,
    seed, interval}}, the difference A - B on the items both judges and people labelled.
    """
    if paired:
        return compare_judges(project.db, judges, as_json, n_boot, seed)
    if judges:
        return calibrate_judges(project.db, judges, as_json, html_path, n_boot, seed, relevance_level, save=save,
                                prices=(price_in, price_out))
    if save:
        raise click.UsageError("--save stores a judge's card: give --judge NAME")
    _calibrate_people(project, as_json, html_path, n_boot, seed)


def _calibrate_people(project: Project, as_json: bool, html_path: str | None, n_boot: int, seed: int) -> None:
    """``calibrate`` without --judge: the project's people against each other."""
    from calibration import project_report, to_html, to_text  # lazy: start-up
    from labeler.store.labels import latest_judgments  # lazy: start-up
    from labeler.store.verdicts import task_verdict_rows  # lazy: start-up

    report = project_report(latest_judgments(project.db, caller=OWNER), grades=tuple(GRADES), n_boot=n_boot, seed=seed,
                            verdicts=task_verdict_rows(project.db, caller=OWNER))
    if html_path is not None:
        with output_file(html_path) as out:
            out.write(to_html(report, f"Calibration report: {Path(project.path).name}"))
    if as_json:
        echo_json(report.as_dict())
    else:
        click.echo(to_text(report), nl=False)


COMMANDS: list[click.Command] = [agree, plan_command, calibrate]
