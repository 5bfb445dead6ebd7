"""A small project with one wrong answer of each diagnosis outcome, built through the CLI.

Six questions, each with its golden chunks; system ``rag`` answered them (one right), and a
scripted generator answers the gold-context test from the chunks it is given, as a reader
that copies what the context says would:

- q1 retrieval-miss: the relevant chunk was not retrieved; given it, the generator answers;
- q2 context-ignored: the relevant chunk was retrieved and the answer is still wrong;
- q3 generation: the relevant chunk holds the answer and the generator still gets it wrong;
- q4 knowledge-gap: no chunk of the corpus holds "356.7";
- q5 incomplete-labels: only d6, which nobody labelled, holds "Rembrandt";
- q6 correct.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from labels_fixtures import write_jsonl
from labeler.diagnosis.gold_context import gold_answer_id, gold_chunk_ids
from labeler.cli import cli

CORPUS = [
    ("d1", "Wilhelm Röntgen discovered X-rays in 1895 in Würzburg."),
    ("d2", "Canberra is the capital city of Australia."),
    ("d3", "Middlemarch is a novel written by George Eliot."),
    ("d4", "Mercury is a metal that is liquid at room temperature."),
    ("d5", "The Night Watch hangs in the Rijksmuseum in Amsterdam."),
    ("d6", "Rembrandt painted The Night Watch in 1642."),
    ("d7", "Jupiter is the largest planet of the solar system."),
    ("d8", "Sydney is the largest city of Australia."),
    ("d9", "Medical imaging uses radiation of many kinds."),
]
QUERIES = [
    ("q1", "Who discovered X-rays?", "Wilhelm Röntgen"),
    ("q2", "What is the capital of Australia?", "Canberra"),
    ("q3", "Who wrote Middlemarch?", "George Eliot"),
    ("q4", "What is the boiling point of mercury?", "356.7 degrees Celsius"),
    ("q5", "Who painted The Night Watch?", "Rembrandt"),
    ("q6", "What is the largest planet?", "Jupiter"),
]
QRELS = {"q1": {"d1": 3, "d9": 0}, "q2": {"d2": 3, "d8": 1}, "q3": {"d3": 3}, "q4": {"d4": 2}, "q5": {"d5": 2},
         "q6": {"d7": 3}}
#: query -> (response, retrieved ids, people's verdict)
ANSWERS = {
    "q1": ("Marie Curie.", ["d9", "d8"], "INCORRECT"),
    "q2": ("Sydney.", ["d8", "d2"], "INCORRECT"),
    "q3": ("Charles Dickens.", ["d3"], "INCORRECT"),
    "q4": ("100 degrees.", ["d4"], "INCORRECT"),
    "q5": ("Vermeer.", ["d5"], "INCORRECT"),
    "q6": ("Jupiter.", ["d7"], "CORRECT"),
}
EXPECTED = {"q1": "retrieval-miss", "q2": "context-ignored", "q3": "generation", "q4": "knowledge-gap",
            "q5": "incomplete-labels"}


def reader(message: str) -> str:
    """The scripted generator: what a reader makes of the gold context it is given."""
    if "Röntgen" in message:
        return "Wilhelm Röntgen discovered X-rays."
    if "Canberra" in message:
        return "Canberra."
    if "Middlemarch" in message:
        return "Charles Dickens wrote it."  # wrong although the context says it
    if "Rembrandt painted" in message:
        return "Rembrandt."
    if "Night Watch" in message:
        return "It hangs in Amsterdam; the context does not name the painter."
    return "I don't know."


#: What people say of the gold-context answers above, by query.
GOLD_VERDICTS = {"q1": "CORRECT", "q2": "CORRECT", "q3": "INCORRECT", "q4": "INCORRECT", "q5": "INCORRECT"}


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.output


def build(tmp_path: Path, generator_url: str | None, *, unjudged: frozenset[str] = frozenset()) -> Path:
    """The project at ``tmp_path/p.db`` with version v1 and system ``rag`` (people's verdicts on
    its answers but those to the ``unjudged`` queries); with ``generator_url``, also rag's
    gold-context answers, labelled by people."""
    db = str(tmp_path / "p.db")
    write_jsonl(tmp_path / "corpus.jsonl", [{"doc_id": d, "text": t} for d, t in CORPUS])
    write_jsonl(tmp_path / "queries.jsonl", [{"query_id": q, "text": t} for q, t, _ in QUERIES])
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items()),
                                        encoding="utf-8")
    refs = {q: r for q, _, r in QUERIES}
    write_jsonl(tmp_path / "answers.jsonl", [
        {"answer_id": f"a-{q}", "query_id": q, "response": r, "retrieved_ids": ids, "reference": refs[q]}
        for q, (r, ids, _) in ANSWERS.items()])
    write_jsonl(tmp_path / "people.jsonl", [{"item_id": f"a-{q}", "verdict": v} for q, (_, _, v) in ANSWERS.items()
                                                        if q not in unjudged])
    invoke("init", db)
    invoke("import-corpus", db, str(tmp_path / "corpus.jsonl"))
    invoke("import-queries", db, str(tmp_path / "queries.jsonl"))
    invoke("import-judgments", db, str(tmp_path / "qrels.txt"), "--annotator", "ada")
    invoke("freeze", db, "--version", "v1")
    invoke("import-answers", db, str(tmp_path / "answers.jsonl"), "--system", "rag")
    invoke("import-verdicts", db, str(tmp_path / "people.jsonl"), "--annotator", "ada")
    if generator_url is not None:
        invoke("gold-context", f"{db}@v1", "--system", "rag", "--base-url", generator_url, "--model", "reader",
               "--no-progress")
        write_jsonl(tmp_path / "gold.jsonl", [{"item_id": gold_id(q), "verdict": v} for q, v in GOLD_VERDICTS.items()])
        invoke("import-verdicts", db, str(tmp_path / "gold.jsonl"), "--annotator", "ada")
    return Path(db)


def gold_id(query_id: str, qrels: dict[str, dict[str, int]] = QRELS) -> str:
    """The id of rag's gold-context answer to ``query_id`` given the gold chunks of ``qrels``."""
    return gold_answer_id("rag+gold", query_id, gold_chunk_ids(qrels[query_id]))


def outcomes_of(output: str) -> dict[str, str]:
    return {d["query_id"]: d["outcome"] for d in json.loads(output)["questions"]}
