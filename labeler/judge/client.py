"""One chat-completion call to an OpenAI-compatible endpoint, with retries.

vLLM, llama.cpp, Ollama and hosted APIs speak the same protocol; the ``openai`` package is
imported only when a client is made. The key comes from ``OPENAI_API_KEY`` (a local server
needs none) and is never written anywhere: an error message that could echo it has it masked.

Server errors (5xx), rate limits, timeouts, dropped connections and replies that are not valid
JSON are retried with exponential backoff (``tenacity``); a refused key, an unknown model or
endpoint stops the run; any other refusal (e.g. a prompt too long) is recorded for that item.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from labeler.judge import JudgeError
from labeler.store.verdicts import CallResult

KEY_VARIABLE = "OPENAI_API_KEY"


def _key() -> str:
    return os.environ.get(KEY_VARIABLE) or "no-key"


def mask(text: str) -> str:
    """``text`` with the API key (if any) replaced by ``***``."""
    key = os.environ.get(KEY_VARIABLE)
    return text.replace(key, "***") if key and len(key) >= 4 else text


@dataclass(slots=True)
class Endpoint:
    """An OpenAI-compatible chat endpoint and how patiently to call it.

    Attributes:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        timeout: seconds one attempt may take.
        attempts: tries per call, the first included.
        backoff: first wait between tries, in seconds (doubles each time, at most 30 s).
        max_tokens: reply budget (the prompts ask for one token).
    """

    base_url: str
    timeout: float = 60.0
    attempts: int = 5
    backoff: float = 0.5
    max_tokens: int = 16
    requests: int = 0  # HTTP requests sent so far, retries included
    _client: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(base_url=self.base_url, api_key=_key(), timeout=self.timeout, max_retries=0)
        return self._client


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, json.JSONDecodeError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in (408, 409, 429)
    return isinstance(exc, openai.APIResponseValidationError)


def _fatal(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError))


def _describe(exc: BaseException) -> str:
    return mask(f"{type(exc).__name__}: {exc}")[:500]


def call(endpoint: Endpoint, model: str, message: str) -> CallResult:
    """Ask ``model`` one question; the reply unparsed (``verdict`` is filled in by the caller).

    Raises:
        JudgeError: the endpoint refuses the key, the model or the path (every call would).
    """
    from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

    @retry(
        retry=retry_if_exception(_retryable),
        stop=stop_after_attempt(max(1, endpoint.attempts)),
        wait=wait_exponential(multiplier=endpoint.backoff, max=30),
        reraise=True,
    )
    def attempt() -> tuple[Any, float]:
        with endpoint._lock:
            endpoint.requests += 1
        start = time.perf_counter()
        response = endpoint.client().chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": message}],
            max_tokens=endpoint.max_tokens,
            temperature=0,
        )
        return response, time.perf_counter() - start

    try:
        response, latency = attempt()
    except Exception as exc:
        if _fatal(exc):
            raise JudgeError(f"{endpoint.base_url}: {_describe(exc)}") from None
        return CallResult(None, None, False, None, None, None, _describe(exc))
    choices = getattr(response, "choices", None) or []
    if not choices or getattr(choices[0], "message", None) is None:
        return CallResult(None, None, False, None, None, latency, "the reply holds no message (no 'choices')")
    usage = getattr(response, "usage", None)
    tokens_in = getattr(usage, "prompt_tokens", None) if usage else None
    tokens_out = getattr(usage, "completion_tokens", None) if usage else None
    raw = choices[0].message.content or ""
    return CallResult(raw, None, False, tokens_in, tokens_out, latency)
