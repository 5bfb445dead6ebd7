"""The admin page "Golden set" through Streamlit's AppTest: refusal, freeze, versions, diff."""

from __future__ import annotations

import pytest

from labeler.store import connect, now
from labeler.ui.pages import ADMIN_REFUSAL
from app_fixtures import Project, open_page


@pytest.fixture
def project(project: Project) -> Project:
    """The shared project with one label by the admin."""
    with connect(project.path) as db:
        query_id, doc_id = db.execute("SELECT query_id, doc_id FROM pool ORDER BY query_id, position").fetchone()
        db["judgments"].insert({"query_id": query_id, "doc_id": doc_id, "annotator_id": project.admin_id,
                                "relevance": 2, "note": "", "at": now(), "seconds": 1.0})
    return project


def test_annotator_is_refused(project: Project) -> None:
    at = open_page(project.path, "golden_page", project.annotator_token)
    assert [e.value for e in at.error] == [ADMIN_REFUSAL] and len(at.title) == 0 and not at.exception


def test_admin_freezes_a_version_and_sees_it(project: Project) -> None:
    at = open_page(project.path, "golden_page", project.admin_token)
    assert [t.value for t in at.title] == ["Golden set"] and not at.exception
    at.text_input[0].input("v1")
    at.button[0].click().run()
    assert not at.exception and "Froze v1" in at.success[0].value
    with connect(project.path) as db:
        assert db.execute("SELECT name, annotator_id FROM golden_versions").fetchall() == [("v1", project.admin_id)]
    at.run()
    assert "v1" in at.dataframe[0].value["version"].tolist()
