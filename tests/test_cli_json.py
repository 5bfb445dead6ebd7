"""What the commands print with --json: strict JSON, and the same keys for one result as for many."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from labeler.cli import cli
from labeler.commands.common import json_text

CORPUS = [{"doc_id": f"d{i}", "text": f"text {i}"} for i in range(1, 7)]
ADA = "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d4 1\nq2 0 d5 3\nq2 0 d6 0\n"
BOB = "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d4 1\nq2 0 d5 2\nq2 0 d6 1\n"


def _refuse(constant: str) -> float:
    raise ValueError(f"{constant} is not JSON")


def strict(text: str) -> Any:
    """``text`` read as JSON by the standard, which has no NaN or Infinity."""
    return json.loads(text, parse_constant=_refuse)


def run_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return strict(result.stdout)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Six pool entries of two queries, labelled by ada only (bob's labels are in bob.txt)."""
    monkeypatch.chdir(tmp_path)
    Path("c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CORPUS), encoding="utf-8")
    Path("q.tsv").write_text("query_id\ttext\nq1\tone\nq2\ttwo\n", encoding="utf-8")
    Path("ada.txt").write_text(ADA, encoding="utf-8")
    Path("bob.txt").write_text(BOB, encoding="utf-8")
    for args in (["init", "p.db"], ["import-corpus", "p.db", "c.jsonl"], ["import-queries", "p.db", "q.tsv"],
                 ["import-judgments", "p.db", "ada.txt", "--annotator", "ada"]):
        assert CliRunner().invoke(cli, args).exit_code == 0
    return tmp_path / "p.db"


def test_json_text_writes_null_for_undefined_numbers() -> None:
    data = {"a": math.nan, "b": [1.5, math.inf, {"c": -math.inf}], "d": (2, None)}
    assert strict(json_text(data)) == {"a": None, "b": [1.5, None, {"c": None}], "d": [2, None]}


def test_estimate_json_is_strict_json(project: Path) -> None:
    # People and the judge give grade 3 to every item: the interval has width 0, so the
    # judge's worth in human labels is not a finite number (Python's json writes Infinity).
    pairs = [(q, f"d{i}") for q in ("q1", "q2") for i in range(1, 7)]
    Path("all.trec").write_text("".join(f"{q} Q0 {d} 1 1 r\n" for q, d in pairs), encoding="utf-8")
    Path("people.txt").write_text("".join(f"{q} 0 {d} 3\n" for q, d in pairs[::3]), encoding="utf-8")
    Path("judge.txt").write_text("".join(f"{q} 0 {d} 3\n" for q, d in pairs), encoding="utf-8")
    for args in (["init", "e.db"], ["import-corpus", "e.db", "c.jsonl"], ["import-queries", "e.db", "q.tsv"],
                 ["import-run", "e.db", "all.trec", "--name", "r"],
                 ["build-pool", "e.db", "--bm25-depth", "0", "--dense-depth", "0", "--no-progress"],
                 ["add-annotator", "e.db", "carl"], ["import-verdicts", "e.db", "people.txt", "--annotator", "carl"],
                 ["import-verdicts", "e.db", "judge.txt", "--judge", "g"]):
        assert CliRunner().invoke(cli, args).exit_code == 0, args
    result = CliRunner().invoke(cli, ["estimate", "e.db", "--judge", "g", "--metric", "mean-relevance", "--json"])
    assert result.exit_code == 0, result.output
    data = strict(result.stdout)
    assert data["human_labels_worth"] is None and data["human_labels_worth_classic"] is None
    assert data["ppi"] == {"value": 3.0, "low": 3.0, "high": 3.0, "n": 12}
    assert (data["n_labelled"], data["n_unlabelled"], data["threshold"]) == (4, 8, None)


def test_calibrate_json_has_the_same_keys_for_one_annotator_and_two(project: Path) -> None:
    one = run_json("calibrate", "p.db", "--n-boot", "20")
    assert one["annotators"] == ["ada"]
    assert one["agreement"] == dict.fromkeys(
        ["agreement", "majority_baseline", "kappa_quadratic", "gwet_ac1", "gwet_ac2_quadratic", "alpha_ordinal"])
    assert CliRunner().invoke(cli, ["import-judgments", "p.db", "bob.txt", "--annotator", "bob"]).exit_code == 0
    two = run_json("calibrate", "p.db", "--n-boot", "20")
    assert two["annotators"] == ["ada", "bob"] and two["agreement"]["kappa_quadratic"]["n"] == 6
    assert set(one) == set(two)
    assert set(one["agreement"]) == set(two["agreement"])
    assert set(one["power"]) == set(two["power"]) and one["power"]["n"] == two["power"]["n"] == 2


def test_calibrate_json_without_labels_keeps_the_power_keys(project: Path) -> None:
    assert CliRunner().invoke(cli, ["init", "empty.db"]).exit_code == 0
    empty = run_json("calibrate", "empty.db", "--n-boot", "0")
    full = run_json("calibrate", "p.db", "--n-boot", "0")
    assert set(empty) == set(full) and set(empty["agreement"]) == set(full["agreement"])
    assert empty["power"] == {"n": 0, "half_width": None, "mdd": None, "discordant_assumed": full["power"]["discordant_assumed"],
                              "power": None, "alpha": None}


def test_calibrate_judge_json_has_the_same_keys_for_one_judge_and_several(project: Path) -> None:
    Path("j1.txt").write_text(BOB, encoding="utf-8")
    Path("j2.txt").write_text("q1 0 d1 1\n", encoding="utf-8")  # a judge of one item
    for name in ("j1", "j2"):
        assert CliRunner().invoke(cli, ["import-verdicts", "p.db", f"{name}.txt", "--judge", name]).exit_code == 0
    one = run_json("calibrate", "p.db", "--judge", "j1", "--n-boot", "20")
    both = run_json("calibrate", "p.db", "--judge", "j1", "--judge", "j2", "--n-boot", "20")
    assert list(one["judges"]) == ["j1"] and list(both["judges"]) == ["j1", "j2"]
    assert set(one) == set(both) == {"judges", "n_boot", "seed", "relevance_level", "nuggets"}
    assert one["relevance_level"] == 1
    j1, j2 = both["judges"]["j1"]["relevance"], both["judges"]["j2"]["relevance"]
    assert set(j1) == set(j2) == set(one["judges"]["j1"]["relevance"])
    assert j1["confusion"]["rows"] == "people" and j1["n"] == 6


def test_calibrate_judge_json_keeps_confusion_without_a_compared_item(project: Path) -> None:
    Path("items.jsonl").write_text(json.dumps({"item_id": "f1", "kind": "faithfulness", "question": "q", "contexts": ["c"],
                                               "response": "r"}) + "\n", encoding="utf-8")
    Path("judge.jsonl").write_text(json.dumps({"item_id": "f1", "verdict": "SUPPORTED"}) + "\n", encoding="utf-8")
    for args in (["import-items", "p.db", "items.jsonl"], ["import-verdicts", "p.db", "judge.jsonl", "--judge", "j"]):
        assert CliRunner().invoke(cli, args).exit_code == 0, args
    task = run_json("calibrate", "p.db", "--judge", "j", "--n-boot", "0")["judges"]["j"]["faithfulness"]
    assert task["n"] == 0 and task["confusion"] is None and task["per_class"] == []


def _run_file(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_eval_json_has_the_same_keys_for_one_run_and_several(project: Path, tmp_path: Path) -> None:
    a = _run_file(tmp_path / "a.trec", ["q1 Q0 d1 1 3 a", "q1 Q0 d2 2 2 a", "q2 Q0 d4 1 1 a"])
    b = _run_file(tmp_path / "b.trec", ["q1 Q0 d3 1 3 b", "q2 Q0 d5 1 2 b"])
    one = run_json("eval", "ada.txt", a, "--metric", "RR")
    both = run_json("eval", "ada.txt", a, b, "--metric", "RR")
    assert set(one) == set(both) == {"metrics", "per_query", "excluded", "missing", "unknown", "scored", "run", "golden",
                                     "content_hash", "runs", "relevance_level"}
    assert one["relevance_level"] == both["runs"]["b.trec"]["relevance_level"] == 1
    assert list(one["runs"]) == ["a.trec"] and list(both["runs"]) == ["a.trec", "b.trec"]
    # The top level is the first run, as it was for a single run.
    assert one["run"] == both["run"] == "a.trec" and one["metrics"] == both["metrics"] == one["runs"]["a.trec"]["metrics"]
    assert both["runs"]["b.trec"]["metrics"] == {"RR": 1.0}
    assert (one["golden"], one["content_hash"]) == ("ada.txt", None)


def test_agree_json_has_the_same_keys_for_one_pair_and_several(project: Path) -> None:
    assert CliRunner().invoke(cli, ["import-judgments", "p.db", "bob.txt", "--annotator", "bob"]).exit_code == 0
    assert CliRunner().invoke(cli, ["export-judgments", "p.db", "-o", "judgments.jsonl"]).exit_code == 0
    one = run_json("agree", "ada.txt", "bob.txt", "--n-boot", "0")
    several = run_json("agree", "judgments.jsonl", "ada.txt", "--n-boot", "0")
    assert set(one) == set(several) and "pairs" in one
    assert [(p["a"], p["b"]) for p in one["pairs"]] == [("ada.txt", "bob.txt")]
    assert [(p["a"], p["b"]) for p in several["pairs"]] == [("judgments.jsonl [ada]", "ada.txt"), ("judgments.jsonl [bob]", "ada.txt")]
    assert {k: v for k, v in one.items() if k != "pairs"} == one["pairs"][0]
    assert several["a"] == "judgments.jsonl [ada]" and several["agreement"]["value"] == 1.0


def test_compare_json_has_the_same_keys_for_two_runs_and_three(project: Path, tmp_path: Path) -> None:
    runs = [_run_file(tmp_path / f"{n}.trec", [f"q1 Q0 d{i} 1 3 {n}", f"q2 Q0 d{i + 3} 1 3 {n}"]) for i, n in enumerate("abc", 1)]
    two = run_json("compare", "ada.txt", *runs[:2], "--metric", "RR")
    three = run_json("compare", "ada.txt", *runs, "--metric", "RR")
    assert set(two) == set(three) == {"metric", "comparisons", "relevance_level"}
    assert [c["run"] for c in three["comparisons"]] == ["b.trec", "c.trec"]
    assert set(two["comparisons"][0]) == set(three["comparisons"][1])
