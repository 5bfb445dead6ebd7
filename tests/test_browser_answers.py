"""The claims, correctness and answer relevance pages in headless Chromium against `goldpool serve`,
keyboard only, at 1400x900 with long texts: the keys and the text judged stay in the window.

Needs Debian's Chromium on the PATH (tests/browser_helpers.py); skipped, loudly, where it
is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app_fixtures import JUDGE_NAME, JUDGE_RAW, SYSTEM_NAME, XSS_PAYLOAD, Project, add_answers
from browser_helpers import BROWSER, WIDE, idle, launch, new_page, sign_in
from labeler.store import connect

ARTIFACTS = Path(__file__).parent / "artifacts"

pytestmark = [
    # A real browser against a real server on a loaded machine: a run that fails on timing is
    # tried again (at most twice more; pytest reports every rerun).
    pytest.mark.flaky(reruns=2),
    *BROWSER,
]

_RECTS = """(sel) => Array.from(document.querySelectorAll(sel)).map(e => {
  const r = e.getBoundingClientRect(); return [r.top, r.bottom, r.left, r.right]; })"""


def _verdicts(project: Project, kind: str) -> list[tuple[str, str, str]]:
    with connect(project.path) as db:
        return db.execute(
            "SELECT h.item_id, h.verdict, h.note FROM human_verdicts h JOIN verdict_items i ON i.item_id = h.item_id "
            "WHERE h.annotator_id = ? AND i.kind = ? ORDER BY h.id", [project.annotator_id, kind]).fetchall()


def _shown(page) -> None:  # noqa: ANN001 - playwright's Page
    """One item on the page, and nothing on it names the system, the judge or shows its reply."""
    html = page.content()
    for marker in (SYSTEM_NAME, JUDGE_NAME, JUDGE_RAW):
        assert marker not in html
    assert page.locator(".gp-answer").count() == 1  # the new item replaced the old one whole
    assert page.locator(".gp-answer script, .gp-answer img").count() == 0


def _in_view(page, task: str, *texts: str) -> None:  # noqa: ANN001
    """Every key of the page (verdicts, back, skip) and every box ``texts`` names lie inside the window."""
    height, width = page.evaluate("[innerHeight, innerWidth]")
    assert (width, height) == (WIDE["width"], WIDE["height"])
    for selector in (f'[class*="st-key-gp_{task}_choice_"] button', f".st-key-gp_{task}_back button",
                     f".st-key-gp_{task}_skip button", *texts):
        rects = page.evaluate(_RECTS, selector)
        assert rects, selector
        for top, bottom, left, right in rects:
            assert 0 <= top < bottom <= height and 0 <= left < right <= width, (selector, top, bottom, left, right)


def _scrolls(page, selector: str) -> None:  # noqa: ANN001
    """The box scrolls on its own: it holds more than it shows."""
    assert page.evaluate("(sel) => { const e = document.querySelector(sel); return e.scrollHeight > e.clientHeight + 100; }",
                         selector)


def _claims(page, project: Project, url: str) -> None:  # noqa: ANN001
    from playwright.sync_api import expect

    sign_in(page, url + "claims", project.annotator_token)
    expect(page.get_by_text("Claims: judged 0 of 9")).to_be_visible()
    keys = {1: "1", 2: "0", 3: "x"}  # by the claim's number in its answer: marked word for word, re-spaced, not found
    apart = False
    for done in range(1, 10):
        idle(page)
        _shown(page)
        if page.locator(".gp-claim-apart").count():
            n, box = 3, ".gp-claim-apart"
            assert page.locator("mark.gp-claim").count() == 0
        else:
            marked = page.locator("mark.gp-claim").inner_text()
            n, box = (2, "mark.gp-claim") if marked.startswith("It") else (1, "mark.gp-claim")
            if XSS_PAYLOAD in marked:  # shown as text
                assert marked.startswith("River 1 is long <script>")
        _in_view(page, "claims", ".gp-response", ".gp-reading", box)  # the contexts' box scrolls in the frame
        _scrolls(page, ".gp-reading")
        if done == 1:
            page.screenshot(path=str(ARTIFACTS / "claims-1400x900.png"), animations="disabled")
        if n == 3 and not apart:
            apart = True
            page.screenshot(path=str(ARTIFACTS / "claims-apart-1400x900.png"), animations="disabled")
        if done == 2:  # keys typed into the note are text, not verdicts; Tab leaves the field
            page.get_by_label("Note (optional)").focus()
            page.keyboard.type("x10 compound")
            page.keyboard.press("Tab")
        page.keyboard.press(keys[n])
        expect(page.get_by_text(f"Claims: judged {done} of 9")).to_be_visible()
        item_id, verdict, note = _verdicts(project, "claims")[-1]
        assert (item_id.rsplit("#", 1)[1], verdict) == (str(n), {1: "SUPPORTED", 2: "UNSUPPORTED", 3: "NOT_ONE_CLAIM"}[n])
        assert note == ("x10 compound" if done == 2 else "")
    assert len({r[0] for r in _verdicts(project, "claims")}) == 9
    expect(page.get_by_text("Nothing left to judge here")).to_be_visible()


def _question(page) -> int:  # noqa: ANN001
    """The number of the answer on screen, read from its question."""
    return int(page.locator(".gp-question").inner_text().split(":")[0].rsplit(" ", 1)[1])


def _press(page, key: str, before: int) -> None:  # noqa: ANN001
    """Press ``key`` and wait until another item than answer ``before``'s is drawn."""
    from playwright.sync_api import expect

    page.keyboard.press(key)
    expect(page.locator(".gp-question")).not_to_contain_text(f"question {before}:")
    idle(page)


