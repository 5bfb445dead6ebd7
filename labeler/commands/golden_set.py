"""Golden-set commands: freeze, versions, export, import-judgments, diff, eval, compare, add-run,
completeness."""

from __future__ import annotations

import math
from typing import Any

import click

from calibration import CalibrationError
from labeler.commands.common import (
    judge_option,
    Project,
    deprecated_alias,
    echo_json,
    handles_errors,
    html_option,
    json_option,
    output_file,
    output_option_for,
    per_query_option,
    relevance_level_option,
    require,
    run_name_option,
    seed_option,
    with_golden,
    with_project,
)
from labeler.commands.judge_assisted import judge_assisted
from labeler.store.vocabulary import OWNER

# The export formats (labeler.retrieval.export_folder.FORMATS, which loads the store: not at start-up).
_FORMATS = ("trec", "jsonl", "parquet", "beir")


@click.command("freeze")
@with_project
@click.option("--version", "name", required=True, help="Name of the new version (e.g. v3).")
@click.option("-m", "--message", "note", default="", help="A note kept in the manifest.")
@click.option("--rule", type=click.Choice(["majority", "median", "dawid-skene"]), default="majority", show_default=True,
              help="How several labels of an item become one grade (an adjudication always wins).")
@click.option("--allow-ties", is_flag=True, help="Freeze despite tied majorities (they take the lower grade).")
@relevance_level_option
def freeze(project: Project, name: str, note: str, rule: str, allow_ties: bool, relevance_level: int) -> None:
    """Freeze the current labels of DB into an immutable, named golden-set version.

    Each (query, chunk)'s labels become one grade; the version records a content hash (sha256
    over the sorted aggregated rows) and a manifest. Freezing again with the same grades makes
    no new version. The manifest's relevant counts are at --relevance-level, which it records.
    """
    from labeler.retrieval.golden_set import freeze as run  # lazy: start-up

    result = run(project.db, name, rule=rule, note=note, allow_ties=allow_ties, caller=OWNER,
                 relevance_level=relevance_level)
    v = result.version
    if not result.created:
        click.echo(f"nothing changed: version {v.name} already holds exactly these grades (content hash {v.content_hash[:12]}); no new version")
        return
    counts = v.manifest["counts"]
    click.echo(f"froze {v.name}: {counts['items']} items, {counts['queries']} queries, {counts['labels']} labels, rule {v.rule}, "
               f"content hash {v.content_hash}")
    click.echo(f"  per grade: {', '.join(f'{g}: {n}' for g, n in counts['per_grade'].items())}; "
               f"single-label items: {result.single}; adjudicated: {result.adjudicated}; tied majorities: {len(result.ties)}"
               + (" (lower grade taken)" if result.ties else ""))
    if "relevant_items" in counts:
        level = counts.get("relevance_level", relevance_level)
        click.echo(f"  relevant (grade >= {level}, relevance level {level}): {counts['relevant_items']} items"
                   + (f" in {counts['queries_with_relevant']} queries" if "queries_with_relevant" in counts else ""))
    if result.weights:
        click.echo("  annotator weights: " + ", ".join(f"{a} {w:.3f}" for a, w in result.weights.items()))


@click.command("versions")
@with_project
def versions(project: Project) -> None:
    """List the frozen golden-set versions of DB, oldest first."""
    from labeler.retrieval.golden_set import altered_versions  # lazy: start-up
    from labeler.store.versions import list_versions  # lazy: start-up

    found = list_versions(project.db, caller=OWNER)
    altered = set(altered_versions(project.db, caller=OWNER))
    if not found:
        click.echo("no version frozen yet (goldpool freeze DB --version NAME)")
        return
    click.echo(f"{'version':<16}{'frozen at':<28}{'rule':<13}{'items':>7}{'queries':>9}  {'content hash':<14}parent  note")
    for v in found:
        c = v.manifest.get("counts", {})
        click.echo(f"{v.name:<16}{v.created_at[:26]:<28}{v.rule:<13}{v.n_rows:>7}{c.get('queries', 0):>9}  "
                   f"{v.content_hash[:12]:<14}{v.parent or '-':<8}{v.manifest.get('note', '')}"
                   + ("  ALTERED" if v.name in altered else ""))
    if altered:
        raise click.ClickException(
            f"{', '.join(sorted(altered))}: rows no longer match the content hash; the project was changed "
            "outside goldpool, so these versions cannot be trusted (restore the project from a backup)")


