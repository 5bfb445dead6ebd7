"""A scripted OpenAI-compatible chat server on 127.0.0.1, for the judge tests (no network).

``JudgeServer.script`` is a list of behaviours consumed one per request before the default
answer applies: ``"500"``, ``"timeout"`` (sleeps past the client's timeout), ``"badjson"``,
``"nochoices"``, ``"401"`` (echoes the Authorization header, as a careless proxy might),
``"text:<reply>"``, ``"slow:<seconds>"``, ``"drip:<seconds>"`` (the default answer, every
byte of the HTTP reply sent alone, that many seconds apart), ``"status:<code>:<retry-after>"``
(an error with that ``Retry-After`` header, none when empty), ``"huge:<n>"`` (a reply of ``n``
characters), ``"cut:<reply>"`` (that reply with ``finish_reason: "length"``, as a model stopped
at its token budget), ``"echo"`` (a reply quoting the Authorization header), ``"hold"`` (no
reply until the server closes), ``"body:<n>"`` and ``"stream:<n>"`` (a 200 body of ``n`` bytes
sent in 64 KiB writes, with its ``Content-Length``, or without one until the connection
closes; ``body_bytes`` holds the bytes each such reply got written before the client hung up)
and ``"gzip"`` (the default answer, gzip-compressed). The default answer is ``answer(message)``.

``arrivals`` holds the ``time.time()`` of each request; ``wait_for(n)`` returns once ``n``
requests have arrived, so a test paces itself on the server rather than on sleeps.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def grade_of(message: str) -> str:
    """The default relevance answer: the doc number of ``q001-d007`` modulo 4 ('3')."""
    match = re.search(r"-d(\d+)", message)
    return str(int(match[1]) % 4) if match else "0"


def framed_blocks(message: str) -> dict[str, str]:
    """Every framed text of a prompt the server received, by tag, checking that each is opened and
    closed once, all by one id (the frames ``labeler.judges.prompts.frame`` writes)."""
    ids = set(re.findall(r"<\w+ id=(\w+)>", message))
    assert len(ids) == 1, ids
    ident = ids.pop()
    blocks = dict(re.findall(rf"<(\w+) id={ident}>\n(.*?)\n</\1 id={ident}>", message, re.S))
    assert message.count(f"id={ident}>") == 2 * len(blocks)
    return blocks


class JudgeServer:
    def __init__(self, answer: Callable[[str], str] = grade_of, delay: float = 0.0) -> None:
        self.answer = answer
        self.delay = delay
        self.script: list[str] = []
        self.requests: list[dict] = []
        self.authorization: list[str] = []
        self.arrivals: list[float] = []
        self.body_bytes: list[int] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests.append(body)
                    server.authorization.append(self.headers.get("Authorization", ""))
                    server.arrivals.append(time.time())
                    step = server.script.pop(0) if server.script else ""
                    server._arrived.notify_all()
                server.respond(self, body, step)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def wait_for(self, n: int, timeout: float = 60.0) -> bool:
        """Whether ``n`` requests arrived within ``timeout`` seconds."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= n, timeout)

    def wait_for_bodies(self, n: int, timeout: float = 60.0) -> bool:
        """Whether ``n`` big bodies (``body:``/``stream:``) were ended within ``timeout`` seconds."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.body_bytes) >= n, timeout)

    def respond(self, handler: BaseHTTPRequestHandler, body: dict, step: str) -> None:
        if step == "timeout":
            time.sleep(3)
            return self._send(handler, 200, b"{}")
        if step == "500":
            return self._send(handler, 500, b'{"error": {"message": "scripted failure"}}')
        if step == "badjson":
            return self._send(handler, 200, b'{"choices": [ not json')
        if step == "nochoices":
            return self._send(handler, 200, b'{"id": "x", "object": "chat.completion"}')
        if step == "401":
            echo = handler.headers.get("Authorization", "")
            return self._send(handler, 401, json.dumps({"error": {"message": f"bad key {echo}"}}).encode())
        if step.startswith("status:"):
            _, code, after = step.split(":", 2)
            return self._send(handler, int(code), b'{"error": {"message": "scripted refusal"}}',
                              {"Retry-After": after} if after else {})
        if step == "hold":
            self._closing.wait()
            return None
        if step.startswith(("body:", "stream:")):
            return self._big(handler, int(step.split(":")[1]), with_length=step.startswith("body:"))
        message = body["messages"][-1]["content"]
        if step.startswith("slow:"):
            time.sleep(float(step[5:]))
        elif self.delay:
            time.sleep(self.delay)
        reply = self.answer(message)
        if step.startswith("text:"):
            reply = step[5:]
        elif step.startswith("huge:"):
            reply = "x" * int(step[5:])
        elif step == "echo":
            reply = f"2 (sent with {handler.headers.get('Authorization', '')})"
        elif step.startswith("cut:"):
            reply = step[4:]
        payload = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(message.split()), "completion_tokens": 1, "total_tokens": len(message.split()) + 1},
        }
        if step.startswith("cut:"):
            payload["choices"][0]["finish_reason"] = "length"
        data = json.dumps(payload).encode()
        if step == "gzip":
            return self._send(handler, 200, gzip.compress(data), {"Content-Encoding": "gzip"})
        if step.startswith("drip:"):
            return self._drip(handler, data, float(step[5:]))
        return self._send(handler, 200, data)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _big(self, handler: BaseHTTPRequestHandler, size: int, *, with_length: bool) -> None:
        """A body of ``size`` bytes (the start of a JSON reply, then spaces), written 64 KiB at a
        time; the bytes written before the client closed the connection go to ``body_bytes``."""
        head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        head += f"Content-Length: {size}\r\n" if with_length else "Connection: close\r\n"
        handler.close_connection = True
        written = 0
        try:
            handler.wfile.write((head + "\r\n").encode())
            start = b'{"choices": [{"message": {"content": "'
            handler.wfile.write(start)
            written = len(start)
            block = b" " * 65536
            while written < size:
                part = block[:size - written]
                handler.wfile.write(part)
                written += len(part)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with self._lock:
                self.body_bytes.append(written)
                self._arrived.notify_all()

    def _drip(self, handler: BaseHTTPRequestHandler, data: bytes, interval: float) -> None:
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                "Connection: close\r\n\r\n").encode()
        handler.close_connection = True
        try:
            for i, byte in enumerate(head + data):
                if i and self._closing.wait(interval):
                    return
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
