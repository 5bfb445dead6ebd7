"""The README's "your own project" walkthrough, end to end, through the CLI and the store.

Corpus -> pool (BM25 + dense with the bundled model + a user run) -> two annotators label
with overlap -> raw export -> agreement report -> `agree` between the two annotators' labels.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from labeler.retrieval import scheduling
from labeler.cli import cli
from labeler.store import connect
from labeler.store import access, labels

TOPICS = {
    "boil": "Water boils at 100 degrees Celsius at sea level; at altitude the boiling point drops.",
    "freeze": "Water freezes at 0 degrees Celsius and expands as it turns into ice.",
    "python": "A Python list is a mutable sequence; append adds an item at the end.",
    "tuple": "A Python tuple is an immutable sequence and can be a dictionary key.",
    "rome": "Rome was the capital of the Roman Empire and is the capital of Italy today.",
    "paris": "Paris is the capital of France, on the river Seine.",
}
QUESTIONS = {
    "q1": "At what temperature does water boil?",
    "q2": "Is a Python list mutable?",
    "q3": "What is the capital of Italy?",
}


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    corpus = [{"doc_id": f"{name}-{i}", "text": f"{text} (passage {i})"} for name, text in TOPICS.items() for i in range(4)]
    Path("chunks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
    Path("questions.jsonl").write_text(
        "".join(json.dumps({"query_id": q, "text": t}) + "\n" for q, t in QUESTIONS.items()), encoding="utf-8"
    )
    Path("my_rag.trec").write_text("q1 Q0 freeze-0 1 9.5 my-rag\nq3 Q0 paris-1 1 2.0 my-rag\n", encoding="utf-8")
    return tmp_path


def test_readme_walkthrough(files: Path) -> None:
    _cli("init", "project.db")
    _cli("import-corpus", "project.db", "chunks.jsonl")
    _cli("import-queries", "project.db", "questions.jsonl")
    _cli("import-run", "project.db", "my_rag.trec", "--name", "my-rag")
    _cli("build-pool", "project.db", "--bm25-depth", "5", "--dense-depth", "5", "--no-progress")

    pool = [json.loads(line) for line in _cli("export-pool", "project.db").splitlines()]
    by_query: dict[str, list[dict]] = {}
    for entry in pool:
        by_query.setdefault(entry["query_id"], []).append(entry)
    assert set(by_query) == set(QUESTIONS)
    # Every source contributed, and the run's documents are in the pool with their provenance.
    assert {s for e in pool for s in e["sources"]} == {"bm25", "dense", "my-rag"}
    assert any(e["doc_id"] == "freeze-0" and e["sources"].get("my-rag") == 1 for e in by_query["q1"])
    # The dense retriever puts a boiling passage first for the boiling question.
    dense_first = next(e["doc_id"] for e in by_query["q1"] if e["sources"].get("dense") == 1)
    assert dense_first.startswith("boil-")

    tokens = {}
    for name, role in (("ada", "admin"), ("ben", "annotator")):
        out = _cli("add-annotator", "project.db", name, "--role", role)
        tokens[name] = re.search(r"(gp\d+\.\S+)", out)[1]
    _cli("label-settings", "project.db", "overlap=0.5", "batch_size=4")

    db = connect("project.db")
    people = {name: access.authenticate(db, token) for name, token in tokens.items()}
    assert all(people.values())
    done = {name: 0 for name in people}
    for _ in range(200):
        for name, person in people.items():
            item = scheduling.next_item(db, person.id)
            if item is not None:
                grade = 3 if item.doc_id.split("-")[0] in item.query_text.lower() else 0
                labels.record_judgment(db, person.id, item.query_id, item.doc_id, grade, 4.0)
                done[name] += 1
    assert sum(done.values()) >= len(pool)  # everything labelled, the overlap twice

    raw = [json.loads(line) for line in _cli("export-judgments", "project.db").splitlines()]
    assert len(raw) == sum(done.values())
    assert set(raw[0]) >= {"query_id", "doc_id", "annotator", "relevance", "at", "seconds", "note"}

    report = json.loads(_cli("calibrate", "project.db", "--json", "--n-boot", "200"))
    assert report["n_judgments"] == len(raw)
    assert report["n_overlap_items"] > 0

    for name in people:
        mine = [r for r in raw if r["annotator"] == name]
        Path(f"{name}.qrels").write_text(
            "".join(f"{r['query_id']} 0 {r['doc_id']} {r['relevance']}\n" for r in mine), encoding="utf-8"
        )
    agreement = json.loads(_cli("agree", "ada.qrels", "ben.qrels", "--json", "--n-boot", "0"))
    assert agreement["n"] == report["n_overlap_items"]
    assert agreement["kappa"]["value"] == pytest.approx(1.0)  # both graded by the same rule
