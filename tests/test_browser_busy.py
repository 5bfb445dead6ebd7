"""A grade pressed in real Chromium while another process holds the write lock.

The server runs with a 1 s busy timeout and the lock is held about 8 s, so the press outlasts
the timeout: the page must keep the grade, say it will be saved, never show a traceback, and
the grade must be in the database once the lock is free.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app_fixtures import HOLDER, Project, build_project
from labeler.store import connect
from labeler.store.connection import BUSY_TIMEOUT_ENV
from browser_helpers import BROWSER, NARROW, idle, launch, new_page, no_traceback, serving, settle, sign_in

pytestmark = [
    # No reruns: the page holds keys pressed while a run is on its way and replays them once
    # it is drawn, so these tests pass on a loaded machine as they are.
    *BROWSER,
]

LOCK_SECONDS = 20.0  # the notice comes after two 1 s waits for the lock; a busy machine (or a slow run) adds to that


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Project, str]]:
    project = build_project(tmp_path)
    with serving(project, tmp_path / "serve.log", **{BUSY_TIMEOUT_ENV: "1"}) as url:
        yield project, url


def _rows(project: Project) -> list[tuple[str, str, int]]:
    with connect(project.path) as db:
        return db.execute("SELECT query_id, doc_id, relevance FROM judgments ORDER BY id").fetchall()


def _no_traceback(page) -> None:  # noqa: ANN001 - playwright's Page
    no_traceback(page, "OperationalError", "database is locked")


def test_a_grade_pressed_while_the_lock_is_held_is_saved_after(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser, NARROW)
            sign_in(page, url, project.annotator_token)
            expect(page.get_by_text("This batch: 0 of", exact=False)).to_be_visible()
            settle(page)  # the run that writes the kept sign-in cookie may start after load
            chunk = page.locator(".gp-chunk").inner_text()
            holder = subprocess.Popen(
                [sys.executable, "-c", HOLDER, str(project.path), str(LOCK_SECONDS)],
                stdout=subprocess.PIPE,
                text=True,
            )
            try:
                assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
                held_from = time.monotonic()
                page.keyboard.press("2")
                expect(page.get_by_text("Your key press is kept", exact=False)).to_be_visible()
                assert time.monotonic() - held_from < LOCK_SECONDS, "the notice came only after the lock was gone"
                assert _rows(project) == []
                while holder.poll() is None:
                    _no_traceback(page)
                    page.wait_for_timeout(200)
            finally:
                holder.kill()
                holder.wait()
            expect(page.get_by_text("This batch: 1 of", exact=False)).to_be_visible()
            idle(page)
            _no_traceback(page)
            rows = _rows(project)
            assert len(rows) == 1 and rows[0][2] == 2
            assert page.locator(".gp-chunk").inner_text() != chunk
            # Labelling goes on normally afterwards.
            page.keyboard.press("1")
            expect(page.get_by_text("This batch: 2 of", exact=False)).to_be_visible()
            assert [r[2] for r in _rows(project)] == [2, 1]
            _no_traceback(page)
        finally:
            browser.close()
