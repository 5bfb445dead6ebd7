"""``sample-answers``: designed samples of a system's answers with their inclusion probabilities,
and ``label-settings answer_sample=`` checking the sample it names."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from labels_fixtures import write_jsonl
from labeler.cli import cli
from labeler.generation.sampling import allocate


def _run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == code, result.output
    return result.output


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "p.db")
    _run("init", path)
    for batch, n in (("w1", 30), ("w2", 10)):
        answers = [{"question": f"Question {i}?", "response": "r", "meta": {"model": "big" if i % 3 else "small"}}
                   for i in range(n)]
        _run("import-answers", path, str(write_jsonl(tmp_path / f"{batch}.jsonl", answers)), "--system", "rag",
             "--batch", batch)
    return path


def _items(db: str, name: str) -> list[tuple[str, float, str | None]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT answer_id, probability, stratum FROM answer_sample_items WHERE sample = ?",
                            [name]).fetchall()


def test_a_random_sample_gives_each_answer_n_over_N(db: str) -> None:
    out = json.loads(_run("sample-answers", db, "--system", "rag", "--n", "8", "--name", "r", "--json"))
    assert (out["population"], out["drawn"], out["design"]) == (40, 8, "random")
    items = _items(db, "r")
    assert len(items) == 8 and {p for _, p, _ in items} == {8 / 40}
    again = json.loads(_run("sample-answers", db, "--system", "rag", "--n", "8", "--name", "r2", "--json"))
    assert again["drawn"] == 8 and sorted(i[0] for i in _items(db, "r2")) == sorted(i[0] for i in items)  # same seed


def test_a_stratified_sample_shares_n_by_stratum_size(db: str) -> None:
    _run("sample-answers", db, "--system", "rag", "--n", "8", "--design", "stratified", "--by", "batch", "--name", "s")
    items = _items(db, "s")
    assert Counter(s for _, _, s in items) == {"w1": 6, "w2": 2}
    assert {s: p for _, p, s in items} == {"w1": 6 / 30, "w2": 2 / 10}
    out = _run("sample-answers", db, "--system", "rag", "--batch", "w1", "--n", "5", "--design", "stratified",
               "--by", "model", "--name", "m")
    assert "  big: 3 of 20 (probability 0.150)\n  small: 2 of 10 (probability 0.200)\n" in out


def test_bad_requests_are_refused_and_a_sample_never_changes(db: str) -> None:
    assert "needs --by FIELD" in _run("sample-answers", db, "--system", "rag", "--n", "3", "--design", "stratified",
                                      "--name", "x", code=1)
    assert "no system 'nope'" in _run("sample-answers", db, "--system", "nope", "--n", "3", "--name", "x", code=1)
    assert "no answer in batch 'w9' to sample; known batches: w1, w2" in _run(
        "sample-answers", db, "--system", "rag", "--batch", "w9", "--n", "3", "--name", "x", code=1)
    _run("sample-answers", db, "--system", "rag", "--n", "3", "--name", "x")
    assert "exists already" in _run("sample-answers", db, "--system", "rag", "--n", "4", "--name", "x", code=1)
    assert "no sample of answers 'y'; known: x" in _run("label-settings", db, "answer_sample=y", code=1)
    assert "answer_sample = x" in _run("label-settings", db, "answer_sample=x")
    assert "answer_sample" not in _run("label-settings", db, "answer_sample=off")
    with sqlite3.connect(db) as conn, pytest.raises(sqlite3.DatabaseError, match="a sample does not change"):
        conn.execute("DELETE FROM answer_sample_items")


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=3), st.integers(1, 60), min_size=1, max_size=8), st.integers(1, 200))
def test_allocation_sums_to_n_and_stays_within_the_strata(sizes: dict[str, int], n: int) -> None:
    share = allocate(sizes, n)
    assert sum(share.values()) == min(n, sum(sizes.values()))
    assert all(0 <= share[h] <= sizes[h] for h in sizes)
    if n >= len(sizes):
        assert all(share[h] >= 1 for h in sizes)


def _judge_uncertain_project(tmp_path: Path) -> tuple[str, dict[str, float], dict[str, float]]:
    """60 answers; the judge said both CORRECT and INCORRECT of answers 0-19 (two runs), one
    thing of the others. People's truth: the answers the judge is split on are mostly wrong."""
    path = str(tmp_path / "u.db")
    _run("init", path)
    answers = [{"answer_id": f"a{i:02d}", "question": f"Question {i}?", "response": f"Answer {i}.", "reference": "R"}
               for i in range(60)]
    _run("import-answers", path, str(write_jsonl(tmp_path / "a.jsonl", answers)), "--system", "rag", "--batch", "w1")
    truth = {f"a{i:02d}": float(i % 4 == 0 if i < 20 else i % 10 != 0) for i in range(60)}
    first = [{"item_id": f"a{i:02d}@correctness", "verdict": "CORRECT" if i < 20 or truth[f"a{i:02d}"] else "INCORRECT"}
             for i in range(60)]
    second = [{"item_id": f"a{i:02d}@correctness", "verdict": "INCORRECT"} for i in range(20)]
    _run("import-verdicts", path, str(write_jsonl(tmp_path / "j1.jsonl", first)), "--judge", "j")
    _run("import-verdicts", path, str(write_jsonl(tmp_path / "j2.jsonl", second)), "--judge", "j")
    judge_now = {f"a{i:02d}": 0.0 if i < 20 else truth[f"a{i:02d}"] for i in range(60)}  # its latest verdicts
    return path, truth, judge_now


