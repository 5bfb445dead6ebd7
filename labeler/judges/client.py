"""One chat-completion call to an OpenAI-compatible endpoint, with retries.

vLLM, llama.cpp, Ollama and hosted APIs speak the same protocol; calls go through the
``openai`` package's async client (imported only when an endpoint makes its first call), one
client per endpoint, its connection pool sized to the calls in flight, on openai's aiohttp
transport when aiohttp is installed (``openai[aiohttp]``, a dependency: it costs half the CPU a
call of openai's default httpx transport, which is used otherwise). A call is the client's
request to ``/chat/completions`` with the reply taken raw (``client.post(..., cast_to=Response)``,
openai's way to make a request of its own): its key, headers, timeouts and errors, without
openai transforming the request's fields (a fifth of its CPU a call, measured) or building its
reply model; the reply's JSON is read here, the fields a verdict needs. The key comes from ``OPENAI_API_KEY`` (a local server needs none)
and is never written anywhere: an error message or a reply that could echo it has it masked
before anything stores or shows it.

Server errors (5xx), rate limits, timeouts, dropped connections and replies that are not valid
JSON are retried with exponential backoff (``tenacity``, on the endpoint's event loop); a
``Retry-After`` header on a 429 or 503 is waited for (up to ``retry_after_cap``). A refused
key, an unknown model or endpoint stops the run; any other refusal (e.g. a prompt too long)
is recorded for that item.

A reply's body is read up to :data:`MAX_REPLY_BYTES` and no further: a larger one (by its
``Content-Length``, or once that many bytes have arrived) fails the call, not retried, with
an error naming the cap, and its connection is closed unread. Replies are asked for
uncompressed (``Accept-Encoding: identity``) and a compressed one is refused, so the cap
bounds what is held in memory, not just what crosses the wire.

``timeout`` bounds one attempt whole, from connecting to the last byte of the reply: HTTP
clients bound each read only, so a server that sends one byte at a time could hold a worker
for ever. Each attempt therefore runs on the endpoint's own event loop under an ``asyncio``
deadline that cancels it (and closes its connection) when time is up.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import json
import math
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from labeler.judges import JudgeError
from labeler.judges.transport import ReplyTooLarge, http_client, response_type
from labeler.store.judge_calls import CallKey
from labeler.store.verdicts import CallResult

KEY_VARIABLE = "OPENAI_API_KEY"

#: Characters of a reply kept. A verdict is one token; this leaves room for a model that
#: explains itself while a runaway or hostile reply (megabytes) is cut, its length recorded.
MAX_REPLY_CHARS = 10_000

#: Bytes of an HTTP reply body read at most (4 MiB): a verdict's JSON is under a kilobyte, and
#: a reply of ``MAX_REPLY_CHARS`` characters well under this, while a hostile or broken server
#: sending 100 MB costs one 4 MiB buffer, not 100 MB.
MAX_REPLY_BYTES = 4 * 1024 * 1024

#: The shortest start of the key that :func:`mask` masks when a text holds only the start.
MASK_PREFIX = 8


def _key() -> str:
    return os.environ.get(KEY_VARIABLE) or "no-key"


def mask(text: str) -> str:
    """``text`` with the API key (if any) replaced by ``***``, and its start too.

    A reply cut mid-key (at its token budget, or by a proxy) holds only the key's first
    characters. So every run of at least :data:`MASK_PREFIX` (8) characters that the key starts
    with (the whole key, when it is shorter) is masked, taken as long as it goes on matching the
    key: a whole key and any start of it alike. A key shorter than 4 characters is not a secret
    a reply could give away and is left alone (it would mask common words).
    """
    key = os.environ.get(KEY_VARIABLE)
    if not key or len(key) < 4:
        return text
    head = key[:MASK_PREFIX]
    out: list[str] = []
    i = 0
    while (j := text.find(head, i)) != -1:
        n = len(head)
        while n < len(key) and j + n < len(text) and text[j + n] == key[n]:
            n += 1
        out += [text[i:j], "***"]
        i = j + n
    return "".join(out) + text[i:] if out else text


def keep_reply(text: str) -> tuple[str, int | None]:
    """A reply as it may be stored: the key masked, cut to ``MAX_REPLY_CHARS``.

    Returns the text and, when it was cut, the masked reply's full length in characters.

    >>> keep_reply("2")
    ('2', None)
    >>> text, length = keep_reply("x" * 20_000); len(text), length
    (10000, 20000)
    """
    text = mask(text)
    return (text, None) if len(text) <= MAX_REPLY_CHARS else (text[:MAX_REPLY_CHARS], len(text))


class Interrupted(Exception):
    """The endpoint was closed while a call waited (the run is stopping)."""


def _too_large(exc: BaseException | None) -> ReplyTooLarge | None:
    """The ReplyTooLarge behind ``exc`` (openai wraps what the HTTP client raises), else None."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ReplyTooLarge):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