@click.command("export")
@with_golden
@click.option("--format", "formats", multiple=True, required=True, type=click.Choice([*_FORMATS, "all"]),
              help="trec (qrels.txt), jsonl, parquet or beir; repeatable; all for every one.")
@output_option_for(folder=True, help="Folder to write.  [required]")
@click.option("--overwrite", is_flag=True,
              help="Replace OUTPUT whole even if it holds something else than a previous export of DB.")
@relevance_level_option
@deprecated_alias("--out", into="output", new="-o/--output", type=click.Path(file_okay=False))
def export(project: Project, name: str | None, formats: tuple[str, ...], output: str | None, overwrite: bool,
           relevance_level: int) -> None:
    """Write GOLDEN, a frozen version DB@VERSION, to folder OUTPUT, with manifest.json and a README.md dataset card.

    trec: qrels.txt (graded); jsonl/parquet: golden.jsonl/golden.parquet, one row per item with
    every raw label, the pool provenance and the texts; beir: corpus.jsonl, queries.jsonl,
    qrels/test.tsv. The folder is built beside OUTPUT and moved into place when complete; a
    previous export of DB in OUTPUT is replaced whole, anything else needs --overwrite. The relevant
    counts of the card and the manifest are at --relevance-level, which both record.
    """
    from labeler.retrieval.golden_set import export as run  # lazy: start-up

    if name is None:
        raise click.UsageError(f"{project.path}: give GOLDEN as DB@VERSION, the version to export")
    require(output, "-o' / '--output")
    out = output
    chosen = list(_FORMATS) if "all" in formats else list(dict.fromkeys(formats))
    written = run(project.db, name, chosen, out, caller=OWNER, overwrite=overwrite, relevance_level=relevance_level)
    click.echo(f"{name}: wrote {len(written)} files to {out} ({', '.join(chosen)}; relevant counts at relevance level "
               f"{relevance_level})")


@click.command("import-judgments")
@with_project
@click.argument("qrels", type=click.Path(dir_okay=False))
@click.option("--annotator", required=True, help="Whose labels these are (created if new).")
def import_judgments(project: Project, qrels: str, annotator: str) -> None:
    """Import the TREC qrels file QRELS into DB as one annotator's labels (grades 0-3).

    Entries not yet in the pool join it with source `qrels`. Importing the same file again
    changes nothing; bad input changes nothing.
    """
    from labeler.retrieval.golden_set import import_judgments as run  # lazy: start-up

    result = run(project.db, qrels, annotator, caller=OWNER)
    click.echo(f"{qrels}: {result.added} labels added for {result.annotator}"
               f"{' (new annotator)' if result.created_annotator else ''}, {result.unchanged} unchanged, "
               f"{result.pooled} entries joined the pool")


@click.command("diff")
@with_project
@click.argument("v1")
@click.argument("v2")
@click.option("--counts-only", "counts_only", is_flag=True,
              help="Counts only: per grade change, per grade added and removed, and per query; no item rows.")
@deprecated_alias("--summary", into="counts_only", new="--counts-only", is_flag=True)
def diff(project: Project, v1: str, v2: str, counts_only: bool) -> None:
    """Items added, removed and regraded from version V1 to V2, with counts per grade change."""
    from labeler.retrieval.golden_set import diff as run  # lazy: start-up

    d = run(project.db, v1, v2, caller=OWNER)
    click.echo(f"{v1} -> {v2}: {len(d.added)} added, {len(d.removed)} removed, {len(d.regraded)} regraded")
    for (a, b), n in d.changes.items():
        click.echo(f"  grade {a} -> {b}: {n}")
    if counts_only:
        _diff_summary(d)
        return
    for q, doc, g in d.added:
        click.echo(f"+ {q} {doc} {g}")
    for q, doc, g in d.removed:
        click.echo(f"- {q} {doc} {g}")
    for q, doc, a, b in d.regraded:
        click.echo(f"~ {q} {doc} {a} -> {b}")


