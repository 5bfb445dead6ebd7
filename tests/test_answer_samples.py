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
