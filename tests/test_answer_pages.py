"""The claims, correctness and answer relevance pages through Streamlit's AppTest, checked in the
database: keys record their verdict on the item drawn, the claim is marked in its response,
each item is one element, and nothing names the system, a judge or another person."""

from __future__ import annotations

from html import escape

import pytest
from streamlit.testing.v1 import AppTest

from app_fixtures import (JUDGE_NAME, JUDGE_RAW, SYSTEM_NAME, XSS_PAYLOAD, Project, add_answers, answer_records,
                          open_page, page_text, press)
from labeler.ui import state
from labeler.text import claim_html, claim_span
from labeler.store import connect
from labeler.store import labels
from labeler.store.access import OWNER
from labeler.store.verdict_queue import Card
from labeler.ui.pages import claims

RECORDS = {r["answer_id"]: r for r in answer_records(4)}
#: (page function, task, the verdicts its keys give in order, what "Your verdict" says of the last one)
PAGES = {
    "claims": ("claims_page", ("SUPPORTED", "UNSUPPORTED", "NOT_ONE_CLAIM"), "not one claim"),
    "correctness": ("correctness_page", ("INCORRECT", "CORRECT"), "correct"),
    "answer-relevance": ("answer_relevance_page", ("ADDRESSES", "MISSES", "DECLINES"), "declines to answer"),
}


@pytest.fixture
def project(project: Project) -> Project:
    """The shared project with three answers of a system (nine claims), a judge's verdicts on them."""
    add_answers(project.path)
    return project


def _record(item_id: str) -> dict:
    """The answer record an item of a task on answers is about."""
    return RECORDS[item_id.split("#")[0].split("@")[0]]


def _items(at: AppTest) -> list[str]:
    """The bodies of the page's elements that draw an item."""
    return [h.proto.body for h in at.html if 'class="gp-answer' in h.proto.body]


def _verdicts(project: Project) -> list[tuple[str, str, str]]:
    with connect(project.path) as db:
        return db.execute("SELECT item_id, verdict, note FROM human_verdicts WHERE annotator_id = ? ORDER BY id",
                          [project.annotator_id]).fetchall()


@pytest.mark.parametrize("task", list(PAGES))
def test_each_key_records_its_verdict_on_the_item_drawn(project: Project, task: str) -> None:
    page, choices, last_shown = PAGES[task]
    add_answers(project.path, n=4)  # one answer more than answer relevance has keys: an item is left after them
    at = open_page(project.path, page, project.annotator_token)
    shown = []
    for n, choice in enumerate(choices):
        item_id = at.session_state[state.task_key(task, "current")]
        [item] = _items(at)
        assert escape(_record(item_id)["question"]) in item  # the key below acts on the item drawn
        shown.append(item_id)
        if n == 1:
            at.text_input(key=state.task_key(task, "note")).input("a note on the second")
        press(at, state.choice_key(task, choice))
    assert _verdicts(project) == [(i, c, "a note on the second" if n == 1 else "") for n, (i, c) in
                                  enumerate(zip(shown, choices, strict=True))]
    assert len(set(shown)) == len(choices)
    press(at, state.task_key(task, "back"))
    assert at.session_state[state.task_key(task, "current")] == shown[-1]
    assert f"Your verdict: {last_shown}" in page_text(at)
    press(at, state.task_key(task, "skip"))
    with connect(project.path) as db:
        assert db.execute("SELECT item_id FROM verdict_skips").fetchall() == [(shown[-1],)]
    assert not at.exception


