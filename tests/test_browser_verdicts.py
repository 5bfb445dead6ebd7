"""Faithfulness and pairwise pages in headless Chromium against `goldpool serve`, keyboard only.

Needs Debian's Chromium on the PATH (tests/browser_helpers.py); skipped, loudly, where it
is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app_fixtures import JUDGE_NAME, JUDGE_RAW, MODEL_NAMES, XSS_PAYLOAD, Project, add_verdict_items
from labeler.store import connect
from browser_helpers import BROWSER, WIDE, idle, launch, new_page, sign_in

ARTIFACTS = Path(__file__).parent / "artifacts"

pytestmark = [
    # A real browser against a real server on a loaded machine: a run that fails on timing is
    # tried again (at most twice more; pytest reports every rerun).
    pytest.mark.flaky(reruns=2),
    *BROWSER,
]


def _verdicts(project: Project, kind: str) -> list[dict]:
    with connect(project.path) as db:
        return list(db.query(
            "SELECT h.item_id, h.verdict, h.shown_order, h.note, h.seconds FROM human_verdicts h "
            "JOIN verdict_items i ON i.item_id = h.item_id WHERE h.annotator_id = ? AND i.kind = ? ORDER BY h.id",
            [project.annotator_id, kind]))


def _blind(page) -> None:  # noqa: ANN001 - playwright's Page
    """Nothing on the page names a model or a judge, or shows the judge's reply."""
    html = page.content()
    for marker in (*MODEL_NAMES, JUDGE_NAME, JUDGE_RAW):
        assert marker not in html
    assert page.locator(".gp-left script, .gp-right script, .gp-response script, img").count() == 0


def _faithfulness(page, project: Project, url: str) -> None:  # noqa: ANN001
    from playwright.sync_api import expect

    sign_in(page, url + "faithfulness", project.annotator_token)
    expect(page.get_by_text("Faithfulness: judged 0 of 4")).to_be_visible()
    keys = ["1", "0", "0", "1"]
    for done, key in enumerate(keys, start=1):
        idle(page)
        _blind(page)
        response = page.locator(".gp-response").inner_text()
        if "Claim" in response:
            assert XSS_PAYLOAD in response  # shown as text, white space kept
            page.screenshot(path=str(ARTIFACTS / "faithfulness.png"), animations="disabled")
        page.keyboard.press(key)
        expect(page.get_by_text(f"Faithfulness: judged {done} of 4")).to_be_visible()
    rows = _verdicts(project, "faithfulness")
    assert [r["verdict"] for r in rows] == ["SUPPORTED" if k == "1" else "UNSUPPORTED" for k in keys]
    assert len({r["item_id"] for r in rows}) == 4 and all(r["shown_order"] is None for r in rows)
    assert all(r["seconds"] is not None and r["seconds"] > 0 for r in rows)
    expect(page.get_by_text("Nothing left to judge here")).to_be_visible()


def _pairwise(page, project: Project, url: str) -> list[str]:  # noqa: ANN001
    from playwright.sync_api import expect

    sign_in(page, url + "pairwise", project.annotator_token)
    expect(page.get_by_text("Pairwise: judged 0 of 8")).to_be_visible()
    keys = ["a", "b", "t", "a", "b", "a", "b", "a"]
    shown: list[str] = []
    for done, key in enumerate(keys, start=1):
        idle(page)
        _blind(page)
        left, right = page.locator(".gp-left").inner_text(), page.locator(".gp-right").inner_text()
        assert ("ALPHA" in left) != ("ALPHA" in right) and ("BETA" in left) != ("BETA" in right)
        shown.append("AB" if "ALPHA" in left else "BA")
        if done == 2:
            page.screenshot(path=str(ARTIFACTS / "pairwise.png"), animations="disabled")
        if done == 3:  # keys typed into the note are text, not verdicts; Tab leaves the field
            page.get_by_label("Note (optional)").focus()
            page.keyboard.type("abt us")
            assert len(_verdicts(project, "pairwise")) == 2
            page.keyboard.press("Tab")
        page.keyboard.press(key)
        expect(page.get_by_text(f"Pairwise: judged {done} of 8")).to_be_visible()
        last = _verdicts(project, "pairwise")[-1]
        # The order recorded is the order that was on screen; the key named a slot of it.
        assert last["shown_order"] == shown[-1]
        assert last["verdict"] == {"a": shown[-1][0], "b": shown[-1][1], "t": "TIE"}[key]
    rows = _verdicts(project, "pairwise")
    assert len(rows) == 8 and [r["note"] for r in rows].count("abt us") == 1 and rows[2]["note"] == "abt us"
    return shown


def _judges(browser, project: Project, url: str) -> None:  # noqa: ANN001 - playwright's Browser
    """The admin's Judges page names the judge and lists bob's disagreements with it."""
    from playwright.sync_api import expect

    page = new_page(browser, WIDE)
    sign_in(page, url + "judges", project.admin_token)
    expect(page.get_by_role("heading", name="Judges")).to_be_visible()
    expect(page.get_by_text(f"{JUDGE_NAME}: faithfulness")).to_be_visible()
    expect(page.get_by_text("2 disagreements")).to_be_visible()  # bob said UNSUPPORTED twice, the judge never
    board = page.locator("table").first
    expect(board).to_contain_text("first-slot preference")
    expect(board).to_contain_text(JUDGE_NAME)
    page.get_by_text("f2: bob UNSUPPORTED, judge SUPPORTED").click()  # a disagreement opens its item
    expect(page.get_by_text("Context one of item 2.")).to_be_visible()
    idle(page)
    page.screenshot(path=str(ARTIFACTS / "judges.png"), animations="disabled", full_page=True)


def test_faithfulness_and_pairwise_by_keyboard_in_chromium(served: tuple[Project, str]) -> None:
    from playwright.sync_api import sync_playwright

    project, url = served
    add_verdict_items(project.path)
    ARTIFACTS.mkdir(exist_ok=True)
    dialogs: list[str] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser, WIDE)
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            _faithfulness(page, project, url)
            pairwise = new_page(browser, WIDE)
            pairwise.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            shown = _pairwise(pairwise, project, url)
            # Random left/right: both orders came up over the eight items.
            assert set(shown) == {"AB", "BA"}, shown
            _judges(browser, project, url)
            assert dialogs == []
        finally:
            browser.close()
