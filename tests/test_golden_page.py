"""The admin page "Golden set" through Streamlit's AppTest: refusal, freeze, versions, diff."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from labeler import state
from labeler.store import connect, now
from labeler.store import labels
from labeler.views import ADMIN_REFUSAL
from app_fixtures import Project, build_project, signed_in_as

TIMEOUT = 30


def _page_script() -> None:
    from labeler import app

    app.golden_page()


def _open(project: Project, token: str) -> AppTest:
    at = AppTest.from_function(_page_script, default_timeout=TIMEOUT)
    signed_in_as(at, project.path, token)
    return at.run()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    built = build_project(tmp_path)
    monkeypatch.setenv(state.DB_ENV_VAR, str(built.path))
    with connect(built.path) as db:
        query_id, doc_id = db.execute("SELECT query_id, doc_id FROM pool ORDER BY query_id, position").fetchone()
        db["judgments"].insert({"query_id": query_id, "doc_id": doc_id, "annotator_id": built.admin_id,
                                "relevance": 2, "note": "", "at": now(), "seconds": 1.0})
    return built


def test_annotator_is_refused(project: Project) -> None:
    at = _open(project, project.annotator_token)
    assert [e.value for e in at.error] == [ADMIN_REFUSAL] and len(at.title) == 0 and not at.exception


def test_admin_freezes_a_version_and_sees_it(project: Project) -> None:
    at = _open(project, project.admin_token)
    assert [t.value for t in at.title] == ["Golden set"] and not at.exception
    at.text_input[0].input("v1")
    at.button[0].click().run()
    assert not at.exception and "Froze v1" in at.success[0].value
    with connect(project.path) as db:
        assert db.execute("SELECT name, annotator_id FROM golden_versions").fetchall() == [("v1", project.admin_id)]
    at.run()
    assert "v1" in at.dataframe[0].value["version"].tolist()
