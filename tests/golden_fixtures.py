"""A small golden-set project built through the CLI, and its label and run files: the helpers
of ``test_golden`` that other test modules use too."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from labeler.cli import cli

DOCS = [f"d{n:02d}" for n in range(1, 13)]
QUERIES = ["q1", "q2", "q3"]
# alice labels everything; bob agrees on most of what he labels and disagrees on (q1, d02).
ALICE = {("q1", "d01"): 3, ("q1", "d02"): 1, ("q1", "d03"): 0, ("q2", "d04"): 2, ("q2", "d05"): 0,
         ("q3", "d06"): 1, ("q3", "d07"): 0}
BOB = {("q1", "d01"): 3, ("q1", "d02"): 2, ("q2", "d04"): 2}
CAROL = {("q1", "d02"): 2}


def run(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 1, result.output
    return result.output


def qrels(path: Path, labels: dict[tuple[str, str], int]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted(labels.items())))
    return path


def new_project(directory: Path, name: str = "p.db") -> Path:
    corpus = directory / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": d, "title": f"T {d}", "text": f"text of {d} <b>"}) + "\n" for d in DOCS))
    queries = directory / "queries.jsonl"
    queries.write_text("".join(json.dumps({"query_id": q, "text": f"question {q}"}) + "\n" for q in QUERIES))
    db = directory / name
    run("init", str(db))
    run("import-corpus", str(db), str(corpus))
    run("import-queries", str(db), str(queries))
    return db


def _run_file(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path
