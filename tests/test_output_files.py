"""Files goldpool writes fail safe: backups never onto the project, exports swapped in whole,
no write through a link, and frozen versions that no SQL can change."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import cli

DOCS = [f"d{n}" for n in range(1, 7)]
GRADES = {("q1", "d1"): 3, ("q1", "d2"): 0, ("q2", "d3"): 2, ("q2", "d4"): 1}


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def ok(*args: str) -> str:
    code, output = invoke(*args)
    assert code == 0, output
    return output


def refused(*args: str) -> str:
    """The one line a refused command prints."""
    code, output = invoke(*args)
    assert code == 1, output
    assert len(output.strip().splitlines()) == 1, output
    return output.strip()


def project(directory: Path, grades: dict[tuple[str, str], int] = GRADES, version: str | None = "v1") -> Path:
    """A project with labels in ``grades`` from one annotator, frozen as ``version``."""
    directory.mkdir(exist_ok=True)
    corpus, queries, labels = directory / "corpus.jsonl", directory / "queries.jsonl", directory / "alice.qrels"
    corpus.write_text("".join(json.dumps({"doc_id": d, "text": f"text of {d}"}) + "\n" for d in DOCS))
    queries.write_text("".join(json.dumps({"query_id": q, "text": f"question {q}"}) + "\n" for q in ("q1", "q2")))
    labels.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted(grades.items())))
    db = directory / "p.db"
    ok("init", str(db))
    ok("import-corpus", str(db), str(corpus))
    ok("import-queries", str(db), str(queries))
    ok("import-judgments", str(db), str(labels), "--annotator", "alice")
    if version:
        ok("freeze", str(db), "--version", version)
    return db


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (links as their target text), by relative path."""
    out = {}
    for top, dirs, files in os.walk(folder):
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(top, d)))]:
            path = Path(top) / name
            rel = str(path.relative_to(folder))
            out[rel] = f"-> {os.readlink(path)}".encode() if path.is_symlink() else path.read_bytes()
    return out


def siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name and p.name.startswith(f".{path.name}"))


# --- backup -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dest", ["itself", "dotted path", "wal", "shm", "symlink", "hard link"])
def test_backup_onto_the_project_or_its_files_is_refused_and_loses_nothing(tmp_path: Path, dest: str) -> None:
    db = project(tmp_path, version=None)
    app = sqlite3.connect(db, isolation_level=None)  # someone labelling: the -wal and -shm exist
    app.execute("INSERT INTO settings (key, value) VALUES ('before', '1')")
    target = {
        "itself": db, "dotted path": tmp_path / "." / db.name, "wal": Path(f"{db}-wal"), "shm": Path(f"{db}-shm"),
        "symlink": tmp_path / "link.db", "hard link": tmp_path / "other-name.db",
    }[dest]
    if dest == "symlink":
        target.symlink_to(db)
    if dest == "hard link":
        os.link(db, target)
    code, output = invoke("backup", str(db), str(target))
    app.execute("INSERT INTO settings (key, value) VALUES ('after', '1')")  # committed after the backup
    app.close()
    assert code == 1, output
    assert "back up to another file" in output and len(output.strip().splitlines()) == 1
    kept = sqlite3.connect(db)
    assert {k for (k,) in kept.execute("SELECT key FROM settings WHERE key IN ('before', 'after')")} == {"before", "after"}
    assert kept.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    kept.close()
    if dest == "symlink":
        assert target.is_symlink()


def test_backup_refuses_a_link_or_read_only_file_and_leaves_them(tmp_path: Path) -> None:
    db = project(tmp_path, version=None)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "copy.db"
    link.symlink_to(victim)
    assert "is a symbolic link" in refused("backup", str(db), str(link))
    assert link.is_symlink() and victim.read_text() == "precious"
    read_only = tmp_path / "old-copy.db"
    read_only.write_text("an older backup")
    read_only.chmod(0o444)
    assert "is read-only" in refused("backup", str(db), str(read_only))
    assert read_only.read_text() == "an older backup" and stat.S_IMODE(read_only.stat().st_mode) == 0o444
    assert siblings(read_only) == [] and siblings(link) == []


