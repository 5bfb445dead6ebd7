"""The nugget support page in headless Chromium against `goldpool serve`, keyboard only, at
1400x900: a long answer and its 20 nuggets, then a short one; the nugget, the answer and the
keys stay in the window; nothing names the system, the judge or where a nugget came from;
texts are escaped; the time from a key press to the next nugget drawn is measured in the page.

Needs Debian's Chromium on the PATH (tests/browser_helpers.py); skipped, loudly, where it
is missing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from app_fixtures import FILLER, JUDGE_NAME, SYSTEM_NAME, XSS_PAYLOAD, Project
from browser_helpers import BROWSER, WIDE, idle, launch, new_page, sign_in
from nugget_fixtures import run, support_records, write_jsonl
from labeler.store import connect

ARTIFACTS = Path(__file__).parent / "artifacts"
N_LONG = 20  # nuggets of the long answer's question
KEYS = {"2": "SUPPORT", "1": "PARTIAL_SUPPORT", "0": "NOT_SUPPORT"}

pytestmark = [pytest.mark.flaky(reruns=2), *BROWSER]

_RECTS = """(sel) => Array.from(document.querySelectorAll(sel)).map(e => {
  const r = e.getBoundingClientRect(); return [r.top, r.bottom, r.left, r.right]; })"""

# Before any script of the page: the time of every keydown, seen before the key guard takes it.
KEY_CLOCK = "window.addEventListener('keydown', () => { window.__gpKeyAt = performance.now(); }, true);"

# Resolves with the milliseconds from the last keydown to the frame that paints another item
# than ``before``; kept on the page (evaluating the promise waits for it).
WAIT_NEXT = """(before) => { window.__gpNext = new Promise((resolve) => {
  setTimeout(() => resolve(null), 60000);
  const item = () => { const e = document.querySelector('.gp-support'); return e ? e.innerHTML : null; };
  const check = () => {
    if (item() !== null && item() !== before) {
      observer.disconnect();
      requestAnimationFrame(() => resolve(performance.now() - window.__gpKeyAt));
    }
  };
  const observer = new MutationObserver(check);
  observer.observe(document.body, {subtree: true, childList: true, characterData: true});
}); }"""


def add_support_work(path: Path) -> None:
    """q1: 20 nuggets (the 7th carries the script payload) and a long answer of
    :data:`SYSTEM_NAME` (about 8,000 characters, the payload inside), a judge's verdict on each
    pair; q2: 2 nuggets, no answer yet."""
    folder = path.parent
    nuggets = [{"query_id": "q1", "text": (f"Water boils at {90 + k} degrees {XSS_PAYLOAD}" if k == 7 else
                                           f"Water boils at {90 + k} degrees at sea level"),
                "importance": "vital" if k % 3 == 1 else "okay", "doc_ids": ["q1-d1"]} for k in range(1, N_LONG + 1)]
    nuggets += [{"query_id": "q2", "text": t, "importance": "vital"} for t in ("Canberra is the capital", "It is planned")]
    run("import-nuggets", path, write_jsonl(folder / "nuggets.jsonl", nuggets))
    long = f"Water boils at 100 degrees {XSS_PAYLOAD} & at sea level. " + FILLER * 100 + "End of the answer."
    run("import-answers", path, write_jsonl(folder / "support-answers.jsonl", [
        {"answer_id": "long-answer", "query_id": "q1", "response": long}]), "--system", SYSTEM_NAME)
    judged = {("long-answer", f"q1/n{k}"): "support" for k in range(1, N_LONG + 1)}
    run("import-verdicts", path, write_jsonl(folder / "judge.jsonl", support_records(judged)), "--judge", JUDGE_NAME)


def add_short_answer(path: Path) -> None:
    """A second answer of :data:`SYSTEM_NAME`, to q2 (2 nuggets), imported while the app runs."""
    run("import-answers", path, write_jsonl(path.parent / "short-answer.jsonl", [
        {"answer_id": "short-answer", "query_id": "q2", "response": "Canberra."}]), "--system", SYSTEM_NAME)


def _verdicts(project: Project) -> list[tuple[str, str]]:
    with connect(project.path) as db:
        return db.execute("SELECT h.item_id, h.verdict FROM human_verdicts h JOIN nugget_items i ON i.item_id = h.item_id "
                          "WHERE h.annotator_id = ? ORDER BY h.id", [project.annotator_id]).fetchall()


def _shown(page) -> None:  # noqa: ANN001 - playwright's Page
    """One item, blind: no system, answer id, judge or nugget provenance; the payload is text."""
    html = page.content()
    for marker in (SYSTEM_NAME, JUDGE_NAME, "long-answer", "short-answer", "q1/n", "q1-d1"):
        assert marker not in html, marker
    assert page.locator(".gp-support").count() == 1
    assert page.locator(".gp-support script, .gp-support img").count() == 0


def _in_view(page) -> None:  # noqa: ANN001
    height, width = page.evaluate("[innerHeight, innerWidth]")
    assert (width, height) == (WIDE["width"], WIDE["height"])
    for selector in ('[class*="st-key-gp_nuggets_choice_"] button', ".st-key-gp_nuggets_back button",
                     ".st-key-gp_nuggets_skip button", ".gp-question", ".gp-nugget", ".gp-response"):
        rects = page.evaluate(_RECTS, selector)
        assert rects, selector
        for top, bottom, left, right in rects:
            assert 0 <= top < bottom <= height and 0 <= left < right <= width, (selector, top, bottom, left, right)


def _press(page, key: str) -> float:  # noqa: ANN001
    """Press ``key``; the milliseconds until the next item is painted."""
    before = page.locator(".gp-support").inner_html()
    page.evaluate(WAIT_NEXT, before)
    page.keyboard.press(key)
    ms = page.evaluate("window.__gpNext")
    assert ms is not None, f"no next item within a minute of key {key}"
    idle(page)
    return ms


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def _long_answer(page, project: Project) -> list[float]:  # noqa: ANN001
    from playwright.sync_api import expect

    times, pressed = [], []
    for k in range(1, N_LONG + 1):
        idle(page)
        _shown(page)
        _in_view(page)
        expect(page.locator(".gp-counter")).to_contain_text(f"nugget {k} of {N_LONG}")
        assert page.evaluate("(() => { const e = document.querySelector('.gp-response'); "
                             "return e.scrollHeight > e.clientHeight + 100; })()")  # the answer scrolls on its own
        if k == 1:
            assert page.locator(".gp-response mark").count() > 0  # the nugget's words are marked in the answer
            assert XSS_PAYLOAD in page.locator(".gp-response").inner_text()
            page.screenshot(path=str(ARTIFACTS / "support-1400x900.png"), animations="disabled")
        if k == 7:
            assert XSS_PAYLOAD in page.locator(".gp-nugget").inner_text()
        if k == 3:  # back to nugget 2: its verdict is shown and a key changes it
            times.append(_press(page, "u"))
            expect(page.locator(".gp-counter")).to_contain_text(f"nugget 2 of {N_LONG}")
            expect(page.get_by_text("Your verdict: partial support")).to_be_visible()
            times.append(_press(page, "0"))
            pressed.append("0")
            expect(page.locator(".gp-counter")).to_contain_text(f"nugget 3 of {N_LONG}")
        key = "210"[(k - 1) % 3]
        pressed.append(key)
        if k == N_LONG:  # the last: nothing comes after it
            page.keyboard.press(key)
            expect(page.get_by_text(f"Nugget support: judged {N_LONG} of {N_LONG}")).to_be_visible()
            break
        times.append(_press(page, key))
    assert [v for _, v in _verdicts(project)] == [KEYS[k] for k in pressed]
    return times


def test_support_page_by_keyboard_in_chromium_with_a_long_answer_and_20_nuggets(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    add_support_work(project.path)
    ARTIFACTS.mkdir(exist_ok=True)
    dialogs: list[str] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser, WIDE)
            page.add_init_script(KEY_CLOCK)
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            sign_in(page, url + "nuggets", project.annotator_token)
            expect(page.get_by_text(f"Nugget support: judged 0 of {N_LONG}")).to_be_visible()
            times = _long_answer(page, project)
            expect(page.get_by_text("Nothing left to judge here")).to_be_visible()
            add_short_answer(project.path)
            page.goto(url + "nuggets")
            expect(page.locator(".gp-counter")).to_contain_text("nugget 1 of 2")  # the new answer, its nuggets in a row
            idle(page)
            _shown(page)
            times.append(_press(page, "s"))  # skipped: it comes back once nothing else is left
            times.append(_press(page, "2"))
            _shown(page)
            expect(page.locator(".gp-counter")).to_contain_text("nugget 1 of 2")
            page.keyboard.press("1")
            expect(page.get_by_text("Nothing left to judge here")).to_be_visible()
            assert dialogs == []
        finally:
            browser.close()
    found = _verdicts(project)
    assert len(found) == N_LONG + 1 + 2 and found[-2:] == [(found[-2][0], "SUPPORT"), (found[-1][0], "PARTIAL_SUPPORT")]
    assert found[-2][0].endswith("q2/n2") and found[-1][0].endswith("q2/n1")
    timing = {"presses": len(times), "p50_ms": round(sorted(times)[len(times) // 2], 1), "p95_ms": round(_p95(times), 1),
              "max_ms": round(max(times), 1)}
    (ARTIFACTS / "support-timing.json").write_text(json.dumps(timing, indent=1) + "\n", encoding="utf-8")
    print("key -> next nugget in Chromium:", timing)
    assert timing["p95_ms"] < 5000
