"""An archived project: the database file (or its directory) cannot be written.

Reading commands work on it; a writing command says in one line that it is read-only. The
commands run as a user who cannot write the file (``nobody`` when the tests run as root,
for whom file modes mean nothing), on a project closed cleanly: no -wal or -shm file beside it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app_fixtures import Project, add_judgments, build_project, page_text, sign_in
from labeler import state
from labeler.store import schema

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534
SETPRIV = shutil.which("setpriv")

pytestmark = pytest.mark.skipif(
    os.geteuid() == 0 and SETPRIV is None, reason="running as root without setpriv: cannot drop write rights"
)


@pytest.fixture
def archive() -> Iterator[Path]:
    """A directory any user can enter, holding a labelled project closed cleanly."""
    top = Path(tempfile.mkdtemp(prefix="goldpool-ro-"))
    os.chmod(top, 0o755)
    try:
        project_dir = top / "project"
        project_dir.mkdir()
        project: Project = build_project(project_dir)
        add_judgments(project.path, project.annotator_id, {("q1", "q1-d1"): 2, ("q1", "q1-d2"): 0, ("q2", "q2-d1"): 3})
        add_judgments(project.path, project.admin_id, {("q1", "q1-d1"): 2, ("q1", "q1-d2"): 1, ("q2", "q2-d1"): 3})
        assert not Path(f"{project.path}-wal").exists() and not Path(f"{project.path}-shm").exists()
        out = top / "out"
        out.mkdir()
        os.chmod(out, 0o777)
        yield project.path
    finally:
        for path in (top, *top.rglob("*")):
            os.chmod(path, 0o777 if path.is_dir() else 0o666)
        shutil.rmtree(top)


def _goldpool(*args: str) -> subprocess.CompletedProcess[str]:
    """Run goldpool as a user who cannot write the project."""
    command = [str(Path(sys.executable).with_name("goldpool")), *args]
    if os.geteuid() == 0:
        command = [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]  # type: ignore[list-item]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": tempfile.gettempdir()}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=300)


def _make_readonly(db: Path, what: str) -> None:
    if what == "file":
        os.chmod(db.parent, 0o777)  # the directory stays writable: SQLite may create -shm there
        os.chmod(db, 0o444)
    else:
        os.chmod(db, 0o444)
        os.chmod(db.parent, 0o555)


@pytest.mark.parametrize("what", ["file", "directory"])
def test_reading_commands_work_on_a_readonly_project(archive: Path, what: str) -> None:
    _make_readonly(archive, what)
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