def _diff_summary(d) -> None:
    """The counts of ``goldpool diff --counts-only`` below its first lines: added and removed per
    grade, then one row per query that changed."""
    for word, grades in zip(("added", "removed"), d.by_grade(), strict=True):
        for grade, n in grades.items():
            click.echo(f"  {word} with grade {grade}: {n}")
    per_query = d.per_query()
    if not per_query:
        return
    width = max(len("query"), *(len(q) for q in per_query))
    click.echo(f"{len(per_query)} {'query' if len(per_query) == 1 else 'queries'} changed:")
    click.echo(f"  {'query':<{width}}  {'added':>7}  {'removed':>7}  {'regraded':>8}")
    for q, (added, removed, regraded) in per_query.items():
        click.echo(f"  {q:<{width}}  {added:>7}  {removed:>7}  {regraded:>8}")


def _fmt(x: float) -> str:
    from calibration.formatting import fixed  # lazy: start-up
    return fixed(x, 4, missing="n/a")


def _judged_note(scores) -> str:
    notes = []
    for name, value in scores.metrics.items():
        if name.startswith("Judged") and not math.isnan(value) and value < 1.0:
            notes.append(f"{1 - value:.0%} of top-{name.partition('@')[2] or 'all'} unjudged: scores are a lower bound")
    return "; ".join(notes)


@click.command("eval")
@click.argument("golden")
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--metric", "metrics", multiple=True, metavar="M",
              help="A metric: an ir-measures name, e.g. nDCG@10, R@100, RR, or a trec_eval name, e.g. ndcg_cut_10, "
                   "recall_100, recip_rank, map, P_5; repeat for several (default: nDCG@10, "
                   "nDCG(dcg='exp-log2')@10, R@k, RR, P@k, Judged@k with k = --depth).")
@click.option("--depth", type=click.IntRange(min=1), default=10, show_default=True,
              help="k of the default R@k, P@k and Judged@k: how many chunks you feed downstream.")
@judge_option(help="With --sample: estimate from this judge's relevance grades on the whole pool, corrected by the "
                   "people's labels on the sample (GOLDEN must be DB@VERSION).")
@click.option("--sample", default=None, help="The designed sample people labelled (goldpool plan-sample); needs --judge.")
@relevance_level_option
@per_query_option
@json_option
@handles_errors
@deprecated_alias("--metrics", into="metrics", new="--metric (repeated)",
                  merge=lambda kwargs, text: kwargs.update(metrics=tuple(_split_metrics(text))))
def eval_(golden: str, runs: tuple[str, ...], metrics: tuple[str, ...], depth: int, judge: str | None, sample: str | None,
          relevance_level: int, per_query: bool, as_json: bool) -> None:
    """Score TREC runs RUNS against GOLDEN (DB@VERSION or a qrels file) exactly as trec_eval.

    Metrics are computed by ir-measures (pytrec_eval for the trec_eval measures); trec_eval
    names are read as the ir-measures measures they stand for (map is AP, P_5 is P@5). A grade
    at or above --relevance-level counts as relevant (trec_eval's -l). Runs are ranked by
    score, ties by doc id descending; queries without a relevant document are left out of the
    means and counted.

    --json prints {"runs": {RUN: SCORES}, "golden", "content_hash"} with the first run's
    SCORES and its name ("run") also at the top level, for one run as for many. SCORES:
    metrics, per_query, excluded, missing, unknown, scored, relevance_level; an undefined value
    is null.

    With --judge J --sample S: per run and metric, the judge-only value, the people-only value
    (Horvitz-Thompson where the sample is not uniform) and the combined estimate (PPI++ over
    queries for a `queries` sample, a difference estimator for a `stratified` one) with a 95%
    interval; a metric the design cannot estimate says why instead of a number. --json:
    {"runs": {RUN: {METRIC: {"value", "low", "high", "judge_only", "people_only", "n_people",
    "n_judge", ...}}}, "design", "sample", "judge", "golden"}.
    """
    from calibration.metrics import default_metrics  # lazy: start-up
    names = list(metrics) if metrics else list(default_metrics(depth))
    if judge or sample:
        if not (judge and sample):
            raise click.UsageError("--judge and --sample go together: the judge labels the pool, people the sample")
        judge_assisted(golden, runs, names, judge, sample, relevance_level, as_json, baseline=False)
        return
    from labeler.retrieval.golden_set import Evaluation, evaluate_runs, load_golden  # lazy: start-up

    gold = load_golden(golden, caller=OWNER)
    scores = evaluate_runs(gold, list(runs), names, relevance_level=relevance_level)
    if as_json:
        echo_json(Evaluation(gold, scores).as_dict())
        return
    _eval_table(gold, scores, per_query, relevance_level)


