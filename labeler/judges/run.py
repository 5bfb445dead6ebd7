"""Run a judge over every item of a task: cached, resumable, one committed verdict at a time.

The work is every pool entry (relevance), every faithfulness item, every pairwise item in
both orders (``AB``: response A shown first; ``BA``: B first), or every item of a task on
answers: each claim against its answer's contexts (claims), each answer with a reference
(correctness), each answer (answer relevance). An abstention (empty response) has no item. A unit the judge already has a
reply for under the same model and prompt is skipped, so an interrupted run (even a killed
process) resumes where it stopped: each verdict is committed as it arrives. A unit whose call
is in the cache (same model, prompt hash, item content and order, from any judge name) is
recorded from the cache without a call, so a rerun makes none. Calls run on ``concurrency``
threads; only the main thread writes to the database.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TypeVar

import sqlite_utils

from labeler.judges import JudgeError
from labeler.judges.client import Endpoint, call
from labeler.judges.prompts import (
    TASK_CHOICES,
    Prompt,
    judge_rubric,
    make_prompt,
    parse_reply,
)
from labeler.store.access import require_admin
from labeler.store.corpus import pool_texts
from labeler.store.rubric import current_rubric
from labeler.store.verdicts import (
    CallResult,
    Target,
    VerdictItem,
    cached_call,
    content_hash,
    done_targets,
    list_items,
    record_judge_call,
)
from labeler.store.vocabulary import GRADES, TASKS, Caller

U = TypeVar("U")


@dataclass(frozen=True, slots=True)
class Unit:
    """One call to make: a target (item or pool entry, with its order), its content hash and message."""

    target: Target
    item_hash: str
    message: str

    @property
    def key(self) -> tuple:
        t = self.target
        return (t.item_id, t.query_id, t.doc_id, t.shown_order)


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a run did. ``calls``: items sent to the model; ``requests``: HTTP requests, retries included."""

    task: str
    prompt_hash: str
    total: int
    already_done: int
    from_cache: int
    calls: int
    requests: int
    errors: int
    unparseable: int
    tokens_in: int
    tokens_out: int
    seconds: float
    first_error: str | None = None  # the first failed call's error, when a call failed
    kept: int = 0  # verdicts committed this run (failed calls included: a rerun asks them again)
    cut: dict[str, int] = field(default_factory=dict)  # replies cut short, by CallResult.cut_short (among unparseable)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run; ``summary`` counts what was committed until then (all of it is kept)."""

    def __init__(self, summary: RunSummary) -> None:
        super().__init__()
        self.summary = summary


def _relevance_units(db: sqlite_utils.Database, prompt: Prompt) -> Iterator[Unit]:
    for query_id, doc_id, query, title, text in pool_texts(db):
        passage = f"{title}\n{text}" if title else text
        yield Unit(Target("relevance", query_id=query_id, doc_id=doc_id), content_hash([query, title, text]),
                   prompt.render(query=query, passage=passage))


def _item_units(db: sqlite_utils.Database, task: str, prompt: Prompt) -> Iterator[Unit]:
    for item in list_items(db, task):
        values = _values(task, item)
        if values is not None:
            yield Unit(Target(task, item_id=item.item_id), item.content_hash, prompt.render(**values))
            continue
        context = item.context or None
        for order, (first, second) in (("AB", (item.response_a, item.response_b)), ("BA", (item.response_b, item.response_a))):
            yield Unit(Target(task, item_id=item.item_id, shown_order=order), item.content_hash,
                       prompt.render(question=item.question, context=context, first=first, second=second))


def _values(task: str, item: VerdictItem) -> dict[str, str | list[str] | None] | None:
    """The texts one call of an unordered item task is made of (None: pairwise)."""
    if task == "faithfulness":
        return {"question": item.question, "contexts": list(item.contexts), "response": item.response}
    if task == "claims":
        return {"claim": item.claim, "contexts": list(item.contexts)}
    if task == "correctness":
        return {"question": item.question, "reference": item.reference, "response": item.response}
    if task == "answer-relevance":
        return {"question": item.question, "response": item.response}
    return None


def units(db: sqlite_utils.Database, task: str, prompt: Prompt) -> list[Unit]:
    """Every call ``task`` needs, in a stable order (pool order; item_id, then AB before BA)."""
    return list(_relevance_units(db, prompt) if task == "relevance" else _item_units(db, task, prompt))


