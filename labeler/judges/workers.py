"""Calls made by worker processes (``run-judge --workers W``), for when one process's CPU and
not the endpoint bounds the rate: the ``openai`` client's own work is about 1.3 ms of CPU a call
(``bench/judge_throughput.py``), so one process cannot keep 64 calls of 100 ms in flight.

Each worker is a process with its own event loop and ``openai`` client (an :class:`Endpoint`
made from the parent's settings, :meth:`Endpoint.spec`, in the parent's environment as it is when
the run starts: the key, proxies) and its share of the calls in flight. The parent stays the only
one that touches the database: it renders each call's message, hands each worker batches of
``(index, message)`` down one pipe, a few of its share ahead, and takes the replies back up
another as they arrive; :func:`labeler.judges.calls.call_all` records them exactly as it
records its own, so a killed run still loses at most the calls in flight and the replies that
had arrived and were not committed yet (here also those on their way up a pipe).

Workers are forked from multiprocessing's fork server (``forkserver``; ``spawn`` where there is
none), never from this process: a fork of a process holding a SQLite connection and threads is
not safe. The server is started once a process, with this module, ``openai`` and ``aiohttp``
loaded (:data:`PRELOAD`), so a worker starts without loading them again: about a second of CPU
each. As with any spawned process, a script that calls a run with workers needs the
``if __name__ == "__main__":`` guard. Workers ignore Ctrl-C, which the parent handles by ending
them, and exit when the parent's end of their pipe closes (the parent killed). A worker that dies unanswered, or
fails to start, stops the run with an error saying so; the endpoint refusing the key, the model
or the path stops it with the same error as in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import queue
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from labeler.judges import JudgeError
from labeler.judges.client import Endpoint, acall
from labeler.store.judge_calls import CallKey
from labeler.store.verdicts import CallResult

U = TypeVar("U")

#: What the fork server loads once, for every worker forked from it (a module missing is skipped).
PRELOAD = ["labeler.judges.workers", "openai", "aiohttp"]

#: Calls handed to a worker ahead of those it has in flight, as multiples of its share: topped
#: up to ``AHEAD`` shares whenever fewer than ``AHEAD - 1`` are out.
AHEAD = 3


@dataclass(slots=True)
class _Worker:
    process: Any
    tasks: Any  # the parent's end of the pipe of (index, message) batches; None once told there is no more
    replies: Any  # the parent's end of the pipe of replies
    share: int
    out: int = 0  # calls handed over and not answered yet
    requests: int = 0  # HTTP requests the worker has reported, retries included


@dataclass(slots=True)
class Workers(Generic[U]):
    """The parent's side: ``concurrency`` calls in flight over ``workers`` processes (at most
    one per call in flight), each call's reply returned with its key."""

    endpoint: Endpoint
    model: str
    units: list[tuple[U, CallKey]]
    concurrency: int
    workers: int
    message: Callable[[U], str]
    sent: Callable[[], None]
    live: list[_Worker] = field(default_factory=list)
    handed: int = 0  # units handed to a worker so far, in order
    stopping: bool = False  # hand out nothing more

    def start(self) -> None:
        context = _context()
        n = max(1, min(self.workers, self.concurrency, len(self.units)))
        for i in range(n):
            share = self.concurrency // n + (i < self.concurrency % n)
            tasks_in, tasks = context.Pipe(duplex=False)
            replies, replies_out = context.Pipe(duplex=False)
            process = context.Process(target=serve, args=(self.endpoint.spec(), self.model, share, tasks_in, replies_out,
                                                          dict(os.environ)),
                                      name=f"judge-worker-{i + 1}", daemon=True)
            process.start()
            tasks_in.close()
            replies_out.close()
            self.live.append(_Worker(process, tasks, replies, share))
        for worker in self.live:
            self._top_up(worker)

    def _top_up(self, worker: _Worker) -> None:
        if self.stopping or worker.tasks is None or worker.out >= (AHEAD - 1) * worker.share:
            return
        take = min(AHEAD * worker.share - worker.out, len(self.units) - self.handed)
        if take:
            batch = [(i, self.message(self.units[i][0])) for i in range(self.handed, self.handed + take)]
            self.handed += take
            worker.out += take
            worker.tasks.send(batch)
        if self.handed == len(self.units):  # no more: the worker ends once its calls are answered
            worker.tasks.send(None)
            worker.tasks.close()
            worker.tasks = None

    def get(self, timeout: float) -> list[tuple[U | None, CallResult | BaseException]]:
        """The replies that arrive within ``timeout`` seconds (none: an empty list), each with its
        key; an error a worker raised (or its death) as the last item."""
        got: list[tuple[U | None, CallResult | BaseException]] = []
        for conn in multiprocessing.connection.wait([w.replies for w in self.live], timeout):
            worker = next(w for w in self.live if w.replies is conn)
            try:
                kind, payload, requests = conn.recv()
            except EOFError:
                worker.process.join(timeout=1)
                got.append((None, JudgeError(f"{worker.process.name} stopped (exit code {worker.process.exitcode}) "
                                             f"with {worker.out} calls unanswered (any error it wrote is above)")))
                self.live.remove(worker)
                return got
            self.endpoint.requests += requests - worker.requests
            worker.requests = requests
            if kind == "error":
                index, exc = payload
                got.append((None if index is None else self.units[index][0], exc))
                return got
            if kind == "done":
                worker.process.join(timeout=10)
                conn.close()
                self.live.remove(worker)
                continue
            for index, result in payload:
                unit, key = self.units[index]
                self.endpoint.count(result)
                self.sent()
                got.append((unit, replace(result, key=key)))
            worker.out -= len(payload)
            self._top_up(worker)
        return got

    def arrived(self) -> list[tuple[U | None, CallResult | BaseException]]:
        """The replies that have arrived and wait, read without waiting (a run stopping keeps them)."""
        self.stopping = True
        got: list[tuple[U | None, CallResult | BaseException]] = []
        while more := self.get(0):
            got += more
            if isinstance(more[-1][1], BaseException):
                break
        return got

    def finish(self) -> None:
        """Every call answered: wait for the workers to end (they were told there is no more)."""
        self._end(wait=5.0)

    def stop(self) -> None:
        """End every worker still running (their calls in flight are dropped)."""
        self._end(wait=0.0)

    def _end(self, wait: float) -> None:
        self.stopping = True
        for worker in self.live:
            worker.process.join(timeout=wait)
            if worker.process.is_alive():
                worker.process.terminate()
        for worker in self.live:
            worker.process.join(timeout=10)
            worker.replies.close()
            if worker.tasks is not None:
                worker.tasks.close()
        self.live = []


