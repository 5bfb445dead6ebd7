"""Run a judge over every item of a task: cached, resumable, one committed verdict at a time.

The work is every pool entry (relevance), every faithfulness item, every pairwise item in
both orders (``AB``: response A shown first; ``BA``: B first), or every item of a task on
answers: each claim against its answer's contexts (claims), each answer with a reference
(correctness), each answer (answer relevance), each answer with each nugget of its question
(nuggets: whether the answer supports it). An abstention (empty response) has no item. A
unit the judge already has a verdict for under the same model, prompt and settings is
skipped, so an interrupted run (even a killed process) resumes where it stopped: verdicts are
committed as they arrive (all that arrived together in one transaction). A call in the cache
(the same endpoint, model, prompt hash, item content, order, settings and repeat index, from
any judge name: :class:`labeler.store.judge_calls.CallKey`) is recorded from the cache
without a call, so a rerun makes none. Calls run on the endpoint's event loop,
``concurrency`` in flight (:mod:`labeler.judges.calls`); only the calling thread writes to
the database.

With ``repeats`` K above 1, each unit is asked K times (each call cached under its index) and
its verdict is the majority of the K replies (:func:`labeler.judges.repeats.combine`); the K
replies are stored with their indexes beside it, once all K have arrived.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import sqlite_utils

from labeler.judges import JudgeError
from labeler.judges.calls import ask_all, count_cut, interrupts_at_safe_points, stop_if
from labeler.judges.client import Endpoint
from labeler.judges.prompts import TASK_CHOICES, Prompt, judge_rubric, make_prompt, parse_reply
from labeler.judges.repeats import combine
from labeler.store.access import require_admin
from labeler.store.corpus import pool_texts
from labeler.store.judge_calls import RecordedCall, cache_replies, done_targets, record_judge_calls
from labeler.store.nugget_support import support_targets
from labeler.store.rubric import current_rubric
from labeler.store.verdicts import CallResult, Target, VerdictItem, content_hash, list_items
from labeler.store.vocabulary import GRADES, TASKS, Caller

__all__ = ["RunInterrupted", "RunSummary", "Unit", "ask_all", "count_cut", "default_prompt", "interrupts_at_safe_points",
           "plan_units", "run_judge", "stop_if", "units"]


@dataclass(frozen=True, slots=True)
class Unit:
    """One call to make: a target (item or pool entry, with its order), its content hash, and
    the prompt and texts its message is made of (rendered when asked for: a run renders each as
    it sends it, while the calls before it are in flight)."""

    target: Target
    item_hash: str
    prompt: Prompt
    values: dict[str, str | list[str] | None]

    @property
    def message(self) -> str:
        return self.prompt.render(**self.values)

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
    repeats: int = 1  # calls per unit, combined by majority
    ties: int = 0  # units whose repeats tied (no majority), among the verdicts kept
    settings: str = ""  # the settings every call was made under (canonical JSON)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run; ``summary`` counts what was committed until then (all of it is kept)."""

    def __init__(self, summary: RunSummary) -> None:
        super().__init__()
        self.summary = summary


def _relevance_units(db: sqlite_utils.Database, prompt: Prompt) -> Iterator[Unit]:
    for query_id, doc_id, query, title, text in pool_texts(db):
        passage = f"{title}\n{text}" if title else text
        yield Unit(Target("relevance", query_id=query_id, doc_id=doc_id), content_hash([query, title, text]), prompt,
                   {"query": query, "passage": passage})


def _item_units(db: sqlite_utils.Database, task: str, prompt: Prompt) -> Iterator[Unit]:
    for item in list_items(db, task):
        values = _values(task, item)
        if values is not None:
            yield Unit(Target(task, item_id=item.item_id), item.content_hash, prompt, values)
            continue
        context = item.context or None
        for order, (first, second) in (("AB", (item.response_a, item.response_b)), ("BA", (item.response_b, item.response_a))):
            yield Unit(Target(task, item_id=item.item_id, shown_order=order), item.content_hash, prompt,
                       {"question": item.question, "context": context, "first": first, "second": second})


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


