"""The labelling commands through click's CliRunner, with exact output where it is stable."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from labeler.retrieval import scheduling
from labeler.cli import cli
from labeler.store import connect
from labeler.store import access, labels
from labeler.store.vocabulary import Annotator
from labels_fixtures import make_project


def _run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_add_annotator_prints_a_token_that_signs_in(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    make_project(path).close()
    result = _run("add-annotator", str(path), "ada", "--role", "admin")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0] == "Added admin 'ada' (id 1)."
    token = re.fullmatch(r"Access token \(shown once, not stored\): (gp1\.[A-Za-z0-9_-]+)", lines[1])[1]
    assert lines[2] == f'To label: goldpool serve {path}, then paste the token into "Access token".'
    assert len(lines) == 3
    assert access.authenticate(connect(path), token) == Annotator(1, "ada", "admin", True)


def test_new_token_replaces_the_old_one(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    make_project(path).close()
    old = _run("add-annotator", str(path), "ada").output.splitlines()[1].rsplit(" ", 1)[1]
    result = _run("new-token", str(path), "ada")
    assert result.exit_code == 0
    new = re.fullmatch(r"New access token for 'ada' \(shown once, not stored\): (gp1\.[A-Za-z0-9_-]+)\n", result.output)[1]
    db = connect(path)
    assert access.authenticate(db, old) is None
    assert access.authenticate(db, new) == Annotator(1, "ada", "annotator", True)
    assert _run("new-token", str(path), "nobody").exit_code == 1


def test_add_annotator_reports_a_taken_name_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    make_project(path).close()
    _run("add-annotator", str(path), "ada")
    result = _run("add-annotator", str(path), "ada")
    assert result.exit_code == 1
    assert result.output == "Error: annotator 'ada' already exists\n"


def test_missing_database_is_one_line(tmp_path: Path) -> None:
    result = _run("annotators", str(tmp_path / "none.db"))
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1


def test_annotators_lists_and_deactivate_activate(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    db = make_project(path, overlap=0.0)
    ada, _ = access.add_annotator(db, "ada", role="admin")
    bob, token = access.add_annotator(db, "bob")
    item = scheduling.next_item(db, bob.id)
    labels.record_judgment(db, bob.id, item.query_id, item.doc_id, 2, 1.0)
    assert _run("annotators", str(path)).output == (
        "   1  ada  admin      active    0 labelled, 0 assigned\n"
        "   2  bob  annotator  active    1 labelled, 10 assigned\n"
    )
    result = _run("deactivate", str(path), "bob")
    assert result.output == "'bob' is deactivated: their token stops working at their next click; labels are kept.\n"
    assert access.authenticate(db, token) is None
    assert "inactive" in _run("annotators", str(path)).output.splitlines()[1]
    assert _run("activate", str(path), "bob").output == "'bob' is active: their token works again.\n"
    assert access.authenticate(db, token) == bob
    missing = _run("deactivate", str(path), "eve")
    assert missing.exit_code == 1 and "no annotator named 'eve'" in missing.output


def test_label_settings_shows_and_changes(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    make_project(path).close()
    assert _run("label-settings", str(path)).output == (
        "overlap = 0.2\noverlap_k = 2\nreservation_minutes = 30.0\nbatch_size = 10\n"
        "tasks = relevance (not chosen: every task with items)\n"
        "strategy = depth\nstop_recall = off\nstop_confidence = 0.9\nstop_rule = sample\n"
    )
    assert _run("label-settings", str(path), "overlap=0.3", "batch_size=5").output == (
        "overlap = 0.3\noverlap_k = 2\nreservation_minutes = 30.0\nbatch_size = 5\n"
        "tasks = relevance (not chosen: every task with items)\n"
        "strategy = depth\nstop_recall = off\nstop_confidence = 0.9\nstop_rule = sample\n"
    )
    assert _run("label-settings", str(path), "stop_rule=knee").output.endswith("stop_rule = knee\n")
    rule = _run("label-settings", str(path), "stop_rule=best")
    assert rule.exit_code == 1 and rule.output == "Error: setting stop_rule: unknown rule 'best'; rules are: quantile, sample, knee\n"
    changed = _run("label-settings", str(path), "strategy=mtf", "stop_recall=0.9").output
    assert "strategy = mtf\nstop_recall = 0.9\nstop_confidence = 0.9\n" in changed
    assert "stop_recall = off\n" in _run("label-settings", str(path), "stop_recall=off", "strategy=depth").output
    wrong = _run("label-settings", str(path), "strategy=best")
    assert wrong.exit_code == 1 and wrong.output.startswith("Error: setting strategy: unknown strategy 'best'")
    bad = _run("label-settings", str(path), "overlap=2")
    assert bad.exit_code == 1 and bad.output == "Error: setting overlap: 2.0 is outside [0.0, 1.0]\n"
    assert _run("label-settings", str(path), "overlap").exit_code == 2


def test_export_judgments_to_a_file_and_to_stdout(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    db = make_project(path, overlap=0.0)
    bob, _ = access.add_annotator(db, "bob")
    item = scheduling.next_item(db, bob.id)
    labels.record_judgment(db, bob.id, item.query_id, item.doc_id, 2, 4.0, "a note")
    labels.record_judgment(db, bob.id, item.query_id, item.doc_id, 3, 1.0)
    out = tmp_path / "labels.jsonl"
    result = CliRunner().invoke(cli, ["export-judgments", str(path), "-o", str(out)])
    assert result.exit_code == 0 and result.stderr == f"{out}: 2 judgments written\n"
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["annotator"], r["relevance"], r["seconds"], r["note"]) for r in rows] == [
        ("bob", 2, 4.0, "a note"),
        ("bob", 3, 1.0, ""),
    ]
    stdout = _run("export-judgments", str(path)).output
    assert stdout == out.read_text()


def test_export_judgments_to_an_unwritable_path_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    make_project(path, overlap=0.0).close()
    for output, message in [
        (tmp_path / "missing" / "labels.jsonl", f"{tmp_path / 'missing' / 'labels.jsonl'}: cannot write (No such file or directory)"),
        (tmp_path / ("x" * 300 + ".jsonl"), f"{tmp_path / ('x' * 300 + '.jsonl')}: cannot write (File name too long)"),
    ]:
        result = CliRunner().invoke(cli, ["export-judgments", str(path), "-o", str(output)])
        assert result.exit_code == 1
        assert result.output == f"Error: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("p.db")) == []