# --- output files (-o) ------------------------------------------------------------------------


def test_output_file_refuses_a_link_a_planted_partial_and_a_read_only_file(tmp_path: Path) -> None:
    db = project(tmp_path, version=None)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")

    out = tmp_path / "labels.jsonl"
    out.symlink_to(victim)
    assert refused("export-judgments", str(db), "-o", str(out)) == (
        f"Error: {out}: is a symbolic link; goldpool does not write through links (name the file itself, or remove the link)")
    assert out.is_symlink() and victim.read_text() == "precious"

    out.unlink()
    planted = tmp_path / "labels.jsonl.partial"
    planted.symlink_to(victim)
    assert "labels.jsonl.partial: already exists and is a symbolic link" in refused("export-judgments", str(db), "-o", str(out))
    assert victim.read_text() == "precious" and not out.exists() and planted.is_symlink()
    planted.unlink()

    out.write_text("kept")
    out.chmod(0o444)
    assert refused("export-judgments", str(db), "-o", str(out)) == (
        f"Error: {out}: is read-only; goldpool does not replace it (make it writable, or name another file)")
    assert out.read_text() == "kept" and stat.S_IMODE(out.stat().st_mode) == 0o444


def test_output_file_keeps_the_permissions_of_the_file_it_replaces_and_reuses_a_leftover(tmp_path: Path) -> None:
    db = project(tmp_path, version=None)
    out = tmp_path / "labels.jsonl"
    out.write_text("old")
    out.chmod(0o600)
    leftover = tmp_path / "labels.jsonl.partial"
    leftover.write_text("half of an interrupted write")
    ok("export-judgments", str(db), "-o", str(out))
    assert len(out.read_text().splitlines()) == len(GRADES)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert not leftover.exists()


def test_the_partial_file_is_created_exclusively(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pooling import files

    target = tmp_path / "out.txt"
    partial = tmp_path / "out.txt.partial"
    real_open = os.open

    def racing_open(path, flags, mode=0o777):  # a file appears between the check and the creation
        if Path(path) == partial and not partial.exists():
            partial.write_text("someone else's")
        return real_open(path, flags, mode)

    monkeypatch.setattr(files.os, "open", racing_open)
    with pytest.raises(files.UnsafeTarget, match="appeared while goldpool was about to create it"):
        with files.atomic_write(target) as handle:
            handle.write("new")
    assert partial.read_text() == "someone else's" and not target.exists()


# --- exports ----------------------------------------------------------------------------------


def export_args(db: Path, out: Path, *formats: str) -> list[str]:
    return ["export", f"{db}@v1", *(a for f in formats for a in ("--format", f)), "-o", str(out)]


def test_export_replaces_a_previous_export_whole(tmp_path: Path) -> None:
    db = project(tmp_path)
    out = tmp_path / "golden"
    ok(*export_args(db, out, "all"))
    assert {"golden.jsonl", "corpus.jsonl", "qrels/test.tsv"} <= set(snapshot(out))
    ok(*export_args(db, out, "trec"))
    assert set(snapshot(out)) == {"qrels.txt", "README.md", "manifest.json"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) == {"qrels.txt", "README.md"}
    assert siblings(out) == []


def test_export_refuses_a_folder_that_is_not_an_export_of_this_project(tmp_path: Path) -> None:
    db = project(tmp_path / "a")
    other = project(tmp_path / "b", grades={**GRADES, ("q1", "d2"): 1})
    out = tmp_path / "shared"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    message = refused(*export_args(db, out, "trec"))
    assert message == (f"Error: {out}: is not empty and is not a previous goldpool export of this project "
                       "(no manifest.json); give --overwrite to replace it whole, or choose another folder")
    assert snapshot(out) == {"notes.txt": b"mine"}

    ok(*export_args(other, tmp_path / "from-b", "trec"))
    before = snapshot(tmp_path / "from-b")
    assert "its version 'v1' is not this project's" in refused(*export_args(db, tmp_path / "from-b", "trec"))
    assert snapshot(tmp_path / "from-b") == before

    ok(*export_args(db, out, "trec"), "--overwrite")
    assert set(snapshot(out)) == {"qrels.txt", "README.md", "manifest.json"}


def test_export_refuses_a_planted_link_and_overwrite_removes_it_unfollowed(tmp_path: Path) -> None:
    db = project(tmp_path)
    out = tmp_path / "golden"
    ok(*export_args(db, out, "trec"))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / "qrels.txt").unlink()
    (out / "qrels.txt").symlink_to(victim)  # a previous export in a shared folder, tampered with
    assert refused(*export_args(db, out, "trec")) == (
        f"Error: {out}: is not empty and is not a previous goldpool export of this project (it holds a symbolic "
        "link, qrels.txt); give --overwrite to replace it whole, or choose another folder")
    assert victim.read_text() == "precious" and (out / "qrels.txt").is_symlink()
    ok(*export_args(db, out, "trec"), "--overwrite")
    assert victim.read_text() == "precious"
    assert not (out / "qrels.txt").is_symlink() and "q1 0 d1 3" in (out / "qrels.txt").read_text()

    link = tmp_path / "link-to-golden"
    link.symlink_to(out, target_is_directory=True)
    assert "is a symbolic link" in refused(*export_args(db, link, "trec"), "--overwrite")


