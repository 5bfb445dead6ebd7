"""Traces to metrics over time, end to end: two weeks of OTLP JSON made by the OpenTelemetry SDK
imported as batches, a stratified sample of the answers drawn, people labelling it in the app
(Streamlit's AppTest driving the answer relevance page, which hands out only the sample's
answers), and ``answer-metrics --by batch`` on their labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from app_fixtures import open_page, press
from labels_fixtures import write_jsonl
from labeler.cli import cli
from labeler.store import connect
from labeler.store.access import add_annotator
from labeler.ui import state
from trace_fixtures import Trace, write_traces

QUESTIONS = [f"How do I configure feature {i}?" for i in range(8)]


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _week(week: int) -> list[Trace]:
    return [Trace(q, f"Set option {i} in week {week}.", [[(f"d{i}", f"Feature {i} is set by option {i}.", 0.9)]],
                  session=f"s{i}", metadata={"week": week}) for i, q in enumerate(QUESTIONS)]


def test_traces_to_a_sample_labelled_in_the_app_to_metrics_per_batch(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "p.db")
    monkeypatch.setenv(state.DB_ENV_VAR, db)  # the project the app opens
    _run("init", db)
    _run("import-corpus", db, str(write_jsonl(tmp_path / "c.jsonl", [{"doc_id": f"d{i}", "text": f"Feature {i}."}
                                                                    for i in range(8)])))
    _run("import-queries", db, str(write_jsonl(tmp_path / "q.jsonl", [{"query_id": f"q{i}", "text": q}
                                                                     for i, q in enumerate(QUESTIONS)])))
    for week in (49, 50):
        write_traces(tmp_path / f"w{week}.jsonl", _week(week))
        out = _run("import-traces", db, str(tmp_path / f"w{week}.jsonl"), "--system", "prod", "--batch", f"2026-W{week}")
        assert "8 answers of 'prod' added" in out and "8 linked to project queries" in out
    drawn = json.loads(_run("sample-answers", db, "--system", "prod", "--n", "8", "--design", "stratified",
                            "--by", "batch", "--name", "weekly", "--seed", "3", "--json"))
    assert drawn["strata"] == {"2026-W49": {"answers": 8, "drawn": 4, "probability": 0.5},
                               "2026-W50": {"answers": 8, "drawn": 4, "probability": 0.5}}
    _run("label-settings", db, "answer_sample=weekly", "tasks=answer-relevance")
    with connect(tmp_path / "p.db") as store:
        sampled = {r[0] for r in store.execute("SELECT answer_id FROM answer_sample_items WHERE sample = 'weekly'")}
        person, token = add_annotator(store, "ben")
    # Ben labels in the app until the page has nothing more to hand out: only the sample's answers come.
    at = open_page(tmp_path / "p.db", "answer_relevance_page", token)
    seen = []
    while (current := _current(at)) is not None:
        seen.append(current)
        answer = current.split("@")[0]
        week = 49 if "week 49" in next(r for r in _answers(tmp_path) if r[0] == answer)[1] else 50
        press(at, state.choice_key("answer-relevance", "ADDRESSES" if week == 50 else "MISSES"))
        assert len(seen) <= 8
    assert not at.exception
    assert {s.split("@")[0] for s in seen} == sampled and len(seen) == 8
    d = json.loads(_run("answer-metrics", db, "--by", "batch", "--json"))
    per = d["systems"]["prod"]
    relevance = {b: per[b]["answer-relevance"]["people"] for b in d["batches"]}
    assert {b: r["n"] for b, r in relevance.items()} == {"2026-W49": 4, "2026-W50": 4}
    assert (relevance["2026-W49"]["value"], relevance["2026-W50"]["value"]) == (0.0, 1.0)
    change = next(c for c in d["changes"] if c["metric"] == "answer-relevance" and c["source"] == "people")
    assert (change["before"], change["after"]) == ("2026-W49", "2026-W50")
    assert change["difference"] == 1.0  # paired on the questions both samples hold, or not: every one moved


def _current(at) -> str | None:  # noqa: ANN001 - AppTest
    """The item the page shows (None once there is nothing left to hand out)."""
    key = state.task_key("answer-relevance", "current")
    return at.session_state[key] if key in at.session_state else None


def _answers(tmp_path: Path) -> list[tuple[str, str]]:
    with connect(tmp_path / "p.db") as store:
        return store.execute("SELECT answer_id, response FROM answers").fetchall()
