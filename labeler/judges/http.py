"""A lean HTTP/1.1 client for chat completions, on asyncio streams: what a judge run sends.

The ``openai`` package spends 4-5 ms of CPU on each call (its request and response models, its
HTTP client's machinery), ``httpx`` alone about 2 ms; a run keeping 64 calls in flight against a
server answering in 100 ms needs 640 calls a second, which that per-call work cannot keep up
with on a machine of two cores (``bench/judge_throughput.py``). A chat completion is one POST of
JSON and one JSON reply, so this client does only that: connections kept alive and reused, TLS
(the system's certificates) for ``https://``, proxies from the environment (``HTTPS_PROXY``,
``HTTP_PROXY``, ``NO_PROXY``: ``CONNECT`` through the proxy for https, the absolute form for
http), bodies by ``Content-Length``, chunked or until the connection closes. About 0.1-0.2 ms a
call.

A reply's body is read up to ``cap`` bytes and no further (by its ``Content-Length``, or once
that many bytes have arrived): :class:`ReplyTooLarge`, its connection closed unread. Replies are
asked for uncompressed and a compressed one is refused, so the cap bounds what is held in
memory. A reply that is not 2xx raises the :class:`APIStatusError` of its status, named as the
OpenAI API's client names them (``AuthenticationError`` for 401, ``RateLimitError`` for 429,
``InternalServerError`` for 5xx, ...) with the body's JSON in the message; a connection that
fails raises :class:`APIConnectionError`.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

#: Bytes of a reply's status line and headers read at most.
MAX_HEAD_BYTES = 64 * 1024


class ReplyTooLarge(Exception):
    """A reply's body is larger than the cap (or compressed); the rest is not read."""


class APIError(Exception):
    """A call that did not give a reply."""


class APIConnectionError(APIError):
    """The connection failed or closed before a whole reply arrived."""


class APIStatusError(APIError):
    """The endpoint answered with a status other than 2xx; ``headers`` are the reply's (lower-case names)."""

    def __init__(self, status_code: int, headers: dict[str, str], body: Any) -> None:
        message = f"Error code: {status_code}" + (f" - {body}" if body not in (None, "", b"") else "")
        super().__init__(message)
        self.status_code = status_code
        self.headers = headers
        self.body = body


class BadRequestError(APIStatusError): ...
class AuthenticationError(APIStatusError): ...
class PermissionDeniedError(APIStatusError): ...
class NotFoundError(APIStatusError): ...
class ConflictError(APIStatusError): ...
class UnprocessableEntityError(APIStatusError): ...
class RateLimitError(APIStatusError): ...
class InternalServerError(APIStatusError): ...


_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
           409: ConflictError, 422: UnprocessableEntityError, 429: RateLimitError}


def status_error(status: int, headers: dict[str, str], data: bytes) -> APIStatusError:
    """The error of a reply with status ``status`` (its body parsed as JSON where it is JSON)."""
    text = data.decode("utf-8", "replace")
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    kind = _STATUS.get(status, InternalServerError if status >= 500 else APIStatusError)
    return kind(status, headers, body)


@dataclass(slots=True)
class _Target:
    """Where the requests of one base URL go: host, port, TLS, path, and the proxy, if any."""

    host: str
    port: int
    tls: bool
    path: str
    proxy: tuple[str, int] | None = None
    proxy_auth: str | None = None


def _target(base_url: str) -> _Target:
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise APIConnectionError(f"{base_url}: give an http:// or https:// URL")
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    target = _Target(parts.hostname, port, tls, parts.path.rstrip("/") + "/chat/completions")
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname):
        p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        target.proxy = (p.hostname or "", p.port or 80)
        if p.username:
            import base64

            target.proxy_auth = base64.b64encode(f"{p.username}:{p.password or ''}".encode()).decode()
    return target


