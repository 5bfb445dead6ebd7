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
@click.option("--design", type=click.Choice(["queries", "stratified", "active"]), default="queries",
              show_default=True,
              help="queries: a random share of the queries, every entry of each; stratified: entries drawn within "
                   "(query, judge grade, best rank) strata, more where ranks are high and the judge unsure; active: "
                   "entries drawn where the judge is least certain and a label moves the runs' metrics most.")
@judge_option(help="The judge whose relevance grades shape the sample (stratified; needed by active).")
@click.option("--width", type=float, default=None,
              help="Target full width of a run's nDCG@10 interval: the planner says whether the budget meets it.")
@seed_option
@json_option
def plan_sample(project: Project, name: str, share: float | None, budget: int | None, design: str, judge: str | None,
                width: float | None, seed: int, as_json: bool) -> None:
    """Choose which pool entries of DB people label, and record each one's inclusion probability.

    Then `goldpool label-settings DB sample=NAME` makes the app hand out only the sample (blind
    as ever), the judge labels the whole pool (run-judge --task relevance), and after freezing,
    `goldpool eval DB@VERSION RUN... --judge J --sample NAME` gives every run's metrics with
    intervals. A stratified or active sample also prints the planner's report: the expected
    width of a run's nDCG@10 interval, whether the budget gives the labels per query the paired
    intervals need to hold their 95%, and the budget that would. --json: {"sample", "design",
    "judgments", "items": [{"query_id", "doc_id", "probability"}], "judge", "pool_entries",
    "queries", "labelled_queries", "plan" (designed samples: {"budget", "expected_half_width",
    "expected_width", "target_width", "labels_per_query", "pilot_labels", "meets_coverage",
    "meets_width", "recommended_budget", "basis", "run_caveat"})}.
    """
    from labeler.retrieval.judge_assisted import plan_sample as run  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    planned = run(project.db, name, design=design, share=share, budget=budget, judge=judge, seed=seed, width=width,
                  caller=OWNER)
    if as_json:
        echo_json(planned.as_dict())
        return
    probabilities = [p for _, _, p in planned.items]
    click.echo(f"sample {planned.name} ({planned.design}): {len(planned.items)} of {planned.pool_entries} pool entries "
               f"to label, in {planned.labelled_queries} of {planned.queries} queries; inclusion probability "
               f"{min(probabilities):.3f} to {max(probabilities):.3f}")
    if planned.design == "queries" and planned.labelled_queries < _FEW_QUERIES:
        click.echo(f"warning: {_few_queries(planned.labelled_queries)}")
    if planned.plan is not None:
        for line in _plan_lines(planned.plan, planned.pool_entries):
            click.echo(line)
    click.echo(f"next: goldpool label-settings {project.path} sample={planned.name}")


def _plan_lines(plan: Any, pool_entries: int) -> list[str]:
    """The planner's report as text."""
    from labeler.retrieval.sample_plan import RUN_CAVEAT  # lazy: start-up

    lines = [f"expected 95% interval of a run's nDCG@10: ±{plan.half_width:.3f} (width {2 * plan.half_width:.3f}), "
             f"from {plan.basis}"]
    held = "met" if plan.meets_coverage else "NOT met"
    lines.append(f"coverage: {plan.per_query:.1f} labels per query expected; paired differences held their 95% in "
                 f"the benchmark from {plan.needed_per_query:g} per query: {held}; {RUN_CAVEAT}")
    if plan.target_width is not None:
        lines.append(f"width: target {plan.target_width:.3f}: {'met' if plan.meets_width else 'NOT met'}")
    if not plan.meets_coverage or plan.meets_width is False:
        lines.append(f"recommended budget: {plan.recommended_budget} judgments "
                     f"({plan.recommended_budget / max(pool_entries, 1):.1%} of the pool)")
    return lines


#: Below this many labelled queries, query-level intervals under-cover even with Student's t
#: (bench/judge_assisted.py: 0.85-0.90 with 2-5 labelled queries of TREC DL).
_FEW_QUERIES = 10


def _few_queries(labelled: int) -> str:
    return (f"only {labelled} labelled queries: an interval over so few queries is wide and still covers the true "
            "value less often than its 95% says (about 85-90% of the time with 2-5 queries of TREC DL in "
            "bench/judge_assisted.py); plan the sample with --design stratified, which spreads the same budget "
            "over every query")


def judge_assisted(golden: str, runs: tuple[str, ...], metrics: list[str], judge: str, sample: str,
                   relevance_level: int, as_json: bool, *, baseline: bool, seed: int = 0,
                   html_path: str | None = None) -> None:
    """Print (or --json) the judge-assisted estimates of ``eval`` (``baseline`` False) or
    ``compare`` (differences from the first run); with ``html_path``, also write them as one
    HTML page (:func:`labeler.commands.reports.judge_assisted.to_html`)."""
    from labeler.commands.reports.judge_assisted import estimate_rows, to_html, to_text  # lazy: start-up
    from labeler.retrieval.golden_set import run_names  # lazy: start-up
    from labeler.retrieval.judge_assisted import estimate, gather, undetermined_queries  # lazy: start-up
    from labeler.store.access import OWNER  # lazy: start-up

    inputs = gather(golden, list(runs), judge, sample, caller=OWNER)
    first = run_names(list(runs))[0] if baseline else None
    result = estimate(inputs, metrics, relevance_level=relevance_level, baseline=first, seed=seed)
    undetermined = undetermined_queries(inputs, seed=seed)
    warnings = _warnings(inputs, undetermined)
    any_cell = next(iter(next(iter(result.values())).values()))
    intro = [f"golden: {golden}; judge {judge} on the pool ({any_cell.n_judge} entries graded); sample {sample} "
             f"({inputs.design}, {any_cell.n_people} entries labelled by people); relevance level {relevance_level}"]
    if first:
        intro.append(f"differences from {first} (run minus {first}), paired on the same queries and entries")
    alone = " (the same model without the judge's grades)" if inputs.design != "queries" else ""
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
                               "warnings": warnings, "undetermined_queries": undetermined}
        if first:
            out["baseline"] = first
        echo_json(out)
        return
    for line in to_text(intro, rows, notes):
        click.echo(line)


def _warnings(inputs: Any, undetermined: list[dict[str, Any]]) -> list[str]:
    """What makes these intervals less trustworthy, or wider, than a reader would think."""
    labelled = len({q for q, _ in inputs.people})
    queries = len({q for q, _ in inputs.entries})
    if inputs.design == "queries" and labelled < _FEW_QUERIES:
        return [_few_queries(labelled)]
    per_query = len(inputs.people) / max(queries, 1)
    if inputs.design != "queries" and undetermined:
        first = undetermined[0]
        return [f"{per_query:.1f} labelled entries per query; {len(undetermined)} of {queries} queries' ideal DCG is "
                f"not pinned by their labels (it varies by more than 10% over the model's draws; widest: "
                f"{first['query_id']}, {first['relevant_low']:.0f} to {first['relevant_high']:.0f} relevant "
                "entries): their nDCG and recall rest on the model of people's grades, and the intervals carry that "
                "uncertainty (they are wider for it); label more of those queries to pin them"]
    return []


COMMANDS = [plan_sample]