def warm_up(workers: int) -> None:
    """Start the fork server the workers will come from, so that it loads :data:`PRELOAD` while
    the run reads the project and the cache (nothing for one process, or without a fork server).
    ``workers``: those the run can use (no more than the calls in flight)."""
    if workers > 1 and _context().get_start_method() == "forkserver":
        multiprocessing.forkserver.ensure_running()


def _context() -> Any:
    """Where workers come from: the fork server (loaded with :data:`PRELOAD`), else spawn."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # no effect once the server runs (it has them then)
    return context


# --- the worker's side ---------------------------------------------------------------------------

_DONE = object()


def serve(spec: dict[str, Any], model: str, concurrency: int, tasks: Any, replies: Any,
          environment: dict[str, str]) -> None:
    """A worker process: ``concurrency`` calls in flight on its own endpoint, taking batches of
    ``(index, message)`` from ``tasks`` until ``None``, sending ``("replies", [(index, result)],
    requests)`` up ``replies`` as they arrive (all that arrived together in one message), then
    ``("done", None, requests)``; ``("error", (index, error), requests)`` when a call raised.
    The parent gone (``tasks`` closed before ``None``), the process ends at once: no call is
    begun whose reply could not be recorded."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends its workers
    # The parent's environment now, not the fork server's when it started: the key, and masking it.
    os.environ.clear()
    os.environ.update(environment)
    endpoint = None
    try:
        endpoint = Endpoint(**spec)
        endpoint.reserve(concurrency)
        out: queue.SimpleQueue = queue.SimpleQueue()
        future = endpoint.submit(_pump(endpoint, model, concurrency, tasks, out))
        future.add_done_callback(lambda _: out.put(_DONE))
        if _send_replies(out, replies, endpoint):
            return  # a call raised: the parent stops the run on it
        future.result()
        replies.send(("done", None, endpoint.requests))
    except BaseException as exc:  # noqa: BLE001 (handed to the parent, which raises it)
        with contextlib.suppress(OSError):  # the parent gone: nobody to tell
            replies.send(("error", (None, _portable(exc)), endpoint.requests if endpoint else 0))
    finally:
        if endpoint is not None:
            endpoint.close()


def _send_replies(out: queue.SimpleQueue, replies: Any, endpoint: Endpoint) -> bool:
    """Send the replies up the pipe as they come, all that are waiting in one message, until the
    calls are done (False) or one raised (True: its error sent, the run stops on it)."""
    while True:
        items = [out.get()]
        while True:
            try:
                items.append(out.get_nowait())
            except queue.Empty:
                break
        answered = [item for item in items if isinstance(item, tuple) and item[0] != "error"]
        if answered:
            replies.send(("replies", answered, endpoint.requests))
        for item in items:
            if isinstance(item, tuple) and item[0] == "error":
                replies.send(("error", item[1], endpoint.requests))
                return True
        if any(item is _DONE for item in items):
            return False


async def _pump(endpoint: Endpoint, model: str, concurrency: int, tasks: Any, out: queue.SimpleQueue) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()
    threading.Thread(target=_read, args=(tasks, loop, inbox, concurrency), name="judge-worker-tasks", daemon=True).start()

    async def worker() -> None:
        while (item := await inbox.get()) is not None:
            index, message = item
            try:
                result = await acall(endpoint, model, message)
            except Exception as exc:
                out.put(("error", (index, _portable(exc))))
                raise
            out.put((index, result))

    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())


def _read(tasks: Any, loop: Any, inbox: Any, concurrency: int) -> None:
    """Move the batches from the parent's pipe onto the worker's loop; the parent gone (the
    pipe closed without ``None``), end the process."""
    while True:
        try:
            batch = tasks.recv()
        except (EOFError, OSError):
            os._exit(1)
        items = [None] * concurrency if batch is None else batch
        loop.call_soon_threadsafe(lambda items=items: [inbox.put_nowait(item) for item in items])
        if batch is None:
            return


def _portable(exc: BaseException) -> BaseException:
    """``exc`` as it can cross a pipe: a JudgeError as it is, anything else (which may not
    pickle) as a JudgeError naming it."""
    if isinstance(exc, JudgeError):
        return exc
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _portable(exc.exceptions[0])
    return JudgeError(f"a judge worker failed: {type(exc).__name__}: {exc}")