def _nugget_units(db: sqlite_utils.Database, prompt: Prompt) -> Iterator[Unit]:
    """Each (answer, active nugget of its question): does the answer support the nugget?"""
    for t in support_targets(db):
        yield Unit(Target("nuggets", item_id=t.item_id), t.item_hash, prompt,
                   {"question": t.question, "response": t.response, "nugget": t.nugget})


def units(db: sqlite_utils.Database, task: str, prompt: Prompt) -> list[Unit]:
    """Every call ``task`` needs, in a stable order (pool order; item_id, then AB before BA;
    for nuggets, by answer and the nuggets' order)."""
    if task == "nuggets":
        return list(_nugget_units(db, prompt))
    return list(_relevance_units(db, prompt) if task == "relevance" else _item_units(db, task, prompt))


def _verdict(task: str, order: str | None, result: CallResult) -> CallResult:
    """Parse the reply; a pairwise slot (A: shown first) becomes the response shown there.
    A reply cut short (:attr:`CallResult.cut_short`) is unparseable whatever it holds, but for a nuggets
    verdict whose first line ended before the cut."""
    # A nuggets verdict stands on the reply's first line: one cut while quoting its passage is whole there.
    whole = result.cut_short is None or (task == "nuggets" and "\n" in (result.raw or "").strip())
    token = parse_reply(task, result.raw) if result.error is None and whole else None
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
    "nuggets": "(answer, nugget) pairs (import nuggets with import-nuggets and answers to their questions)",
}


def plan_units(db: sqlite_utils.Database, *, judge: str, model: str, endpoint: Endpoint, task: str = "relevance",
               prompt_text: str | None = None, limit: int | None = None, repeats: int = 1,
               caller: Caller) -> tuple[Prompt, list[Unit], int, list[Unit]]:
    """What a run would do (admin only): the prompt, every unit, how many are done, the units to do.

    ``limit`` caps the items (a pairwise item is one item, two calls) taken up this run.

    Raises:
        JudgeError: an unknown task, a bad prompt, no items, or fewer than one repeat.
    """
    require_admin(db, caller)
    if task not in TASKS:
        raise JudgeError(f"task {task!r}: choose {TASK_CHOICES}")
    if not judge.strip() or not model.strip():
        raise JudgeError("give a judge name and a model name")
    if repeats < 1:
        raise JudgeError(f"repeats {repeats}: give 1 or more")
    prompt = default_prompt(db, task, prompt_text)
    every = units(db, task, prompt)
    if not every:
        what = _NOTHING.get(task, f"{task} items (import them with import-items)")
        raise JudgeError(f"no {what} to judge")
    legacy = endpoint.key(model, prompt.hash, "", None).legacy_compatible
    done = done_targets(db, judge, model, prompt.hash, endpoint.settings, repeats, legacy=legacy)
    todo = [u for u in every if u.key not in done]
    already = len(every) - len(todo)
    if limit is not None:
        keep = set(list(dict.fromkeys(u.key[:3] for u in todo))[:limit])
        todo = [u for u in todo if u.key[:3] in keep]
    return prompt, every, already, todo


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
    repeats: int = 1,
    caller: Caller,
) -> RunSummary:
    """Judge every unit of ``task`` not judged yet with this model, prompt and settings (admin
    only), each ``repeats`` times (see the module docstring).

    Raises:
        JudgeError: as :func:`plan_units`, or an endpoint refusing the key, the model or the
            path (verdicts made until then are kept).
    """
    prompt, every, already, todo = plan_units(db, judge=judge, model=model, endpoint=endpoint, task=task,
                                              prompt_text=prompt_text, limit=limit, repeats=repeats, caller=caller)
    return _Run(db, judge, model, endpoint, prompt, repeats, progress).judge_all(todo, len(every), already, concurrency)