@dataclass(slots=True)
class Endpoint:
    """An OpenAI-compatible chat endpoint and how patiently to call it.

    Attributes:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        timeout: seconds one attempt may take in all, from connecting to the reply's last byte.
        attempts: tries per call, the first included.
        backoff: first wait between tries, in seconds (doubles each time, at most 30 s).
        max_tokens: reply budget (the prompts ask for one token).
        retry_after_cap: longest wait a ``Retry-After`` header can impose, in seconds.
        max_reply_bytes: bytes of a reply body read at most (:data:`MAX_REPLY_BYTES`).
        temperature: the sampling temperature sent with every call (0: the most likely reply).
        options: every other sampling option sent in the request's body (``top_p``, ``seed``,
            ...), checked by :func:`sampling_options`.

    Its event loop starts with the first call; ``close()`` (or leaving a ``with`` block) ends it.
    """

    base_url: str
    timeout: float = 60.0
    attempts: int = 5
    backoff: float = 0.5
    max_tokens: int = 16
    retry_after_cap: float = 60.0
    max_reply_bytes: int = MAX_REPLY_BYTES
    temperature: float = 0.0
    options: Mapping[str, Any] = field(default_factory=dict)
    plan: Any = None  # a labeler.judges.cost.CallPlan: a dry run, counting the calls it would make and sending none
    requests: int = 0  # HTTP requests sent so far, retries included
    tokens_in: int = 0  # prompt tokens the endpoint reported, over every reply so far
    tokens_out: int = 0  # reply tokens the endpoint reported
    connections: int = 0  # the connection pool's size (0: openai's default); reserve() sizes it to the calls in flight
    _client: Any = None
    _response: Any = None  # the HTTP package's Response type: what the client returns raw
    _attempt: Any = None  # the tenacity-wrapped retries (see _retries)
    _endpoint: str = ""  # the base URL as the cache keys it (endpoint_key)
    _options: str = "{}"  # the sampling options as the cache keys them
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.options = sampling_options(self.options)
        self._endpoint = endpoint_key(self.base_url)
        self._options = json.dumps(dict(self.options), sort_keys=True, separators=(",", ":"))
        if not math.isfinite(self.temperature) or self.temperature < 0:
            raise JudgeError(f"temperature {self.temperature}: give a number of 0 or more")

    def key(self, model: str, prompt_hash: str, content_hash: str, order: str | None, repeat: int = 0) -> CallKey:
        """What a call's reply is cached under: this endpoint and its settings, and the call."""
        return CallKey(model, prompt_hash, content_hash, order, self._endpoint, float(self.temperature),
                       int(self.max_tokens), self._options, repeat)

    @property
    def settings(self) -> str:
        """The settings every call of this endpoint is made under (canonical JSON)."""
        return self.key("", "", "", None).settings()

    def reserve(self, concurrency: int) -> None:
        """Size the connection pool for ``concurrency`` calls in flight (before the first call)."""
        with self._lock:
            if self._client is None:
                self.connections = max(self.connections, concurrency)

    def _started(self, *, count: bool = True) -> tuple[asyncio.AbstractEventLoop, Any]:
        with self._lock:
            if self._closed.is_set():
                raise Interrupted("the run is stopping")
            if self._loop is None:
                import openai

                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="judge-calls", daemon=True)
                self._thread.start()
                client = http_client(openai, self.max_reply_bytes, self.connections)
                self._client = openai.AsyncOpenAI(base_url=self.base_url, api_key=_key(), timeout=self.timeout,
                                                  max_retries=0, http_client=client)
                self._response = response_type(openai)
            self.requests += count
            return self._loop, self._client

    async def _create(self, model: str, message: str) -> Any:
        payload = {"model": model, "messages": [{"role": "user", "content": message}], "max_tokens": self.max_tokens,
                   "temperature": self.temperature, **self.options}
        try:
            async with asyncio.timeout(self.timeout):
                # The client's own request path (key, headers, errors as openai's exceptions), the
                # reply raw: no transform of the request's fields, no reply model built.
                reply = await self._client.post("/chat/completions", cast_to=self._response, body=payload)
        except TimeoutError:
            raise TimeoutError(f"no complete reply within {self.timeout:g} s") from None
        return json.loads(reply.content)

    def submit(self, coroutine: Any) -> concurrent.futures.Future:
        """Run ``coroutine`` on the endpoint's event loop (started on first use)."""
        loop, _ = self._started(count=False)
        return asyncio.run_coroutine_threadsafe(coroutine, loop)

    async def create(self, model: str, message: str) -> Any:
        """One attempt, on the endpoint's loop: the reply's JSON, within ``timeout`` seconds or ``TimeoutError``."""
        self._started()
        return await self._create(model, message)

    def close(self) -> None:
        """Cancel the calls in flight (their workers return at once) and stop the event loop."""
        with self._lock:
            self._closed.set()
            loop, thread, client = self._loop, self._thread, self._client
            self._loop = self._thread = self._client = None
        if loop is None or thread is None:
            return

        async def stop() -> None:
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
            await client.close()

        try:
            asyncio.run_coroutine_threadsafe(stop(), loop).result(timeout=10)
        except Exception:  # noqa: BLE001 (closing must not hide what stopped the run)
            pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Request fields a sampling option may not set: the call's own, or ones that change the reply's shape.