def _split_metrics(text: str) -> list[str]:
    """Split on commas outside parentheses (``nDCG(dcg='exp-log2')@10`` keeps its own)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return [p for p in parts if p]


def _level_text(level: int) -> str:
    return f"relevance level {level}: grade >= {level} counts as relevant (trec_eval -l {level})"


def _eval_table(gold, scores: dict[str, Any], per_query: bool, relevance_level: int) -> None:
    first = next(iter(scores.values()))
    names = list(first.metrics)
    widths = {n: max(10, len(n) + 2) for n in names}
    run_w = max(8, *(len(r) + 2 for r in scores))
    click.echo(f"golden: {gold.label}" + (f" (content hash {gold.content_hash[:12]})" if gold.content_hash else ""))
    click.echo(_level_text(relevance_level))
    click.echo(f"{'run':<{run_w}}" + "".join(f"{n:>{widths[n]}}" for n in names) + f"{'queries':>9}{'excluded':>10}  note")
    for run, s in scores.items():
        extra = [] if not s.missing else [f"{s.missing} golden queries not in the run"]
        if s.unknown:
            shown = ", ".join(s.unknown[:3]) + (", ..." if len(s.unknown) > 3 else "")
            extra.append(f"{len(s.unknown)} run queries not in the golden set ({shown}): not scored")
        note = "; ".join(filter(None, [_judged_note(s), *extra]))
        click.echo(f"{run:<{run_w}}" + "".join(f"{_fmt(s.metrics[n]):>{widths[n]}}" for n in names)
                   + f"{s.scored:>9}{s.excluded:>10}  {note}")
    click.echo(f"excluded: queries without a relevant document, none graded >= {relevance_level} ({first.excluded}), "
               "left out of every mean")
    if per_query:
        for run, s in scores.items():
            click.echo(f"\n{run}")
            click.echo(f"{'query_id':<16}" + "".join(f"{n:>{widths[n]}}" for n in names))
            for q, values in s.per_query.items():
                click.echo(f"{q:<16}" + "".join(f"{_fmt(values.get(n, math.nan)):>{widths[n]}}" for n in names))


@click.command("compare")
@click.argument("golden")
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--metric", "metrics", multiple=True, default=("nDCG@10",), show_default=True, metavar="M",
              help="The metric to compare on: an ir-measures name (nDCG@10) or a trec_eval one (ndcg_cut_10); "
                   "repeat for several, compared one after another.")
@judge_option(help="With --sample: estimate from this judge's relevance grades on the whole pool, corrected by the "
                   "people's labels on the sample (GOLDEN must be DB@VERSION).")
@click.option("--sample", default=None, help="The designed sample people labelled (goldpool plan-sample); needs --judge.")
@relevance_level_option
@html_option
@seed_option
@json_option
@handles_errors
def compare(golden: str, runs: tuple[str, ...], metrics: tuple[str, ...], judge: str | None, sample: str | None,
            relevance_level: int, html_path: str | None, seed: int, as_json: bool) -> None:
    """Compare runs RUN_A RUN_B [RUN...] on GOLDEN, each against the first, query by query.

    Gives the mean difference with a query-bootstrap interval, a paired randomisation-test p
    (Holm-corrected for more than two runs), the minimum detectable difference of this golden
    set, and a plain sentence. --html plots the per-query differences. A grade at or above
    --relevance-level counts as relevant. Queries only one run of a pair scores are dropped
    from that pair and counted, per run that lacks them.

    --json prints {"metric", "relevance_level", "comparisons": [...]}; each comparison has
    "dropped": {RUN: queries dropped because RUN lacks them} for both runs of the pair. With
    several --metric, one block per metric in the order given, a blank line between; --json
    prints a list of those objects, one per metric in that order (one --metric: the object
    alone); --html takes one --metric.

    With --judge J --sample S: each run's difference from the first, estimated from the
    judge's grades on the pool and the people's on the sample, as `eval --judge --sample`
    estimates a metric (--html writes that table); --json: {"baseline", "runs": {RUN: {METRIC: {"value", "low", "high",
    "judge_only", "people_only", "n_people", "n_judge", ...}}}}.
    """
    from calibration.metrics import parse_metrics  # lazy: start-up
    from labeler.retrieval.golden_set import load_golden  # lazy: start-up

    if len(runs) < 2:
        raise CalibrationError("compare needs at least two runs: RUN_A RUN_B [RUN...]")
    if judge or sample:
        if not (judge and sample):
            raise click.UsageError("--judge and --sample go together: the judge labels the pool, people the sample")
        judge_assisted(golden, runs, list(metrics), judge, sample, relevance_level, as_json, baseline=True, seed=seed,
                       html_path=html_path)
        return
    names = []
    for metric in metrics:
        measures = list(parse_metrics([metric], relevance_level))  # a trec_eval name becomes its ir-measures name
        if len(measures) != 1:
            raise CalibrationError(f"--metric {metric!r} stands for {len(measures)} measures ({', '.join(measures)}): "
                                   "give one")
        names.append(measures[0])
    names = list(dict.fromkeys(names))
    if html_path and len(names) > 1:
        raise click.UsageError("--html writes the comparison of one --metric: give one")
    gold = load_golden(golden, caller=OWNER)
    blocks = [_compare_one(gold, runs, metric, relevance_level, html_path, seed, as_json) for metric in names]
    if as_json:
        echo_json(blocks[0] if len(blocks) == 1 else blocks)
        return
    click.echo("\n\n".join(blocks))


def _compare_one(gold, runs: tuple[str, ...], metric: str, relevance_level: int, html_path: str | None, seed: int,
                 as_json: bool) -> Any:
    """The comparison of ``runs`` on one metric: its JSON object, or its text block."""
    from calibration.compare import Comparisons, compare_runs  # lazy: start-up
    from calibration.formatting import fixed  # lazy: start-up
    from calibration.report_compare import to_html  # lazy: start-up
    from labeler.retrieval.golden_set import evaluate_runs  # lazy: start-up

    scores = evaluate_runs(gold, list(runs), [metric], relevance_level=relevance_level)
    per_query = {name: {q: v[metric] for q, v in s.per_query.items()} for name, s in scores.items()}
    result = compare_runs(per_query, metric, seed=seed)
    if html_path:
        with output_file(html_path) as handle:
            handle.write(to_html(result, title=f"{metric} on {gold.label} (relevance level {relevance_level})"))
    if as_json:
        return Comparisons(metric, tuple(result), relevance_level).as_dict()
    lines = []
    for c in result:
        lines.append(c.sentence)
        lines.append(f"  {c.n} queries paired; dropped: " + ", ".join(f"{n} that {run} lacks" for run, n in c.dropped.items()))
    lines.append(_level_text(relevance_level))
    lines.append("")
    lines.append(f"{'run':<24}{'n':>6}{'mean':>9}{'delta':>9}  {'95% interval':<20}{'p':>8}{'p Holm':>8}{'sd(δ)':>8}{'MDD':>8}")
    base = result[0]
    lines.append(f"{base.baseline:<24}{base.n:>6}{base.mean_baseline:>9.4f}")
    for c in result:
        interval = f"[{fixed(c.low, 4, sign=True)}, {fixed(c.high, 4, sign=True)}]"
        lines.append(f"{c.run:<24}{c.n:>6}{c.mean_run:>9.4f}{fixed(c.delta, 4, sign=True):>9}  {interval:<20}"
                     f"{c.p_value:>8.4f}{c.p_adjusted:>8.4f}{c.sd:>8.4f}{fixed(c.mdd, 4) if c.mdd <= 1.0 else 'beyond':>8}")
    return "\n".join(lines)


@click.command("add-run")
@with_project
@click.argument("run", type=click.Path(dir_okay=False))
@run_name_option
@click.option("--depth", type=int, default=10, show_default=True, help="How many of its top documents per query to pool.")
def add_run(project: Project, run: str, name: str, depth: int) -> None:
    """Import the TREC run RUN into DB and add its unjudged top-K per query to the pool.

    The new entries join the labelling queue; `goldpool eval` then shows Judged@k rising as
    they are labelled.
    """
    from labeler.retrieval.build import add_run as do  # lazy: start-up

    imported, extension = do(project.db, run, name, depth, caller=OWNER)
    click.echo(f"{run}: run {name} ({imported.added or imported.unchanged} rows); top-{depth}: "
               f"{extension.added} new pool entries to label, {extension.extended} already pooled, "
               f"{extension.judged} already judged")


@click.command("completeness")
@with_golden
@relevance_level_option
@per_query_option
@json_option
def completeness(project: Project, name: str | None, relevance_level: int, per_query: bool, as_json: bool) -> None:
    """Estimate how many relevant chunks the pool missed, in GOLDEN: DB@VERSION, or DB (its latest version).

    Capture-recapture: Chapman's estimator over each pair of pool sources, per query and summed, with a
    query-bootstrap interval. It assumes the sources find relevant chunks independently. A
    chunk graded at or above --relevance-level counts as relevant.

    --json keys: version, relevance_level, found, queries, assumption, pairs (sources, n1, n2, m,
    estimated_relevant, missed, low, high), per_query ({found, missed}), interval_note (why
    low and high are null: one query; else null).
    """
    from labeler.retrieval.golden_set import completeness as run  # lazy: start-up

    result = run(project.db, name, caller=OWNER, relevance_level=relevance_level)
    version, c = result.version, result.estimate
    if as_json:
        echo_json(result.as_dict())
        return
    h = c.headline
    queries = "1 query" if c.queries == 1 else f"{c.queries} queries"
    click.echo(f"{version}: the pool's sources found {c.found} relevant chunks over {queries} "
               f"(relevance level {relevance_level}: grade >= {relevance_level}).")
    interval = f"({c.interval_note})" if c.interval_note else f"[{h.low:.1f}, {h.high:.1f}] ({c.ci:.0%} query bootstrap)"
    recall = f"{c.found / (c.found + h.missed):.1%}" + (", from a single query: read it as rough" if c.queries == 1 else "")
    click.echo(f"Estimated missed: {h.missed:.1f} {interval}, "
               f"from {h.sources[0]} x {h.sources[1]}; estimated recall of the pool {recall}.")
    click.echo(c.assumption)
    click.echo(f"{'sources':<28}{'n1':>7}{'n2':>7}{'both':>7}{'est. relevant':>15}{'missed':>9}  interval")
    for p in c.pairs:
        click.echo(f"{' x '.join(p.sources):<28}{p.n1:>7}{p.n2:>7}{p.m:>7}{p.estimated_relevant:>15.1f}{p.missed:>9.1f}"
                   + ("  n/a" if c.interval_note else f"  [{p.low:.1f}, {p.high:.1f}]"))
    if per_query:
        click.echo(f"\n{'query_id':<16}{'found':>7}{'missed':>9}")
        for q, (f, m) in c.per_query.items():
            click.echo(f"{q:<16}{f:>7}{m:>9.1f}")


COMMANDS = [freeze, versions, export, import_judgments, diff, eval_, compare, add_run, completeness]
