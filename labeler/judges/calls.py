"""Many calls to one model: from the cache when it answered the same call before, else at the
endpoint with ``concurrency`` calls in flight; what :mod:`labeler.judges.run`, the claim
splitter and the gold-context generator share.

Every call runs on the endpoint's event loop (:func:`labeler.judges.client.acall`); only the
calling thread touches the database. It takes the replies as they arrive, all that have
arrived at once, so a slow write never holds a call back and a killed run loses at most the
calls in flight and the replies that arrived during one write.
"""

from __future__ import annotations

import asyncio
import queue
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TypeVar

import sqlite_utils

from labeler.judges.client import Endpoint, acall
from labeler.store.judge_calls import CallKey, cached_calls
from labeler.store.verdicts import CallResult

U = TypeVar("U")

#: How long the calling thread waits for a reply before it looks at Ctrl-C again.
POLL_SECONDS = 0.1


@contextmanager
def interrupts_at_safe_points() -> Iterator[threading.Event]:
    """Ctrl-C sets the event instead of raising wherever the main thread happens to be.

    A KeyboardInterrupt raised inside a lock's critical section (between a lock taken and the
    block that releases it) would leave a lock held that the event loop needs to finish, and the
    run could then never exit. The run checks the event between steps (:func:`stop_if`) and
    stops there. Off the main thread (no signal handler can be set), the event is never set and
    Ctrl-C behaves as usual.
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


def count_cut(counts: dict[str, int], result: CallResult) -> None:
    """Count a reply cut short in ``counts``, by why (:attr:`CallResult.cut_short`)."""
    if result.error is None and (why := result.cut_short) is not None:
        counts[why] = counts.get(why, 0) + 1


def ask_all(db: sqlite_utils.Database, endpoint: Endpoint, model: str, prompt_hash: str, units: Iterable[U],
            concurrency: int, *, key: Callable[[U], tuple], message: Callable[[U], str],
            record: Callable[[U, CallResult, bool], None], sent: Callable[[], None],
            flush: Callable[[], None] | None = None) -> None:
    """Record every unit's reply, in order of arrival: from the cache when the model already
    answered this call (``key``: the text's hash, the order shown and, optionally, the repeat's
    index; the endpoint adds its settings), else from the endpoint with ``concurrency`` calls in
    flight. ``record(unit, result, fresh)`` stores it (``fresh``: a call was made and its reply,
    which carries its :class:`CallKey`, is to be cached); ``flush()``, when given, is called
    after each group of replies recorded together (a caller that gathers writes commits them
    there).

    With a dry-run endpoint (``endpoint.plan`` set) nothing is recorded or sent: the plan
    counts the calls the cache answers and the messages of those it would make.

    Ctrl-C stops at the next safe point (:func:`interrupts_at_safe_points`); what was recorded
    until then stays, so the next run resumes.
    """
    if endpoint.plan is not None:
        _plan(db, endpoint, model, prompt_hash, units, key, message)
        return
    done = flush or (lambda: None)
    with interrupts_at_safe_points() as interrupted:
        to_call: list[tuple[U, CallKey]] = []
        cached = cached_calls(db, endpoint.key(model, prompt_hash, "", None))
        try:
            for n, unit in enumerate(units, 1):
                stop_if(interrupted)
                call_key = endpoint.key(model, prompt_hash, *key(unit))
                hit = cached.get((call_key.content_hash, call_key.shown_order or "", call_key.repeat))
                if hit is None:
                    to_call.append((unit, call_key))
                else:
                    record(unit, hit, False)
                    if n % 256 == 0:
                        done()
        finally:
            done()
        call_all(endpoint, model, to_call, max(1, concurrency), message, lambda u, r: record(u, r, True), interrupted,
                 sent, done)


def _plan(db: sqlite_utils.Database, endpoint: Endpoint, model: str, prompt_hash: str, units: Iterable[U],
          key: Callable[[U], tuple], message: Callable[[U], str]) -> None:
    """A dry run: count in ``endpoint.plan`` the calls the cache answers and those it would make."""
    cached = cached_calls(db, endpoint.key(model, prompt_hash, "", None))
    for unit in units:
        call_key = endpoint.key(model, prompt_hash, *key(unit))
        if (call_key.content_hash, call_key.shown_order or "", call_key.repeat) not in cached:
            endpoint.plan.add(message(unit))
        else:
            endpoint.plan.from_cache += 1


def call_all(endpoint: Endpoint, model: str, units: list[tuple[U, CallKey]], concurrency: int,
             message: Callable[[U], str], record: Callable[[U, CallResult], None], interrupted: threading.Event,
             sent: Callable[[], None], flush: Callable[[], None] = lambda: None) -> None:
    """Keep ``concurrency`` calls in flight on the endpoint's loop; record each reply (with its
    key) on this thread as it arrives, and ``flush()`` after each group that arrived together.

    ``message`` gives a unit's prompt, ``sent`` counts a call made. Stops at the next safe
    point once ``interrupted`` is set (:func:`interrupts_at_safe_points`), after recording the
    replies that had arrived, and ends the calls in flight. A call that raises (the endpoint
    refuses the key) stops the run the same way and its error is raised here.
    """
    if not units:
        return
    replies: queue.SimpleQueue = queue.SimpleQueue()
    endpoint.reserve(min(concurrency, len(units)))
    future = endpoint.submit(_pump(endpoint, model, units, concurrency, message, replies, sent))
    left = len(units)
    try:
        while left:
            try:
                got = [replies.get(timeout=POLL_SECONDS)]
            except queue.Empty:
                stop_if(interrupted)
                if future.done():
                    future.result()  # raises what ended the calls early
                continue
            while True:
                try:
                    got.append(replies.get_nowait())
                except queue.Empty:
                    break
            try:
                for unit, result in got:
                    if isinstance(result, BaseException):
                        raise result
                    record(unit, result)
                    left -= 1
            finally:
                flush()
            stop_if(interrupted)
    except KeyboardInterrupt:
        try:
            _record_arrived(replies, record)
        finally:
            flush()
            future.cancel()
            endpoint.close()
        raise
    except BaseException:
        future.cancel()
        endpoint.close()
        raise


def _record_arrived(replies: queue.SimpleQueue, record: Callable[[U, CallResult], None]) -> None:
    """Record the replies that arrived and wait in ``replies`` (a run stopping keeps them)."""
    while True:
        try:
            unit, result = replies.get_nowait()
        except queue.Empty:
            return
        if not isinstance(result, BaseException):
            record(unit, result)


async def _pump(endpoint: Endpoint, model: str, units: list[tuple[U, CallKey]], concurrency: int,
                message: Callable[[U], str], replies: queue.SimpleQueue, sent: Callable[[], None]) -> None:
    pending = iter(units)

    async def worker() -> None:
        for unit, call_key in pending:
            sent()
            try:
                result = await acall(endpoint, model, message(unit))
            except Exception as exc:  # noqa: BLE001 (handed to the calling thread, which raises it)
                replies.put((unit, exc))
                raise
            replies.put((unit, replace(result, key=call_key)))

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, len(units))):
            group.create_task(worker())
