"""`goldpool serve` in a process of its own, and headless Chromium driving it.

Needs Debian's Chromium, ``chromium`` on the PATH (``apt-get install chromium``; CI installs it).
Nothing here installs anything: a test marked with ``BROWSER`` is skipped, loudly, where the
browser is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from app_fixtures import Project
from labeler.ui import state
from labeler.store import connect

#: The system's Chromium (Debian's ``chromium`` package), found on the PATH; None without it.
CHROMIUM = shutil.which("chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STARTUP_LIMIT = 60.0  # seconds for the server to answer its health check
UI_TIMEOUT_MS = 20_000  # generous: the machine running the test may be busy
NARROW = {"width": 1100, "height": 900}  # a laptop's window
WIDE = {"width": 1400, "height": 900}  # a desktop's window

#: Marks of every real-browser test: skipped, saying why, where Chromium is missing.
BROWSER = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="BROWSER TEST SKIPPED: no `chromium` on the PATH; run `apt-get install -y chromium`"),
]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(server: subprocess.Popen[bytes], url: str) -> None:
    """Poll the health endpoint until it answers, the server dies, or the limit passes."""
    deadline = time.monotonic() + STARTUP_LIMIT
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        try:  # the pause between polls doubles as the check that the server is still alive
            code = server.wait(timeout=0.25)
        except subprocess.TimeoutExpired:
            continue
        pytest.fail(f"`goldpool serve` exited with code {code} before answering {url}")
    pytest.fail(f"`goldpool serve` did not answer {url} within {STARTUP_LIMIT:.0f} s")


@contextlib.contextmanager
def serving(project: Project, log_path: Path, *, run_as: Sequence[str] = (), **env_extra: str) -> Iterator[str]:
    """Run ``goldpool serve`` on the project until the block ends; yields its URL.

    ``run_as`` goes before the command (e.g. ``setpriv`` and its options, to serve as another
    user); ``env_extra`` is added to its environment. The server's output goes to ``log_path``
    (for a failing run). It runs in a session of its own, so the end stops ``serve`` and the
    Streamlit process it started.
    """
    port = free_port()
    goldpool = Path(sys.executable).with_name("goldpool")
    env = {key: value for key, value in os.environ.items() if key != state.DB_ENV_VAR} | env_extra
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [*run_as, str(goldpool), "serve", str(project.path), "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_healthy(server, f"http://127.0.0.1:{port}/_stcore/health")
            yield f"http://127.0.0.1:{port}/"
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=10)


def launch(playwright, timeout_ms: int = UI_TIMEOUT_MS):  # noqa: ANN001, ANN201 - playwright's objects
    """Headless Chromium, with every ``expect`` waiting up to ``timeout_ms``."""
    from playwright.sync_api import expect

    expect.set_options(timeout=timeout_ms)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def new_page(owner, viewport: dict[str, int] | None = None, timeout_ms: int = UI_TIMEOUT_MS):  # noqa: ANN001, ANN201
    """A page of ``owner`` (a browser, or a context with its own viewport) whose every wait
    lasts up to ``timeout_ms``."""
    page = owner.new_page() if viewport is None else owner.new_page(viewport=viewport)
    page.set_default_timeout(timeout_ms)
    return page


def sign_in(page, url: str, token: str) -> None:  # noqa: ANN001 - playwright's Page
    """Open ``url`` and sign in with ``token`` through the form, by keyboard."""
    page.goto(url)
    page.get_by_label("Access token").fill(token)
    page.keyboard.press("Enter")


def idle(page) -> None:  # noqa: ANN001 - playwright's Page
    """Wait until the app has finished drawing the page."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")


def settle(page) -> None:  # noqa: ANN001 - playwright's Page
    """Wait for the run that leaving a text field (or loading a page) starts, then for the app
    to finish it: that run may begin a moment after the event, after ``idle`` already passed."""
    page.wait_for_timeout(500)
    idle(page)


def no_traceback(page, *words: str) -> None:  # noqa: ANN001 - playwright's Page
    """The page shows no error box, no traceback and none of ``words``."""
    assert page.get_by_test_id("stException").count() == 0
    body = page.locator("body").inner_text()
    for word in ("Traceback", *words):
        assert word not in body


def judgments(project: Project) -> list[dict]:
    """The annotator's judgment rows, oldest first."""
    with connect(project.path) as db:
        return list(db["judgments"].rows_where("annotator_id = ?", [project.annotator_id], order_by="id"))
