"""The admin page "Nuggets" through Streamlit's AppTest: refusal, the question's relevant chunks
(escaped), writing, editing, ordering, dropping and merging nuggets, and a judge's proposals
accepted (edited) or dropped; what the judge proposed and what people kept are both stored."""

from __future__ import annotations

import pytest

from app_fixtures import XSS_PAYLOAD, Project, add_judgments, open_page
from labeler.store import connect
from labeler.store import nugget_proposals as proposals
from labeler.store import nuggets as store
from labeler.ui.pages import ADMIN_REFUSAL

PAGE = "nuggets_page"
K = "nug_admin_"


@pytest.fixture
def project(project: Project) -> Project:
    """conftest's project (the one the app opens), with q1's chunks graded and two proposals."""
    built = project
    add_judgments(built.path, built.annotator_id, {("q1", "q1-d3"): 3, ("q1", "q1-d1"): 1, ("q1", "q1-d2"): 0})
    with connect(built.path) as db:
        proposals.record_proposals(db, "q1", [("Water boils at 100 C", "vital"), ("Water is wet", "okay")],
                                   judge="nuggetizer-j", model="m", prompt_hash="h", item_hash="x", result=None)
    return built


def _html(at) -> str:  # noqa: ANN001 - AppTest
    return "".join(str(getattr(e, "proto", "")) for e in at.get("html"))


def test_annotator_is_refused(project: Project) -> None:
    at = open_page(project.path, PAGE, project.annotator_token)
    assert [e.value for e in at.error] == [ADMIN_REFUSAL] and not at.exception


def test_admin_reads_the_relevant_chunks_escaped(project: Project) -> None:
    at = open_page(project.path, PAGE, project.admin_token)
    assert [t.value for t in at.title] == ["Nuggets"] and not at.exception
    html = _html(at)
    assert "q1-d3 · grade 3" in html and "q1-d1 · grade 1" in html and "q1-d2" not in html  # level 1: 0 is out
    assert XSS_PAYLOAD not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    at.number_input(key=K + "level").set_value(2).run()
    assert "q1-d1" not in _html(at)


def test_admin_writes_edits_orders_drops_and_merges(project: Project) -> None:
    at = open_page(project.path, PAGE, project.admin_token)
    for text, importance in (("Water boils at 100 C at sea level", "vital"), (f"It {XSS_PAYLOAD} boils", "okay"),
                             ("Altitude lowers it", "okay")):
        at.text_area(key=K + "new_text").set_value(text)
        at.radio(key=K + "new_imp").set_value(importance)
        at.multiselect(key=K + "new_docs").set_value(["q1-d3"])
        at.button(key="FormSubmitter:" + K + "new-Add nugget").click().run()
        assert not at.exception and not at.error
    with connect(project.path) as db:
        found = store.list_nuggets(db, "q1")
    assert [(n.nugget_id, n.importance, n.doc_ids) for n in found] == [
        ("q1/n1", "vital", ("q1-d3",)), ("q1/n2", "okay", ("q1-d3",)), ("q1/n3", "okay", ("q1-d3",))]
    assert found[1].text == f"It {XSS_PAYLOAD} boils"  # stored as written, shown only in a text field
    at.radio(key=K + "q1/n3_imp").set_value("vital")
    at.button(key=K + "q1/n3_save").click().run()
    at.button(key=K + "q1/n3_up").click().run()
    at.button(key=K + "q1/n2_drop").click().run()
    with connect(project.path) as db:
        assert [(n.nugget_id, n.importance) for n in store.list_nuggets(db, "q1")] == [("q1/n1", "vital"), ("q1/n3", "vital")]
    at.multiselect(key=K + "merge_ids").set_value(["q1/n1", "q1/n3"])
    at.text_area(key=K + "merge_text").set_value("Water boils at 100 C at sea level, less higher up")
    at.button(key="FormSubmitter:" + K + "merge-Merge").click().run()
    assert not at.exception and not at.error
    with connect(project.path) as db:
        (merged,) = store.list_nuggets(db, "q1")
        assert (merged.origin, merged.merged_from, merged.text) == (
            "merge", ("q1/n1", "q1/n3"), "Water boils at 100 C at sea level, less higher up")


def test_admin_accepts_an_edited_proposal_and_drops_another(project: Project) -> None:
    at = open_page(project.path, PAGE, project.admin_token)
    with connect(project.path) as db:
        first, second = proposals.list_proposals(db, "q1")
    at.text_area(key=f"{K}p{first.proposal_id}_text").set_value("Water boils at 100 degrees C")
    at.button(key=f"{K}p{first.proposal_id}_accept").click().run()
    at.button(key=f"{K}p{second.proposal_id}_drop").click().run()
    assert not at.exception and not at.error
    with connect(project.path) as db:
        fates = {p.text: p.fate for p in proposals.list_proposals(db, "q1")}
        kept = store.list_nuggets(db, "q1")
    assert fates == {"Water boils at 100 C": "edited", "Water is wet": "dropped"}
    assert [(n.text, n.origin) for n in kept] == [("Water boils at 100 degrees C", "proposal")]
    assert "Proposed by a judge" not in "".join(s.value for s in at.subheader)  # none pending now
