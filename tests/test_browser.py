"""The real thing: `goldpool serve` driven by headless Chromium, keyboard only.

Needs Debian's Chromium, ``chromium`` on the PATH (``apt-get install chromium``; CI installs it).
The test installs nothing itself and is skipped, loudly, where the browser is missing.
"""

from __future__ import annotations

from pathlib import Path

from app_fixtures import Project
from browser_helpers import BROWSER, NARROW, UI_TIMEOUT_MS, idle, judgments, launch, new_page, settle, sign_in
from labeler.ui import state
from labeler.ui.pages import ADMIN_REFUSAL
from labeler.store import connect

SCREENSHOT = Path(__file__).parent / "artifacts" / "labelling.png"

pytestmark = [
    # No reruns: the page holds keys pressed while a run is on its way and replays them once
    # it is drawn, so these tests pass on a loaded machine as they are.
    *BROWSER,
]


def test_keyboard_labelling_in_chromium(served: tuple[Project, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    dialogs: list[str] = []
    seen: list[str] = []  # every chunk a key was pressed on
    SCREENSHOT.parent.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser, NARROW)
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            sign_in(page, url, project.annotator_token)
            expect(page.get_by_text("you: 0 labelled", exact=False)).to_be_visible()
            _label_ten(page, project, seen)
            idle(page)
            page.screenshot(path=str(SCREENSHOT), animations="disabled")
            _go_back_and_change(page, project, seen)
            _note_does_not_fire_keys(page, project, seen)
            _skip_one_and_finish(page, project, seen)
            assert any("Water facts" in text for text in seen), "the script payload chunk never came up"
            assert dialogs == []

            # An annotator who follows a link to an admin page is refused by the page itself.
            admin_link = browser.new_page()
            sign_in(admin_link, url + "progress", project.annotator_token)
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
    with sync_playwright() as playwright:
        browser = launch(playwright, timeout_ms=UI_TIMEOUT_MS * 2)
        try:
            page = new_page(browser, NARROW, timeout_ms=UI_TIMEOUT_MS * 2)
            sign_in(page, url, project.annotator_token)
            expect(page.get_by_text("you: 0 labelled", exact=False)).to_be_visible()
            settle(page)
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
            idle(page)
            rows = judgments(project)
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
    rows = judgments(project)
    assert [str(r["relevance"]) for r in rows] == keys
    assert len({(r["query_id"], r["doc_id"]) for r in rows}) == 10
    assert all(r["seconds"] is not None and r["seconds"] > 0 for r in rows)


def _go_back_and_change(page, project: Project, seen: list[str]) -> None:  # noqa: ANN001
    """`u` brings back the last item with its label; a new key changes it (a new row)."""
    from playwright.sync_api import expect

    last_grade = judgments(project)[-1]["relevance"]
    _press(page, "u", seen)
    expect(page.get_by_text(f"Your label: {last_grade} ·", exact=False)).to_be_visible()
    _press(page, "3", seen)
    expect(page.get_by_text("Your label: not labelled yet")).to_be_visible()
    rows = judgments(project)
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
    assert len(judgments(project)) == 11
    page.keyboard.press("Tab")  # leaves the field; the grade keys work again
    settle(page)  # the note reaches the server when the field is left
    _press(page, "2", seen)
    expect(page.get_by_text("you: 11 labelled", exact=False)).to_be_visible()
    last = judgments(project)[-1]
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
    idle(page)
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

    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser, NARROW)
            page.route("**/static/js/Button.*.js", hold)
            sign_in(page, url, project.annotator_token)
            expect(page.locator(".gp-chunk")).to_be_visible()
            page.wait_for_function("window.__goldpoolKeyGuard === true")
            idle(page)
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