RESERVED_OPTIONS = frozenset({"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "stream", "n",
                              "tools", "functions", "response_format"})


def sampling_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Sampling options checked: names of request fields other than the call's own, values JSON
    scalars (``top_p=0.9``, ``seed=7``).

    >>> sampling_options({"top_p": 0.9, "seed": 7})
    {'seed': 7, 'top_p': 0.9}

    Raises:
        JudgeError: a reserved name (see :data:`RESERVED_OPTIONS`) or a value that is not a
            string, a finite number, a boolean or null.
    """
    out = {}
    for name in sorted(options):
        value = options[name]
        if not isinstance(name, str) or not name.isidentifier() or name in RESERVED_OPTIONS:
            raise JudgeError(f"sampling option {name!r}: give another request field than "
                             f"{', '.join(sorted(RESERVED_OPTIONS))} (those are the call's own, or change the reply's shape)")
        if not (value is None or isinstance(value, (str, bool, int)) or (isinstance(value, float) and math.isfinite(value))):
            raise JudgeError(f"sampling option {name}={value!r}: give a string, a finite number, true, false or null")
        out[name] = value
    return out


def endpoint_key(base_url: str) -> str:
    """The endpoint as the cache keys it: the base URL without user info (a password) or a
    trailing slash, host in lower case, any query replaced by its hash (it may hold a key).

    >>> endpoint_key("HTTP://user:secret@Example.org:8000/v1/"), endpoint_key("http://h/v1?key=abc")[:17]
    ('http://example.org:8000/v1', 'http://h/v1?sha25')
    """
    import hashlib
    from urllib.parse import urlsplit

    parts = urlsplit(base_url.strip())
    host = (parts.hostname or "").lower()
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if ":" in (parts.hostname or "") and not host.startswith("["):
        host = f"[{parts.hostname}]" + (f":{parts.port}" if parts.port is not None else "")
    text = f"{parts.scheme.lower()}://{host}{parts.path.rstrip('/')}"
    if parts.query:
        text += "?sha256=" + hashlib.sha256(parts.query.encode()).hexdigest()[:16]
    return text


def _retryable(exc: BaseException) -> bool:
    import openai

    if _too_large(exc) is not None:  # the same reply again
        return False
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, json.JSONDecodeError, UnicodeDecodeError,
                        TimeoutError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in (408, 409, 429)
    return False


def _fatal(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError))


def retry_after(exc: BaseException | None) -> float | None:
    """Seconds a 429 or 503 reply asks to wait (``Retry-After``: seconds or an HTTP date), else None."""
    import openai

    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (429, 503):
        return None
    value = (exc.response.headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _describe(exc: BaseException) -> str:
    return mask(f"{type(exc).__name__}: {exc}")[:500]


def call(endpoint: Endpoint, model: str, message: str) -> CallResult:
    """Ask ``model`` one question and wait for the reply: :func:`acall` on the endpoint's loop.

    Raises:
        JudgeError: the endpoint refuses the key, the model or the path (every call would).
    """
    future = endpoint.submit(acall(endpoint, model, message))
    try:
        return future.result()
    except (asyncio.CancelledError, concurrent.futures.CancelledError):
        raise Interrupted("the run is stopping") from None


def backoff_wait(endpoint: Endpoint, attempt: int, exc: BaseException | None) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based): ``backoff`` doubled each
    time, at most 30 s, or longer when the reply asked so (``Retry-After``, up to
    ``retry_after_cap``)."""
    base = min(endpoint.backoff * 2 ** (attempt - 1), 30.0)
    asked = retry_after(exc)
    return base if asked is None else max(base, min(asked, endpoint.retry_after_cap))


