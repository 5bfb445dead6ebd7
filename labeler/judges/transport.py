"""The HTTP client an endpoint hands the ``openai`` package: openai's own (its defaults, proxies
from the environment), on its aiohttp transport when aiohttp is installed (``openai[aiohttp]``,
a dependency: half the CPU a call of its default httpx transport, measured in
``bench/judge_throughput.py``), else on httpx; its connection pool as wide as the calls in
flight, and a reply's body read up to a cap and no further (``labeler.judges.client``'s
docstring says why)."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any


class ReplyTooLarge(Exception):
    """A reply's body is larger than :data:`MAX_REPLY_BYTES` (:data:`labeler.judges.client.MAX_REPLY_BYTES`, or compressed); the rest is not read."""


def http_client(openai: Any, cap: int, connections: int) -> Any:
    """The HTTP client of an endpoint: the installed openai's own (its defaults, proxies from the
    environment), its pool ``connections`` wide (kept alive too; 0: openai's default), reading a
    reply body up to ``cap`` bytes and no further."""
    base = _client_class(openai)
    # The HTTP package openai builds on (httpx, or httpx2 for openai 3): its byte-stream type.
    package = importlib.import_module(next(c for c in base.__mro__ if c.__name__ == "AsyncClient").__module__.split(".")[0])
    limits = {"limits": package.Limits(max_connections=connections, max_keepalive_connections=connections)} if connections else {}

    def too_large(detail: str) -> ReplyTooLarge:
        return ReplyTooLarge(f"the reply is larger than {cap:,} bytes (MAX_REPLY_BYTES){detail}; it was not read further")

    class Capped(package.AsyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        async def __aiter__(self) -> Any:
            seen = 0
            async for chunk in self._inner:
                seen += len(chunk)
                if seen > cap:
                    raise too_large("")
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    class Client(base):  # type: ignore[misc, valid-type]
        async def send(self, request: Any, *, stream: bool = False, **kwargs: Any) -> Any:
            request.headers["Accept-Encoding"] = "identity"
            response = await super().send(request, stream=True, **kwargs)
            if stream:
                return response
            try:
                length = response.headers.get("content-length", "").strip()
                if length.isdigit() and int(length) > cap:
                    raise too_large(f" (Content-Length {int(length):,})")
                encoding = response.headers.get("content-encoding", "identity").strip().lower()
                if encoding not in ("", "identity"):
                    raise ReplyTooLarge(f"the reply is {encoding}-compressed though only identity was accepted: "
                                        f"unpacked it could exceed {cap:,} bytes (MAX_REPLY_BYTES)")
                response.stream = Capped(response.stream)
                await response.aread()
            except BaseException:
                await response.aclose()
                raise
            return response

    return Client(**limits)


def _client_class(openai: Any) -> type:
    """openai's aiohttp-backed client when aiohttp is installed (``openai[aiohttp]``: half the
    CPU a call of its default transport, measured in ``bench/judge_throughput.py``), else its
    default httpx one."""
    aiohttp_client = getattr(openai, "DefaultAioHttpClient", None)
    if aiohttp_client is not None and importlib.util.find_spec("aiohttp") is not None:
        return aiohttp_client
    return openai.DefaultAsyncHttpxClient


def response_type(openai: Any) -> type:
    """The Response type of the HTTP package openai builds on (httpx, or httpx2 for openai 3)."""
    base = openai.DefaultAsyncHttpxClient
    return importlib.import_module(next(c for c in base.__mro__ if c.__name__ == "AsyncClient").__module__.split(".")[0]).Response
