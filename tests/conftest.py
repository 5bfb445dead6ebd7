"""Fixtures shared by the test modules; the functions and constants they use live in
``app_fixtures`` (the project and AppTest helpers) and ``browser_helpers`` (a served app)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app_fixtures import Project, build_project
from browser_helpers import serving
from labeler import state


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
