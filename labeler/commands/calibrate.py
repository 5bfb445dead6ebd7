"""Calibration commands: ``agree`` (two label files), ``plan`` (power), ``calibrate`` (a project)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from labeler.commands.common import db_argument, user_errors

_WEIGHTS = {"none": None, "linear": "linear", "quadratic": "quadratic"}
_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _n_boot_options(command):
    command = click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")(command)
    return click.option(
        "--n-boot", type=click.IntRange(min=0), default=2000, show_default=True, help="Bootstrap resamples (0: none)."
    )(command)


def _row(name: str, estimate, width: int = 22) -> str:
    from calibration import format_estimate

    return f"{name:<{width}}{format_estimate(estimate):<28}{estimate.n:>8}"


def _agree_text(a: str, b: str, joined, summary, ceiling) -> list[str]:
    from calibration import format_estimate
    from calibration.report import interval_note

    header = f"{'statistic':<22}{'value [95% interval]':<28}{'n':>8}"
    lines = [
        f"A: {a}",
        f"B: {b}",
        f"joined {len(joined.keys)} items (only in A: {joined.only_a}, only in B: {joined.only_b})",
        interval_note(summary.n_boot, summary.n_groups, summary.ci, summary.seed),
        "",
        header,
    ]
    lines += [_row(e.statistic, e) for e in summary.statistics]
    if ceiling is not None:
        lines += ["", f"human ceiling: A against C on the same {ceiling.n} items (both tables use the items all three files label)", header]
        lines += [_row(e.statistic, e) for e in ceiling.statistics]
    lines += ["", "B against A, per label:", f"{'label':<8}{'support':>8}  {'precision [95% interval]':<28}{'recall [95% interval]'}"]
    for c in summary.classes:
        lines.append(f"{c.label!s:<8}{c.support:>8}  {format_estimate(c.precision):<28}{format_estimate(c.recall)}")
    labels = summary.confusion.labels
    lines += ["", "confusion (rows A, columns B):", " " * 8 + "".join(f"{lab!s:>8}" for lab in labels)]
    for lab, row in zip(labels, summary.confusion.table, strict=True):
        lines.append(f"{lab!s:<8}" + "".join(f"{int(x):>8}" for x in row))
    return lines


def _summary_json(summary) -> dict[str, Any]:
    return {e.statistic: e.as_dict() for e in summary.statistics}


@click.command("agree")
@click.argument("a", type=click.Path(dir_okay=False))
@click.argument("b", type=click.Path(dir_okay=False))
@click.option("--weights", "weights", type=click.Choice(list(_WEIGHTS)), multiple=True,
              help="Kappa weightings to report (repeatable; default: none, linear, quadratic).")
@click.option("--level", "levels", type=click.Choice(_LEVELS), multiple=True,
              help="Krippendorff alpha levels to report (repeatable; default: ordinal).")
@click.option("--format", "fmt", type=click.Choice(["auto", "trec", "jsonl", "csv"]), default="auto", show_default=True,
              help="File format; auto: .jsonl/.json, .csv, otherwise TREC qrels.")
@click.option("--key", "keys", multiple=True, default=("query_id", "doc_id"), show_default=True,
              help="Key column of JSONL/CSV files (repeatable); the first one groups items for the bootstrap.")
@click.option("--label", default="relevance", show_default=True, help="Label column of JSONL/CSV files.")
@click.option("--ceiling", type=click.Path(dir_okay=False), default=None,
              help="A second human's labels: shows A against C beside A against B on the items all three label.")
@click.option("--resample", type=click.Choice(["queries", "items"]), default="queries", show_default=True,
              help="Unit of the bootstrap: queries (cluster bootstrap over the first key) or items.")
@_n_boot_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of text.")
def agree(a, b, weights, levels, fmt, keys, label, ceiling, resample, n_boot, seed, as_json) -> None:
    """Agreement between two label files A (reference, e.g. human qrels) and B (e.g. a judge).

    Files are TREC qrels (query_id 0 doc_id relevance), JSONL or CSV, joined on their keys.
    Prints n joined, n found on one side only, and every statistic with its interval and n.
    """
    from calibration import file_agreement, read_labels

    with user_errors():
        file_a = read_labels(a, fmt=fmt, keys=keys, label=label)
        file_b = read_labels(b, fmt=fmt, keys=keys, label=label)
        file_c = None if ceiling is None else read_labels(ceiling, fmt=fmt, keys=keys, label=label)
        joined, summary, ceiling_summary = file_agreement(
            file_a, file_b, file_c,
            groups_by_query=resample == "queries",
            weights=[_WEIGHTS[w] for w in weights] or [None, "linear", "quadratic"],
            levels=levels or ("ordinal",),
            n_boot=n_boot,
            seed=seed,
        )
    if as_json:
        out: dict[str, Any] = {"n": len(joined.keys), "only_a": joined.only_a, "only_b": joined.only_b,
                               "resampled": resample, "n_groups": summary.n_groups, "n_boot": n_boot, "seed": seed}
        out.update(_summary_json(summary))
        if ceiling_summary is not None:
            out["ceiling"] = _summary_json(ceiling_summary)
        out["per_class"] = [{"label": c.label, "support": c.support, "precision": c.precision.as_dict(),
                             "recall": c.recall.as_dict()} for c in summary.classes]
        out["confusion"] = {"labels": list(summary.confusion.labels), "table": summary.confusion.table.tolist()}
        click.echo(json.dumps(out, indent=2))
        return
    click.echo("\n".join(_agree_text(a, b, joined, summary, ceiling_summary)))


def _points(x: float) -> str:
    return f"{100 * x:.1f}"


def _change(x: float) -> str:
    """A target difference as written by a person: 0.03 -> ``3``, 0.025 -> ``2.5``."""
    return f"{round(100 * x, 1):g}"


def _design_note(design: str, p, discordant, sd, power: float, alpha: float) -> str:
    given = {"unpaired": f"p={p}", "paired": f"d={discordant}", "per_query": f"sd={sd}"}[design]
    name = {"unpaired": "unpaired", "paired": "paired", "per_query": "paired per-query"}[design]
    return f"{name}, {given}, {power:.0%} power, α={alpha:g}"


def _judge_note(se: float | None, sp: float | None) -> str:
    return "" if se is None else f", judge Se={se:g} Sp={sp:g}"


def _plan_numbers(n, p, discordant, sd, alpha, power, se, sp) -> tuple[dict[str, float], list[str]]:
    from calibration import plan

    widths: dict[str, float] = {}
    lines = []
    judge = {"sensitivity": se, "specificity": sp}
    if p is not None:
        widths["accuracy"] = plan(n, "accuracy", p=p, alpha=alpha, power=power, **judge).half_width
        widths["unpaired"] = plan(n, "unpaired", p=p, alpha=alpha, power=power, **judge).half_width
        lines.append(f"half-width, one accuracy (p={p:g}): ±{_points(widths['accuracy'])} points")
        lines.append(f"half-width, unpaired difference (p={p:g}): ±{_points(widths['unpaired'])} points")
    if discordant is not None:
        widths["paired"] = plan(n, "paired", discordant=discordant, alpha=alpha, power=power, **judge).half_width
        lines.append(f"half-width, paired difference (d={discordant:g}): ±{_points(widths['paired'])} points")
    if sd is not None:
        widths["per_query"] = plan(n, "per_query", sd=sd, alpha=alpha, power=power, **judge).half_width
        lines.append(f"half-width, per-query differences (sd={sd:g}): ±{_points(widths['per_query'])} points")
    return widths, lines


@click.command("plan")
@click.option("--n", "n", type=click.IntRange(min=1), default=None, help="Questions in the golden set.")
@click.option("--p", "p", type=float, default=None, help="Expected accuracy, as a proportion (0.7).")
@click.option("--paired", is_flag=True, help="Two systems on the same questions (needs --discordant).")
@click.option("--discordant", type=float, default=None, help="Share of questions on which two systems differ.")
@click.option("--sd", type=float, default=None, help="SD of per-query metric differences of two runs (graded metrics).")
@click.option("--delta", type=float, default=None, help="Target difference, as a proportion (0.03 = 3 points).")
@click.option("--power", type=float, default=0.8, show_default=True, help="Power, 1 - β.")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Two-sided significance level.")
@click.option("--judge-sensitivity", "se", type=float, default=None, help="Judge sensitivity against humans.")
@click.option("--judge-specificity", "sp", type=float, default=None, help="Judge specificity against humans.")
@click.option("--json", "as_json", is_flag=True, help="The numbers as JSON: half_width, mdd, n_required.")
def plan_command(n, p, paired, discordant, sd, delta, power, alpha, se, sp, as_json) -> None:
    """Half-widths, the minimum detectable difference, or the questions needed for a difference.

    All inputs are proportions; output is in points (0.07 = 7 points). An imperfect binary judge
    (--judge-sensitivity/--judge-specificity) widens everything by 1/(Se+Sp-1).
    """
    from calibration import judge_inflation, minimum_detectable_difference, required_n

    if paired and discordant is None:
        raise click.UsageError("--paired needs --discordant D, the share of questions on which the systems differ")
    design = "per_query" if sd is not None else ("paired" if paired or discordant is not None else "unpaired")
    if design == "unpaired" and p is None:
        raise click.UsageError("give --p P, or --paired --discordant D, or --sd S")
    if n is None and delta is None:
        raise click.UsageError("give --n N (what n questions resolve) or --delta X (questions needed), or both")
    design_kw = {"p": p, "discordant": discordant, "sd": sd}
    common = {"alpha": alpha, "power": power, "sensitivity": se, "specificity": sp}
    with user_errors():
        inflation = judge_inflation(se, sp)
        out: dict[str, Any] = {"design": design, "n": n, **design_kw, "alpha": alpha, "power": power, "inflation": inflation}
        lines: list[str] = []
        if n is not None:
            out["half_width"], lines = _plan_numbers(n, p, discordant, sd, alpha, power, se, sp)
            out["mdd"] = minimum_detectable_difference(n, design, **design_kw, **common)
            lines.append(f"minimum detectable difference ({design.replace('_', '-')}): {_points(out['mdd'])} points")
        if delta is not None:
            out["delta"] = delta
            out["n_required"] = required_n(delta, design, **design_kw, **common)
            lines.append(f"questions needed for {_change(delta)} points: {out['n_required']}")
    if inflation != 1.0:
        lines.append(f"judge inflation 1/(Se+Sp-1): ×{inflation:.2f}")
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(_plan_sentence(out, _design_note(design, p, discordant, sd, power, alpha) + _judge_note(se, sp), se is not None))
    click.echo("\n".join(lines))


def _plan_sentence(out: dict[str, Any], note: str, judged: bool) -> str:
    who = "this judge and " if judged else ""
    if out.get("n") is None:
        return f"Detecting a {_change(out['delta'])}-point change needs {out['n_required']} questions ({note})."
    n, mdd, widths = out["n"], out["mdd"], out["half_width"]
    if "delta" in out:
        verdict = "can" if mdd <= out["delta"] else "cannot"
        return (
            f"With {who}{n} questions you {verdict} resolve a {_change(out['delta'])}-point change: the minimum "
            f"detectable difference is {_points(mdd)} points ({note}); {out['n_required']} questions would detect it."
        )
    if out["design"] == "unpaired":
        return (
            f"With {who}{n} questions an accuracy near {out['p']:.0%} is known to ±{_points(widths['accuracy'])} points, "
            f"and two systems on different questions to ±{_points(widths['unpaired'])} points; the minimum detectable "
            f"difference is {_points(mdd)} points ({note})."
        )
    key = out["design"]
    ratio = ""
    if "unpaired" in widths:
        ratio = f", {widths['unpaired'] / widths[key]:.2f} times narrower than unpaired (±{_points(widths['unpaired'])})"
    return (
        f"With {who}{n} questions a paired comparison is known to ±{_points(widths[key])} points{ratio}; "
        f"the minimum detectable difference is {_points(mdd)} points ({note})."
    )


@click.command("calibrate")
@db_argument
@click.option("--json", "as_json", is_flag=True, help="The report as JSON instead of Markdown text.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the report as one self-contained HTML file (inline SVG plots, works offline).")
@click.option("--judge", "judges", multiple=True,
              help="Calibrate this judge against the annotators instead (repeatable: judges side by side).")
@_n_boot_options
def calibrate(db, as_json, html_path, judges, n_boot, seed) -> None:
    """Agreement between the annotators of project DB, label distributions, and what it resolves.

    Agreement is measured on items labelled by two or more annotators (quadratic kappa and
    ordinal alpha), with intervals from a cluster bootstrap over queries. With --judge NAME:
    that judge against the annotators per task, beside the human ceiling, with its biases,
    cost and the smallest system difference it resolves.
    """
    if judges:
        from labeler.commands.judge import calibrate_judges

        return calibrate_judges(db, judges, as_json, html_path, n_boot, seed)
    from calibration import project_report, to_dict, to_html, to_markdown
    from labeler.store import connect
    from labeler.store.labels import latest_judgments

    with user_errors():
        database = connect(db)
        try:
            report = project_report(latest_judgments(database), n_boot=n_boot, seed=seed)
        finally:
            database.close()
    if html_path is not None:
        try:
            Path(html_path).write_text(to_html(report, f"Calibration report: {Path(db).name}"), encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(f"{html_path}: cannot write the report ({exc.strerror})") from exc
    click.echo(json.dumps(to_dict(report), indent=2) if as_json else to_markdown(report), nl=False)


COMMANDS: list[click.Command] = [agree, plan_command, calibrate]