@dataclass(slots=True)
class _Tally:
    from_cache: int = 0
    calls: int = 0
    recorded: int = 0
    errors: int = 0
    unparseable: int = 0
    ties: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    first_error: str | None = None
    cut: dict[str, int] = field(default_factory=dict)

    def count_call(self) -> None:
        self.calls += 1

    def add(self, result: CallResult, *, called: bool) -> None:
        """Count one reply (one repeat)."""
        self.errors += result.error is not None
        if self.first_error is None and result.error is not None:
            self.first_error = result.error
        self.unparseable += result.error is None and not result.parseable
        count_cut(self.cut, result)
        if called:  # a reply from the cache cost nothing this time
            self.tokens_in += result.tokens_in or 0
            self.tokens_out += result.tokens_out or 0


class _Run:
    """One run's state: replies gathered per unit (its repeats), writes gathered per group of
    replies (committed together), the tally and the progress bar."""

    def __init__(self, db: sqlite_utils.Database, judge: str, model: str, endpoint: Endpoint, prompt: Prompt,
                 repeats: int, progress: bool) -> None:
        self.db, self.judge, self.model, self.endpoint, self.prompt = db, judge, model, endpoint, prompt
        self.repeats, self.progress = repeats, progress
        self.tally = _Tally()
        self.slots: dict[tuple, list[CallResult | None]] = {}
        self.verdicts: list[RecordedCall] = []
        self.replies: list[CallResult] = []
        self.bar = None
        self.start = time.perf_counter()

    def record(self, call: tuple[Unit, int], result: CallResult, fresh: bool) -> None:
        unit, repeat = call
        self.tally.from_cache += not fresh
        result = _verdict(self.prompt.task, unit.target.shown_order, result)
        self.tally.add(result, called=fresh)
        if self.repeats == 1:
            self.verdicts.append(RecordedCall(unit.target, result, cache=fresh))
            return
        if fresh:
            self.replies.append(result)
        got = self.slots.setdefault(unit.key, [None] * self.repeats)
        got[repeat] = result
        if all(r is not None for r in got):
            del self.slots[unit.key]
            combined, tied = combine(self.prompt.task, got)  # type: ignore[arg-type]
            self.tally.ties += tied
            self.verdicts.append(RecordedCall(unit.target, combined, repeats=tuple(got), cache=False))  # type: ignore[arg-type]

    def flush(self) -> None:
        """Commit the verdicts (and, for repeats, the replies) gathered since the last flush."""
        if self.replies:
            cache_replies(self.db, self.replies)
            self.replies = []
        if self.verdicts:
            done, self.verdicts = self.verdicts, []
            record_judge_calls(self.db, self.judge, self.model, self.prompt.hash, self.endpoint.settings, done)
            self.tally.recorded += len(done)
            if self.bar is not None:
                t = self.tally
                self.bar.set_postfix(errors=t.errors, unparseable=t.unparseable, tokens=t.tokens_in + t.tokens_out,
                                     refresh=False)
                self.bar.update(len(done))

    def summary(self, total: int, already: int) -> RunSummary:
        t = self.tally
        return RunSummary(self.prompt.task, self.prompt.hash, total, already, t.from_cache, t.calls, self.endpoint.requests,
                          t.errors, t.unparseable, t.tokens_in, t.tokens_out, time.perf_counter() - self.start,
                          t.first_error, t.recorded, dict(t.cut), self.repeats, t.ties, self.endpoint.settings)

    def judge_all(self, todo: list[Unit], total: int, already: int, concurrency: int) -> RunSummary:
        from tqdm import tqdm

        # At most two updates a second: a run of thousands of calls writes a few kilobytes, not a line a call.
        self.bar = tqdm(total=len(todo), desc=f"{self.judge} {self.prompt.task}", unit="verdict", disable=not self.progress,
                        file=sys.stderr, mininterval=0.5, maxinterval=5.0)
        calls = [(u, r) for u in todo for r in range(self.repeats)]
        try:
            ask_all(self.db, self.endpoint, self.model, self.prompt.hash, calls, concurrency,
                    key=lambda c: (c[0].item_hash, c[0].target.shown_order, c[1]), message=lambda c: c[0].message,
                    record=self.record, sent=self.tally.count_call, flush=self.flush)
        except KeyboardInterrupt:
            raise RunInterrupted(self.summary(total, already)) from None
        finally:
            self.bar.close()
        return self.summary(total, already)