def _retries(endpoint: Endpoint) -> Any:
    """The endpoint's tries of a call after its first failed: ``tenacity`` retrying
    :meth:`Endpoint.create` up to ``attempts - 1`` more times, the waits those of attempts 2, 3, ...
    (made once per endpoint; tenacity copies it for each call that needs it)."""
    if endpoint._attempt is None:  # noqa: SLF001
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        def wait(state: Any) -> float:
            exc = state.outcome.exception() if state.outcome else None
            return backoff_wait(endpoint, state.attempt_number + 1, exc)

        retrying = AsyncRetrying(retry=retry_if_exception(_retryable), stop=stop_after_attempt(max(1, endpoint.attempts - 1)),
                                 wait=wait, sleep=asyncio.sleep, reraise=True)
        endpoint._attempt = retrying.wraps(_timed)  # noqa: SLF001
    return endpoint._attempt  # noqa: SLF001


async def _attempt(endpoint: Endpoint, model: str, message: str) -> tuple[Any, float]:
    """A call's attempts: the first made directly (most calls need no other, and tenacity's
    bookkeeping costs a quarter of goldpool's own CPU a call, measured), the rest through
    :func:`_retries` after the first one's backoff."""
    try:
        return await _timed(endpoint, model, message)
    except Exception as exc:
        if endpoint.attempts <= 1 or not _retryable(exc):
            raise
        first = exc
    await asyncio.sleep(backoff_wait(endpoint, 1, first))
    return await _retries(endpoint)(endpoint, model, message)


async def _timed(endpoint: Endpoint, model: str, message: str) -> tuple[Any, float]:
    start = time.perf_counter()
    response = await endpoint.create(model, message)
    return response, time.perf_counter() - start


async def acall(endpoint: Endpoint, model: str, message: str) -> CallResult:
    """Ask ``model`` one question, on the endpoint's event loop; the reply unparsed (``verdict``
    is filled in by the caller), retried as the module docstring says.

    The reply is stored as :func:`keep_reply` makes it: key masked, cut to ``MAX_REPLY_CHARS``,
    with the ``finish_reason`` the endpoint gave, so a reply cut short is known as such
    (:attr:`~labeler.store.verdicts.CallResult.cut_short`). A body larger than
    ``endpoint.max_reply_bytes`` is a failed call, not retried.

    Raises:
        JudgeError: the endpoint refuses the key, the model or the path (every call would).
    """
    try:
        response, latency = await _attempt(endpoint, model, message)
    except Exception as exc:
        if _fatal(exc):
            raise JudgeError(f"{endpoint.base_url}: {_describe(exc)}") from None
        return CallResult(None, None, False, None, None, None, _describe(_too_large(exc) or exc))
    result = _result(response, latency)
    endpoint.tokens_in += result.tokens_in or 0
    endpoint.tokens_out += result.tokens_out or 0
    return result


def _result(response: Any, latency: float) -> CallResult:
    choices = response.get("choices") if isinstance(response, dict) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = first.get("message")
    if not isinstance(message, dict):
        return CallResult(None, None, False, None, None, latency, "the reply holds no message (no 'choices')")
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
    count = lambda name: usage.get(name) if isinstance(usage.get(name), int) else None  # noqa: E731
    content = message.get("content")
    raw, length = keep_reply(content if isinstance(content, str) else "")
    finish = first.get("finish_reason")
    return CallResult(raw, None, False, count("prompt_tokens"), count("completion_tokens"), latency, raw_length=length,
                      finish_reason=finish if isinstance(finish, str) else None)
