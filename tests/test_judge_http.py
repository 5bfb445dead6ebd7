"""The lean HTTP client of judge calls against a keep-alive server: connections reused, chunked
bodies, a kept-alive connection the server dropped, and a proxy from the environment."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator

import pytest

from labeler.judges.client import Endpoint, call


class KeepAliveServer:
    """HTTP/1.1 on 127.0.0.1 in a thread of its own: answers ``2`` to every chat completion,
    keeping connections alive; ``chunked`` sends bodies in chunks, ``close_after`` closes a
    connection (without saying so) after that many replies on it. ``connections`` counts them."""

    def __init__(self, *, chunked: bool = False, close_after: int | None = None, proxy_to: int | None = None) -> None:
        self.chunked, self.close_after, self.proxy_to = chunked, close_after, proxy_to
        self.connections = 0
        self.requests: list[bytes] = []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
                body = await reader.readexactly(length)
                self.requests.append(head.split(b"\r\n")[0])
                if self.proxy_to is not None:  # a forwarding proxy: the absolute-form request, to the server
                    up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.proxy_to)
                    up_writer.write(head + body)
                    reply = await up_reader.readuntil(b"\r\n\r\n")
                    size = next(int(x.split(b":")[1]) for x in reply.split(b"\r\n") if x.lower().startswith(b"content-length"))
                    writer.write(reply + await up_reader.readexactly(size))
                    up_writer.close()
                    await writer.drain()
                    continue
                words = len(json.loads(body)["messages"][0]["content"].split())
                payload = json.dumps({"choices": [{"message": {"content": "2"}, "finish_reason": "stop"}],
                                      "usage": {"prompt_tokens": words, "completion_tokens": 1}}).encode()
                if self.chunked:
                    half = len(payload) // 2
                    chunks = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in (payload[:half], payload[half:]))
                    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n")
                else:
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)
                await writer.drain()
                served += 1
                if self.close_after is not None and served >= self.close_after:
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture
def keep_alive() -> Iterator[KeepAliveServer]:
    server = KeepAliveServer()
    yield server
    server.close()


def test_calls_one_after_another_reuse_one_connection(keep_alive: KeepAliveServer) -> None:
    with Endpoint(f"http://127.0.0.1:{keep_alive.port}/v1", timeout=5) as endpoint:
        results = [call(endpoint, "m", f"message {i}") for i in range(5)]
    assert [r.raw for r in results] == ["2"] * 5 and keep_alive.connections == 1
    assert {r.tokens_in for r in results} == {2} and endpoint.tokens_in == 10 and endpoint.tokens_out == 5


def test_a_chunked_reply_is_read_whole() -> None:
    server = KeepAliveServer(chunked=True)
    try:
        with Endpoint(f"http://127.0.0.1:{server.port}/v1", timeout=5) as endpoint:
            assert [call(endpoint, "m", "x").raw for _ in range(3)] == ["2"] * 3
        assert server.connections == 1
    finally:
        server.close()


def test_a_kept_alive_connection_the_server_closed_is_replaced_not_failed() -> None:
    server = KeepAliveServer(close_after=2)
    try:
        with Endpoint(f"http://127.0.0.1:{server.port}/v1", timeout=5, attempts=1) as endpoint:
            results = [call(endpoint, "m", "x") for _ in range(5)]
        assert [r.error for r in results] == [None] * 5 and [r.raw for r in results] == ["2"] * 5
        assert server.connections == 3 and endpoint.requests == 5  # no attempt spent on a dropped connection
    finally:
        server.close()


def test_a_proxy_from_the_environment_is_used(keep_alive: KeepAliveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = KeepAliveServer(proxy_to=keep_alive.port)
    try:
        for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
        with Endpoint(f"http://127.0.0.1:{keep_alive.port}/v1", timeout=5) as endpoint:
            assert call(endpoint, "m", "x").raw == "2"
        assert proxy.requests == [f"POST http://127.0.0.1:{keep_alive.port}/v1/chat/completions HTTP/1.1".encode()]
        assert keep_alive.requests == proxy.requests  # forwarded as it came
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        with Endpoint(f"http://127.0.0.1:{keep_alive.port}/v1", timeout=5) as endpoint:
            assert call(endpoint, "m", "x").raw == "2"
        assert len(proxy.requests) == 1 and keep_alive.requests[-1] == b"POST /v1/chat/completions HTTP/1.1"
    finally:
        proxy.close()


def test_a_refused_connection_is_a_failed_call_after_its_attempts() -> None:
    with Endpoint("http://127.0.0.1:9/v1", timeout=2, attempts=2, backoff=0.01) as endpoint:
        result = call(endpoint, "m", "x")
    assert result.raw is None and result.error.startswith("APIConnectionError: Connection error") and endpoint.requests == 2
