"""`goldpool remove-run`: a run goes with its entries and provenance; labelled pool entries stay."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import cli
from labeler.store import connect, now
from labeler.store import access
from pooling.pool import rrf_priority

CORPUS = [{"doc_id": f"d{n}", "text": f"text number {n}"} for n in range(1, 5)]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(tmp_path)
    Path("c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CORPUS), encoding="utf-8")
    Path("q.tsv").write_text("query_id\ttext\nq1\tfirst\nq2\tsecond\n", encoding="utf-8")
    # r finds q1/d2, q1/d3, q2/d1, q2/d4; r2 finds q1/d3 too (at rank 1).
    Path("r.trec").write_text("q1 Q0 d2 1 3.0 r\nq1 Q0 d3 2 2.0 r\nq2 Q0 d1 1 1 r\nq2 Q0 d4 2 0.5 r\n", encoding="utf-8")
    Path("r2.trec").write_text("q1 Q0 d3 1 9.0 r2\n", encoding="utf-8")
    runner = CliRunner()
    for args in (["init", "p.db"], ["import-corpus", "p.db", "c.jsonl"], ["import-queries", "p.db", "q.tsv"],
                 ["import-run", "p.db", "r.trec", "--name", "r"], ["import-run", "p.db", "r2.trec", "--name", "r2"],
                 ["build-pool", "p.db", "--bm25-depth", "0", "--dense-depth", "0", "--no-progress"]):
        assert runner.invoke(cli, args, catch_exceptions=False).exit_code == 0
    return runner


def _pool() -> dict[tuple[str, str], tuple[dict[str, int], float, int]]:
    with sqlite3.connect("p.db") as conn:
        rows = conn.execute("SELECT query_id, doc_id, sources, priority, position FROM pool").fetchall()
    return {(q, d): (json.loads(s), p, pos) for q, d, s, p, pos in rows}


def test_remove_run_keeps_labelled_entries_and_other_provenance(project: CliRunner) -> None:
    db = connect("p.db")
    ada, _ = access.add_annotator(db, "ada")
    db["judgments"].insert({"query_id": "q1", "doc_id": "d2", "annotator_id": ada.id, "relevance": 2, "at": now()})
    db["skips"].insert({"query_id": "q2", "doc_id": "d4", "annotator_id": ada.id, "at": now()})
    db["assignments"].insert({"query_id": "q2", "doc_id": "d1", "annotator_id": ada.id, "shown_order": 1, "assigned_at": now()})
    before = _pool()
    assert before[("q1", "d3")][0] == {"r": 2, "r2": 1}

    result = project.invoke(cli, ["remove-run", "p.db", "r"], catch_exceptions=False)
    assert result.output == (
        "run 'r' removed: 4 ranked entries, provenance removed from 4 pool entries, "
        "1 unlabelled pool entry removed, 2 labelled pool entries kept without a source\n"
    )
    after = _pool()
    # q2/d1: found only by r, assigned but never labelled: gone with its assignment.
    assert ("q2", "d1") not in after
    # q1/d2 (judged) and q2/d4 (skipped): stay, no source, priority 0, same position.
    assert after[("q1", "d2")] == ({}, 0.0, before[("q1", "d2")][2])
    assert after[("q2", "d4")] == ({}, 0.0, before[("q2", "d4")][2])
    # q1/d3: keeps r2 only; priority is the fusion of what is left: 1 / (60 + 1).
    assert after[("q1", "d3")] == ({"r2": 1}, 1 / (60 + 1), before[("q1", "d3")][2])
    assert rrf_priority({"r2": 1}) == 1 / 61
    with sqlite3.connect("p.db") as conn:
        assert conn.execute("SELECT name FROM runs").fetchall() == [("r2",)]
        assert conn.execute("SELECT count(*) FROM run_entries WHERE run = 'r'").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM assignments").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM judgments").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM skips").fetchone() == (1,)
    # The name is free again: the corrected run imports under it.
    again = project.invoke(cli, ["import-run", "p.db", "r.trec", "--name", "r"], catch_exceptions=False)
    assert again.output == "r.trec: run 'r' imported, 4 rows\n"


def test_remove_an_unknown_run_is_one_line_and_changes_nothing(project: CliRunner) -> None:
    before = _pool()
    result = project.invoke(cli, ["remove-run", "p.db", "nope"])
    assert result.exit_code == 1
    assert result.output == "Error: no run named 'nope' (runs: r, r2)\n"
    assert _pool() == before


def test_an_empty_run_is_refused_and_not_recorded(project: CliRunner) -> None:
    Path("empty.trec").write_text("\n", encoding="utf-8")
    result = project.invoke(cli, ["import-run", "p.db", "empty.trec", "--name", "later"])
    assert result.exit_code == 1
    assert result.output == "Error: empty.trec: empty: no run lines in the file; an empty run is not recorded\n"
    with sqlite3.connect("p.db") as conn:
        assert conn.execute("SELECT name FROM runs ORDER BY name").fetchall() == [("r",), ("r2",)]
