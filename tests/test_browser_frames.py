"""What a person sees on the task pages, in headless Chromium against `goldpool serve`.

- One frame per item: the query (or question), its chunk (or contexts and responses) and the
  item counter change together, so the page never shows a text under another item's query,
  even in a slow browser, at item, batch and query changes.
- Long texts scroll in boxes of their own: the judged text and the keys stay in view.
- The note field shows no hint over the text typed into it.

Needs Debian's Chromium on the PATH (tests/browser_helpers.py); skipped, loudly, where it
is missing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app_fixtures import Project, add_answers, build_project
from browser_helpers import BROWSER, UI_TIMEOUT_MS, WIDE, idle, launch, new_page, serving, settle, sign_in
from labeler.ui import state
from labeler.store import connect, now
from labeler.store.access import OWNER
from labeler.store import labels
from labeler.judges.verdict_files import import_items

pytestmark = [*BROWSER]

ARTIFACTS = Path(__file__).parent / "artifacts"

#: How much slower Chromium runs the page: a slow browser draws a run's elements far apart.
SLOW_BROWSER = 6

# Every text of an item carries its item's id: the query or question as [[id]], each chunk,
# context or response as {{id-part}}. The page is then mismatched when it shows a {{...}} of
# one item under the [[...]] of another.
SAMPLER = r"""() => {
  window.__frames = [];
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  let last = '';
  const look = () => {
    const text = main.textContent;
    const asked = [...new Set([...text.matchAll(/\[\[(\w+)\]\]/g)].map(m => m[1]))].sort();
    const texts = [...new Set([...text.matchAll(/\{\{(\w+)-(\w+)\}\}/g)].map(m => m[1] + '-' + m[2]))].sort();
    const counter = (text.match(/item (\d+) of (\d+)/) || [''])[0];
    const seen = JSON.stringify([asked, texts, counter]);
    if (seen !== last) { last = seen; window.__frames.push([asked, texts, counter]); }
  };
  new MutationObserver(look).observe(document.body, {childList: true, subtree: true, characterData: true});
  look();
}"""


def _marked_project(directory: Path, n_queries: int = 8, per_query: int = 2) -> Project:
    """The fixture's annotators over ``n_queries`` queries of ``per_query`` chunks each, every
    text marked with its query's id; and four faithfulness and four pairwise items, marked."""
    project = build_project(directory)
    at = now()
    with connect(project.path) as db:
        for table in ("pool", "documents", "queries"):
            db.execute(f"DELETE FROM {table}")
        queries = [f"q{n}" for n in range(1, n_queries + 1)]
        db["queries"].insert_all({"query_id": q, "text": f"question number {q[1:]} [[{q}]]", "meta": "{}",
                                  "content_hash": q} for q in queries)
        docs = [(q, f"{q}d{n}") for q in queries for n in range(1, per_query + 1)]
        db["documents"].insert_all({"doc_id": d, "title": "", "text": f"A chunk for the question {{{{{q}-{d}}}}}.",
                                    "meta": "{}", "content_hash": d} for q, d in docs)
        db["pool"].insert_all({"query_id": q, "doc_id": d, "sources": "{}", "priority": 0.5, "position": n,
                               "added_at": at, "build_id": 1} for n, (q, d) in enumerate(docs))
        records = []
        for n in range(1, 5):
            records.append({"item_id": f"f{n}", "kind": "faithfulness", "question": f"Is it so? [[f{n}]]",
                            "contexts": [f"First context {{{{f{n}-c1}}}}", f"Second context {{{{f{n}-c2}}}}"],
                            "response": f"It is so {{{{f{n}-r}}}}"})
            records.append({"item_id": f"p{n}", "kind": "pairwise", "question": f"Which is better? [[p{n}]]",
                            "response_a": f"One answer {{{{p{n}-a}}}}", "response_b": f"Another answer {{{{p{n}-b}}}}"})
        items = directory / "items.jsonl"
        items.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        import_items(db, items, caller=OWNER)
        labels.set_settings(db, {"overlap": 0.0}, caller=OWNER)
    return Project(project.path, project.admin_token, project.annotator_token, project.admin_id,
                   project.annotator_id, len(docs))


def _mixed(frames: list) -> list:
    """The page states that showed a text under another item's question, or one text with two
    item counters."""
    bad = []
    counters: dict[str, set[str]] = {}
    for asked, texts, counter in frames:
        owners = {t.split("-")[0] for t in texts}
        if asked and texts and owners != set(asked):
            bad.append((asked, texts, counter))
        if len(asked) == 1 and owners == set(asked) and counter:
            for text in texts:
                counters.setdefault(text, set()).add(counter)
    bad += [(text, sorted(seen)) for text, seen in counters.items() if len(seen) > 1]
    return bad


def _walk(page, key: str, done_text: str, count: int) -> list:  # noqa: ANN001 - playwright's Page
    """Press ``key`` ``count`` times in a slow browser, each once the last one is counted
    (``done_text`` formats the count), recording every state the page passes through."""
    from playwright.sync_api import expect

    idle(page)
    page.evaluate(SAMPLER)
    page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": SLOW_BROWSER})
    for done in range(1, count + 1):
        page.keyboard.press(key)
        expect(page.get_by_text(done_text.format(done), exact=False)).to_be_visible()
    idle(page)
    return page.evaluate("window.__frames")


@pytest.fixture
def marked(tmp_path: Path):  # noqa: ANN201 - a generator fixture
    project = _marked_project(tmp_path)
    with serving(project, tmp_path / "serve.log") as url:
        yield project, url