def _verdict(task: str, order: str | None, result: CallResult) -> CallResult:
    """Parse the reply; a pairwise slot (A: shown first) becomes the response shown there.
    A reply cut short (:attr:`CallResult.cut_short`) is unparseable whatever it holds."""
    token = parse_reply(task, result.raw) if result.error is None and result.cut_short is None else None
    if token is not None and order == "BA" and token in ("A", "B"):
        token = "B" if token == "A" else "A"
    return replace(result, verdict=token, parseable=token is not None)


def default_prompt(db: sqlite_utils.Database, task: str, text: str | None) -> Prompt:
    """The prompt of a run: ``text`` or the default, with the project's rubric and grade scale."""
    scale = ", ".join(f"{g} {name.lower()}" for g, name in GRADES.items())
    return make_prompt(task, text, rubric=judge_rubric(current_rubric(db).text), scale=scale)


#: What to do when a task has nothing to judge.
_NOTHING = {
    "relevance": "pool entries (build the pool first)",
    "claims": "claims items (import a system's answers with import-answers; claims come with the file or from split-claims)",
    "correctness": "correctness items (import a system's answers, with a reference, with import-answers)",
    "answer-relevance": "answer-relevance items (import a system's answers with import-answers)",
}


def run_judge(
    db: sqlite_utils.Database,
    *,
    judge: str,
    model: str,
    endpoint: Endpoint,
    task: str = "relevance",
    prompt_text: str | None = None,
    concurrency: int = 4,
    limit: int | None = None,
    progress: bool = True,
    caller: Caller,
) -> RunSummary:
    """Judge every unit of ``task`` not judged yet with this model and prompt (admin only).

    ``limit`` caps the items (a pairwise item is one item, two calls) taken up this run.

    Raises:
        JudgeError: an unknown task, a bad prompt, no items, or an endpoint refusing the key,
            the model or the path (verdicts made until then are kept).
    """
    require_admin(db, caller)
    if task not in TASKS:
        raise JudgeError(f"task {task!r}: choose {TASK_CHOICES}")
    if not judge.strip() or not model.strip():
        raise JudgeError("give a judge name and a model name")
    prompt = default_prompt(db, task, prompt_text)
    every = units(db, task, prompt)
    if not every:
        what = _NOTHING.get(task, f"{task} items (import them with import-items)")
        raise JudgeError(f"no {what} to judge")
    done = done_targets(db, judge, model, prompt.hash)
    todo = [u for u in every if u.key not in done]
    if limit is not None:
        keep = list(dict.fromkeys(u.key[:3] for u in todo))[:limit]
        todo = [u for u in todo if u.key[:3] in set(keep)]
    return _execute(db, judge, model, endpoint, prompt, todo, len(every), len(every) - len([u for u in every if u.key not in done]),
                    concurrency, progress)


@dataclass(slots=True)
class _Tally:
    from_cache: int = 0
    calls: int = 0
    recorded: int = 0
    errors: int = 0
    unparseable: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    first_error: str | None = None
    cut: dict[str, int] = field(default_factory=dict)

    def count_call(self) -> None:
        self.calls += 1

    def add(self, result: CallResult, *, called: bool) -> None:
        self.recorded += 1
        self.errors += result.error is not None
        if self.first_error is None and result.error is not None:
            self.first_error = result.error
        self.unparseable += result.error is None and not result.parseable
        count_cut(self.cut, result)
        if called:  # a reply from the cache cost nothing this time
            self.tokens_in += result.tokens_in or 0
            self.tokens_out += result.tokens_out or 0


