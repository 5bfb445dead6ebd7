"""A team's first day in real headless Chromium against `goldpool serve`: a late annotator
gets the overlap copies, an admin lands on Progress, a sign-in survives a reload and a typed
address, and a note comes back with `u` while Tab then Enter or Space grades nothing.

Waits are for conditions on the page, never fixed sleeps; the timeouts are generous for a
busy machine. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app_fixtures import Project
from labeler.store import connect
from labeler.store import access
from labeler.store.assign import is_overlap
from labels_fixtures import label_all
from browser_helpers import BROWSER, WIDE, idle, launch, new_page, settle, sign_in

pytestmark = [
    # A real browser against a real server on a loaded machine: a run that fails on timing is
    # tried again (at most twice more; pytest reports every rerun).
    pytest.mark.flaky(reruns=2),
    *BROWSER,
]

ARTIFACTS = Path(__file__).parent / "artifacts"
CODE = (
    "def boiling_point(pressure_kpa: float) -> float:\n"
    '    """Boiling point of water in C at a given pressure (Antoine equation)."""\n'
    "    a, b, c = 8.07131, 1730.63, 233.426\n"
    "    mmhg = pressure_kpa * 7.50062\n"
    "    return b / (a - math.log10(mmhg)) - c\n\n"
    "pressure   boils at\n"
    "101.3 kPa  100.0 C\n"
    " 70.1 kPa   90.0 C\n"
)


def _count(project: Project, sql: str, *args: object) -> int:
    with connect(project.path) as db:
        return db.execute(sql, list(args)).fetchone()[0]


def _kept(page) -> None:  # noqa: ANN001
    """Wait until the page has stored its kept sign-in in the cookie."""
    page.wait_for_function("document.cookie.includes('goldpool_session=')")


def _press(page, key: str) -> None:  # noqa: ANN001
    idle(page)
    page.keyboard.press(key)


def test_an_annotator_arriving_after_the_other_finished_gets_the_overlap(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    with connect(project.path) as db:
        assert label_all(db, [project.annotator_id]) == project.n_items  # bob alone, all of it
        overlap = {tuple(r) for r in db.execute("SELECT query_id, doc_id FROM pool") if is_overlap(*r, 0.2)}
        _, token = access.add_annotator(db, "cy")
    assert overlap
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser.new_context(viewport=WIDE))
            sign_in(page, url, token)
            for done in range(1, len(overlap) + 1):
                expect(page.locator(".gp-chunk")).to_be_visible()
                _press(page, "2")
                expect(page.get_by_text(f"you: {done} labelled", exact=False)).to_be_visible()
            expect(page.get_by_text("Nothing left to label")).to_be_visible()
        finally:
            browser.close()
    with connect(project.path) as db:
        cy_labelled = {
            tuple(r) for r in db.execute(
                "SELECT j.query_id, j.doc_id FROM judgments j JOIN annotators n ON n.id = j.annotator_id "
                "WHERE n.name = 'cy'"
            )
        }
    assert cy_labelled == overlap


def test_an_admin_lands_on_progress_and_gets_work_only_by_choosing_it(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    held = "SELECT count(*) FROM reservations WHERE annotator_id = ? AND expires_at > strftime('%Y-%m-%dT%H:%M:%f', 'now')"
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser.new_context(viewport=WIDE))
            sign_in(page, url, project.admin_token)
            expect(page.get_by_role("heading", name="Progress")).to_be_visible()
            idle(page)
            assert _count(project, "SELECT count(*) FROM assignments WHERE annotator_id = ?", project.admin_id) == 0
            page.get_by_role("link", name="Label").click()  # the admin chooses to label
            expect(page.locator(".gp-chunk")).to_be_visible()
            assert _count(project, held, project.admin_id) > 0
            page.get_by_role("link", name="Progress").click()  # and stops: nothing stays held
            expect(page.get_by_role("heading", name="Progress")).to_be_visible()
            idle(page)
            assert _count(project, held, project.admin_id) == 0
        finally:
            browser.close()


def test_a_sign_in_survives_a_reload_and_a_typed_address_until_sign_out(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            context = browser.new_context(viewport=WIDE)
            page = new_page(context)
            sign_in(page, url, project.admin_token)
            expect(page.get_by_role("heading", name="Progress")).to_be_visible()
            _kept(page)
            page.reload()
            expect(page.get_by_role("heading", name="Progress")).to_be_visible()
            page.goto(url + "annotators")  # typed in the address bar
            expect(page.get_by_role("heading", name="Annotators")).to_be_visible()
            expect(page.get_by_label("Access token")).to_have_count(0)
            (kept,) = [c for c in context.cookies() if c["name"] == "goldpool_session"]
            assert kept["sameSite"] == "Strict" and 0 < kept["expires"]
            assert project.admin_token.split(".", 1)[1] not in kept["value"]
            assert project.admin_token.split(".", 1)[1] not in page.url
            page.get_by_role("button", name="Sign out").click()
            expect(page.get_by_label("Access token")).to_be_visible()
            page.reload()
            expect(page.get_by_label("Access token")).to_be_visible()
            assert _count(project, "SELECT count(*) FROM sessions WHERE annotator_id = ?", project.admin_id) == 0

            # An annotator's kept sign-in ends when a new token is issued: the next key meets the form.
            bob = new_page(context)
            sign_in(bob, url, project.annotator_token)
            expect(bob.locator(".gp-chunk")).to_be_visible()
            _kept(bob)
            bob.reload()
            expect(bob.locator(".gp-chunk")).to_be_visible()
            with connect(project.path) as db:
                access.rotate_token(db, "bob")
            settle(bob)
            _press(bob, "2")
            expect(bob.get_by_label("Access token")).to_be_visible()
            bob.reload()
            expect(bob.get_by_label("Access token")).to_be_visible()
            assert _count(project, "SELECT count(*) FROM judgments WHERE annotator_id = ?", project.annotator_id) == 0
        finally:
            browser.close()


def test_a_note_comes_back_with_u_and_tab_then_enter_grades_nothing(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    rows = "SELECT count(*) FROM judgments WHERE annotator_id = ?"
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser.new_context(viewport=WIDE))
            sign_in(page, url, project.annotator_token)
            note = page.get_by_label("Note (optional)")
            expect(note).to_be_visible()
            idle(page)
            note.focus()
            page.keyboard.type("only the title matches")
            page.keyboard.press("Tab")
            settle(page)
            _press(page, "2")
            expect(page.get_by_text("you: 1 labelled", exact=False)).to_be_visible()
            expect(note).to_have_value("")
            _press(page, "u")
            expect(page.get_by_text("Your label: 2 ·", exact=False)).to_be_visible()
            expect(note).to_have_value("only the title matches")
            # Tab out of the note, then Enter and Space: nothing is graded.
            idle(page)
            note.focus()
            page.keyboard.press("Tab")
            idle(page)
            page.keyboard.press("Enter")
            page.keyboard.press(" ")
            idle(page)
            page.get_by_role("button", name="0 · Irrelevant").focus()  # even on the button itself
            page.keyboard.press("Enter")
            page.keyboard.press(" ")
            idle(page)
            assert _count(project, rows, project.annotator_id) == 1
            expect(page.get_by_text("Your label: 2 ·", exact=False)).to_be_visible()
            _press(page, "3")  # the grade keys still work
            expect(page.get_by_text("Your label: not labelled yet")).to_be_visible()
            with connect(project.path) as db:
                last = db.execute("SELECT relevance, note FROM judgments ORDER BY id DESC LIMIT 1").fetchone()
            assert tuple(last) == (3, "only the title matches")
        finally:
            browser.close()


def test_screenshots_of_a_code_chunk_and_issuing_a_token(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    with connect(project.path) as db:
        db.execute("UPDATE documents SET title = 'Water: boiling point by pressure', text = ? WHERE doc_id LIKE 'q1-%'", [CODE])
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser.new_context(viewport=WIDE))
            sign_in(page, url, project.annotator_token)
            expect(page.locator(".gp-mono")).to_be_visible()
            idle(page)
            for grade in range(4):  # every grade button is inside the window, none needs scrolling
                box = page.get_by_role("button", name=f"{grade} ·").bounding_box()
                assert box is not None and box["y"] + box["height"] <= WIDE["height"]
            page.screenshot(path=str(ARTIFACTS / "label-code-1400x900.png"), animations="disabled")

            admin = new_page(browser.new_context(viewport=WIDE))
            sign_in(admin, url, project.admin_token)
            expect(admin.get_by_role("heading", name="Progress")).to_be_visible()
            _kept(admin)
            admin.goto(url + "annotators")
            expect(admin.get_by_role("heading", name="Annotators")).to_be_visible()
            idle(admin)
            admin.get_by_label("Name").fill("cy")
            admin.get_by_role("button", name="Add").click()
            expect(admin.get_by_text("shown only this once", exact=False)).to_be_visible()
            expect(admin.locator("[data-testid='stCode'] code")).to_contain_text("gp")
            idle(admin)
            admin.screenshot(path=str(ARTIFACTS / "annotators-token.png"), animations="disabled", full_page=True)
            token = admin.locator("[data-testid='stCode'] code").inner_text().strip()
            with connect(project.path) as db:
                assert access.authenticate(db, token).name == "cy"
        finally:
            browser.close()
