"""Adaptive pooling commands: replay the strategies on a project whose full qrels are known."""

from __future__ import annotations

import click

from labeler.commands.common import Project, echo_json, html_option, json_option, output_file, with_project


@click.command("simulate-pooling")
@with_project
@click.option("--qrels", "qrels", required=True, type=click.Path(dir_okay=False), help="TREC qrels, complete for the project.")
@click.option("--strategy", "strategies", multiple=True, help="Strategy to replay (repeatable) [default: all].")
@click.option("--budget", "budgets", multiple=True, type=int, help="Total judgments per strategy (repeatable; the largest caps the replay) [default: 1.25x the baseline].")
@click.option("--stop-every", default=10, show_default=True, help="Ask the stopping rule after every n-th judgment of a query (0: never).")
@click.option("--stop-rule", "rules", multiple=True,
              help="Stopping rule to replay (repeatable; the first is reported as `stopping`) [default: the project's, then the others].")
@html_option
@json_option
def simulate_pooling(
    project: Project, qrels: str, strategies: tuple[str, ...], budgets: tuple[int, ...], stop_every: int,
    rules: tuple[str, ...], html_path: str | None, as_json: bool,
) -> None:
    """Replay pooling strategies on DB's candidate lists, judged by the full qrels in FILE.

    Each strategy picks one query's next chunk at a time, the qrels answer (a candidate
    absent from them is not relevant), queries take turns. Reported per strategy: relevant
    found against judgments spent, judgments needed to find 90% of what the baseline (the
    union at the pool's depth, judged in full) finds, relevant found at the baseline's
    budget, and for each stopping rule how often it reached its target recall where it said
    stop, against the oracle's judgments (the first judgment at which the order reached the
    target).
    """
    from labeler.commands.reports.pooling import simulation_html  # lazy: start-up
    from pooling.strategies import STRATEGIES  # lazy: start-up
    from labeler.retrieval.adaptive import simulate  # lazy: start-up

    result = simulate(project.db, qrels, list(strategies) or list(STRATEGIES), budgets=budgets, stop_every=stop_every,
                      rules=list(rules))
    if html_path:
        with output_file(html_path) as out:
            out.write(simulation_html(result))
    if as_json:
        echo_json(result)
        return
    base = result["baseline"]
    click.echo(f"baseline: {base['judgments']} judgments, {base['relevant_found']} relevant found "
               f"({result['queries']} queries, budget {result['budget']})")
    for name, s in result["strategies"].items():
        to90 = "never" if s["judgments_to_90"] is None else s["judgments_to_90"]
        share = s["stopping"]["share_at_or_above_target"]
        click.echo(f"{name}: 90% of baseline after {to90} judgments; {s['found_at_baseline_budget']} relevant at the "
                   f"baseline's budget; stopped on {s['stopping']['stopped']} queries"
                   + ("" if share is None else f", {share:.0%} of them at or above target recall"))
        for rule, st in s["stopping_by_rule"].items():
            share = st["share_at_or_above_target"]
            click.echo(f"  {rule}: stopped {st['stopped']} of {st['queries']} queries"
                       + ("" if share is None else f", {share:.0%} at or above target")
                       + f"; {st['judgments_at_stop_where_oracle']} judgments where the oracle needed "
                       f"{st['oracle_judgments_where_stopped']}")
    if html_path:
        click.echo(f"{html_path}: plot written", err=True)


COMMANDS: list[click.Command] = [simulate_pooling]
