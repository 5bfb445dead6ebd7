"""A small nugget project: four questions (one with no vital nugget, one with none at all), two
systems' answers (one of them empty), people's and a judge's support labels on every pair."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from labeler.cli import cli

QUERIES = [("q1", "What does WAL mode do?"), ("q2", "What is NFC?"), ("q3", "How does TCP start?"),
           ("q4", "What is a rebase?")]
CHUNKS = [("d1", "WAL writes changes to a separate log."), ("d2", "Readers do not block the writer in WAL."),
          ("d3", "NFC composes characters."), ("d4", "TCP starts with SYN, then SYN-ACK.")]
#: query -> [(text, importance)]: q2 has no vital nugget, q4 no nugget at all.
NUGGETS = {
    "q1": [("WAL writes changes to a log file", "vital"), ("Readers do not block the writer", "vital"),
           ("The log is checkpointed into the database", "okay")],
    "q2": [("NFC composes characters", "okay"), ("NFC is a Unicode normal form", "okay")],
    "q3": [("The client sends SYN", "vital"), ("The server answers SYN-ACK", "okay")],
}
ANSWERS = {
    "A": [("a1", "q1", "WAL logs changes and readers keep reading."), ("a2", "q2", "It is a normal form."),
          ("a3", "q3", ""), ("a4", "q4", "Rebase replays commits.")],
    "B": [("b1", "q1", "WAL is a journal mode."), ("b2", "q2", "NFC composes characters in Unicode."),
          ("b3", "q3", "The client sends SYN and the server SYN-ACK.")],
}
#: People's support labels: (answer, nugget) -> verdict, every non-empty answer to a question with nuggets.
PEOPLE = {
    ("a1", "q1/n1"): "support", ("a1", "q1/n2"): "partial_support", ("a1", "q1/n3"): "not_support",
    ("a2", "q2/n1"): "not_support", ("a2", "q2/n2"): "support",
    ("b1", "q1/n1"): "partial_support", ("b1", "q1/n2"): "not_support", ("b1", "q1/n3"): "not_support",
    ("b2", "q2/n1"): "support", ("b2", "q2/n2"): "partial_support",
    ("b3", "q3/n1"): "support", ("b3", "q3/n2"): "support",
}
#: A judge biased towards support: it says support wherever people said partial support.
JUDGE = {k: ("support" if v == "partial_support" else v) for k, v in PEOPLE.items()}


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def run(*args: object) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.stdout


def nugget_records() -> list[dict]:
    return [{"query_id": q, "text": t, "importance": i} for q, found in NUGGETS.items() for t, i in found]


def support_records(labels: dict[tuple[str, str], str]) -> list[dict]:
    return [{"answer_id": a, "nugget_id": n, "verdict": v} for (a, n), v in labels.items()]


def build(tmp_path: Path, *, judge: bool = True, people: bool = True) -> str:
    """The project: queries, chunks, nuggets, both systems' answers, and the labels asked for."""
    db = str(tmp_path / "p.db")
    run("init", db)
    run("import-queries", db, write_jsonl(tmp_path / "q.jsonl", [{"query_id": q, "text": t} for q, t in QUERIES]))
    run("import-corpus", db, write_jsonl(tmp_path / "c.jsonl", [{"doc_id": d, "text": t} for d, t in CHUNKS]))
    run("import-nuggets", db, write_jsonl(tmp_path / "n.jsonl", nugget_records()))
    for system, answers in ANSWERS.items():
        records = [{"answer_id": a, "query_id": q, "response": r} for a, q, r in answers]
        run("import-answers", db, write_jsonl(tmp_path / f"{system}.jsonl", records), "--system", system)
    if people:
        run("import-verdicts", db, write_jsonl(tmp_path / "people.jsonl", support_records(PEOPLE)), "--annotator", "ann")
    if judge:
        run("import-verdicts", db, write_jsonl(tmp_path / "judge.jsonl", support_records(JUDGE)), "--judge", "j")
    return db


def add_nugget_answers(path: Path, query_ids: list[str]) -> None:
    """Two nuggets for each of ``query_ids`` of the project at ``path`` and one answer of system
    ``nugget-rag`` to each: an annotator's support items, two a question."""
    folder = path.parent
    run("import-nuggets", path, write_jsonl(folder / "nuggets.jsonl", [
        {"query_id": q, "text": f"Fact {k} of {q}", "importance": "vital" if k == 1 else "okay"}
        for q in query_ids for k in (1, 2)]))
    run("import-answers", path, write_jsonl(folder / "nugget-answers.jsonl", [
        {"answer_id": f"na-{q}", "query_id": q, "response": f"Fact 1 of {q}, and more."} for q in query_ids]),
        "--system", "nugget-rag")
