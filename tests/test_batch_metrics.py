"""``answer-metrics --by batch``: each system's rates per batch, and the change between
consecutive batches, paired where questions repeat and unpaired (Welch) where they do not,
checked against arithmetic and scipy's Welch test; the HTML page draws the batch plot."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from labels_fixtures import write_jsonl
from labeler.cli import cli

QUESTIONS = [f"Question number {i}?" for i in range(12)]
#: Per batch: which of its questions the answer gets right (people's verdicts).
RIGHT = {"w1": {0, 1, 2, 3, 4, 5}, "w2": {0, 1, 2, 3, 4, 5, 6, 7, 8}}
#: w3 asks new questions: nothing to pair on.
NEW = [f"Another question {i}?" for i in range(8)]
RIGHT_W3 = {0, 1, 2, 3, 4, 5, 6}


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def project(tmp_path: Path) -> str:
    db = str(tmp_path / "p.db")
    _run("init", db)
    verdicts = []
    for batch, questions, right in (("w1", QUESTIONS[:10], RIGHT["w1"]), ("w2", QUESTIONS[:10], RIGHT["w2"]),
                                    ("w3", NEW, RIGHT_W3)):
        answers = [{"answer_id": f"{batch}-{i}", "question": q, "response": f"Answer {i}.", "reference": "R"}
                   for i, q in enumerate(questions)]
        _run("import-answers", db, str(write_jsonl(tmp_path / f"{batch}.jsonl", answers)), "--system", "<b>rag</b>",
             "--batch", batch)
        verdicts += [{"item_id": f"{batch}-{i}@correctness", "verdict": "CORRECT" if i in right else "INCORRECT"}
                     for i in range(len(questions))]
    _run("import-verdicts", db, str(write_jsonl(tmp_path / "v.jsonl", verdicts)), "--annotator", "ada")
    return db


def test_rates_per_batch_and_changes_paired_and_unpaired(project: str) -> None:
    d = json.loads(_run("answer-metrics", project, "--by", "batch", "--json"))
    assert d["batches"] == ["w1", "w2", "w3"]
    per = d["systems"]["<b>rag</b>"]
    assert [per[b]["correctness"]["people"]["value"] for b in d["batches"]] == \
        pytest.approx([6 / 10, 9 / 10, 7 / 8])
    assert [per[b]["answers"] for b in d["batches"]] == [10, 10, 8]
    changes = {(c["before"], c["source"]): c for c in d["changes"] if c["metric"] == "correctness"}
    paired = changes[("w1", "people")]
    # Paired on the 10 questions both batches asked: 3 go from wrong to right.
    deltas = [float(i in RIGHT["w2"]) - float(i in RIGHT["w1"]) for i in range(10)]
    assert paired["paired"] is True and paired["n"] == 10
    assert paired["difference"] == pytest.approx(3 / 10)
    sd = statistics.stdev(deltas)
    assert paired["mdd"] == pytest.approx((1.959964 + 0.841621) * sd / math.sqrt(10), rel=1e-5)
    assert paired["low"] == pytest.approx(0.3 - 1.959964 * sd / math.sqrt(10), rel=1e-5)
    # w2 -> w3: no question repeats, so unpaired: Welch's standard error, as scipy's Welch test has it.
    unpaired = changes[("w2", "people")]
    from scipy import stats

    before = [float(i in RIGHT["w2"]) for i in range(10)]
    after = [float(i in RIGHT_W3) for i in range(8)]
    welch = stats.ttest_ind(after, before, equal_var=False)
    se = (7 / 8 - 9 / 10) / welch.statistic
    assert unpaired["paired"] is False and unpaired["n"] == 18
    assert unpaired["difference"] == pytest.approx(7 / 8 - 9 / 10)
    assert unpaired["high"] - unpaired["difference"] == pytest.approx(1.959964 * se, rel=1e-5)
    assert unpaired["mdd"] == pytest.approx((1.959964 + 0.841621) * se, rel=1e-5)


def test_text_and_html_reports(project: str, tmp_path: Path) -> None:
    text = _run("answer-metrics", project, "--by", "batch", "--html", str(tmp_path / "b.html"))
    assert "<b>rag</b>: 3 batches (95% intervals)" in text
    assert "    correctness: 0.600 [" in text and "people, n=10" in text
    assert "  w1 -> w2 (paired on 10 questions in both):" in text
    assert "  w2 -> w3 (unpaired, 18 questions):" in text
    assert "correctness (people) +0.300 [" in text
    page = (tmp_path / "b.html").read_text(encoding="utf-8")
    assert page.count("<svg") >= 1 and "Correctness per batch" in page
    assert "<b>rag</b>" not in page and "&lt;b&gt;rag&lt;/b&gt; (people)" in page
    assert "<script" not in page


def test_one_batch_has_no_change(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    _run("init", db)
    _run("import-answers", db, str(write_jsonl(tmp_path / "a.jsonl", [{"question": "q", "response": "r"}])),
         "--system", "s")
    d = json.loads(_run("answer-metrics", db, "--by", "batch", "--json"))
    assert len(d["batches"]) == 1 and d["changes"] == []


def test_with_a_judge_each_change_has_the_judge_and_ppi(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    _run("init", db)
    people, judge = [], []
    for batch, shift in (("w1", 0), ("w2", 1)):
        answers = [{"answer_id": f"{batch}-{i}", "question": q, "response": "r", "reference": "R"}
                   for i, q in enumerate(QUESTIONS)]
        _run("import-answers", db, str(write_jsonl(tmp_path / f"{batch}.jsonl", answers)), "--system", "s",
             "--batch", batch)
        for i in range(len(QUESTIONS)):
            right = (i + shift) % 3 != 0
            judge.append({"item_id": f"{batch}-{i}@correctness", "verdict": "CORRECT" if right else "INCORRECT"})
            if i < 8:  # people label the first 8 questions of each batch; the judge all 12
                people.append({"item_id": f"{batch}-{i}@correctness", "verdict": "CORRECT" if right or i == 0 else "INCORRECT"})
    _run("import-verdicts", db, str(write_jsonl(tmp_path / "p.jsonl", people)), "--annotator", "ada")
    _run("import-verdicts", db, str(write_jsonl(tmp_path / "j.jsonl", judge)), "--judge", "j1")
    d = json.loads(_run("answer-metrics", db, "--by", "batch", "--judge", "j1", "--json"))
    changes = {c["source"]: c for c in d["changes"] if c["metric"] == "correctness"}
    assert {s: c["paired"] for s, c in changes.items()} == {"people": True, "judge": True, "ppi": True}
    judged = [float((i + 1) % 3 != 0) - float(i % 3 != 0) for i in range(12)]
    assert changes["judge"]["difference"] == pytest.approx(sum(judged) / 12) and changes["judge"]["n"] == 12
    assert changes["people"]["n"] == 8
    ppi = changes["ppi"]
    assert ppi["difference"] is not None and ppi["low"] <= ppi["difference"] <= ppi["high"] and ppi["mdd"] > 0
    assert ppi["n"] == 12  # people's 8 questions and the judge's other 4