def test_query_and_chunk_change_together_in_a_slow_browser(marked: tuple[Project, str]) -> None:
    """Across every item, batch and query change of the three task pages, each state the page
    goes through shows one item: never a chunk, context or response under another item's
    question, nor an item counter of another item."""
    from playwright.sync_api import sync_playwright

    project, url = marked
    with sync_playwright() as playwright:
        browser = launch(playwright, timeout_ms=UI_TIMEOUT_MS * 3)
        try:
            walks = []
            for path, key, done_text, count in (("", "1", "you: {} labelled", project.n_items),
                                                ("faithfulness", "1", "judged {} of", 4),
                                                ("pairwise", "a", "judged {} of", 4)):
                page = new_page(browser, WIDE, timeout_ms=UI_TIMEOUT_MS * 3)
                sign_in(page, url + path, project.annotator_token)
                page.get_by_text(re.compile(r"\[\[\w+\]\]")).first.wait_for()
                settle(page)
                frames = _walk(page, key, done_text, count)
                walks.append((path or "labelling", len(frames), _mixed(frames)))
                page.close()
        finally:
            browser.close()
    assert all(n > 4 for _, n, _ in walks), walks  # the sampler saw the changes
    assert [(name, bad) for name, _, bad in walks if bad] == [], repr(walks)


#: The windows the layout must fit: a desktop's, and a small laptop's.
WINDOWS = {"1400x900": WIDE, "1280x720": {"width": 1280, "height": 720}}
LONG = 5_000  # characters of each long text

# Whether each drawn element a selector finds lies wholly inside the window: [[selector, inside]].
IN_VIEW = r"""(selectors) => selectors.map(s => [...document.querySelectorAll(s)]
  .map(e => e.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0)
  .map(r => [s, r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth])
).flat()"""


def _long(word: str) -> str:
    sentence = f"{word} sentence with some words in it, and more words after them. "
    return (sentence * (LONG // len(sentence) + 1))[:LONG]


@pytest.fixture
def long_texts(tmp_path: Path):  # noqa: ANN201 - a generator fixture
    """The fixture's project with every chunk 5,000 characters long, a faithfulness item with
    two contexts of 5,000 characters, a pairwise item with two answers as long, and answers
    whose contexts and references are as long (claims, correctness, answer relevance)."""
    project = build_project(tmp_path)
    records = [
        {"item_id": "f1", "kind": "faithfulness", "question": "Is the response supported by the contexts?",
         "contexts": [_long("First context"), _long("Second context")], "response": "The response. " * 30},
        {"item_id": "p1", "kind": "pairwise", "question": "Which answer is better?", "context": _long("Context"),
         "response_a": _long("Left answer"), "response_b": _long("Right answer")},
    ]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with connect(project.path) as db:
        db.execute("UPDATE documents SET text = ?", [_long("Chunk")])
        import_items(db, items, caller=OWNER)
    add_answers(project.path, n=2, long_texts=True, judge=False)  # claims, correctness, answer relevance
    with serving(project, tmp_path / "serve.log") as url:
        yield project, url


def test_the_judged_text_and_the_keys_stay_in_view_beside_long_texts(long_texts: tuple[Project, str]) -> None:
    """At 1400x900 and 1280x720, with two contexts (or answers, or a chunk) of 5,000 characters,
    the response (or both answers) and every key of the page lie wholly inside the window."""
    from playwright.sync_api import sync_playwright

    project, url = long_texts
    ARTIFACTS.mkdir(exist_ok=True)
    keys = ['[class*="st-key-gp_"][class*="_choice_"] button', '[class*="st-key-gp_"][class*="_back"] button',
            '[class*="st-key-gp_"][class*="_skip"] button', '[class*="st-key-gp_"][class*="_note"] input']
    pages = (("labelling", [".gp-query", ".gp-body"]), ("faithfulness", [".gp-question", ".gp-response"]),
             ("pairwise", [".gp-question", ".gp-left", ".gp-right"]), ("claims", [".gp-question", ".gp-response"]),
             ("correctness", [".gp-question", ".gp-response"]), ("answer-relevance", [".gp-question", ".gp-response"]))
    outside = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            for size, viewport in WINDOWS.items():
                for path, texts in pages:
                    page = new_page(browser, viewport)
                    sign_in(page, url + path, project.annotator_token)
                    page.locator(texts[-1]).first.wait_for()
                    settle(page)
                    page.screenshot(path=str(ARTIFACTS / f"{path}-{size}.png"), animations="disabled")
                    placed = page.evaluate(IN_VIEW, texts + keys)
                    assert {s for s, _ in placed} == {*texts, *keys}, placed  # every text and key was found
                    outside += [(size, path, s) for s, inside in placed if not inside]
                    page.close()
        finally:
            browser.close()
    assert outside == [], outside


def test_the_note_field_shows_no_hint_over_the_typed_text(served: tuple[Project, str]) -> None:
    """Streamlit's "Press Enter to apply" would stand over the end of a typed note: not shown."""
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser, WIDE)
            sign_in(page, url, project.annotator_token)
            note = page.get_by_label("Note (optional)")
            note.wait_for()
            settle(page)
            note.focus()
            page.keyboard.type("a note long enough to reach the end of the field where the hint would be")
            field = page.locator(f".st-key-{state.NOTE}")
            expect(field.get_by_test_id("InputInstructions")).to_have_count(1)  # Streamlit drew it ...
            expect(field.get_by_test_id("InputInstructions")).to_be_hidden()  # ... and it is not shown
            page.keyboard.press("Tab")
            settle(page)
            assert note.input_value().startswith("a note long enough")
        finally:
            browser.close()
