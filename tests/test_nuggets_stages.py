"""Nuggets beside the answer stages: `stages` reports nugget recall (the `all` score) beside
correctness on a version that froze nuggets, and nothing new on one that froze none; `diagnose`
takes an answer without a reference that supports no vital nugget as a wrong answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnose_fixtures import build, invoke
from labels_fixtures import write_jsonl

#: query -> [(nugget, importance, people's verdict on the answer rag gave)]
NUGGETS = {
    "q1": [("Wilhelm Röntgen discovered X-rays", "vital", "not_support"), ("He did so in 1895", "okay", "partial_support")],
    "q2": [("Canberra is the capital", "vital", "not_support")],
    "q6": [("Jupiter is the largest planet", "vital", "support")],
}

#: The chunk each question's vital nugget was written from.
SOURCES = {"q1": ["d1"], "q2": ["d2"], "q6": ["d7"]}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = build(tmp_path, None)
    write_jsonl(tmp_path / "n.jsonl", [{"query_id": q, "text": t, "importance": i, "doc_ids": SOURCES[q] if i == "vital" else []}
                                       for q, found in NUGGETS.items() for t, i, _ in found])
    invoke("import-nuggets", str(path), str(tmp_path / "n.jsonl"))
    invoke("freeze", str(path), "--version", "v2")  # the same grades, now with nuggets: a new version
    write_jsonl(tmp_path / "s.jsonl", [{"answer_id": f"a-{q}", "nugget_id": f"{q}/n{k}", "verdict": v}
                                       for q, found in NUGGETS.items() for k, (_, _, v) in enumerate(found, start=1)])
    invoke("import-verdicts", str(path), str(tmp_path / "s.jsonl"), "--annotator", "ada")
    return path


def test_stages_report_nugget_recall_beside_correctness(db: Path) -> None:
    out = json.loads(invoke("stages", f"{db}@v2", "--system", "rag", "--json"))["systems"]["rag"]
    recall = out["stages"]["nugget_recall"]
    # q1: (0 + 0.5) / 2, q2: 0, q6: 1; q3-q5 have no nugget and are left out.
    assert (recall["mean"], recall["n"]) == (pytest.approx((0.25 + 0 + 1) / 3), 3)
    assert {q["query_id"]: q.get("nugget_recall") for q in out["per_question"]} == {
        "q1": 0.25, "q2": 0.0, "q3": None, "q4": None, "q5": None, "q6": 1.0}
    assert out["stages"]["correct"]["mean"] == pytest.approx(1 / 6)
    text = invoke("stages", f"{db}@v2", "--system", "rag")
    assert any(line.startswith("nugget recall (all nuggets, partial 0.5)") and "n=3" in line for line in text.splitlines())


def test_a_version_without_nuggets_has_no_nugget_stage(db: Path) -> None:
    out = json.loads(invoke("stages", f"{db}@v1", "--system", "rag", "--json"))["systems"]["rag"]
    assert "nugget_recall" not in out["stages"] and all("nugget_recall" not in q for q in out["per_question"])
    assert "nugget recall" not in invoke("stages", f"{db}@v1", "--system", "rag")


def test_diagnose_takes_an_answer_without_reference_supporting_no_vital_nugget_as_wrong(db: Path, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "bare.jsonl", [
        {"answer_id": "b-q1", "query_id": "q1", "response": "Röntgen, in 1895.", "retrieved_ids": ["d1"]},
        {"answer_id": "b-q2", "query_id": "q2", "response": "Sydney.", "retrieved_ids": ["d8", "d2"]},
        {"answer_id": "b-q6", "query_id": "q6", "response": "A gas giant.", "retrieved_ids": ["d7"]},
        {"answer_id": "b-q3", "query_id": "q3", "response": "Eliot.", "retrieved_ids": ["d3"]}])  # q3: no nugget
    invoke("import-answers", str(db), str(tmp_path / "bare.jsonl"), "--system", "bare")
    write_jsonl(tmp_path / "bs.jsonl", [
        {"answer_id": "b-q1", "nugget_id": "q1/n1", "verdict": "support"}, {"answer_id": "b-q1", "nugget_id": "q1/n2", "verdict": "support"},
        {"answer_id": "b-q2", "nugget_id": "q2/n1", "verdict": "not_support"},
        {"answer_id": "b-q6", "nugget_id": "q6/n1", "verdict": "partial_support"}])  # partial: no vital nugget supported
    invoke("import-verdicts", str(db), str(tmp_path / "bs.jsonl"), "--annotator", "ada")
    out = json.loads(invoke("diagnose", f"{db}@v2", "--system", "bare", "--json"))
    assert (out["answers"], out["correct"], out["wrong"], out["unjudged"]) == (4, 1, 2, 1)
    found = {q["query_id"]: q for q in out["questions"]}
    assert sorted(found) == ["q2", "q6"]
    assert found["q2"]["holders"] == ["d2"] and found["q6"]["holders"] == ["d7"]  # the vital nuggets' chunks
    assert all(q["outcome"] == "pending" and q["why"].startswith("no reference: wrong as it supports no vital nugget; ")
               for q in found.values())  # relevant chunks hold the answer; no gold-context answer judged yet
    plain = json.loads(invoke("diagnose", f"{db}@v1", "--system", "bare", "--json"))  # v1 froze no nuggets
    assert (plain["correct"], plain["wrong"], plain["unjudged"]) == (0, 0, 4)
