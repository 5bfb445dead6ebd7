"""Judge commands: run a judge model over the project, and prediction-powered estimates."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from labeler.commands.common import (
    endpoint_options,
    Project,
    echo_json,
    html_option,
    json_option,
    judge_option,
    output_file,
    relevance_level_option,
    with_project,
)
from labeler.commands.serve import is_loopback
from labeler.store.vocabulary import OWNER, RELEVANCE_LEVEL, TASKS

if TYPE_CHECKING:
    import sqlite_utils

    from labeler.judges.client import Endpoint


def _sampling(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for text in values:
        name, equals, value = text.partition("=")
        if not equals or not name.strip():
            raise click.BadParameter(f"{text!r}: give NAME=VALUE, e.g. top_p=0.9", ctx, param)
        try:
            out[name.strip()] = json.loads(value)
        except ValueError:
            out[name.strip()] = value
    return out


@dataclass(frozen=True, slots=True)
class CallOptions:
    """The options of every command that calls a model: sampling, and cost before and after."""

    temperature: float = 0.0
    sampling: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False
    tokenizer: str | None = None
    price_in: float | None = None
    price_out: float | None = None

    def endpoint(self, base_url: str, *, model: str, timeout: float, attempts: int, max_tokens: int) -> Endpoint:
        """The endpoint these options call (a dry run's counts its calls and sends none)."""
        from labeler.judges.client import Endpoint  # lazy: start-up
        from labeler.judges.cost import CallPlan, tokenizer  # lazy: start-up

        plan = CallPlan(tokenizer(self.tokenizer, model), max_tokens) if self.dry_run else None
        return Endpoint(base_url, timeout=timeout, attempts=attempts, max_tokens=max_tokens,
                        temperature=self.temperature, options=self.sampling, plan=plan)

    def finish(self, endpoint: Endpoint, *, as_json: bool = False) -> bool:
        """What every run ends with: a dry run's plan (returns True: the command prints nothing
        else), or the tokens the endpoint reported and their cost at the prices given (with
        ``as_json``, nothing: the command's JSON is the whole of its output)."""
        from labeler.judges.cost import Prices  # lazy: start-up

        prices = Prices(self.price_in, self.price_out)
        if endpoint.plan is not None:
            plan = endpoint.plan.as_dict(prices)
            if as_json:
                echo_json({"dry_run": plan})
            else:
                click.echo(plan_line(plan, prices))
            return True
        if not as_json:  # standard output is one JSON document
            click.echo(spend_line(endpoint.tokens_in, endpoint.tokens_out, prices))
        return False


def plan_line(plan: Mapping[str, Any], prices: Any) -> str:
    """A dry run in words: the calls, their prompt tokens and how they were counted, the cost."""
    line = (f"Dry run: {plan['calls']} calls to make ({plan['from_cache']} answered by the cache), "
            f"{plan['prompt_tokens']:,} prompt tokens ({plan['tokenizer']}), replies at most "
            f"{plan['reply_tokens_at_most']:,} tokens")
    if plan.get("later_calls"):
        line += (f"; then at most {plan['later_calls']} calls whose prompts hold those replies, at most "
                 f"{plan['later_prompt_tokens_at_most']:,} prompt tokens")
    if prices.given:
        line += (f"; cost {_money(plan['cost_prompt'])} for the prompts, at most {_money(plan['cost_at_most'])} "
                 f"with replies at their full budget ({_prices(prices)})")
    return line + ". Nothing was sent."


def spend_line(tokens_in: int, tokens_out: int, prices: Any) -> str:
    """The tokens the endpoint reported over a run, and their cost at the prices given."""
    line = f"Tokens the endpoint reported: {tokens_in:,} in, {tokens_out:,} out"
    cost = prices.cost(tokens_in, tokens_out)
    return line + (f"; cost {_money(cost)} ({_prices(prices)})" if cost is not None else " (give --price-in/--price-out for the cost)")


def _money(x: float) -> str:
    return f"${x:,.4f}" if x < 100 else f"${x:,.2f}"


def _prices(prices: Any) -> str:
    return f"${prices.price_in or 0:g} in, ${prices.price_out or 0:g} out per million tokens"


def call_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--temperature, --sampling, --dry-run, --tokenizer, --price-in, --price-out: given to the
    command as one :class:`CallOptions` (parameter ``calls``)."""

    @functools.wraps(command)
    def run(*args: Any, temperature: float, sampling: dict[str, Any], dry_run: bool, tokenizer: str | None,
            price_in: float | None, price_out: float | None, **kwargs: Any) -> Any:
        return command(*args, calls=CallOptions(temperature, sampling, dry_run, tokenizer, price_in, price_out), **kwargs)

    price = click.FloatRange(min=0)
    options = [
        click.option("--temperature", type=click.FloatRange(min=0), default=0.0, show_default=True,
                     help="Sampling temperature of every call (part of the cache's key)."),
        click.option("--sampling", multiple=True, callback=_sampling, metavar="NAME=VALUE",
                     help="Another sampling option sent with every call, e.g. top_p=0.9 or seed=7 (repeatable; part "
                          "of the cache's key)."),
        click.option("--dry-run", is_flag=True,
                     help="Send nothing: count the calls to make after the cache, their prompt tokens and, with "
                          "--price-in/--price-out, the cost."),
        click.option("--tokenizer", default=None, metavar="PATH|tiktoken:NAME",
                     help="Count prompt tokens with this tokenizer.json or tiktoken encoding (default: the model's "
                          "tiktoken encoding when installed with its files, else estimated from characters)."),
        click.option("--price-in", type=price, default=None, help="Price of a million prompt tokens."),
        click.option("--price-out", type=price, default=None, help="Price of a million reply tokens."),
    ]
    for option in reversed(options):
        run = option(run)
    return run


@click.command("run-judge")
@with_project
@judge_option(required=True, help="Name the verdicts are stored under (e.g. llama3-8b-v1).")
@click.option("--model", required=True, help="Model name the endpoint serves.")
@click.option("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")
@click.option("--task", type=click.Choice(TASKS), default="relevance", show_default=True,
              help="relevance: pool entries, 0-3; faithfulness: SUPPORTED/UNSUPPORTED; pairwise: A/B/TIE in both orders; "
                   "claims: each claim against its answer's contexts, SUPPORTED/UNSUPPORTED; correctness: answers "
                   "against their reference, CORRECT/INCORRECT; answer-relevance: ADDRESSES/MISSES/DECLINES (declines to answer); "
                   "nuggets: each answer against each nugget of its question, SUPPORT/PARTIAL_SUPPORT/NOT_SUPPORT.")
@click.option("--prompt", "prompt_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Prompt template file ({query} {passage} {rubric} {scale}; {question} {contexts} {response}; "
                   "{question} {context} {first} {second}; claims: {claim} {contexts}; correctness: {question} "
                   "{reference} {response}; answer-relevance: {question} {response}; nuggets: {question} {response} "
                   "{nugget}). Default: the built-in "
                   "prompt of the task.")
@endpoint_options("Judge at most N more items this run.", max_tokens=None)
@click.option("--max-tokens", type=click.IntRange(min=1), default=None,
              help="Reply budget per call (default 16; 128 for --task nuggets: the verdict and the passage it rests on).")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Calls per item (and order), each stored with its index; the verdict is their majority (a tie: "
                   "TIE for pairwise, else no verdict). calibrate --judge reports the test-retest agreement.")
@call_options
def run_judge(project: Project, judge, model, base_url, task, prompt_file, concurrency, limit, timeout, attempts, max_tokens,
              repeats, calls: CallOptions) -> None:
    """Ask a judge model for a verdict on every item of a task in DB, and store them.

    The key is read from OPENAI_API_KEY (a local server needs none) and is never written to a
    file or shown (a reply that echoes it, or only its first 8 or more characters, is stored
    with it masked). Every verdict keeps the prompt's content hash, the raw reply (cut at
    10,000 characters, its length kept), tokens and latency; a reply that is not exactly one
    allowed token is stored as unparseable, and so is a reply cut short (at --max-tokens, or
    longer than the characters kept: said). A reply body over 4 MiB is not read: a failed call. Item text reaches the judge as data, between tags it cannot forge. Calls
    are cached by everything that changes a reply (endpoint, model, prompt hash, item content,
    order, temperature, --max-tokens, --sampling options, repeat index): a rerun makes no calls,
    and an interrupted run resumes where it stopped. A run whose every call fails exits with an
    error. The run ends with the tokens the endpoint reported and, with --price-in/--price-out,
    their cost; --dry-run says what a run would send, and sends nothing.
    """
    from pathlib import Path

    from labeler.judges.run import RunInterrupted  # lazy: start-up
    from labeler.judges.run import run_judge as run  # lazy: start-up

    warning = clear_text_warning(base_url)
    if warning:
        click.echo(warning, err=True)
    prompt_text = None
    if prompt_file is not None:
        try:
            prompt_text = Path(prompt_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.ClickException(f"{prompt_file}: cannot read the prompt ({exc})") from None
    max_tokens = max_tokens or (128 if task == "nuggets" else 16)
    with calls.endpoint(base_url, model=model, timeout=timeout, attempts=attempts, max_tokens=max_tokens) as endpoint:
        try:
            s = run(project.db, judge=judge, model=model, endpoint=endpoint, task=task, prompt_text=prompt_text,
                    concurrency=concurrency, limit=limit, repeats=repeats, caller=OWNER)
        except RunInterrupted as stop:
            s = stop.summary
            failed = f" ({s.errors} of them failed calls, asked again on resuming)" if s.errors else ""
            click.echo(f"\nInterrupted: {s.kept} verdicts kept this run{failed}; "
                       f"{s.already_done + s.kept - s.errors} of {s.total} done in all.", err=True)
            click.echo(f"Resume with: {resume_command(click.get_current_context())}", err=True)
            raise click.exceptions.Exit(130) from None
    if endpoint.plan is not None:
        click.echo(f"{judge} ({task}, prompt {s.prompt_hash}): {s.total} to judge, {s.already_done} already done"
                   + (f", {repeats} calls each" if repeats > 1 else ""))
        calls.finish(endpoint)
        return
    per = f", {s.seconds / s.calls:.2f} s per call" if s.calls else ""
    click.echo(
        f"{judge} ({task}, prompt {s.prompt_hash}): {s.total} to judge, {s.already_done} already done, "
        f"{s.from_cache} from the cache, {s.calls} calls ({s.requests} requests), {s.errors} errors, "
        f"{s.unparseable} unparseable, tokens {s.tokens_in} in / {s.tokens_out} out{per}"
    )
    if repeats > 1:
        click.echo(f"Each verdict is the majority of {repeats} calls; {s.ties} tied (pairwise: TIE, else no verdict).")
    report_calls(s.calls, s.errors, s.first_error, s.cut, outcome="counted as unparseable")
    calls.finish(endpoint)


def report_calls(calls: int, errors: int, first_error: str | None, cut: Mapping[str, int] | None = None, *,
                 outcome: str, again: str = "a rerun with a larger --max-tokens asks them again") -> None:
    """What every command that calls a model says once its calls are done (run-judge,
    split-claims --judge, gold-context): the replies cut short (``cut``, by
    :attr:`~labeler.store.verdicts.CallResult.cut_short`) and what became of them
    (``outcome``; ``again``: how those cut at the token budget are asked again), then the
    failed calls. Exits 1 naming the first error when every call made failed.
    """
    from labeler.judges.client import MAX_REPLY_CHARS  # lazy: start-up

    cut = {why: n for why, n in (cut or {}).items() if n}
    if cut:
        reasons = {"length": "finish_reason length", "kept": f"longer than the {MAX_REPLY_CHARS:,} characters kept"}
        whys = [reasons[why] for why in cut] if len(cut) == 1 else [f"{n} {reasons[why]}" for why, n in cut.items()]
        total = sum(cut.values())
        line = f"{total} {'reply' if total == 1 else 'replies'} cut short ({', '.join(whys)}): {outcome}"
        click.echo(line + (f" ({again})" if "length" in cut else ""), err=True)
    if calls and errors == calls:
        raise click.ClickException(f"every call failed ({errors}); the first: {first_error}")
    if errors:
        click.echo(f"{errors} calls failed (a rerun asks them again); the first: {first_error}", err=True)


def clear_text_warning(base_url: str) -> str | None:
    """The warning for a plain-HTTP endpoint off this machine (the key would travel in clear), else None."""
    from urllib.parse import urlsplit


    try:
        parts = urlsplit(base_url.strip())
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme.lower() != "http" or not host or is_loopback(host):
        return None
    return (f"Warning: --base-url {base_url}: the API key and every prompt travel in clear text (plain HTTP) to "
            "anyone on the network path. Use https://, or an endpoint on this machine.")


def resume_command(ctx: click.Context) -> str:
    """The command that resumes this run: the same arguments, as given."""
    import shlex

    from click.core import ParameterSource

    words = ["goldpool", "run-judge", ctx.params["db"]]
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
            continue
        words += [param.opts[0], str(ctx.params[param.name])]
    return shlex.join(words)


def calibrate_judges(
    db: sqlite_utils.Database, judges: tuple[str, ...], as_json: bool, html_path: str | None, n_boot: int, seed: int,
    relevance_level: int = RELEVANCE_LEVEL, *, save: bool = False, prices: tuple[float | None, float | None] = (None, None),
) -> None:
    """Body of ``goldpool calibrate DB --judge NAME...``: each judge against the project's people
    (``save``: stored as the judges' cards, with the cost at ``prices``, in and out per million tokens)."""
    from calibration.report_judges import to_html, to_text  # lazy: start-up
    from labeler.judges.card import card_line, save_cards  # lazy: start-up
    from labeler.judges.cost import Prices  # lazy: start-up
    from labeler.judges.report import judge_report  # lazy: start-up

    report = judge_report(db, list(dict.fromkeys(judges)), caller=OWNER, n_boot=n_boot, seed=seed,
                          relevance_level=relevance_level)
    cards = save_cards(db, report, caller=OWNER, prices=Prices(*prices)) if save else {}
    if html_path is not None:
        with output_file(html_path) as handle:
            handle.write(to_html(report))
    if as_json:
        out = report.as_dict()
        if save:
            out["cards"] = {name: {"line": card_line(db, name), **card.as_dict()} for name, card in cards.items()}
        echo_json(out)
        return
    click.echo(to_text(report), nl=False)
    if save:
        click.echo("\nSaved as the judges' cards:")
        for name in cards:
            click.echo(card_line(db, name))


@click.command("estimate")
@with_project
@judge_option(required=True, help="The judge whose labels cover the items people did not label.")
@click.option("--metric", "metrics", required=True, multiple=True,
              type=click.Choice(["mean-relevance", "relevant-share", "faithfulness-rate", "win-rate"]),
              help="mean-relevance: mean grade 0-3 of pool entries; relevant-share: share graded >= --relevance-level; "
                   "faithfulness-rate: share SUPPORTED; win-rate: A wins 1, tie 0.5, B wins 0. Repeat for several.")
@relevance_level_option
@click.option("--threshold", type=click.IntRange(min=1), default=None, hidden=True,
              help="Another name for --relevance-level.")
@click.option("--ci", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True, help="Coverage of the intervals.")
@json_option
def estimate(project: Project, judge, metrics, relevance_level, threshold, ci, as_json) -> None:
    """A metric's mean from the judge's labels on every item, corrected by the human-labelled ones.

    Prediction-powered inference (Angelopoulos et al. 2023): classic PPI and PPI++ (tuned
    weight), beside the human-only interval and the judge-only point estimate, and how many
    human labels the judge is worth. The human-labelled items must be a random sample.

    relevant-share counts a grade at or above --relevance-level as relevant.

    The judge's card (calibrate --judge NAME --save) is printed beside the numbers, or that the
    judge is uncalibrated.

    --json keys: judge, metric, threshold and relevance_level (the level, relevant-share only),
    ci, n_labelled, n_unlabelled, n_left_out, ppi, ppi_plus_plus, human_only (each {value, low,
    high, n}), lambda, judge_only, human_labels_worth, human_labels_worth_classic, judge_card
    (the card's line), abstention (faithfulness-rate: {abstained, items, rate}, the responses
    that are empty or decline); an undefined number is null. With several --metric: one block
    per metric in the order given, a blank line between; --json a list of those objects.
    """
    if threshold is not None:
        if relevance_level not in (threshold, RELEVANCE_LEVEL):
            raise click.UsageError(f"--threshold {threshold} and --relevance-level {relevance_level} disagree: give one")
        relevance_level = threshold
    metrics = list(dict.fromkeys(metrics))
    found = []
    for i, metric in enumerate(metrics):
        if i and not as_json:
            click.echo("")
        found.append(_estimate_one(project, judge, metric, relevance_level, ci, as_json))
    if as_json:
        echo_json(found[0] if len(found) == 1 else found)


def _estimate_one(project: Project, judge: str, metric: str, relevance_level: int, ci: float, as_json: bool) -> Any:
    """Print one metric's estimate (or, with ``as_json``, return its JSON object)."""
    from calibration.formatting import fixed  # lazy: start-up
    from labeler.judges.card import card_line  # lazy: start-up
    from labeler.judges.estimate import BOUNDS, METRIC_TASK  # lazy: start-up
    from labeler.judges.estimate import estimate as run  # lazy: start-up

    r = run(project.db, judge, metric, threshold=relevance_level, ci=ci, caller=OWNER)
    t, c = r.tuned, r.classic
    card = card_line(project.db, judge, METRIC_TASK[metric])
    if as_json:
        return {**r.as_dict(), "judge_card": card}
    fmt = lambda e: f"{fixed(e.value, 4)} [{fixed(e.low, 4)}, {fixed(e.high, 4)}] (width {fixed(e.high - e.low, 4)})"  # noqa: E731
    level = f" (relevance level {relevance_level}: grade >= {relevance_level})" if metric == "relevant-share" else ""
    click.echo(f"{metric}{level} by judge {judge!r}: {t.n_labelled} items labelled by people, {t.n_unlabelled} by the judge only"
               + (f", {r.n_left_out} left out (no usable judge label)" if r.n_left_out else ""))
    click.echo(f"PPI++ (lambda {t.lam:.3f}):  {fmt(t.ppi)}")
    click.echo(f"PPI (lambda 1):        {fmt(c.ppi)}")
    click.echo(f"people only:           {fmt(t.human_only)}")
    click.echo(f"judge only:            {fixed(t.judge_only, 4)} (no interval: its bias is unknown)")
    click.echo(card)
    low, high = BOUNDS[metric]
    click.echo(f"The judge makes these {t.n_labelled} human labels worth about {t.worth:.0f} ({ci:.0%} intervals, "
               f"kept inside the metric's range [{low:g}, {high:g}]).")
    if r.abstention is not None:
        abstained, items = r.abstention
        share = f" ({abstained / items:.1%})" if items else ""
        click.echo(f"Beside it: abstention: {abstained} of {items} responses{share} are empty or decline, and each "
                   "counts as faithful; correctness and answer relevance: not measured on faithfulness items "
                   "(import the answers with import-answers and read them with answer-metrics).")


@click.command("disagreements")
@with_project
@judge_option(required=True, help="The judge whose verdicts are read against people's.")
@click.option("--task", type=click.Choice(TASKS), default=None, help="One task only (default: every task the judge has).")
@html_option
@json_option
def disagreements(project: Project, judge: str, task: str | None, html_path: str | None, as_json: bool) -> None:
    """The items where judge J and people disagree, with their texts: what to read after a
    prompt change.

    An item is listed when the judge's label differs from at least one person's; items the
    people are unanimous on come first (more people first), then those people split on. A
    pairwise judge's label is its two orders combined (a flip is a tie); a judge run with
    --repeats is read by its majority verdicts. The terminal shows each text's first 300
    characters; --html FILE writes every text whole, escaped.

    --json: a list of {task, item, judge, people ({annotator: label}), unanimous, texts}.
    """
    from labeler.commands.reports.judges import disagreements_html, disagreements_text  # lazy: start-up
    from labeler.judges.disagreements import disagreements as find  # lazy: start-up

    found = find(project.db, judge, task, caller=OWNER)
    if html_path is not None:
        with output_file(html_path) as handle:
            handle.write(disagreements_html(judge, found))
    if as_json:
        echo_json([d.as_dict() for d in found])
    else:
        click.echo(disagreements_text(judge, found), nl=False)


def compare_judges(db: sqlite_utils.Database, judges: tuple[str, ...], as_json: bool, n_boot: int, seed: int) -> None:
    """Body of ``goldpool calibrate DB --judge A --judge B --paired``."""
    from labeler.commands.reports.judges import paired_text  # lazy: start-up
    from labeler.judges.paired import compare_judges as compare  # lazy: start-up

    names = list(dict.fromkeys(judges))
    if len(names) != 2:
        raise click.UsageError("--paired compares two judges: give --judge A --judge B")
    result = compare(db, names[0], names[1], caller=OWNER, n_boot=n_boot, seed=seed)
    if as_json:
        echo_json({"paired": result.as_dict()})
    else:
        click.echo(paired_text(result), nl=False)


@click.command("jury")
@with_project
@judge_option(multiple=True, help="A member of the jury (give two or more, best of different model families).")
@click.option("--name", required=True, help="The judge name the jury's verdicts are stored under.")
@json_option
def jury(project: Project, judges: tuple[str, ...], name: str, as_json: bool) -> None:
    """Combine judges by majority into one judge NAME that every command reads by its name
    (calibrate, answer-metrics, estimate, eval --judge, gate): a jury of models of different
    families answers a judge's preference for its own family's answers.

    Per unit every member judged, the jury's verdict is the members' majority (a tie: TIE for
    pairwise, else no verdict); units a member has no usable verdict on are left out. Said per
    task: units combined, left out, ties, and the members' disagreement rate (the share of units
    they do not all agree on, Wilson interval). Running it again after a member changed updates
    the jury.

    --json keys: name, members, families (per member, its models' families), tasks ({TASK:
    {units, left_out, ties, disagree, disagreement_rate {value, low, high, n}}}), written.
    """
    from calibration import format_estimate  # lazy: start-up
    from calibration.bootstrap import Estimate  # lazy: start-up
    from labeler.judges.jury import make_jury  # lazy: start-up

    r = make_jury(project.db, name, judges, caller=OWNER)
    if as_json:
        echo_json(r.as_dict())
        return
    families = "; ".join(f"{m} ({', '.join(f)})" for m, f in r.families.items())
    click.echo(f"jury {name} = majority of {', '.join(r.members)}: {r.written} verdicts written. Families: {families}.")
    if len({f for fs in r.families.values() for f in fs}) < 2:
        click.echo("Every member is of one model family: the jury does not answer self-preference.")
    for task, t in r.tasks.items():
        d = t["disagreement_rate"]
        rate = "n/a" if d["value"] is None else format_estimate(
            Estimate("disagreement_rate", d["value"], d["low"], d["high"], d["n"], method="wilson"))
        click.echo(f"{task}: {t['units']} units combined, {t['left_out']} left out (a member without a usable "
                   f"verdict), {t['ties']} tied; members disagree on {rate}")


COMMANDS: list[click.Command] = [run_judge, estimate, disagreements, jury]
