"""The pooling commands, end to end through click, with exact output on tiny inputs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.cli import cli
from labeler.store import SCHEMA_VERSION

CORPUS = [
    {"doc_id": "d1", "text": "the cat sat on the mat"},
    {"doc_id": "d2", "title": "Dogs", "text": "dogs chase cats"},
    {"doc_id": "d3", "text": "python lists are mutable sequences"},
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(tmp_path)
    Path("c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CORPUS), encoding="utf-8")
    Path("q.tsv").write_text("query_id\ttext\nq1\tcat on a mat\nq2\tpython list\n", encoding="utf-8")
    Path("r.trec").write_text("q1 Q0 d2 1 3.0 r\nq1 Q0 d3 2 3.0 r\nq2 Q0 d1 1 1 r\n", encoding="utf-8")
    return CliRunner()


def run(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_import_build_export_stats(project: CliRunner) -> None:
    assert run(project, "init", "p.db") == f"p.db: goldpool project ready (schema version {SCHEMA_VERSION})\n"
    assert run(project, "import-corpus", "p.db", "c.jsonl") == "c.jsonl: 3 documents added, 0 replaced, 0 unchanged\n"
    assert run(project, "import-corpus", "p.db", "c.jsonl") == "c.jsonl: 0 documents added, 0 replaced, 3 unchanged\n"
    assert run(project, "import-queries", "p.db", "q.tsv") == "q.tsv: 2 queries added, 0 replaced, 0 unchanged\n"
    assert run(project, "import-run", "p.db", "r.trec", "--name", "sys1") == "r.trec: run 'sys1' imported, 3 rows\n"
    assert run(project, "import-run", "p.db", "r.trec", "--name", "sys1") == "r.trec: run 'sys1' already imported, nothing to do\n"
    assert run(project, "build-pool", "p.db", "--dense-depth", "0", "--no-progress") == (
        "pool build 1: 2 queries, 5 entries added, 0 kept\n  bm25: 2 documents\n  sys1: 3 documents\n"
    )
    exported = [json.loads(line) for line in run(project, "export-pool", "p.db").splitlines()]
    # d2/d3 tie on score 3.0 in the run: trec_eval puts the larger doc_id, d3, first.
    assert exported == [
        {"query_id": "q1", "doc_id": "d1", "sources": {"bm25": 1}, "priority": 1 / (60 + 1)},
        {"query_id": "q1", "doc_id": "d3", "sources": {"sys1": 1}, "priority": 1 / (60 + 1)},
        {"query_id": "q1", "doc_id": "d2", "sources": {"sys1": 2}, "priority": 1 / (60 + 2)},
        {"query_id": "q2", "doc_id": "d1", "sources": {"sys1": 1}, "priority": 1 / (60 + 1)},
        {"query_id": "q2", "doc_id": "d3", "sources": {"bm25": 1}, "priority": 1 / (60 + 1)},
    ]
    assert run(project, "stats", "p.db") == (
        "documents:      3\nqueries:        2\nruns:           1\nrun_entries:    3\n"
        "pool:           5\npooled_queries: 2\npool_builds:    1\njudged_entries: 0\n"
    )


def test_export_to_a_file(project: CliRunner) -> None:
    run(project, "init", "p.db")
    run(project, "import-corpus", "p.db", "c.jsonl")
    run(project, "import-queries", "p.db", "q.tsv")
    run(project, "build-pool", "p.db", "--dense-depth", "0", "--no-progress")
    result = project.invoke(cli, ["export-pool", "p.db", "-o", "pool.jsonl"])
    assert result.exit_code == 0
    assert result.stderr == "pool.jsonl: 2 pool entries written\n"
    assert len(Path("pool.jsonl").read_text().splitlines()) == 2


def test_bad_input_is_a_one_line_error_and_changes_nothing(project: CliRunner) -> None:
    run(project, "init", "p.db")
    run(project, "import-corpus", "p.db", "c.jsonl")
    Path("bad.jsonl").write_text('{"doc_id": "d9", "text": "ok"}\n{"doc_id": "d10", "text": ""}\n', encoding="utf-8")
    result = project.invoke(cli, ["import-corpus", "p.db", "bad.jsonl"])
    assert result.exit_code == 1
    assert result.output == (
        "Error: bad.jsonl, line 2, field 'text': empty; every record needs non-blank text\n"
    )
    assert "documents:      3\n" in run(project, "stats", "p.db")


def test_run_with_unknown_document(project: CliRunner) -> None:
    run(project, "init", "p.db")
    run(project, "import-corpus", "p.db", "c.jsonl")
    run(project, "import-queries", "p.db", "q.tsv")
    Path("bad.trec").write_text("q1 Q0 d1 1 2 r\nq1 Q0 nope 2 1 r\n", encoding="utf-8")
    result = project.invoke(cli, ["import-run", "p.db", "bad.trec", "--name", "x"])
    assert result.output == "Error: bad.trec, line 2, field 'doc_id': unknown document 'nope'; import the corpus first\n"


def test_missing_database_is_a_clear_error(project: CliRunner) -> None:
    result = project.invoke(cli, ["stats", "nope.db"])
    assert result.exit_code == 1
    assert result.output == "Error: nope.db: no such project database (create it with `goldpool init nope.db`)\n"


def _project_state(runner: CliRunner) -> tuple[str, list[str], bytes]:
    """What `stats` says, every row of the database as SQL, and the corpus file's bytes."""
    conn = sqlite3.connect("p.db")
    try:
        rows = list(conn.iterdump())
    finally:
        conn.close()
    return run(runner, "stats", "p.db"), rows, Path("c.jsonl").read_bytes()


