"""Fixtures shared by the test modules; the functions and constants they use live in
``app_fixtures`` (the project and AppTest helpers) and ``browser_helpers`` (a served app)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests check results, never time: a shared machine may run an example slowly.
settings.register_profile("goldpool", deadline=None)
settings.load_profile("goldpool")

# The helper modules' own checks report their values as a test's asserts do.
pytest.register_assert_rewrite("app_fixtures", "browser_helpers", "judge_server")

from app_fixtures import Project, add_judgments, build_project  # noqa: E402 - after the line above
from browser_helpers import serving  # noqa: E402
from judge_server import JudgeServer  # noqa: E402
from labeler.ui import state  # noqa: E402


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """The small labelling project of ``app_fixtures``, the one the app opens (``GOLDPOOL_DB``).

    A module needing more in it overrides this fixture, asking for this one by the same name.
    """
    built = build_project(tmp_path)
    monkeypatch.setenv(state.DB_ENV_VAR, str(built.path))
    return built


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Project, str]]:
    """The small labelling project, served by ``goldpool serve``; yields it and the app's URL."""
    project = build_project(tmp_path)
    with serving(project, tmp_path / "serve.log") as url:
        yield project, url


@pytest.fixture
def archived() -> Iterator[Project]:
    """A labelled project closed cleanly (no -wal or -shm file beside it), in a directory any
    user can enter, beside an ``out`` directory any user can write."""
    top = Path(tempfile.mkdtemp(prefix="goldpool-ro-"))
    os.chmod(top, 0o755)
    try:
        project_dir = top / "project"
        project_dir.mkdir()
        project = build_project(project_dir)
        add_judgments(project.path, project.annotator_id, {("q1", "q1-d1"): 2, ("q1", "q1-d2"): 0, ("q2", "q2-d1"): 3})
        add_judgments(project.path, project.admin_id, {("q1", "q1-d1"): 2, ("q1", "q1-d2"): 1, ("q2", "q2-d1"): 3})
        assert not Path(f"{project.path}-wal").exists() and not Path(f"{project.path}-shm").exists()
        out = top / "out"
        out.mkdir()
        os.chmod(out, 0o777)
        yield project
    finally:
        for path in (top, *top.rglob("*")):
            os.chmod(path, 0o777 if path.is_dir() else 0o666)
        shutil.rmtree(top)


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    """The scripted OpenAI-compatible judge server on a free local port, closed after the test."""
    s = JudgeServer()
    yield s
    s.close()
