"""`goldpool simulate-pooling` on a project small enough to replay by hand."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from labeler.cli import cli
from labeler.store import init_db, now

QRELS = "q1 0 x3 1\nq1 0 x4 1\nq1 0 x1 0\nq2 0 y2 2\nq9 0 z1 1\n"


def _project(path: Path) -> Path:
    """q1: A = [x1, x2, x3], B = [x3, x4]; q2: A = [y1, y2], B = [y2, y1]; pool depth 1."""
    db = init_db(path)
    db["queries"].insert_all({"query_id": q, "text": q, "meta": "{}", "content_hash": q} for q in ("q1", "q2"))
    ids = ["x1", "x2", "x3", "x4", "y1", "y2"]
    db["documents"].insert_all({"doc_id": d, "title": "", "text": d, "meta": "{}", "content_hash": d} for d in ids)
    db["pool_builds"].insert({"id": 1, "at": now(), "params": json.dumps({"bm25_depth": 1, "run_depth": 1})})
    pool = [("q1", "x3", 1), ("q1", "x1", 2), ("q2", "y1", 1), ("q2", "y2", 2)]
    db["pool"].insert_all({"query_id": q, "doc_id": d, "sources": "{}", "priority": 0, "position": p, "added_at": now(),
                           "build_id": 1} for q, d, p in pool)
    lists = {("q1", "A"): ["x1", "x2", "x3"], ("q1", "B"): ["x3", "x4"], ("q2", "A"): ["y1", "y2"], ("q2", "B"): ["y2", "y1"]}
    db["candidates"].insert_all({"query_id": q, "source": s, "doc_id": d, "rank": r}
                                for (q, s), ranked in lists.items() for r, d in enumerate(ranked, start=1))
    db.close()
    return path


def _run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_simulate_pooling_json_by_hand(tmp_path: Path) -> None:
    db = _project(tmp_path / "p.db")
    (tmp_path / "qrels").write_text(QRELS, encoding="utf-8")
    result = _run("simulate-pooling", str(db), "--qrels", str(tmp_path / "qrels"), "--strategy", "rrf",
                  "--strategy", "depth", "--budget", "8", "--budget", "2", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    # Baseline: the depth-1 union {x3, x1} and {y1, y2}, judged in full: 4 judgments, x3 and y2 relevant.
    assert out["baseline"] == {"judgments": 4, "relevant_found": 2}
    assert set(out["strategies"]) == {"rrf", "depth"}
    rrf = out["strategies"]["rrf"]
    assert {"curve", "judgments_to_90", "found_at_baseline_budget"} <= set(rrf)
    # RRF over the full lists: q1 x3 (1/63 + 1/61), x1 (1/61), x2 and x4 (1/62 each, by doc_id);
    # q2 y1, y2 (tied, by doc_id). Queries take turns: x3 y1 x1 y2 x2 x4.
    assert rrf["curve"] == [[1, 1], [2, 1], [3, 1], [4, 2], [5, 2], [6, 3]]
    assert rrf["judgments_to_90"] == 4  # 0.9 * 2 = 1.8 relevant first reached at 4 judgments
    assert rrf["found_at_baseline_budget"] == 2
    assert rrf["found_at_budget"] == {"2": 1, "8": 3}
    # depth: RRF over the lists cut at depth 1, so x1 and x3 tie at 1/61 (x1 first), y1 and y2
    # too: x1 y1 x3 y2.
    assert out["strategies"]["depth"]["curve"] == [[1, 0], [2, 0], [3, 1], [4, 2]]
    assert out["queries"] == 2  # q9 is not in the project


def test_simulate_pooling_default_budget_and_html(tmp_path: Path) -> None:
    db = _project(tmp_path / "p.db")
    (tmp_path / "qrels").write_text(QRELS, encoding="utf-8")
    page = tmp_path / "replay.html"
    result = _run("simulate-pooling", str(db), "--qrels", str(tmp_path / "qrels"), "--strategy", "rrf", "--json",
                  "--html", str(page))
    assert result.exit_code == 0, result.output
    out = json.loads(result.output.split("\n" + str(page))[0])
    # Default budget round(1.25 * 4) = 5, at most ceil(5 / 2) = 3 per query: x3 y1 x1 y2 x2.
    assert out["budget"] == 5 and out["strategies"]["rrf"]["curve"] == [[1, 1], [2, 1], [3, 1], [4, 2], [5, 2]]
    text = page.read_text(encoding="utf-8")
    assert "<svg" in text and text.count("<polyline") == 1 and "<script" not in text and "src=" not in text


def test_simulate_pooling_errors_are_one_line(tmp_path: Path) -> None:
    db = _project(tmp_path / "p.db")
    (tmp_path / "other").write_text("q9 0 z1 1\n", encoding="utf-8")
    (tmp_path / "qrels").write_text(QRELS, encoding="utf-8")
    none = _run("simulate-pooling", str(db), "--qrels", str(tmp_path / "other"))
    assert none.exit_code == 1 and none.output.startswith("Error: ") and "no pooled query" in none.output
    bad = _run("simulate-pooling", str(db), "--qrels", str(tmp_path / "qrels"), "--strategy", "best")
    assert bad.exit_code == 1 and "unknown strategy 'best'" in bad.output and len(bad.output.splitlines()) == 1
    text = _run("simulate-pooling", str(db), "--qrels", str(tmp_path / "qrels"), "--strategy", "depth")
    assert text.exit_code == 0 and text.output.startswith("baseline: 4 judgments, 2 relevant found (2 queries, budget 5)")


def test_simulate_pooling_reports_each_rule_beside_the_oracle(tmp_path: Path) -> None:
    db = _project(tmp_path / "p.db")
    (tmp_path / "qrels").write_text(QRELS, encoding="utf-8")
    result = _run("simulate-pooling", str(db), "--qrels", str(tmp_path / "qrels"), "--strategy", "rrf", "--budget", "8",
                  "--stop-every", "1", "--stop-rule", "knee", "--stop-rule", "quantile", "--stop-rule", "sample", "--json")
    assert result.exit_code == 0, result.output
    rrf = json.loads(result.output)["strategies"]["rrf"]
    assert rrf["stopping"]["rule"] == "knee" and list(rrf["stopping_by_rule"]) == ["knee", "quantile", "sample"]
    # rrf: q1 x3 x1 x2 x4 (x3, x4 relevant: 80% of 2 at the 4th), q2 y1 y2 (y2 at the 2nd)
    for figures in rrf["stopping_by_rule"].values():
        assert (figures["oracle_judgments"], figures["oracle_judgments_mean"], figures["oracle_queries"]) == (6, 3.0, 2)
    assert rrf["curve"] == [[1, 1], [2, 1], [3, 1], [4, 2], [5, 2], [6, 3]]  # the strategy's own order
    text = _run("simulate-pooling", str(db), "--qrels", str(tmp_path / "qrels"), "--strategy", "rrf", "--stop-rule", "knee")
    assert text.exit_code == 0 and "  knee: stopped " in text.output
    bad = _run("simulate-pooling", str(db), "--qrels", str(tmp_path / "qrels"), "--stop-rule", "best")
    assert bad.exit_code == 1 and "unknown stopping rule 'best'" in bad.output