def _execute(db, judge, model, endpoint, prompt, todo, total, already, concurrency, progress) -> RunSummary:
    from tqdm import tqdm

    start = time.perf_counter()
    tally = _Tally()
    bar = tqdm(total=len(todo), desc=f"{judge} {prompt.task}", unit="verdict", disable=not progress, file=sys.stderr)

    def record(unit: Unit, result: CallResult, cache: bool) -> None:
        tally.from_cache += not cache
        result = _verdict(prompt.task, unit.target.shown_order, result)
        record_judge_call(db, judge, unit.target, model, prompt.hash, unit.item_hash, result, cache=cache)
        tally.add(result, called=cache)
        bar.update(1)
        bar.set_postfix(errors=tally.errors, unparseable=tally.unparseable, tokens=tally.tokens_in + tally.tokens_out)

    summary = lambda: RunSummary(prompt.task, prompt.hash, total, already, tally.from_cache, tally.calls,  # noqa: E731
                                 endpoint.requests, tally.errors, tally.unparseable, tally.tokens_in, tally.tokens_out,
                                 time.perf_counter() - start, tally.first_error, tally.recorded, dict(tally.cut))
    try:
        ask_all(db, endpoint, model, prompt.hash, todo, concurrency, key=lambda u: (u.item_hash, u.target.shown_order),
                message=lambda u: u.message, record=record, sent=tally.count_call)
    except KeyboardInterrupt:
        raise RunInterrupted(summary()) from None
    finally:
        bar.close()
    return summary()


def count_cut(counts: dict[str, int], result: CallResult) -> None:
    """Count a reply cut short in ``counts``, by why (:attr:`CallResult.cut_short`)."""
    if result.error is None and (why := result.cut_short) is not None:
        counts[why] = counts.get(why, 0) + 1


@contextmanager
def interrupts_at_safe_points() -> Iterator[threading.Event]:
    """Ctrl-C sets the event instead of raising wherever the main thread happens to be.

    A KeyboardInterrupt raised inside the futures' or the progress bar's own locking (between a
    lock taken and the block that releases it) would leave a lock held that a worker needs to
    finish, and the run could then never exit. The run checks the event between steps
    (:func:`stop_if`) and stops there. Off the main thread (no signal handler can be set), the
    event is never set and Ctrl-C behaves as usual.
    """
    interrupted = threading.Event()
    try:
        previous = signal.signal(signal.SIGINT, lambda *_: interrupted.set())
    except ValueError:  # not the main thread
        yield interrupted
        return
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def stop_if(interrupted: threading.Event) -> None:
    if interrupted.is_set():
        raise KeyboardInterrupt


def ask_all(db: sqlite_utils.Database, endpoint: Endpoint, model: str, prompt_hash: str, units: Iterable[U],
            concurrency: int, *, key: Callable[[U], tuple[str, str | None]], message: Callable[[U], str],
            record: Callable[[U, CallResult, bool], None], sent: Callable[[], None]) -> None:
    """Record every unit's reply, in order of arrival: from the cache when the model already
    answered this prompt on the same text (``key``: the text's hash and the order shown),
    else from the endpoint with ``concurrency`` calls in flight. ``record(unit, result,
    fresh)`` stores it (``fresh``: a call was made and its reply is to be cached).

    Ctrl-C stops at the next safe point (:func:`interrupts_at_safe_points`); what was recorded
    until then stays, so the next run resumes.
    """
    with interrupts_at_safe_points() as interrupted:
        to_call = []
        for unit in units:
            stop_if(interrupted)
            hit = cached_call(db, model, prompt_hash, *key(unit))
            if hit is None:
                to_call.append(unit)
            else:
                record(unit, hit, False)
        call_all(endpoint, model, to_call, max(1, concurrency), message, lambda u, result: record(u, result, True),
                 interrupted, sent)


def call_all(endpoint: Endpoint, model: str, units: list[U], concurrency: int, message: Callable[[U], str],
             record: Callable[[U, CallResult], None], interrupted: threading.Event, sent: Callable[[], None]) -> None:
    """Keep ``concurrency`` calls in flight; record each result on this thread as it arrives.

    ``message`` gives a unit's prompt, ``sent`` counts a call made. Stops at the next safe
    point once ``interrupted`` is set (:func:`interrupts_at_safe_points`), ending the calls in
    flight so their workers do not hold the exit.
    """
    pending: dict[Future, U] = {}
    queue = iter(units)
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        try:
            while True:
                stop_if(interrupted)
                while len(pending) < concurrency and (unit := next(queue, None)) is not None:
                    pending[pool.submit(call, endpoint, model, message(unit))] = unit
                    sent()
                if not pending:
                    return
                finished, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                for future in finished:
                    record(pending.pop(future), future.result())
        except BaseException:
            for future in pending:
                future.cancel()
            endpoint.close()
            raise
