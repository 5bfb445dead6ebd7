"""The real thing: `goldpool serve` driven by headless Chromium, keyboard only.

Needs Debian's Chromium, ``chromium`` on the PATH (``apt-get install chromium``; CI installs it).
The test installs nothing itself and is skipped, loudly, where the browser is missing.
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
from collections.abc import Iterator
from pathlib import Path

import pytest

from app_fixtures import Project, build_project
from labeler import state
from labeler.views import ADMIN_REFUSAL
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
SCREENSHOT = Path(__file__).parent / "artifacts" / "labelling.png"
STARTUP_LIMIT = 60.0  # seconds for the server to answer its health check
UI_TIMEOUT_MS = 20_000  # generous: the machine running the test may be busy

#: Marks of every real-browser test: skipped, saying why, where Chromium is missing.
BROWSER = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="BROWSER TEST SKIPPED: no `chromium` on the PATH; run `apt-get install -y chromium`"),
]

pytestmark = [
    # No reruns: the page holds keys pressed while a run is on its way and replays them once
    # it is drawn, so these tests pass on a loaded machine as they are.
    *BROWSER,
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(server: subprocess.Popen[bytes], url: str) -> None:
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
def serving(project: Project, log_path: Path, **env_extra: str) -> Iterator[str]:
    """Run ``goldpool serve`` on the project until the block ends; yields its URL.

    The server's output goes to ``log_path`` (for a failing run). It runs in a session of its
    own, so the end stops ``serve`` and the Streamlit process it started.
    """
    port = _free_port()
    goldpool = Path(sys.executable).with_name("goldpool")
    env = {key: value for key, value in os.environ.items() if key != state.DB_ENV_VAR} | env_extra
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [str(goldpool), "serve", str(project.path), "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _wait_healthy(server, f"http://127.0.0.1:{port}/_stcore/health")
            yield f"http://127.0.0.1:{port}/"
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=10)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Project, str]]:
    project = build_project(tmp_path)
    with serving(project, tmp_path / "serve.log") as url:
        yield project, url


def _judgments(project: Project) -> list[dict]:
    with connect(project.path) as db:
        return list(db["judgments"].rows_where("annotator_id = ?", [project.annotator_id], order_by="id"))


def _sign_in(page, url: str, token: str) -> None:  # noqa: ANN001 - playwright's Page
    page.goto(url)
    page.get_by_label("Access token").fill(token)
    page.keyboard.press("Enter")


def _idle(page) -> None:  # noqa: ANN001 - playwright's Page
    """Wait until the app has finished drawing the page."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")


def _settle(page) -> None:  # noqa: ANN001 - playwright's Page
    """Wait for the run that leaving a text field (or loading a page) starts, then for the app
    to finish it: that run may begin a moment after the event, after ``_idle`` already passed."""
    page.wait_for_timeout(500)
    _idle(page)


