"""The app drawing from a non-default pooling strategy, in headless Chromium.

Two annotators get the same batch chosen by move-to-front (``mtf``) over candidate lists
deeper than the pool: what they see is the strategy's choice, each in their own shuffled
order, and nothing on the page says where a chunk came from or why.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adaptive_fixtures import build_adaptive_project
from app_fixtures import SOURCE_MARKERS, Project, add_judgments
from labeler.retrieval import adaptive, scheduling
from labeler.store import access, connect
from labeler.store.access import OWNER
from pooling.strategies import next_chunks
from browser_helpers import BROWSER, NARROW, idle, launch, new_page, serving, sign_in

pytestmark = [
    # A real browser against a real server on a loaded machine: a run that fails on timing is
    # tried again (at most twice more; pytest reports every rerun).
    pytest.mark.flaky(reruns=2),
    *BROWSER,
]

BATCH = 4
#: Words about the strategy or the sources that must never reach an annotator's page.
HIDDEN = (*SOURCE_MARKERS, "mtf", "move-to-front", "strategy", "candidate")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Project, str, str, list[str]]]:
    """The adaptive project with strategy mtf, every entry to two annotators, served.

    The admin has judged q1-d1 (BM25's first) not relevant, so mtf moves to the dense list,
    whose first three chunks lie outside the pool. Yields the project, the second
    annotator's token, the URL and the strategy's first batch of q1.
    """
    project = build_adaptive_project(tmp_path)
    add_judgments(project.path, project.admin_id, {("q1", "q1-d1"): 0})
    with connect(project.path) as db:
        scheduling.set_settings(db, {"strategy": "mtf", "batch_size": BATCH, "overlap": 1.0}, caller=OWNER)
        _, second_token = access.add_annotator(db, "cy")
        expected = next_chunks("mtf", adaptive.load_candidates(db, "q1"), {"q1-d1": False}, BATCH)
    with serving(project, tmp_path / "serve.log") as url:
        yield project, second_token, url, expected


def _doc_id(text: str) -> str:
    """The fixture's chunk texts name their number: 'Chunk 5 ...' or 'Deeper chunk 8 ...'."""
    if text.startswith("Water facts"):
        return "q1-d3"
    words = text.split()
    return f"q1-d{words[words.index('chunk') + 1] if 'chunk' in words else words[1]}"


def _open(browser, url: str, token: str):  # noqa: ANN001, ANN202 - playwright's Browser and Page
    """A page signed in with ``token``, its first item on screen (its batch handed out)."""
    from playwright.sync_api import expect

    page = new_page(browser, NARROW)
    sign_in(page, url, token)
    expect(page.get_by_text("This batch: 0 of", exact=False)).to_be_visible()
    return page


def _label_batch(page) -> list[str]:  # noqa: ANN001 - playwright's Page
    """Label the batch 0 key by key; the doc_ids in the order shown."""
    from playwright.sync_api import expect

    shown = []
    for done in range(1, BATCH + 1):
        idle(page)
        body = page.inner_text("body").lower()
        assert not [w for w in HIDDEN if w in body], body
        shown.append(_doc_id(page.locator(".gp-chunk").inner_text()))
        page.keyboard.press("0")
        expect(page.get_by_text(f"you: {done} labelled", exact=False)).to_be_visible()
    return shown


def test_the_app_draws_from_the_strategy_shuffled_per_annotator(served) -> None:  # noqa: ANN001
    from playwright.sync_api import sync_playwright

    project, second_token, url, expected = served
    assert "q1-d8" in expected and "q1-d2" not in expected  # the dense list first, beyond the pool
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            # Both sign in before labelling: the second gets the other copy of the first's batch.
            first = _open(browser, url, project.annotator_token)
            second = _open(browser, url, second_token)
            bob, cy = _label_batch(first), _label_batch(second)
        finally:
            browser.close()
    # Both saw exactly the strategy's batch, each in their own order, not the strategy's.
    assert sorted(bob) == sorted(expected) == sorted(cy)
    assert bob != expected or cy != expected
    with connect(project.path) as db:
        pooled = {r[0] for r in db.execute("SELECT doc_id FROM pool WHERE query_id = 'q1'")}
        judged = db.execute("SELECT count(*) FROM judgments WHERE annotator_id <> ?", [project.admin_id]).fetchone()[0]
    assert set(expected) <= pooled and judged == 2 * BATCH
