"""A judge model splits answers into claims: cached, resumable, strict about its replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

from judge_server import JudgeServer
from labeler.answers import import_answers
from labeler.cli import cli
from labeler.judge import JudgeError
from labeler.judge.claims import SPLIT_PROMPT, parse_claims, split_with_judge
from labeler.judge.client import Endpoint
from labeler.judge.prompts import prompt_hash
from labeler.store import connect
from labeler.store.access import OWNER
from labeler.store.answers import list_claims

ANSWERS = [
    {"answer_id": "a1", "question": "Where is Paris?", "response": "Paris is in France and on the Seine."},
    {"answer_id": "a2", "question": "Where is Rome?", "response": "Rome is in Italy."},
    {"answer_id": "a3", "question": "Where is Oslo?", "response": "I do not know."},
    {"answer_id": "a4", "question": "Where is Bern?", "response": ""},
    {"answer_id": "a5", "question": "Where is Kyiv?", "response": "Kyiv is in Ukraine.", "claims": ["Kyiv is in Ukraine."]},
]


def reply(message: str) -> str:
    if "Paris is in France" in message:
        return "1. Paris is in France.\n2. Paris is on the Seine.\n"
    if "I do not know" in message:
        return "NONE"
    return "Rome is in Italy."


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    runner = CliRunner()
    assert runner.invoke(cli, ["init", str(tmp_path / "p.db")]).exit_code == 0
    store = connect(tmp_path / "p.db")
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ANSWERS), encoding="utf-8")
    import_answers(store, path, "rag", caller=OWNER)
    yield store
    store.close()


@pytest.fixture
def server() -> JudgeServer:
    s = JudgeServer(answer=reply)
    yield s
    s.close()


def _split(db: sqlite_utils.Database, server: JudgeServer, **kwargs):
    return split_with_judge(db, "rag", judge="j1", model="m", endpoint=Endpoint(server.url, timeout=2, attempts=2, backoff=0.01),
                            progress=False, caller=OWNER, **kwargs)


def test_claims_from_the_judge_are_numbered_marked_and_versioned(db: sqlite_utils.Database, server: JudgeServer) -> None:
    s = _split(db, server)
    assert (s.total, s.answers, s.claims, s.already_done, s.abstentions, s.calls, s.from_cache, s.errors, s.unparseable) == (
        5, 2, 3, 1, 1, 3, 0, 0, 0)
    assert server.count == 3  # the abstention is never sent; a5's claims came with the file
    claims = [(c.claim_id, c.text, c.source, c.method, c.meta) for c in list_claims(db, "rag") if c.source == "judge"]
    meta = {"judge": "j1", "model": "m"}
    assert claims == [("a1#1", "Paris is in France.", "judge", prompt_hash(SPLIT_PROMPT), meta),
                      ("a1#2", "Paris is on the Seine.", "judge", prompt_hash(SPLIT_PROMPT), meta),
                      ("a2#1", "Rome is in Italy.", "judge", prompt_hash(SPLIT_PROMPT), meta)]
    message = next(r["messages"][-1]["content"] for r in server.requests if "Paris" in r["messages"][-1]["content"])
    assert "Question: Where is Paris?\n\nResponse:\nParis is in France and on the Seine.\n" in message
    assert "one claim per line" in message


def test_a_rerun_makes_no_call_and_the_cache_serves_another_judge_name(db: sqlite_utils.Database, server: JudgeServer) -> None:
    _split(db, server)
    again = _split(db, server)
    assert (again.calls, again.answers, again.from_cache) == (0, 0, 1)  # a3 said NONE: answered from the cache
    assert server.count == 3


def test_an_interrupted_run_resumes_and_failed_calls_are_retried_next_time(db: sqlite_utils.Database, server: JudgeServer) -> None:
    server.script = ["500", "500"]  # the first answer's two attempts fail
    first = _split(db, server, concurrency=1, limit=2)
    assert (first.calls, first.errors, first.answers) == (2, 1, 1)
    assert {c.answer_id for c in list_claims(db, "rag")} == {"a2", "a5"}
    second = _split(db, server, concurrency=1)
    assert (second.calls, second.errors, second.answers) == (2, 0, 1)  # a1 again (not cached), a3; a2 is done
    assert {c.answer_id for c in list_claims(db, "rag")} == {"a1", "a2", "a5"}


def test_an_unparseable_reply_gives_no_claims_and_is_counted(db: sqlite_utils.Database, server: JudgeServer) -> None:
    server.script = ["text:   ", "text:Rome is in Italy.\nNONE"]  # a1, then a2 (one call at a time, by answer_id)
    s = _split(db, server, concurrency=1)
    assert (s.unparseable, s.answers, s.claims) == (2, 0, 0)  # a3's NONE is parsed: no claims
    assert {c.answer_id for c in list_claims(db, "rag")} == {"a5"}
    again = _split(db, server, concurrency=1)  # the replies are cached, as run-judge caches them
    assert (again.calls, again.from_cache, again.unparseable) == (0, 3, 2)


def test_parse_claims_is_strict() -> None:
    assert parse_claims("- A is B.\n* C is D.\n3) E is F.") == ["A is B.", "C is D.", "E is F."]
    assert parse_claims("None") == []
    assert parse_claims("") is None and parse_claims(None) is None
    assert parse_claims("A is B.\nNONE") is None
    assert parse_claims("A\x00B") is None


def test_a_refused_key_stops_the_run(db: sqlite_utils.Database, server: JudgeServer) -> None:
    server.script = ["401"]
    with pytest.raises(JudgeError, match="AuthenticationError"):
        _split(db, server, concurrency=1)


def test_cli_split_claims_with_a_judge(db: sqlite_utils.Database, server: JudgeServer, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["split-claims", str(tmp_path / "p.db"), "--system", "rag", "--judge", "j1", "--model", "m",
                                      "--base-url", server.url, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output[result.output.index("{"):]) == {
        "system": "rag", "method": prompt_hash(SPLIT_PROMPT), "answers": 2, "claims": 3, "skipped": 3, "calls": 3,
        "from_cache": 0, "errors": 0, "unparseable": 0}