def test_export_refuses_a_read_only_file_inside_a_previous_export_and_writes_nothing(tmp_path: Path) -> None:
    db = project(tmp_path)
    out = tmp_path / "golden"
    ok(*export_args(db, out, "trec", "beir"))
    kept = out / "qrels" / "test.tsv"
    kept.chmod(0o444)  # someone protected this file: replacing the folder would delete it
    before = snapshot(out)
    for overwrite in ((), ("--overwrite",)):
        assert refused(*export_args(db, out, "trec"), *overwrite) == (
            f"Error: {out}: holds a read-only file, qrels/test.tsv; goldpool does not replace it "
            "(make it writable, or choose another folder)")
        assert snapshot(out) == before and stat.S_IMODE(kept.stat().st_mode) == 0o444
        assert siblings(out) == []
    kept.chmod(0o644)
    ok(*export_args(db, out, "trec"))
    assert set(snapshot(out)) == {"qrels.txt", "README.md", "manifest.json"}


def test_a_failed_export_leaves_the_previous_one_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labeler.retrieval import export_folder

    db = project(tmp_path)
    out = tmp_path / "golden"
    ok(*export_args(db, out, "trec"))
    before = snapshot(out)

    def half_then_fail(folder: Path, rows, records, **_) -> list[Path]:
        (folder / "golden.jsonl").write_text(json.dumps(records[0]) + "\n" + '{"query_id": "q1", "doc')
        raise OSError(28, "No space left on device")

    monkeypatch.setitem(export_folder._WRITERS, "jsonl", half_then_fail)
    assert "cannot write the export (No space left on device)" in refused(*export_args(db, out, "trec", "jsonl"))
    assert snapshot(out) == before
    assert siblings(out) == []