@dataclass(slots=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(slots=True)
class HttpClient:
    """Connections to one endpoint, kept alive between calls (one per call in flight)."""

    base_url: str
    cap: int
    _target: _Target | None = None
    _idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = field(default_factory=list)
    _ssl: ssl.SSLContext | None = None

    async def post(self, payload: dict[str, Any], api_key: str) -> Reply:
        """POST ``payload`` as JSON to ``{base_url}/chat/completions``; the reply, whatever its status."""
        if self._target is None:
            self._target = _target(self.base_url)
        t = self._target
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        path = f"{'https' if t.tls else 'http'}://{t.host}:{t.port}{t.path}" if t.proxy and not t.tls else t.path
        head = (f"POST {path} HTTP/1.1\r\nHost: {t.host}:{t.port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json\r\nAccept-Encoding: identity\r\nUser-Agent: goldpool\r\n"
                f"Authorization: Bearer {api_key}\r\nContent-Length: {len(body)}\r\n")
        if t.proxy and not t.tls and t.proxy_auth:
            head += f"Proxy-Authorization: Basic {t.proxy_auth}\r\n"
        request = (head + "\r\n").encode() + body
        while self._idle:  # a kept-alive connection the server may have closed meanwhile: then a new one
            reader, writer = self._idle.pop()
            try:
                return await self._exchange(reader, writer, request)
            except _Stale:
                writer.close()
        reader, writer = await self._connect()
        try:
            return await self._exchange(reader, writer, request)
        except _Stale:
            raise APIConnectionError("Connection error: the server closed the connection without a reply") from None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        t = self._target
        assert t is not None
        try:
            if t.proxy is None:
                return await asyncio.open_connection(t.host, t.port, ssl=self._context() if t.tls else None,
                                                     limit=MAX_HEAD_BYTES)
            reader, writer = await asyncio.open_connection(*t.proxy, limit=MAX_HEAD_BYTES)
            if t.tls:
                auth = f"Proxy-Authorization: Basic {t.proxy_auth}\r\n" if t.proxy_auth else ""
                writer.write(f"CONNECT {t.host}:{t.port} HTTP/1.1\r\nHost: {t.host}:{t.port}\r\n{auth}\r\n".encode())
                status, _, _ = await _read_head(reader)
                if status != 200:
                    writer.close()
                    raise APIConnectionError(f"Connection error: the proxy refused CONNECT ({status})")
                await writer.start_tls(self._context(), server_hostname=t.host)
            return reader, writer
        except (OSError, ssl.SSLError) as exc:
            raise APIConnectionError(f"Connection error: {exc}") from None

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> Reply:
        try:
            writer.write(request)
            await writer.drain()
        except ConnectionError:  # a kept-alive connection the server closed
            writer.transport.abort()
            raise _Stale from None
        try:
            status, headers, keep = await _read_head(reader)
            data, whole = await _read_body(reader, headers, self.cap)
        except _Stale:
            writer.transport.abort()
            raise
        except ReplyTooLarge:
            writer.transport.abort()
            raise
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            writer.transport.abort()
            raise APIConnectionError(f"Connection error: {type(exc).__name__}: {exc}") from None
        except BaseException:  # cancelled, timed out: the connection is in an unknown state
            writer.transport.abort()
            raise
        if keep and whole:
            self._idle.append((reader, writer))
        else:
            writer.close()
        return Reply(status, headers, data)

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()


class _Stale(Exception):
    """The connection closed before the first byte of a reply (a kept-alive one the server dropped)."""


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bool]:
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            raise _Stale from None
        raise
    lines = raw.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    status = int(rest.split(" ", 1)[0])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    keep = "close" not in connection and (version == "HTTP/1.1" or "keep-alive" in connection)
    return status, headers, keep


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str], cap: int) -> tuple[bytes, bool]:
    """The body and whether it ended where its framing said (else the connection cannot be reused)."""

    def too_large(detail: str = "") -> ReplyTooLarge:
        return ReplyTooLarge(f"the reply is larger than {cap:,} bytes (MAX_REPLY_BYTES){detail}; it was not read further")

    encoding = headers.get("content-encoding", "identity").lower()
    if encoding not in ("", "identity"):
        raise ReplyTooLarge(f"the reply is {encoding}-compressed though only identity was accepted: "
                            f"unpacked it could exceed {cap:,} bytes (MAX_REPLY_BYTES)")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts, seen = [], 0
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return b"".join(parts), True
            seen += size
            if seen > cap:
                raise too_large()
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = headers.get("content-length", "").strip()
    if length.isdigit():
        if int(length) > cap:
            raise too_large(f" (Content-Length {int(length):,})")
        return await reader.readexactly(int(length)), True
    parts, seen = [], 0
    while chunk := await reader.read(65536):
        seen += len(chunk)
        if seen > cap:
            raise too_large()
        parts.append(chunk)
    return b"".join(parts), False