@pytest.mark.parametrize("args", [["import-corpus", "c.jsonl", "p.db"], ["stats", "c.jsonl"], ["init", "c.jsonl"]])
def test_a_file_given_as_the_database_is_a_one_line_error(project: CliRunner, args: list[str]) -> None:
    run(project, "init", "p.db")
    run(project, "import-corpus", "p.db", "c.jsonl")
    before = _project_state(project)
    result = project.invoke(cli, args)
    assert result.exit_code == 1
    assert result.output == "Error: c.jsonl: not a goldpool project database (file is not a database)\n"
    assert _project_state(project) == before


@pytest.mark.parametrize(
    ("output", "reason"),
    [("missing/pool.jsonl", "No such file or directory"), ("x" * 300 + ".jsonl", "File name too long")],
)
def test_export_to_an_unwritable_path_is_a_one_line_error(project: CliRunner, output: str, reason: str) -> None:
    run(project, "init", "p.db")
    run(project, "import-corpus", "p.db", "c.jsonl")
    result = project.invoke(cli, ["export-pool", "p.db", "-o", output])
    assert result.exit_code == 1
    assert result.output == f"Error: {output}: cannot write ({reason})\n"


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (
            '{"doc_id": "d9", "text": "caf\\ud800"}',
            "bad.jsonl, line 2, field 'text': holds a lone surrogate escape (\\ud800-\\udfff without its pair), "
            "which is not valid Unicode; fix or remove the escape",
        ),
        (
            '{"doc_id": "d1", "text": "the cat sat on the mat", "source": "web"}',
            "bad.jsonl, line 2, field 'meta': 'd1' is already in the project with different content; "
            "import it again with --replace to overwrite it",
        ),
        (
            '{"doc_id": "d1", "title": "Cats", "text": "the cat sat on the mat"}',
            "bad.jsonl, line 2, field 'title': 'd1' is already in the project with different content; "
            "import it again with --replace to overwrite it",
        ),
    ],
    ids=["lone surrogate", "meta changed", "title changed"],
)
def test_bad_record_names_file_line_and_field_and_changes_nothing(project: CliRunner, record: str, message: str) -> None:
    run(project, "init", "p.db")
    run(project, "import-corpus", "p.db", "c.jsonl")
    Path("bad.jsonl").write_text('{"doc_id": "d8", "text": "fine"}\n' + record + "\n", encoding="utf-8")
    before = _project_state(project)
    result = project.invoke(cli, ["import-corpus", "p.db", "bad.jsonl"])
    assert result.exit_code == 1
    assert result.output == f"Error: {message}\n"
    assert _project_state(project) == before
