"""Judge-assisted evaluation commands: plan-sample; the --judge/--sample paths of eval and compare."""

from __future__ import annotations

from typing import Any

import click

from labeler.commands.common import Project, echo_json, json_option, output_file, seed_option, with_project, judge_option


@click.command("plan-sample")
@with_project
@click.option("--name", required=True, help="Name of the sample (a sample never changes: a new plan gets a new name).")
@click.option("--share", type=float, default=None, help="Share of the pool people label (0.1 = a tenth).")
@click.option("--budget", type=int, default=None, help="Judgments people can make (instead of --share).")
@click.option("--design", type=click.Choice(["queries", "stratified"]), default="queries", show_default=True,
              help="queries: a random share of the queries, every entry of each; stratified: entries drawn within "
                   "(query, judge grade, best rank) strata, more where ranks are high and the judge unsure.")
@judge_option(help="The judge whose relevance grades shape the strata (stratified).")
@seed_option
@json_option
def plan_sample(project: Project, name: str, share: float | None, budget: int | None, design: str, judge: str | None,
                seed: int, as_json: bool) -> None:
    """Choose which pool entries of DB people label, and record each one's inclusion probability.

    Then `goldpool label-settings DB sample=NAME` makes the app hand out only the sample (blind
    as ever), the judge labels the whole pool (run-judge --task relevance), and after freezing,
    `goldpool eval DB@VERSION RUN... --judge J --sample NAME` gives every run's metrics with
    intervals. --json: {"sample", "design", "judgments", "items": [{"query_id", "doc_id",
    "probability"}], "judge", "pool_entries", "queries", "labelled_queries"}.
    """
    from labeler.retrieval.judge_assisted import plan_sample as run  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    planned = run(project.db, name, design=design, share=share, budget=budget, judge=judge, seed=seed, caller=OWNER)
    if as_json:
        echo_json(planned.as_dict())
        return
    probabilities = [p for _, _, p in planned.items]
    click.echo(f"sample {planned.name} ({planned.design}): {len(planned.items)} of {planned.pool_entries} pool entries "
               f"to label, in {planned.labelled_queries} of {planned.queries} queries; inclusion probability "
               f"{min(probabilities):.3f} to {max(probabilities):.3f}")
    per_query = len(planned.items) / max(planned.queries, 1)
    if planned.design == "queries" and planned.labelled_queries < _FEW_QUERIES:
        click.echo(f"warning: {_few_queries(planned.labelled_queries)}")
    if planned.design == "stratified" and per_query < _FEW_PER_QUERY:
        click.echo(f"warning: {per_query:.1f} entries per query to label; below {_FEW_PER_QUERY} the relevant counts "
                   "behind the stratified estimates of nDCG and recall rest on very few labels a query, and their "
                   "intervals can cover less than 95%: give a larger budget, or use --design queries when the "
                   "project has many queries")
    click.echo(f"next: goldpool label-settings {project.path} sample={planned.name}")


#: Below this many labelled queries, query-level intervals under-cover even with Student's t
#: (bench/judge_assisted.py: 0.85-0.90 with 2-5 labelled queries of TREC DL).
_FEW_QUERIES = 10


def _few_queries(labelled: int) -> str:
    return (f"only {labelled} labelled queries: an interval over so few queries is wide and still covers the true "
            "value less often than its 95% says (about 85-90% of the time with 2-5 queries of TREC DL in "
            "bench/judge_assisted.py); plan the sample with --design stratified, which spreads the same budget "
            "over every query")
#: Below this many labelled entries per query, the relevant counts of stratified ratio estimates
#: rest on very few labels (bench/judge_assisted.py --dense: Cranfield with 2 per query covers 0.83,
#: with 4 0.95; TREC DL with 9-43, 0.93-0.95). It is a floor, not a guarantee: where queries have
#: only 4-10 relevant entries, 8-10 per query still covered 0.80-0.91 there (see the README).
_FEW_PER_QUERY = 8


def judge_assisted(golden: str, runs: tuple[str, ...], metrics: list[str], judge: str, sample: str,
                   relevance_level: int, as_json: bool, *, baseline: bool, seed: int = 0,
                   html_path: str | None = None) -> None:
    """Print (or --json) the judge-assisted estimates of ``eval`` (``baseline`` False) or
    ``compare`` (differences from the first run); with ``html_path``, also write them as one
    HTML page (:func:`labeler.commands.reports.judge_assisted.to_html`)."""
    from labeler.commands.reports.judge_assisted import estimate_rows, to_html, to_text  # lazy: start-up
    from labeler.retrieval.golden_set import run_names  # lazy: start-up
    from labeler.retrieval.judge_assisted import estimate, gather  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    inputs = gather(golden, list(runs), judge, sample, caller=OWNER)
    first = run_names(list(runs))[0] if baseline else None
    result = estimate(inputs, metrics, relevance_level=relevance_level, baseline=first, seed=seed)
    warnings = _warnings(inputs)
    any_cell = next(iter(next(iter(result.values())).values()))
    intro = [f"golden: {golden}; judge {judge} on the pool ({any_cell.n_judge} entries graded); sample {sample} "
             f"({inputs.design}, {any_cell.n_people} entries labelled by people); relevance level {relevance_level}"]
    if first:
        intro.append(f"differences from {first} (run minus {first}), paired on the same queries and entries")
    alone = " (Horvitz-Thompson sums, relevant counts of the best rank)" if inputs.design == "stratified" else ""
    notes = ["judge only: the judge's labels everywhere, no interval (its bias is unknown); people only: the "
             "sample alone" + alone, *(f"warning: {w}" for w in warnings)]
    rows = estimate_rows(result)
    if html_path:
        title = (f"{', '.join(metrics)} {'differences' if first else 'estimates'} on {golden}, judge {judge}, "
                 f"sample {sample}")
        with output_file(html_path) as handle:
            handle.write(to_html(title, intro, rows, notes, result=result, baseline=first))
    if as_json:
        out: dict[str, Any] = {"runs": {r: {m: c.as_dict() for m, c in ms.items()} for r, ms in result.items()},
                               "golden": inputs.golden, "content_hash": inputs.content_hash, "judge": judge,
                               "sample": sample, "design": inputs.design, "relevance_level": relevance_level,
                               "warnings": warnings}
        if first:
            out["baseline"] = first
        echo_json(out)
        return
    for line in to_text(intro, rows, notes):
        click.echo(line)


def _warnings(inputs: Any) -> list[str]:
    """What makes these intervals less trustworthy than their 95% says."""
    labelled = len({q for q, _ in inputs.people})
    queries = len({q for q, _ in inputs.entries})
    if inputs.design == "queries" and labelled < _FEW_QUERIES:
        return [_few_queries(labelled)]
    per_query = len(inputs.people) / max(queries, 1)
    if inputs.design == "stratified" and per_query < _FEW_PER_QUERY:
        return [f"{per_query:.1f} labelled entries per query: per-query ratios (nDCG's ideal DCG, recall's relevant "
                "count) rest on so few labels that their intervals can cover less than 95%; label more, or use "
                "--design queries when there are many queries"]
    return []


COMMANDS = [plan_sample]
