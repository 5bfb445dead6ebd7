"""run-judge against a scripted local OpenAI-compatible server: retries, cache, resume, key hygiene."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

from judge_server import JudgeServer, grade_of
from labels_fixtures import make_project
from labeler.cli import cli
from labeler.judges import JudgeError
from labeler.judges.client import Endpoint
from labeler.judges.prompts import make_prompt
from labeler.judges.run import run_judge
from labeler.store import connect
from labeler.store.access import OWNER
from labeler.store.verdicts import latest_judge_verdicts
from labeler.judges.verdict_files import import_items

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    return make_project(tmp_path / "p.db", n_queries=2, per_query=3)


def _endpoint(server: JudgeServer, **kw) -> Endpoint:
    return Endpoint(server.url, **{"timeout": 1.0, "attempts": 5, "backoff": 0.01, **kw})


def _run(db, server, judge="j1", **kw):
    endpoint = kw.pop("endpoint", None) or _endpoint(server)
    with endpoint:
        return run_judge(db, judge=judge, model="m1", endpoint=endpoint, progress=False, caller=OWNER, **kw)


def _grades(db, judge="j1") -> dict[tuple[str, str], str | None]:
    return {(v.query_id, v.doc_id): v.verdict for v in latest_judge_verdicts(db, judge, caller=OWNER)}


def test_every_pool_entry_is_judged_and_a_rerun_makes_no_calls(db, server) -> None:
    summary = _run(db, server)
    assert (summary.total, summary.calls, summary.requests, summary.errors, summary.unparseable) == (6, 6, 6, 0, 0)
    expected = {(q, f"{q}-d{n:03d}"): str(n % 4) for q in ("q001", "q002") for n in (1, 2, 3)}
    assert _grades(db) == expected
    # The prompt carries the project's rubric and grade scale.
    first = next(m for r in server.requests if "q001-d001" in (m := r["messages"][0]["content"]))
    assert "Fully answers" in first and "3 fully answers" in first and "query text q001" in first
    again = _run(db, server)
    assert (again.already_done, again.calls, again.from_cache, server.count) == (6, 0, 0, 6)
    # Another judge name with the same model and prompt is answered from the cache.
    other = _run(db, server, judge="j1-copy")
    assert (other.calls, other.from_cache, server.count, other.tokens_in) == (0, 6, 6, 0)
    assert _grades(db, "j1-copy") == expected
    rows = db.execute("SELECT prompt_hash, raw, tokens_in, tokens_out, latency FROM judge_verdicts WHERE judge = 'j1'").fetchall()
    assert {r[0] for r in rows} == {summary.prompt_hash}
    assert all(r[1] in "0123" and r[2] > 0 and r[3] == 1 and r[4] > 0 for r in rows)


def test_5xx_timeouts_and_malformed_json_are_retried(db, server) -> None:
    server.script = ["500", "timeout", "badjson", "500"]
    summary = _run(db, server, concurrency=1, endpoint=_endpoint(server, timeout=0.5))
    assert (summary.calls, summary.requests, summary.errors) == (6, 10, 0)
    assert all(v is not None for v in _grades(db).values())


def test_a_slow_reply_within_the_timeout_is_waited_for_and_its_latency_kept(db, server) -> None:
    server.script = ["slow:0.4"]
    summary = _run(db, server, concurrency=1)
    assert (summary.requests, summary.errors) == (6, 0)
    latencies = sorted(r[0] for r in db.execute("SELECT latency FROM judge_verdicts"))
    assert latencies[-1] >= 0.4 > latencies[-2]


def test_a_call_that_keeps_failing_is_recorded_and_retried_next_run(db, server) -> None:
    server.script = ["500", "500", "nochoices"]
    summary = _run(db, server, concurrency=1, endpoint=_endpoint(server, attempts=2))
    assert (summary.calls, summary.errors) == (6, 2)
    errors = db.execute("SELECT error FROM judge_verdicts WHERE error IS NOT NULL").fetchall()
    assert "InternalServerError" in errors[0][0] and "no message" in errors[1][0]
    assert sum(v is None for v in _grades(db).values()) == 2
    again = _run(db, server)
    assert (again.already_done, again.calls, again.errors) == (4, 2, 0)
    assert all(v is not None for v in _grades(db).values())


def test_an_unparseable_reply_is_stored_and_counted_never_guessed(db, server) -> None:
    server.script = ["text:Grade: 2", "text:2.", "text: 3 \n"]
    summary = _run(db, server, concurrency=1)
    assert (summary.unparseable, summary.errors) == (2, 0)
    rows = db.execute("SELECT raw, verdict, parseable FROM judge_verdicts ORDER BY id").fetchall()
    assert rows[:3] == [("Grade: 2", None, 0), ("2.", None, 0), (" 3 \n", "3", 1)]
    # Stored replies are cached too: the rerun does not ask again hoping for a better answer.
    assert _run(db, server).calls == 0


def test_pairwise_items_are_judged_in_both_orders_and_slots_become_responses(db, server, tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"p{i}", "kind": "pairwise", "question": f"q{i}", "response_a": "x",
                                         "response_b": "yy"}) + "\n" for i in range(3)), encoding="utf-8")
    import_items(db, items, caller=OWNER)
    first_slot = JudgeServer(answer=lambda message: "A")
    try:
        summary = _run(db, first_slot, task="pairwise", limit=2)
        assert (summary.total, summary.calls) == (6, 4)
        summary = _run(db, first_slot, task="pairwise")
        assert (summary.already_done, summary.calls) == (4, 2)
        got = {(v.item_id, v.shown_order): v.verdict for v in latest_judge_verdicts(db, "j1", caller=OWNER)}
        assert got == {(f"p{i}", o): ("A" if o == "AB" else "B") for i in range(3) for o in ("AB", "BA")}
        shown = Counter(re.search(r"<response_a id=(\w+)>\n(.*)\n</response_a id=\1>", r["messages"][0]["content"])[2]
                        for r in first_slot.requests)
        assert shown == {"x": 3, "yy": 3}  # each order shows the other response first
    finally:
        first_slot.close()


def test_bad_prompt_files_are_refused(db, server, tmp_path: Path) -> None:
    with pytest.raises(JudgeError, match=r"unknown placeholder\(s\) \['answer'\]"):
        _run(db, server, prompt_text="Grade {query} {answer}")
    prompt = make_prompt("relevance", "Query {query}\nPassage {passage}\nOne digit.")
    summary = _run(db, server, prompt_text="Query {query}\nPassage {passage}\nOne digit.")
    assert summary.prompt_hash == prompt.hash and summary.calls == 6


def _cli(db_path: Path, url: str, *extra: str, env: dict | None = None, **popen) -> subprocess.Popen:
    command = [sys.executable, "-c", "from labeler.cli import main; main()", "run-judge", str(db_path), "--judge", "j1",
               "--model", "m1", "--base-url", url, "--timeout", "5", *extra]
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def test_a_killed_run_resumes_with_every_item_judged_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    make_project(path, n_queries=4, per_query=10).close()
    server = JudgeServer(delay=0.05)
    try:
        process = _cli(path, server.url, "--concurrency", "3")
        db = connect(path)
        deadline = time.monotonic() + 60
        while db.execute("SELECT count(*) FROM judge_verdicts").fetchone()[0] < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
        done_before = db.execute("SELECT count(*) FROM judge_verdicts").fetchone()[0]
        assert 8 <= done_before < 40
        resumed = _cli(path, server.url, "--concurrency", "3")
        out, err = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, err
        assert f"{done_before} already done" in out
        keys = Counter(db.execute("SELECT query_id, doc_id FROM judge_verdicts").fetchall())
        assert len(keys) == 40 and set(keys.values()) == {1}
        assert db.execute("SELECT count(*) FROM judge_verdicts WHERE verdict IS NULL").fetchone()[0] == 0
        # At most the calls in flight at the kill were asked twice.
        assert 40 <= server.count <= 40 + 3
        rerun = _cli(path, server.url)
        out, _ = rerun.communicate(timeout=60)
        assert "0 calls (0 requests)" in out and server.count <= 43
    finally:
        server.close()


def test_the_key_is_in_no_output_and_no_file(tmp_path: Path) -> None:
    key = "sk-test-Zq8v1NOTAREALKEYx93"
    path = tmp_path / "p.db"
    make_project(path, n_queries=1, per_query=4).close()
    server = JudgeServer()
    try:
        server.script = ["500"]
        ok = _cli(path, server.url, env={"OPENAI_API_KEY": key}, cwd=tmp_path)
        out_ok, err_ok = ok.communicate(timeout=60)
        assert ok.returncode == 0, err_ok
        server.script = ["401"]
        refused = _cli(path, server.url, "--task", "relevance", "--prompt", str(_prompt(tmp_path)),
                       env={"OPENAI_API_KEY": key}, cwd=tmp_path)
        out_bad, err_bad = refused.communicate(timeout=60)
        assert refused.returncode == 1
        error = [line for line in err_bad.splitlines() if line.startswith("Error:")]
        assert len(error) == 1 and "AuthenticationError" in error[0] and "Bearer ***" in error[0]
        assert server.authorization[0] == f"Bearer {key}"  # the key was used ...
        for text in (out_ok, err_ok, out_bad, err_bad):
            assert key not in text  # ... and shown nowhere
        for file in tmp_path.rglob("*"):
            if file.is_file():
                assert key.encode() not in file.read_bytes(), file
        runner = CliRunner()
        export = runner.invoke(cli, ["export-verdicts", str(path)])
        assert export.exit_code == 0 and key not in export.output
    finally:
        server.close()


def _prompt(tmp_path: Path) -> Path:
    file = tmp_path / "prompt.txt"
    file.write_text("Grade {passage} for {query}: one digit 0-3.", encoding="utf-8")
    return file


def test_the_default_reply_function_reads_the_doc_number() -> None:
    assert grade_of("Passage: Text of q001-d007 about q001.") == "3"


def test_faithfulness_items_get_one_verdict_each(db, tmp_path: Path) -> None:
    items = tmp_path / "f.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"f{i}", "kind": "faithfulness", "question": "q", "contexts": [f"c{i}", "d"],
                                         "response": f"r{i}"}) + "\n" for i in range(4)), encoding="utf-8")
    import_items(db, items, caller=OWNER)
    server = JudgeServer(answer=lambda m: "supported" if "r1" in m or "r3" in m else "UNSUPPORTED")
    try:
        summary = _run(db, server, task="faithfulness")
        assert (summary.total, summary.calls, summary.unparseable) == (4, 4, 0)
        got = {v.item_id: v.verdict for v in latest_judge_verdicts(db, "j1", caller=OWNER)}
        assert got == {"f0": "UNSUPPORTED", "f1": "SUPPORTED", "f2": "UNSUPPORTED", "f3": "SUPPORTED"}
        assert all(re.search(r"<context_1 id=(\w+)>\nc\d\n</context_1 id=\1>\n\n<context_2 id=\1>\nd\n</context_2 id=\1>",
                             r["messages"][0]["content"]) for r in server.requests)
    finally:
        server.close()


def test_an_empty_response_reaches_the_judge_as_empty(db, tmp_path: Path) -> None:
    from labeler.judges.run import units

    items = tmp_path / "empty.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in (
        {"item_id": "f0", "kind": "faithfulness", "question": "q", "contexts": ["c"], "response": ""},
        {"item_id": "p0", "kind": "pairwise", "question": "q", "response_a": "", "response_b": "yy"},
    )), encoding="utf-8")
    import_items(db, items, caller=OWNER)
    empty = r"<{tag} id=(\w+)>\n\n</{tag} id=\1>"
    [faithfulness] = units(db, "faithfulness", make_prompt("faithfulness", "{response}"))
    assert re.fullmatch(empty.format(tag="response"), faithfulness.message)
    pairwise = {u.target.shown_order: u.message for u in units(db, "pairwise", make_prompt("pairwise", "{first}|{second}"))}
    assert re.fullmatch(empty.format(tag="response_a") + r"\|<response_b id=(\w+)>\nyy\n</response_b id=\2>", pairwise["AB"])
    assert re.fullmatch(r"<response_a id=(\w+)>\nyy\n</response_a id=\1>\|" + empty.format(tag="response_b").replace("\\1", "\\2"), pairwise["BA"])


def test_an_endpoint_keeps_one_openai_client_its_pool_as_wide_as_the_calls_in_flight(db, server) -> None:
    import openai

    endpoint = _endpoint(server)
    with endpoint:
        first = run_judge(db, judge="j1", model="m1", endpoint=endpoint, concurrency=3, progress=False, caller=OWNER)
        client = endpoint._client
        second = run_judge(db, judge="j2", model="m2", endpoint=endpoint, concurrency=3, progress=False, caller=OWNER)
        assert endpoint._client is client and isinstance(client, openai.AsyncOpenAI)
        assert endpoint.connections == 3
        pool = client._client._transport._pool  # the HTTP client openai was handed, and its connection pool
        assert pool._max_connections == 3 and pool._max_keepalive_connections == 3
    assert (first.calls, second.calls, server.count) == (6, 6, 12)
    # Every request went through openai's client: the key as its bearer token.
    assert all(a.startswith("Bearer ") for a in server.authorization)