def test_an_export_killed_mid_write_leaves_the_previous_one_intact(tmp_path: Path) -> None:
    db = project(tmp_path)
    out = tmp_path / "golden"
    ok(*export_args(db, out, "trec"))
    before = snapshot(out)
    # The export writes half of golden.jsonl, says so, and waits on its stdin: killed right there.
    script = (
        "import sys\n"
        "from labeler.retrieval import export_folder\n"
        "from labeler.cli import cli\n"
        "def half(folder, rows, records, **_):\n"
        "    with (folder / 'golden.jsonl').open('w') as handle:\n"
        "        handle.write('{\"query_id\": \"q1\", \"doc')\n"
        "        handle.flush()\n"
        "        print('writing', flush=True)\n"
        "        sys.stdin.readline()\n"
        "export_folder._WRITERS['jsonl'] = half\n"
        "cli(sys.argv[1:], prog_name='goldpool')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parent.parent), *sys.path])}
    proc = subprocess.Popen([sys.executable, "-c", script, *export_args(db, out, "trec", "jsonl")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline() == "writing\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdin.close()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    assert snapshot(out) == before  # no golden.jsonl, half or whole, under the final name
    left = siblings(out)
    assert len(left) == 1 and left[0].endswith(".partial")  # the hidden work folder, safe to delete
    ok(*export_args(db, out, "trec", "jsonl"))
    assert set(snapshot(out)) == {"qrels.txt", "golden.jsonl", "README.md", "manifest.json"}


def test_replacing_an_export_without_an_atomic_exchange(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pooling import files

    target = tmp_path / "folder"
    target.mkdir()
    (target / "old.txt").write_text("old")
    monkeypatch.setattr(files, "_exchange", lambda a, b: False)
    files.replace_folder(target, lambda folder: (folder / "new.txt").write_text("new"))
    assert snapshot(target) == {"new.txt": b"new"} and siblings(target) == []

    real_rename = os.rename

    def fail_moving_in(src, dst):
        if Path(src).name == target.name:
            raise OSError(5, "Input/output error")
        return real_rename(src, dst)

    monkeypatch.setattr(files.os, "rename", fail_moving_in)
    with pytest.raises(OSError, match="Input/output error"):
        files.replace_folder(target, lambda folder: (folder / "newer.txt").write_text("newer"))
    assert snapshot(target) == {"new.txt": b"new"} and siblings(target) == []


# --- frozen versions ----------------------------------------------------------------------------


@pytest.mark.parametrize("sql", [
    "INSERT OR REPLACE INTO golden_rows SELECT version, query_id, doc_id, 0, labels, adjudicated, posterior, sources "
    "FROM golden_rows WHERE query_id = 'q1' AND doc_id = 'd1'",
    "REPLACE INTO golden_rows (version, query_id, doc_id, relevance, labels) VALUES ('v1', 'q1', 'd1', 0, '[]')",
    "INSERT INTO golden_rows (version, query_id, doc_id, relevance, labels) VALUES ('v1', 'q1', 'd5', 3, '[]')",
    "INSERT OR REPLACE INTO golden_versions (id, name, created_at, parent, rule, content_hash, manifest) "
    "SELECT id, name, created_at, parent, rule, 'forged', '{\"note\": \"forged\"}' FROM golden_versions",
    "INSERT OR REPLACE INTO golden_versions (name, created_at, rule, content_hash, manifest) "
    "VALUES ('v1', 'now', 'majority', 'forged', '{}')",
    "INSERT OR REPLACE INTO golden_versions (id, name, created_at, rule, content_hash, manifest) "
    "SELECT id, 'v9', created_at, rule, content_hash, manifest FROM golden_versions",
])
def test_no_sql_changes_a_frozen_version(tmp_path: Path, sql: str) -> None:
    db = project(tmp_path)
    conn = sqlite3.connect(db, isolation_level=None)  # as the sqlite3 shell would: foreign keys off
    before = (conn.execute("SELECT * FROM golden_versions").fetchall(),
              conn.execute("SELECT * FROM golden_rows ORDER BY query_id, doc_id").fetchall())
    with pytest.raises(sqlite3.IntegrityError, match="golden versions are immutable"):
        conn.execute(sql)
    after = (conn.execute("SELECT * FROM golden_versions").fetchall(),
             conn.execute("SELECT * FROM golden_rows ORDER BY query_id, doc_id").fetchall())
    conn.close()
    assert after == before


def test_a_version_altered_outside_goldpool_is_refused_by_export_eval_diff_completeness_and_versions(
        tmp_path: Path) -> None:
    db = project(tmp_path)
    out = tmp_path / "golden"
    ok(*export_args(db, out, "trec"))
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.0 bm25\nq1 Q0 d2 2 1.0 bm25\nq2 Q0 d3 1 1.0 bm25\n")
    # Another tool, with the triggers out of the way, regrades an item of the frozen version.
    conn = sqlite3.connect(db, isolation_level=None)
    triggers = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'golden_rows'").fetchall()
    for name, _ in triggers:
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("UPDATE golden_rows SET relevance = 0 WHERE query_id = 'q1' AND doc_id = 'd1'")
    for _, sql in triggers:
        conn.execute(sql)
    conn.close()
    before = snapshot(out)
    altered = "golden version 'v1': its rows no longer match its content hash"
    assert altered in refused(*export_args(db, out, "trec"))
    assert snapshot(out) == before
    assert altered in refused("eval", f"{db}@v1", str(run))
    assert altered in refused("diff", str(db), "v1", "v1")
    assert altered in refused("completeness", f"{db}@v1")
    assert altered in refused("completeness", str(db))  # the latest version, v1
    code, output = invoke("versions", str(db))
    assert code == 1 and output.splitlines()[1].endswith("ALTERED")
    assert output.splitlines()[-1].startswith("Error: v1: rows no longer match the content hash")


def test_freeze_refuses_rows_planted_under_a_name_not_yet_frozen(tmp_path: Path) -> None:
    db = project(tmp_path, version=None)
    # Another tool writes rows under v1 before anyone freezes v1: the triggers guard stored versions only.
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executemany("INSERT INTO golden_rows (version, query_id, doc_id, relevance, labels) VALUES ('v1', ?, ?, ?, '[]')",
                     [("q1", "d5", 3), ("q2", "d6", 3)])
    conn.close()
    before = _tables(db)
    assert refused("freeze", str(db), "--version", "v1") == (
        "Error: golden version 'v1': 2 rows are stored under this name although it was never frozen; "
        "another tool wrote them, so goldpool does not freeze under it (choose another name, or delete them: "
        "DELETE FROM golden_rows WHERE version = 'v1')")
    assert _tables(db) == before
    ok("freeze", str(db), "--version", "v2")
    assert "ALTERED" not in ok("versions", str(db))


def _tables(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    rows = [(t, *r) for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            for r in sorted(conn.execute(f"SELECT * FROM {t}"), key=repr)]  # noqa: S608
    conn.close()
    return rows


def test_versions_recompute_the_content_hash_of_an_intact_project(tmp_path: Path) -> None:
    db = project(tmp_path)
    output = ok("versions", str(db))
    text = "".join(f"{q}\t{d}\t{g}\n" for (q, d), g in sorted(GRADES.items()))
    assert hashlib.sha256(text.encode()).hexdigest()[:12] in output and "ALTERED" not in output


def test_a_project_frozen_before_the_seal_is_sealed_when_opened(tmp_path: Path) -> None:
    from labeler.store import SCHEMA_VERSION, connect
    from labeler.store.migrations import MIGRATIONS
    from labeler.store.migrations.m10_golden_sealed import SQL as _M_GOLDEN_SEALED

    db = project(tmp_path)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TRIGGER golden_versions_no_replace")
    conn.execute("DROP TRIGGER golden_rows_frozen")
    for view in ("current_judgments", "current_adjudications", "current_human_verdicts", "current_judge_verdicts"):
        conn.execute(f"DROP VIEW {view}")  # made by a later step, which runs again
    conn.execute("DROP INDEX judge_verdicts_unit")
    conn.execute("ALTER TABLE judge_verdicts DROP COLUMN raw_length")
    conn.execute("ALTER TABLE judge_cache DROP COLUMN raw_length")
    conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(_M_GOLDEN_SEALED)}")
    conn.execute("INSERT INTO golden_rows (version, query_id, doc_id, relevance, labels) VALUES ('v1', 'q1', 'd5', 3, '[]')")  # unsealed
    conn.close()
    connect(db).close()
    conn = sqlite3.connect(db, isolation_level=None)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with pytest.raises(sqlite3.IntegrityError, match="golden versions are immutable"):
        conn.execute("INSERT INTO golden_rows (version, query_id, doc_id, relevance, labels) VALUES ('v1', 'q2', 'd6', 3, '[]')")
    conn.close()
