"""The faithfulness, pairwise, Tasks and Judges pages through Streamlit's AppTest, checked in the database."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from app_fixtures import (
    JUDGE_NAME,
    JUDGE_RAW,
    MODEL_NAMES,
    XSS_PAYLOAD,
    Project,
    add_verdict_items,
    build_project,
    open_page,
    page_text,
    press,
)
from streamlit.testing.v1 import AppTest

from labeler.judges.report import judge_report, task_dict
from labeler.store import connect, labels
from labeler.store.access import OWNER
from labeler.store.settings import enabled_tasks
from labeler.ui import state
from labeler.ui.pages import ADMIN_REFUSAL


@pytest.fixture
def project(project: Project) -> Project:
    """The shared project with verdict items and a judge's verdicts on them."""
    add_verdict_items(project.path)
    return project


def _html(at: AppTest, css_class: str) -> list[str]:
    """Every element of class ``css_class`` the page draws, as its HTML (texts are escaped, so
    none holds a ``</div>`` of its own)."""
    return [m for h in at.html for m in re.findall(f'<div class="{css_class}".*?</div>', h.proto.body, re.DOTALL)]


def _verdicts(project: Project) -> list[tuple]:
    with connect(project.path) as db:
        return db.execute("SELECT item_id, verdict, shown_order, note FROM human_verdicts WHERE annotator_id = ? "
                          "ORDER BY id", [project.annotator_id]).fetchall()


def test_faithfulness_keys_record_verdicts_with_the_note(project: Project) -> None:
    at = open_page(project.path, "faithfulness_page", project.annotator_token)
    shown = []
    for choice, note in (("SUPPORTED", ""), ("UNSUPPORTED", "claim two is not in the contexts"), ("SUPPORTED", "")):
        shown.append(at.session_state[state.task_key("faithfulness", "current")])
        if note:
            at.text_input(key=state.task_key("faithfulness", "note")).input(note)
        press(at, state.choice_key("faithfulness", choice))
    assert _verdicts(project) == [(shown[0], "SUPPORTED", None, ""),
                                  (shown[1], "UNSUPPORTED", None, "claim two is not in the contexts"),
                                  (shown[2], "SUPPORTED", None, "")]
    assert len(set(shown)) == 3
    press(at, state.task_key("faithfulness", "back"))
    assert at.session_state[state.task_key("faithfulness", "current")] == shown[2]
    assert "Your verdict: supported" in page_text(at)
    assert not at.exception


def test_pairwise_key_names_the_slot_shown_and_the_order_is_recorded(project: Project) -> None:
    at = open_page(project.path, "pairwise_page", project.annotator_token)
    for key in ("left", "right", "tie", "left", "right"):
        left, right = _html(at, "gp-left")[0], _html(at, "gp-right")[0]
        item_id = at.session_state[state.task_key("pairwise", "current")]
        press(at, state.choice_key("pairwise", key))
        got = _verdicts(project)[-1]
        order = "AB" if "ALPHA" in left else "BA"
        assert ("BETA" in right) == (order == "AB")
        expected = {"left": order[0], "right": order[1], "tie": "TIE"}[key]
        assert got[:3] == (item_id, expected, order)
    assert {v[2] for v in _verdicts(project)} == {"AB", "BA"}  # both orders came up in five items
    assert not at.exception


def test_verdict_pages_show_no_model_judge_or_other_person_and_escape_text(project: Project) -> None:
    with connect(project.path) as db:
        labels.set_settings(db, {"overlap": 1.0}, caller=OWNER)  # ada's verdicts below leave bob his copies
        db["human_verdicts"].insert_all(
            {"item_id": i, "annotator_id": project.admin_id, "verdict": v, "shown_order": o, "note": "ada-private-note",
             "at": "2026-01-01T00:00:00+00:00", "source": "app"}
            for i, v, o in (("f1", "UNSUPPORTED", None), ("p1", "B", "AB"))
        )
    for page, task, payload_box in (("faithfulness_page", "faithfulness", "gp-response"), ("pairwise_page", "pairwise", None)):
        at = open_page(project.path, page, project.annotator_token)
        seen_payload = False
        for _ in range(12):
            text = page_text(at)
            for marker in (*MODEL_NAMES, JUDGE_NAME, JUDGE_RAW, "ada-private-note", "oracle"):
                assert marker not in text
            assert "<script" not in text and XSS_PAYLOAD not in text
            seen_payload = seen_payload or "&lt;script&gt;alert(1)&lt;/script&gt;" in text
            if at.session_state[state.task_key(task, "current")] in ("f1", "p1"):
                boxes = _html(at, payload_box) if payload_box else _html(at, "gp-left") + _html(at, "gp-right")
                assert any("&lt;script&gt;" in b for b in boxes)
                if task == "faithfulness":  # white space is kept: escaped text in a pre-wrap box
                    assert "\n\n  spaced" in boxes[0] and "white-space:pre-wrap" in boxes[0]
            if at.session_state.get(state.task_key(task, "current")) is None:
                break
            press(at, state.task_key(task, "skip"))
        assert seen_payload
        assert not at.exception