def _correctness(page, project: Project, url: str) -> None:  # noqa: ANN001
    from playwright.sync_api import expect

    page.goto(url + "correctness")
    expect(page.get_by_text("Correctness: judged 0 of 3")).to_be_visible()
    idle(page)
    _shown(page)
    _in_view(page, "correctness", ".gp-question", ".gp-response", ".gp-reading")
    _scrolls(page, ".gp-reading")
    _scrolls(page, ".gp-response")
    page.screenshot(path=str(ARTIFACTS / "correctness-1400x900.png"), animations="disabled")
    first = _question(page)
    _press(page, "1", first)
    second = _question(page)
    _press(page, "u", second)  # back to the first: its verdict is shown, and a key changes it
    assert _question(page) == first
    expect(page.get_by_text("Your verdict: correct")).to_be_visible()
    _press(page, "0", first)
    assert _question(page) == second
    _press(page, "s", second)  # skipped: it comes back once nothing else is left
    third = _question(page)
    _press(page, "1", third)
    assert _question(page) == second
    _shown(page)
    page.keyboard.press("0")
    expect(page.get_by_text("Correctness: judged 3 of 3")).to_be_visible()
    item = f"{SYSTEM_NAME}-{{}}@correctness".format
    assert [r[:2] for r in _verdicts(project, "correctness")] == [
        (item(first), "CORRECT"), (item(first), "INCORRECT"), (item(third), "CORRECT"), (item(second), "INCORRECT")]
    with connect(project.path) as db:
        assert db.execute("SELECT item_id FROM verdict_skips").fetchall() == [(item(second),)]


def _relevance(page, project: Project, url: str) -> None:  # noqa: ANN001
    from playwright.sync_api import expect

    page.goto(url + "answer-relevance")
    expect(page.get_by_text("Answer relevance: judged 0 of 3")).to_be_visible()
    shown = []
    for done, key in enumerate(("1", "d", "0"), start=1):  # d: declines to answer
        idle(page)
        _shown(page)
        _in_view(page, "answer-relevance", ".gp-question", ".gp-response")
        if done == 1:
            _scrolls(page, ".gp-response")
            assert page.locator(".gp-reference, .gp-contexts").count() == 0
            page.screenshot(path=str(ARTIFACTS / "answer-relevance-1400x900.png"), animations="disabled")
        shown.append(_question(page))
        page.keyboard.press(key)
        expect(page.get_by_text(f"Answer relevance: judged {done} of 3")).to_be_visible()
    assert [r[:2] for r in _verdicts(project, "answer-relevance")] == [
        (f"{SYSTEM_NAME}-{k}@answer-relevance", v) for k, v in zip(shown, ("ADDRESSES", "DECLINES", "MISSES"), strict=True)]


def test_pages_on_answers_by_keyboard_in_chromium_with_long_texts(served: tuple[Project, str]) -> None:
    from playwright.sync_api import sync_playwright

    project, url = served
    add_answers(project.path, long_texts=True)
    ARTIFACTS.mkdir(exist_ok=True)
    dialogs: list[str] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser, WIDE)
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            _claims(page, project, url)
            _correctness(page, project, url)
            _relevance(page, project, url)
            assert dialogs == []
        finally:
            browser.close()
