"""An archived project served by `goldpool serve` as a user who cannot write it, in Chromium:
people sign in and read, the page says plainly that the project is read-only, and nothing
shows a traceback or where the server keeps its files."""

from __future__ import annotations

from pathlib import Path

from app_fixtures import AS_NOBODY, NEEDS_NOBODY, NOBODY_ENV, Project, make_readonly
from browser_helpers import BROWSER, WIDE, idle, launch, new_page, no_traceback, serving, settle, sign_in
from labeler.ui import state

pytestmark = [*BROWSER, NEEDS_NOBODY]


def test_people_sign_in_to_a_readonly_project_and_read(archived: Project, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    from labeler import app

    make_readonly(archived.path, "directory")
    before = archived.path.read_bytes()
    hidden = (str(archived.path.parent), "StoreReadOnly", "it can be read, not changed")
    with serving(archived, tmp_path / "serve.log", run_as=AS_NOBODY, **NOBODY_ENV) as url, sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            admin = new_page(browser, WIDE)
            sign_in(admin, url, archived.admin_token)
            settle(admin)
            no_traceback(admin, *hidden)
            expect(admin.get_by_role("heading", name="Progress")).to_be_visible()
            expect(admin.get_by_text(state.READ_ONLY_NOTICE)).to_be_visible()
            expect(admin.get_by_text("Agreement on the overlap")).to_be_visible()
            idle(admin)
            no_traceback(admin, *hidden)

            annotator = new_page(browser, WIDE)
            sign_in(annotator, url, archived.annotator_token)
            expect(annotator.get_by_text(state.READ_ONLY_NOTICE)).to_be_visible()
            expect(annotator.get_by_text(app.READ_ONLY_PAGE)).to_be_visible()
            idle(annotator)
            no_traceback(annotator, *hidden)
            assert [c for c in annotator.context.cookies() if c["name"] == state.COOKIE] == []
        finally:
            browser.close()
    assert archived.path.read_bytes() == before
