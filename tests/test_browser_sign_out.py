"""Two tabs of one browser in real headless Chromium against `goldpool serve`: a sign-out in
one ends the other's sign-in at its next key press, which saves nothing and says so; and the
key hints on the buttons show the keys in the case they are typed.

Waits are for conditions on the page, never fixed sleeps.
"""

from __future__ import annotations

import pytest

from app_fixtures import Project
from browser_helpers import BROWSER, WIDE, idle, launch, new_page, sign_in, judgments
from labeler.ui import state

pytestmark = [pytest.mark.flaky(reruns=2), *BROWSER]


def test_a_sign_out_in_one_tab_ends_the_sign_in_of_the_other_tab(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            context = browser.new_context(viewport=WIDE)
            first = new_page(context)
            sign_in(first, url, project.annotator_token)
            expect(first.locator(".gp-chunk")).to_be_visible()
            first.wait_for_function("document.cookie.includes('goldpool_session=')")
            second = new_page(context)  # a second tab: signed in from the cookie
            second.goto(url)
            expect(second.locator(".gp-chunk")).to_be_visible()
            idle(second)
            second.keyboard.press("2")
            expect(second.get_by_text("you: 1 labelled", exact=False)).to_be_visible()
            assert len(judgments(project)) == 1
            idle(first)
            first.get_by_role("button", name="Sign out").click()
            expect(first.get_by_label("Access token")).to_be_visible()
            idle(second)
            second.keyboard.press("3")  # the tab left open: its next key
            expect(second.get_by_label("Access token")).to_be_visible()
            expect(second.get_by_text(state.KEY_NOT_SAVED)).to_be_visible()
            expect(second.get_by_text(state.ENDED_ELSEWHERE, exact=False)).to_be_visible()
            assert len(judgments(project)) == 1
        finally:
            browser.close()


def test_the_key_hints_show_the_keys_in_the_case_they_are_typed(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser.new_context(viewport=WIDE))
            sign_in(page, url, project.annotator_token)
            expect(page.locator(".gp-chunk")).to_be_visible()
            idle(page)
            back, skip = page.locator('[aria-label="Shortcut U"]'), page.locator('[aria-label="Shortcut S"]')
            assert (back.inner_text(), skip.inner_text()) == ("u", "s")
            page.keyboard.press("Shift+U")  # what the hint "U" would ask for does nothing
            idle(page)
            expect(page.get_by_text("There is no earlier item", exact=False)).to_have_count(0)
        finally:
            browser.close()