@pytest.mark.parametrize("task", list(PAGES))
def test_pages_are_blind_and_draw_each_item_as_one_escaped_element(project: Project, task: str) -> None:
    with connect(project.path) as db:
        labels.set_settings(db, {"overlap": 1.0}, caller=OWNER)  # ada's verdicts below leave bob his copies
        items = [r[0] for r in db.execute("SELECT item_id FROM verdict_items WHERE kind = ?", [task])]
        db["human_verdicts"].insert_all(
            {"item_id": i, "annotator_id": project.admin_id, "verdict": {"claims": "UNSUPPORTED", "correctness": "INCORRECT",
                                                                         "answer-relevance": "MISSES"}[task],
             "note": "ada-private-note", "at": "2026-01-01T00:00:00+00:00", "source": "app"} for i in items)
    at = open_page(project.path, PAGES[task][0], project.annotator_token)
    seen: list[str] = []
    while (item_id := at.session_state.get(state.task_key(task, "current"))) is not None and item_id not in seen:
        seen.append(item_id)
        text = page_text(at)
        for marker in (SYSTEM_NAME, JUDGE_NAME, JUDGE_RAW, "ada-private-note", "oracle", item_id):
            assert marker not in text
        assert "<script" not in text and XSS_PAYLOAD not in text
        record = _record(item_id)
        [item] = _items(at)  # one element holds the whole item: nothing of it stands apart
        for part in (escape(record["question"]), "It ends in a delta."):  # the response's end is never marked
            assert sum(part in h.proto.body for h in at.html) == 1 and part in item
        assert (escape(record["contexts"][0]) in item) == (task == "claims")
        assert (escape(record["reference"]) in item) == (task == "correctness")
        if record["answer_id"].endswith("-1"):  # the payload is shown as text
            assert escape(XSS_PAYLOAD) in item
        press(at, state.task_key(task, "skip"))
    assert sorted(seen) == sorted(items)
    assert not at.exception


def test_the_claim_is_marked_in_its_response_or_shown_apart(project: Project) -> None:
    at = open_page(project.path, "claims_page", project.annotator_token)
    for _ in range(9):
        item_id = at.session_state[state.task_key("claims", "current")]
        record, n = _record(item_id), int(item_id.rsplit("#", 1)[1])
        [item] = _items(at)
        marks = item.count('<mark class="gp-claim">')
        if n == 1:  # word for word: escaped inside the mark
            assert f'<mark class="gp-claim">{escape(record["claims"][0])}</mark>' in item
        elif n == 2:  # other spacing and case: the response's own text is marked
            assert '<mark class="gp-claim">It  crosses THREE\ncountries.</mark>' in item
        else:  # not in the response: shown apart, nothing marked
            assert marks == 0 and claims.CLAIM_APART in item and escape(record["claims"][2]) in item
        assert marks == (n != 3) and (claims.CLAIM_APART in item) == (n == 3)
        press(at, state.choice_key("claims", "NOT_ONE_CLAIM" if n == 3 else "SUPPORTED"))
    with connect(project.path) as db:
        flagged = db.execute("SELECT item_id FROM current_human_verdicts WHERE verdict = 'NOT_ONE_CLAIM'").fetchall()
    assert sorted(f for (f,) in flagged) == [f"{SYSTEM_NAME}-{k}#3" for k in (1, 2, 3)]
    assert not at.exception


def test_a_closed_task_on_answers_is_refused_and_hands_out_nothing(project: Project) -> None:
    with connect(project.path) as db:
        labels.set_settings(db, {"tasks": "relevance,correctness"}, caller=OWNER)
    at = open_page(project.path, "claims_page", project.annotator_token)
    assert "The claims task is not open in this project." in [i.value for i in at.info]
    assert not _items(at) and state.choice_key("claims", "SUPPORTED") not in [b.key for b in at.button]
    with connect(project.path) as db:
        assert db.execute("SELECT count(*) FROM verdict_assignments").fetchone()[0] == 0
    assert not at.exception


@pytest.mark.parametrize(("response", "claim", "span"), [
    ("Paris is big. It is old.", "It is old.", (14, 24)),  # word for word
    ("It is old. It is old.", "It is old.", (0, 10)),  # the first of two
    ("Paris is big.\n  IT is\told.", "it is old.", (16, 26)),  # white space and case aside
    ("Cost (a+b)*2 is [x].", "cost (A+B)*2 is [x].", (0, 20)),  # the claim's characters are text, not a pattern
    ("Paris is big.", "Paris is old.", None),  # rephrased: not found
    ("Paris is big.", "  ", None),  # nothing to find
])
def test_claim_span_finds_the_claim_word_for_word_or_up_to_space_and_case(
        response: str, claim: str, span: tuple[int, int] | None) -> None:
    assert claim_span(response, claim) == span


