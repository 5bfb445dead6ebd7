"""Each task page draws its item (counter, query or question, every text) as one element, so
the browser never shows a text beside another item's question; the frame's HTML escapes all."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from app_fixtures import XSS_PAYLOAD, Project, add_verdict_items, open_page, press, sign_in
from labeler.ui import state
from labeler.ui.pages.verdict_page import Box, frame_html


@pytest.fixture
def project(project: Project) -> Project:
    add_verdict_items(project.path)
    return project


def _holding(at: AppTest, *texts: str) -> list[str]:
    """The bodies of the page's HTML elements (its style apart) that hold any of ``texts``."""
    return [h.proto.body for h in at.html if any(t in h.proto.body for t in texts) and not h.proto.body.startswith("<style>")]


def test_the_labelling_page_draws_counter_query_and_chunk_as_one_element(project: Project) -> None:
    at = sign_in(project.annotator_token)
    for _ in range(6):  # across a query change (five chunks a query)
        query_id, doc_id = at.session_state[state.CURRENT]
        [frame] = _holding(at, "gp-query", "gp-chunk", "gp-counter")
        assert "gp-query" in frame and "gp-chunk" in frame and "item " in frame
        assert f"for {query_id} number {doc_id[-1]}" in frame or "facts &lt;script&gt;" in frame
        press(at, state.grade_key(1))
    assert not at.exception


@pytest.mark.parametrize("page, task, key", [("faithfulness_page", "faithfulness", "SUPPORTED"),
                                             ("pairwise_page", "pairwise", "tie")])
def test_a_verdict_page_draws_counter_question_and_texts_as_one_element(project: Project, page: str, task: str,
                                                                        key: str) -> None:
    at = open_page(project.path, page, project.annotator_token)
    for _ in range(3):
        n = at.session_state[state.task_key(task, "current")][1:]
        [frame] = _holding(at, "gp-question", "gp-counter", "gp-context", "gp-response", "gp-left")
        if task == "faithfulness":
            parts = [f"question {n}?", f"Context one of item {n}.", f"Context two of item {n}.", 'class="gp-response"']
        else:
            parts = [f"question {n}?", f"ALPHA answer {n}", f"BETA answer {n}"]
        assert all(part in frame for part in parts) and "This batch: item " in frame
        press(at, state.choice_key(task, key))
    assert not at.exception


def test_the_frame_escapes_every_text_and_gives_the_judged_texts_the_room_without_reading() -> None:
    judged = [Box("Left <a>", XSS_PAYLOAD, "gp-left"), Box("Right", " \n", "gp-right", empty="(empty response)")]
    html = frame_html("<b>counter</b>", "<i>ask</i>", judged)
    assert XSS_PAYLOAD not in html and "&lt;script&gt;" in html and "Left &lt;a&gt;" in html
    assert '<em class="gp-empty" style="color:#888">(empty response)</em>' in html
    assert 'class="gp-judged gp-fill"' in html and "gp-reading" not in html
    with_reading = frame_html("", "", judged, [Box("Context 1 of 1", "<ctx>")])
    assert 'class="gp-judged"' in with_reading and '<div class="gp-reading">' in with_reading
    assert "&lt;ctx&gt;" in with_reading