def test_keyboard_labelling_in_chromium(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    dialogs: list[str] = []
    seen: list[str] = []  # every chunk a key was pressed on
    expect.set_options(timeout=UI_TIMEOUT_MS)
    SCREENSHOT.parent.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.set_default_timeout(UI_TIMEOUT_MS)
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            _sign_in(page, url, project.annotator_token)
            expect(page.get_by_text("you: 0 labelled", exact=False)).to_be_visible()
            _label_ten(page, project, seen)
            _idle(page)
            page.screenshot(path=str(SCREENSHOT), animations="disabled")
            _go_back_and_change(page, project, seen)
            _note_does_not_fire_keys(page, project, seen)
            _skip_one_and_finish(page, project, seen)
            assert any("Water facts" in text for text in seen), "the script payload chunk never came up"
            assert dialogs == []

            # An annotator who follows a link to an admin page is refused by the page itself.
            admin_link = browser.new_page()
            _sign_in(admin_link, url + "progress", project.annotator_token)
            expect(admin_link.get_by_text(ADMIN_REFUSAL)).to_be_visible()
            expect(admin_link.get_by_text("Agreement on the overlap")).to_have_count(0)
        finally:
            browser.close()


#: How much slower Chromium runs the page in the test of keys pressed ahead of the page: a
#: slow browser applies a run's changes late, which is what let a note or a key get lost.
SLOW_BROWSER = 6


def test_keys_and_notes_typed_ahead_of_a_slow_page_all_land(served: tuple[Project, str]) -> None:
    """Keys pressed and notes typed before the page has drawn the previous key's run all land,
    in order, each on the item it was meant for: none is lost, none goes to another item.

    Chromium runs the page ``SLOW_BROWSER`` times slower (as on a busy machine) and the test
    never waits for the page between keys.
    """
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    expect.set_options(timeout=UI_TIMEOUT_MS * 2)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.set_default_timeout(UI_TIMEOUT_MS * 2)
            _sign_in(page, url, project.annotator_token)
            expect(page.get_by_text("you: 0 labelled", exact=False)).to_be_visible()
            _settle(page)
            page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": SLOW_BROWSER})
            for key in "123":  # three grades at once: three items, in order
                page.keyboard.press(key)
            expect(page.get_by_text("you: 3 labelled", exact=False)).to_be_visible()
            wanted = [(1, ""), (2, ""), (3, "")]
            for n in range(4):
                page.keyboard.press("0")
                wanted.append((0, ""))
                expect(page.get_by_text(f"you: {len(wanted)} labelled", exact=False)).to_be_visible()
                page.get_by_label("Note (optional)").focus()  # at once: the run may still be on its way
                page.keyboard.type(f"note {n}: 0123 us")
                page.keyboard.press("Tab")
                page.keyboard.press("2")  # at once as well
                wanted.append((2, f"note {n}: 0123 us"))
            expect(page.get_by_text(f"you: {len(wanted)} labelled", exact=False)).to_be_visible()
            _idle(page)
            rows = _judgments(project)
            assert [(r["relevance"], r["note"]) for r in rows] == wanted
            assert len({(r["query_id"], r["doc_id"]) for r in rows}) == len(wanted)  # one item each
        finally:
            browser.close()


def _label_ten(page, project: Project, seen: list[str]) -> None:  # noqa: ANN001 - playwright's Page
    from playwright.sync_api import expect

    keys = [str(n % 4) for n in range(10)]
    for done, key in enumerate(keys, start=1):
        _press(page, key, seen)
        expect(page.get_by_text(f"you: {done} labelled", exact=False)).to_be_visible()
    rows = _judgments(project)
    assert [str(r["relevance"]) for r in rows] == keys
    assert len({(r["query_id"], r["doc_id"]) for r in rows}) == 10
    assert all(r["seconds"] is not None and r["seconds"] > 0 for r in rows)


def _go_back_and_change(page, project: Project, seen: list[str]) -> None:  # noqa: ANN001
    """`u` brings back the last item with its label; a new key changes it (a new row)."""
    from playwright.sync_api import expect

    last_grade = _judgments(project)[-1]["relevance"]
    _press(page, "u", seen)
    expect(page.get_by_text(f"Your label: {last_grade} ·", exact=False)).to_be_visible()
    _press(page, "3", seen)
    expect(page.get_by_text("Your label: not labelled yet")).to_be_visible()
    rows = _judgments(project)
    assert len(rows) == 11
    assert (rows[-1]["query_id"], rows[-1]["doc_id"], rows[-1]["relevance"]) == (
        rows[9]["query_id"], rows[9]["doc_id"], 3
    )


def _note_does_not_fire_keys(page, project: Project, seen: list[str]) -> None:  # noqa: ANN001
    """Typing keys that would label, skip or go back into the note fires none of them.

    The note is typed as soon as the new item's label line shows, while the run that drew it
    may still be on its way: the note must be kept all the same.
    """
    from playwright.sync_api import expect

    page.get_by_label("Note (optional)").focus()
    page.keyboard.type("0123 us")
    assert len(_judgments(project)) == 11
    page.keyboard.press("Tab")  # leaves the field; the grade keys work again
    _settle(page)  # the note reaches the server when the field is left
    _press(page, "2", seen)
    expect(page.get_by_text("you: 11 labelled", exact=False)).to_be_visible()
    last = _judgments(project)[-1]
    assert last["relevance"] == 2  # the keys typed into the note fired nothing; Tab then 2 graded
    assert last["note"] == "0123 us"


def _skip_one_and_finish(page, project: Project, seen: list[str]) -> None:  # noqa: ANN001
    """Skip one item (it comes back after the others), then label the rest."""
    from playwright.sync_api import expect

    before = page.locator(".gp-chunk").inner_text()
    _press(page, "s", seen)
    expect(page.get_by_text("Skipped.")).to_be_visible()  # a toast
    expect(page.locator(".gp-chunk")).not_to_have_text(before)
    for done in range(12, project.n_items + 1):
        _press(page, "1", seen)
        expect(page.get_by_text(f"you: {done} labelled", exact=False)).to_be_visible()
    expect(page.get_by_text("Nothing left to label")).to_be_visible()
    with connect(project.path) as db:
        skips = db.execute("SELECT count(*) FROM skips WHERE annotator_id = ?", [project.annotator_id])
        assert skips.fetchone()[0] == 1


def _press(page, key: str, seen: list[str]) -> None:  # noqa: ANN001 - playwright's Page
    """Press ``key`` once the app has finished drawing, as a person would; first check the
    chunk on screen is inert text and note it in ``seen``.

    Waiting lets the check read the chunk the key acts on; keys pressed without waiting are
    the business of ``test_keys_and_notes_typed_ahead_of_a_slow_page_all_land``.
    """
    _idle(page)
    if page.locator(".gp-chunk").count():
        seen.append(_check_chunk(page))
    page.keyboard.press(key)


def _check_chunk(page) -> str:  # noqa: ANN001 - playwright's Page
    """The chunk text on screen, after checking that the payload chunk is inert text."""
    chunk = page.locator(".gp-chunk")
    text = chunk.inner_text()
    if "Water facts" in text:
        assert "<script>alert(1)</script><img src=x onerror=alert(1)>" in text
        assert chunk.locator("script, img").count() == 0
        page.screenshot(path=str(SCREENSHOT.with_name("payload.png")), animations="disabled")
    return text


def test_a_key_pressed_while_the_buttons_still_load_is_kept(served: tuple[Project, str]) -> None:
    """A run can end while an element's code is still on its way to the browser (the page
    shows a placeholder where the grade buttons go); a grade key pressed then waits for its
    button instead of being lost. The button code is held back until the key is pressed."""
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    held: list = []  # requests for the button code, answered once the key is pressed

    def hold(route) -> None:  # noqa: ANN001 - playwright's Route
        held.append(route)

    expect.set_options(timeout=UI_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.set_default_timeout(UI_TIMEOUT_MS)
            page.route("**/static/js/Button.*.js", hold)
            _sign_in(page, url, project.annotator_token)
            expect(page.locator(".gp-chunk")).to_be_visible()
            page.wait_for_function("window.__goldpoolKeyGuard === true")
            _idle(page)
            expect(page.locator(f'.st-key-{state.grade_key(2)} [data-testid="stSkeleton"]')).to_be_visible()
            assert held
            page.keyboard.press("2")
            for route in held:
                route.continue_()
            expect(page.get_by_text("you: 1 labelled", exact=False)).to_be_visible()
        finally:
            browser.close()
    with connect(project.path) as db:
        grades = db.execute("SELECT relevance FROM judgments WHERE annotator_id = ?", [project.annotator_id])
        assert [row[0] for row in grades] == [2]