def test_claim_html_escapes_inside_and_around_the_mark() -> None:
    marked, span = claim_html("<i>a</i> & b < c. Rest.", "b < c.")
    assert (marked, span) == ('&lt;i&gt;a&lt;/i&gt; &amp; <mark class="gp-claim">b &lt; c.</mark> Rest.', (11, 17))
    assert claim_html("<b>x</b>", "y") == ("&lt;b&gt;x&lt;/b&gt;", None)


def _card(response: str, claim: str) -> Card:
    return Card("i#1", "claims", "Q?", ("C1",), None, response, None, None, None, 1, 1, None, "", claim=claim)


def test_a_claim_marked_too_far_down_a_long_response_is_also_shown_above_it() -> None:
    near, far = claims.boxes(_card("Claim. " + "x " * 2000, "Claim.")), claims.boxes(_card("x " * 2000 + "Claim.", "Claim."))
    assert [b.heading for b in near[0]] == ["Response"]  # the frame draws the question above them
    assert [b.heading for b in far[0]] == [claims.CLAIM_FURTHER, "Response"]
    assert '<mark class="gp-claim">Claim.</mark>' in far[0][-1].html and [b.heading for b in far[1]] == ["Contexts"]


def test_the_claims_rubric_says_what_the_page_shows_in_the_words_the_page_uses() -> None:
    from labeler.store.verdict_queue import RUBRICS

    rubric = RUBRICS["claims"]
    # The page highlights the claim in the response (a <mark>); the rubric, shown beside the
    # keys, calls it that, and the box above a long response calls the mark the same.
    assert "highlighted in the response" in rubric and "highlighted further down" in claims.CLAIM_FURTHER
    # The rubric says when the claim stands in a box of its own instead, with nothing highlighted.
    assert "box of its own above the response" in rubric and "nothing is highlighted" in rubric
    assert "nothing is highlighted" in claims.CLAIM_APART
    # The x key judges the claim, wherever it is shown: not "the highlighted text" of a mark that may be absent.
    assert "highlighted text" not in rubric


def test_an_answer_is_an_item_of_the_faithfulness_page_blind_to_its_system(project: Project) -> None:
    """The whole-answer faithfulness item of an answer (ANSWER_ID@faithfulness) is drawn on the
    faithfulness page with its question, contexts and response, and no system or judge name."""
    at = open_page(project.path, "faithfulness_page", project.annotator_token)
    item_id = at.session_state[state.task_key("faithfulness", "current")]
    assert item_id.endswith("@faithfulness")
    record = _record(item_id)
    text = page_text(at)
    [frame] = [h.proto.body for h in at.html if 'class="gp-frame' in h.proto.body]
    assert escape(record["question"]) in frame and escape(record["response"]) in frame
    assert all(escape(c) in frame for c in record["contexts"])
    assert SYSTEM_NAME not in text and JUDGE_NAME not in text and item_id not in frame
    press(at, state.choice_key("faithfulness", "UNSUPPORTED"))
    assert _verdicts(project) == [(item_id, "UNSUPPORTED", "")]
    assert not at.exception


def test_the_answer_relevance_page_shows_the_declines_key_and_d_records_it(project: Project) -> None:
    at = open_page(project.path, "answer_relevance_page", project.annotator_token)
    labels_shown = [b.label for b in at.button]
    assert "d · Declines to answer" in labels_shown and "1 · Addresses the question" in labels_shown
    assert "Declines to answer" in page_text(at)  # the rubric under the keys says when to press it
    item_id = at.session_state[state.task_key("answer-relevance", "current")]
    press(at, state.choice_key("answer-relevance", "DECLINES"))
    assert _verdicts(project) == [(item_id, "DECLINES", "")]
    press(at, state.task_key("answer-relevance", "back"))  # undo comes back to it, the verdict shown
    assert "Your verdict: declines to answer" in page_text(at)
    assert not at.exception
