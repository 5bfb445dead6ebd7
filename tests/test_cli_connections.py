"""Every command closes the project database it opened, whether it succeeds or fails.

Each SQLite connection opened while a command runs is recorded (and kept referenced, so that
garbage collection cannot close it in the command's place); after the command, every one of
them must be closed.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from app_fixtures import fake_streamlit
from judge_server import JudgeServer
from labeler.cli import cli

CORPUS = [{"doc_id": f"d{i}", "text": text} for i, text in enumerate(
    ["the cat sat on the mat", "dogs chase cats", "python lists are mutable", "a cat and a dog", "lists of python tricks"], 1)]
QRELS = "q1 0 d1 3\nq1 0 d4 2\nq1 0 d2 0\nq2 0 d3 3\nq2 0 d5 1\n"
SECOND = "q1 0 d1 2\nq1 0 d4 2\nq1 0 d2 1\nq2 0 d3 3\nq2 0 d5 0\n"
ITEMS = [{"item_id": f"f{i}", "kind": "faithfulness", "question": "why?", "contexts": ["because"], "response": f"answer {i}"}
         for i in range(1, 7)]


def _jsonl(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    _jsonl(tmp_path / "c.jsonl", CORPUS)
    (tmp_path / "q.tsv").write_text("query_id\ttext\nq1\tcat on a mat\nq2\tpython list\n", encoding="utf-8")
    (tmp_path / "r.trec").write_text("q1 Q0 d2 1 3.0 r\nq1 Q0 d1 2 2.0 r\nq2 Q0 d3 1 1 r\n", encoding="utf-8")
    (tmp_path / "r2.trec").write_text("q1 Q0 d4 1 3.0 s\nq1 Q0 d1 2 2.0 s\nq2 Q0 d5 1 1 s\n", encoding="utf-8")
    (tmp_path / "qrels.txt").write_text(QRELS, encoding="utf-8")
    (tmp_path / "second.txt").write_text(SECOND, encoding="utf-8")
    _jsonl(tmp_path / "items.jsonl", ITEMS)
    _jsonl(tmp_path / "people.jsonl", [{"item_id": f"f{i}", "verdict": "SUPPORTED" if i % 2 else "UNSUPPORTED"} for i in (1, 2, 3)])
    _jsonl(tmp_path / "answers.jsonl", [{"query_id": "q1", "response": "A cat sat. It was on the mat.", "retrieved_ids": ["d1"]}])
    _jsonl(tmp_path / "nuggets.jsonl", [{"query_id": "q1", "text": "A cat sat on the mat", "importance": "vital"}])
    _jsonl(tmp_path / "judge.jsonl", [{"item_id": f"f{i}", "verdict": "SUPPORTED" if i < 5 else "UNSUPPORTED"} for i in range(1, 7)])
    return tmp_path


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[sqlite3.Connection]:
    """Every SQLite connection opened from now on, in order."""
    connections: list[sqlite3.Connection] = []
    real = sqlite3.connect

    def connect(*args, **kwargs):
        connection = real(*args, **kwargs)
        connections.append(connection)
        return connection

    monkeypatch.setattr(sqlite3, "connect", connect)
    return connections


def _is_open(connection: sqlite3.Connection) -> bool:
    try:
        connection.total_changes  # noqa: B018 (refused on a closed connection)
    except sqlite3.ProgrammingError:
        return False
    return True


def _commands_with_a_project() -> set[str]:
    """Commands whose first argument is the project (DB), or a golden set that may be one (GOLDEN)."""
    return {name for name, command in cli.commands.items()
            if command.params and command.params[0].name in ("db", "golden")}


def test_every_command_closes_its_project(files: Path, opened: list[sqlite3.Connection], monkeypatch: pytest.MonkeyPatch) -> None:
    server = JudgeServer(answer=lambda message: "SUPPORTED")
    # `serve` runs Streamlit in a child process: stand in for it (the child opens its own database).
    fake_streamlit(monkeypatch)
    steps: list[tuple[list[str], int]] = [
        (["init", "p.db"], 0),
        (["import-corpus", "p.db", "c.jsonl"], 0),
        (["import-queries", "p.db", "q.tsv"], 0),
        (["import-run", "p.db", "r.trec", "--name", "sys1"], 0),
        (["build-pool", "p.db", "--dense-depth", "0", "--no-progress"], 0),
        (["plan-sample", "p.db", "--name", "s1", "--share", "0.5"], 0),
        (["stats", "p.db"], 0),
        (["export-pool", "p.db", "-o", "pool.jsonl"], 0),
        (["add-annotator", "p.db", "ada"], 0),
        (["add-annotator", "p.db", "bob"], 0),
        (["new-token", "p.db", "ada"], 0),
        (["new-token", "p.db", "nobody"], 1),  # fails after opening the project
        (["annotators", "p.db"], 0),
        (["release", "p.db", "bob"], 0),
        (["deactivate", "p.db", "bob"], 0),
        (["activate", "p.db", "bob"], 0),
        (["label-settings", "p.db", "overlap=0.5"], 0),
        (["import-judgments", "p.db", "qrels.txt", "--annotator", "ada"], 0),
        (["import-judgments", "p.db", "second.txt", "--annotator", "bob"], 0),
        (["export-judgments", "p.db", "-o", "judgments.jsonl"], 0),
        (["freeze", "p.db", "--version", "v1", "--allow-ties"], 0),
        (["versions", "p.db"], 0),
        (["export", "p.db", "--version", "v1", "--format", "trec", "-o", "out"], 0),
        (["diff", "p.db", "v1", "v1"], 0),
        (["diff", "p.db", "v1", "v9"], 1),
        (["eval", "p.db@v1", "r.trec"], 0),
        (["compare", "p.db@v1", "r.trec", "r2.trec"], 0),
        (["gate", "p.db@v1", "--baseline", "r.trec", "--candidate", "r2.trec", "--metric", "P@10"], 0),
        (["add-run", "p.db", "r2.trec", "--name", "sys2", "--depth", "3"], 0),
        (["completeness", "p.db", "--version", "v1"], 0),
        (["calibrate", "p.db", "--n-boot", "10"], 0),
        (["import-items", "p.db", "items.jsonl"], 0),
        (["import-verdicts", "p.db", "people.jsonl", "--annotator", "ada"], 0),
        (["import-verdicts", "p.db", "judge.jsonl", "--judge", "j1"], 0),
        (["export-verdicts", "p.db", "-o", "verdicts.jsonl"], 0),
        (["calibrate", "p.db", "--judge", "j1", "--n-boot", "10"], 0),
        (["estimate", "p.db", "--judge", "j1", "--metric", "faithfulness-rate"], 0),
        (["estimate", "p.db", "--judge", "j1", "--metric", "win-rate"], 1),
        (["run-judge", "p.db", "--judge", "j2", "--model", "m", "--base-url", server.url, "--task", "faithfulness"], 0),
        (["disagreements", "p.db", "--judge", "j1"], 0),
        (["disagreements", "p.db", "--judge", "nobody"], 1),
        (["jury", "p.db", "--judge", "j1", "--judge", "j2", "--name", "jj"], 0),
        (["import-answers", "p.db", "answers.jsonl", "--system", "rag"], 0),
        (["split-claims", "p.db", "--system", "rag", "--sentences"], 0),
        (["split-claims", "p.db", "--system", "nobody", "--sentences"], 1),
        (["answer-metrics", "p.db", "--system", "rag"], 0),
        (["answer-metrics", "p.db", "--system", "nobody"], 1),
        (["import-nuggets", "p.db", "nuggets.jsonl"], 0),
        (["run-judge", "p.db", "--judge", "j2", "--model", "m", "--base-url", server.url, "--task", "nuggets"], 0),
        (["nugget-metrics", "p.db", "--system", "rag"], 0),
        (["nugget-metrics", "p.db", "--system", "nobody"], 1),
        (["nuggetize", "p.db", "--judge", "nz", "--model", "m", "--base-url", server.url], 0),
        (["import-answers", "p.db", "answers.jsonl", "--system", "rag2"], 0),
        (["export-answers", "p.db", "--system", "rag", "-o", "answers_out.jsonl"], 0),
        (["sample-answers", "p.db", "--system", "rag", "--n", "1", "--name", "some"], 0),
        (["import-traces", "p.db", "answers.jsonl", "--system", "traced"], 1),  # not OTLP: refused after opening
        (["gate", "p.db", "--baseline", "rag", "--candidate", "rag2", "--metric", "correctness"], 2),  # no verdicts
        (["split-claims", "p.db", "--system", "rag2", "--judge", "j3", "--model", "m", "--base-url", server.url], 0),
        (["stages", "p.db@v1", "--system", "rag", "--system", "rag2"], 0),
        (["stages", "p.db@v1", "--system", "nobody"], 1),
        (["gold-context", "p.db@v1", "--system", "rag", "--model", "m", "--base-url", server.url, "--all"], 0),
        (["diagnose", "p.db@v1", "--system", "rag"], 0),
        (["simulate-pooling", "p.db", "--qrels", "qrels.txt", "--budget", "4"], 0),
        (["backup", "p.db", "copy.db"], 0),
        (["remove-run", "p.db", "sys2"], 0),
        (["serve", "p.db"], 0),
    ]
    runner = CliRunner()
    left_open: dict[str, int] = {}
    try:
        for args, code in steps:
            opened.clear()
            result = runner.invoke(cli, args)
            assert result.exit_code == code, (args, result.output, result.exception)
            assert opened, f"{args[0]} opened no database"
            still = sum(_is_open(c) for c in opened)
            if still:
                left_open[" ".join(args[:2])] = still
            for connection in opened:
                connection.close()
    finally:
        server.close()
    assert not left_open, f"commands that left connections open: {left_open}"
    assert {args[0] for args, _ in steps} == _commands_with_a_project()