def test_a_closed_task_is_refused_to_annotators_and_hands_out_nothing(project: Project) -> None:
    with connect(project.path) as db:
        labels.set_settings(db, {"tasks": "relevance,faithfulness"}, caller=OWNER)
    at = open_page(project.path, "pairwise_page", project.annotator_token)
    assert "The pairwise task is not open in this project." in [i.value for i in at.info]
    assert state.choice_key("pairwise", "left") not in [b.key for b in at.button]
    with connect(project.path) as db:
        assert db.execute("SELECT count(*) FROM verdict_assignments").fetchone()[0] == 0
    assert not at.exception


def test_sidebar_lists_only_open_task_pages() -> None:
    from labeler.app import _task_specs

    def listed(open_tasks: tuple[str, ...]) -> tuple[list[str], list[str]]:
        specs = _task_specs(open_tasks)
        assert len(specs) == 7  # every task page keeps its address
        return [s[1] for s in specs if s[4]], [s[1] for s in specs if s[3]]

    assert listed(("faithfulness", "pairwise")) == (["Faithfulness", "Pairwise"], ["Faithfulness"])
    assert listed(("claims", "correctness", "answer-relevance")) == (
        ["Claims", "Correctness", "Answer relevance"], ["Claims"])
    assert listed(("relevance", "pairwise")) == (["Label", "Pairwise"], ["Label"])
    assert listed(()) == (["Label"], ["Label"])
    assert listed(("nuggets",)) == (["Nugget support"], ["Nugget support"])


def test_admin_chooses_the_tasks_on_the_tasks_page(project: Project) -> None:
    refused = open_page(project.path, "tasks_page", project.annotator_token)
    assert [e.value for e in refused.error] == [ADMIN_REFUSAL]
    at = open_page(project.path, "tasks_page", project.admin_token)
    assert at.multiselect(key=state.TASKS_INPUT).value == ["relevance", "faithfulness", "pairwise"]
    at.multiselect(key=state.TASKS_INPUT).set_value(["pairwise"]).run()
    press(at, state.TASKS_SAVE)
    with connect(project.path) as db:
        assert enabled_tasks(db) == ("pairwise",)
    assert "Annotators now see: pairwise." in [s.value for s in at.success]
    assert not at.exception


def test_judges_page_shows_the_leaderboard_and_opens_disagreements(project: Project) -> None:
    refused = open_page(project.path, "judges_page", project.annotator_token)
    assert [e.value for e in refused.error] == [ADMIN_REFUSAL] and len(refused.table) == 0
    at = open_page(project.path, "faithfulness_page", project.annotator_token)
    for _ in range(4):  # the judge said SUPPORTED everywhere; bob says UNSUPPORTED on every item
        press(at, state.choice_key("faithfulness", "UNSUPPORTED"))
    page = open_page(project.path, "judges_page", project.admin_token)
    board = page.table[0].value
    assert list(board["judge"]) == [JUDGE_NAME, JUDGE_NAME] and list(board["task"]) == ["faithfulness", "pairwise"]
    faithfulness = board[board["task"] == "faithfulness"].iloc[0]
    assert faithfulness["n"] == "4" and faithfulness["agreement"].startswith("0.000")
    titles = [e.label for e in page.expander]
    assert sorted(t.split(":")[0] for t in titles) == ["f1", "f2", "f3", "f4"]
    assert all(t.endswith("bob UNSUPPORTED, judge SUPPORTED") for t in titles)
    text = page_text(page)
    assert "Context one of item 2." in text  # each disagreement holds its item
    with connect(project.path) as db:  # the consequence in words, as the report service says it
        report = judge_report(db, [JUDGE_NAME], caller=OWNER, n_boot=50)
    for task in ("faithfulness", "pairwise"):
        sentence = task_dict(report.results[JUDGE_NAME][task])["power"]["sentence"]
        assert sentence in "\n".join(m.value for m in page.markdown)
    assert XSS_PAYLOAD not in text and "<script" not in text
    assert not page.exception


def test_an_empty_response_is_shown_as_such_and_unlike_any_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labeler.judges.verdict_files import import_items

    built = build_project(tmp_path)
    items = tmp_path / "empty.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in (
        {"item_id": "f1", "kind": "faithfulness", "question": "Who?", "contexts": ["Ann."], "response": ""},
        {"item_id": "p1", "kind": "pairwise", "question": "Sum?", "response_a": "", "response_b": "(empty response)"},
    )), encoding="utf-8")
    with connect(built.path) as db:
        import_items(db, items, caller=OWNER)
    monkeypatch.setenv(state.DB_ENV_VAR, str(built.path))
    caption = '<em class="gp-empty" style="color:#888">(empty response)</em>'
    at = open_page(built.path, "faithfulness_page", built.annotator_token)
    [response] = _html(at, "gp-response")
    assert response.endswith(f">{caption}</div>")
    at = open_page(built.path, "pairwise_page", built.annotator_token)
    boxes = _html(at, "gp-left") + _html(at, "gp-right")
    assert sorted(caption in box for box in boxes) == [False, True]  # the empty one, and a text that only says so
    assert any(box.endswith('">(empty response)</div>') for box in boxes)
    assert not at.exception
