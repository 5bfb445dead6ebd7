"""Operating a project for a team: the clear-text warning of ``serve`` and ``goldpool backup``."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from app_fixtures import build_project, fake_streamlit
from labeler.cli import cli
from labeler.store import connect


@pytest.mark.parametrize(
    ("host", "warned"),
    [("0.0.0.0", True), ("192.168.1.20", True), ("labels.example.org", True), ("::", True),
     ("127.0.0.1", False), ("127.0.0.2", False), ("localhost", False), ("::1", False)],
)
def test_serve_warns_when_tokens_would_travel_in_clear_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str, warned: bool
) -> None:
    project = build_project(tmp_path)
    children = fake_streamlit(monkeypatch)
    result = CliRunner().invoke(cli, ["serve", str(project.path), "--host", host])
    assert result.exit_code == 0, result.output
    assert f"--server.address={host}" in children[0][0]
    assert ("travel in clear text" in result.output) is warned
    if warned:
        assert result.output.startswith(f"Warning: serving on {host}: access tokens")


def test_backup_while_another_connection_writes(tmp_path: Path) -> None:
    project = build_project(tmp_path)
    stop = threading.Event()
    written: list[int] = []

    def write() -> None:
        conn = sqlite3.connect(str(project.path), isolation_level=None, timeout=30)
        n = 0
        while not stop.is_set():
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", [f"k{n}", "x" * 2000])
            conn.execute("COMMIT")
            n += 1
            written.append(n)
        conn.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while len(written) < 200:
            time.sleep(0.01)
        dest = tmp_path / "backups" / "copy.db"
        dest.parent.mkdir()
        result = CliRunner().invoke(cli, ["backup", str(project.path), str(dest)])
        during = len(written)
    finally:
        stop.set()
        writer.join()
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{dest}: backup of {project.path} (")
    assert not dest.with_name("copy.db.partial").exists()
    assert not Path(f"{dest}-wal").exists()
    with connect(dest) as copy:
        assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        keys = [k for (k,) in copy.execute("SELECT key FROM settings WHERE key LIKE 'k%'")]
        assert copy.execute("SELECT count(*) FROM pool").fetchone()[0] == project.n_items
    # One consistent snapshot: the rows k0..k(m-1) for some m between the start and end of the copy.
    assert 200 <= len(keys) <= max(during, len(written))
    assert sorted(keys, key=lambda k: int(k[1:])) == [f"k{n}" for n in range(len(keys))]


def test_backup_to_an_unwritable_place_is_one_line(tmp_path: Path) -> None:
    project = build_project(tmp_path)
    result = CliRunner().invoke(cli, ["backup", str(project.path), str(tmp_path / "missing" / "copy.db")])
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1
    assert "cannot write the backup" in result.output


def test_app_sessions_leave_checkpoints_to_the_checkpointer(tmp_path: Path) -> None:
    from labeler.store.connection import start_checkpointer

    project = build_project(tmp_path)
    session = connect(project.path, autocheckpoint=False)
    assert session.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert connect(project.path).execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    size = project.path.stat().st_size
    for n in range(30):  # ~2,500 pages: past the 1,000 at which a commit would checkpoint
        session.conn.execute("BEGIN IMMEDIATE")
        session.conn.executemany("INSERT INTO settings VALUES (?, ?)", [(f"k{n}-{i}", "x" * 3000) for i in range(100)])
        session.conn.execute("COMMIT")
    assert project.path.stat().st_size == size  # every page still in the WAL only
    start_checkpointer(project.path, every=0.05)
    # A checkpoint copies the WAL's pages in several steps: wait for all of them, not the first.
    target = size + 3000 * 3000 * 0.9
    deadline = time.monotonic() + 30
    while project.path.stat().st_size <= target and time.monotonic() < deadline:
        time.sleep(0.05)
    assert project.path.stat().st_size > target