def test_a_judge_uncertain_sample_draws_where_the_judge_is_split_and_the_metrics_weigh_it(tmp_path: Path) -> None:
    import numpy as np

    db, truth, judge_now = _judge_uncertain_project(tmp_path)
    assert "needs --judge NAME" in _run("sample-answers", db, "--system", "rag", "--n", "5", "--design",
                                        "judge-uncertain", "--name", "x", code=1)
    assert "gave no verdict" in _run("sample-answers", db, "--system", "rag", "--n", "5", "--design", "judge-uncertain",
                                     "--judge", "nobody", "--name", "x", code=1)
    out = json.loads(_run("sample-answers", db, "--system", "rag", "--n", "20", "--design", "judge-uncertain",
                          "--judge", "j", "--name", "u", "--json"))
    assert (out["drawn"], out["judge"]) == (20, "j")
    # sizes 0.25 + u: 20 answers at 1.25, 40 at 0.25; π = 20 · size / 35
    pi = {a: p for a, p, _ in _items(db, "u")}
    assert len(pi) == 20
    assert all(p == pytest.approx(20 * (1.25 if int(a[1:]) < 20 else 0.25) / 35) for a, p in pi.items())
    assert out["strata"]["unjudged or split (u = 1)"]["answers"] == 20
    labels = [{"item_id": f"{a}@correctness", "verdict": "CORRECT" if truth[a] else "INCORRECT"} for a in sorted(pi)]
    labels.append({"item_id": next(f"{a}@correctness" for a in sorted(truth) if a not in pi), "verdict": "CORRECT"})
    _run("import-verdicts", db, str(write_jsonl(tmp_path / "people.jsonl", labels)), "--annotator", "ada")
    weighted = json.loads(_run("answer-metrics", db, "--sample", "u", "--judge", "j", "--json"))
    c = weighted["systems"]["rag"]["correctness"]
    ids = sorted(pi)
    y, p = np.array([truth[a] for a in ids]), np.array([pi[a] for a in ids])
    f, f_all = np.array([judge_now[a] for a in ids]), np.array([judge_now[a] for a in sorted(judge_now)])
    assert c["people"]["value"] == pytest.approx(float(np.sum(y / p) / np.sum(1 / p)))  # Hájek, by numpy
    assert c["people"]["weighted"] is True and c["people"]["n_outside_sample"] == 1
    lam = c["ppi"]["lambda"]
    assert c["ppi"]["value"] == pytest.approx(lam * f_all.mean() + float(np.sum((y - lam * f) / p) / np.sum(1 / p)))
    plain = json.loads(_run("answer-metrics", db, "--judge", "j", "--json"))["systems"]["rag"]["correctness"]
    assert plain["people"]["value"] == pytest.approx(np.mean([*y, 1.0]))  # unweighted: every label once
    assert abs(plain["people"]["value"] - np.mean(list(truth.values()))) > abs(
        c["people"]["value"] - np.mean(list(truth.values())))
    text = _run("answer-metrics", db, "--sample", "u", "--judge", "j")
    assert "each labelled answer of the sample weighs 1/its inclusion probability; 1 answer labelled outside" in text
    assert "is of system 'rag'" in _run("answer-metrics", db, "--sample", "u", "--system", "other", code=1)
    by_batch = json.loads(_run("answer-metrics", db, "--sample", "u", "--judge", "j", "--by", "batch", "--json"))
    assert by_batch["systems"]["rag"]["w1"]["correctness"]["people"]["value"] == pytest.approx(c["people"]["value"])
