"""An archived project: the database file (or its directory) cannot be written.

Reading commands work on it; a writing command says in one line that it is read-only. The
commands run as a user who cannot write the file (``nobody`` when the tests run as root,
for whom file modes mean nothing), on a project closed cleanly: no -wal or -shm file beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app_fixtures import AS_NOBODY, NEEDS_NOBODY, NOBODY_ENV, Project, make_readonly, page_text, sign_in
from labeler.ui import state
from labeler.store import connection as schema

pytestmark = NEEDS_NOBODY


def _goldpool(*args: str) -> subprocess.CompletedProcess[str]:
    """Run goldpool as a user who cannot write the project."""
    command = [*AS_NOBODY, str(Path(sys.executable).with_name("goldpool")), *args]
    env = {**os.environ, **NOBODY_ENV}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=300)


@pytest.mark.parametrize("what", ["file", "directory"])
def test_reading_commands_work_on_a_readonly_project(archived: Project, what: str) -> None:
    archive = archived.path
    make_readonly(archive, what)
    before = archive.read_bytes()
    out = archive.parent.parent / "out"

    stats = _goldpool("stats", str(archive))
    assert stats.returncode == 0, stats.stderr
    assert "15" in stats.stdout  # the pool

    exported = _goldpool("export-judgments", str(archive), "-o", str(out / "judgments.jsonl"))
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert len(rows) == 6

    pool = _goldpool("export-pool", str(archive), "-o", str(out / "pool.jsonl"))
    assert pool.returncode == 0, pool.stderr
    assert len((out / "pool.jsonl").read_text().splitlines()) == 15

    report = _goldpool("calibrate", str(archive), "--json", "--n-boot", "50")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)

    # agree reads label files, e.g. two annotators' exports of the archived project.
    for name in ("bob", "ada"):
        mine = [r for r in rows if r["annotator"] == name]
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine))
        os.chmod(out / f"{name}.jsonl", 0o444)
    agree = _goldpool("agree", str(out / "bob.jsonl"), str(out / "ada.jsonl"), "--n-boot", "50")
    assert agree.returncode == 0, agree.stderr

    # A writing command is refused in one line; the file is untouched throughout.
    write = _goldpool("add-annotator", str(archive), "carol")
    assert write.returncode == 1
    assert write.stderr.strip().splitlines() == [f"Error: {archive}: the project is read-only here; it can be read, not changed"] or (
        "read-only" in write.stderr and len(write.stderr.strip().splitlines()) == 1
    ), write.stderr
    assert archive.read_bytes() == before


def test_signing_in_to_a_readonly_project_says_so_without_a_traceback(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app on an archived project lets people in to read: the sign-in is not kept (its
    row cannot be written), the page says plainly that the project is read-only, and nothing
    shows a traceback or where the server keeps its files."""
    before = project.path.read_bytes()
    # The file cannot be written here: as a user without write rights (root ignores modes).
    monkeypatch.setattr(schema, "_writable", lambda path: False)
    from labeler import app

    for token, name, titles in ((project.annotator_token, "bob", []), (project.admin_token, "ada", ["Progress"])):
        at = sign_in(token)
        assert not at.exception
        assert at.session_state[state.USER].name == name
        assert [t.value for t in at.title] == titles
        notices = [i.value for i in at.info]
        assert notices[0] == state.READ_ONLY_NOTICE
        assert (app.READ_ONLY_PAGE in notices) == (name == "bob")  # nothing can be handed out to label
        assert state.SESSION_SECRET not in at.session_state
        text = page_text(at)
        assert state.COOKIE not in text  # no kept sign-in, so no cookie is set
        assert str(project.path.parent) not in text and "Traceback" not in text and "StoreReadOnly" not in text
    assert project.path.read_bytes() == before
