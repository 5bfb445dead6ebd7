"""The judge's cache cannot go stale: every setting that changes a reply is part of its key,
and a cache made before the key named them still answers the settings it was made with."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlite_utils

from judge_server import JudgeServer
from labels_fixtures import make_project
from labeler.judges.client import Endpoint, endpoint_key
from labeler.judges.run import default_prompt, run_judge, units
from labeler.store import connect
from labeler.store.access import OWNER
from labeler.store.migrations import MIGRATIONS
from labeler.store.migrations.m21_judge_settings import SQL as _M_JUDGE_SETTINGS
from labeler.store.verdicts import latest_judge_verdicts


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    return make_project(tmp_path / "p.db", n_queries=2, per_query=3)


def _run(db, url: str, judge: str, *, model: str = "m1", **kw):
    endpoint_args = {k: kw.pop(k) for k in ("temperature", "max_tokens", "options") if k in kw}
    with Endpoint(url, timeout=2.0, attempts=2, backoff=0.01, **endpoint_args) as endpoint:
        return run_judge(db, judge=judge, model=model, endpoint=endpoint, progress=False, caller=OWNER, **kw)


def test_changing_any_setting_that_changes_a_reply_makes_new_calls(db, server) -> None:
    assert _run(db, server.url, "base").calls == 6 and server.count == 6
    # The same settings under another judge name: all six from the cache.
    same = _run(db, server.url, "same")
    assert (same.calls, same.from_cache, server.count) == (0, 6, 6)
    changes = {
        "model": {"model": "m2"},
        "prompt": {"prompt_text": "Grade {passage} for {query}: one digit."},
        "temperature": {"temperature": 0.7},
        "token limit": {"max_tokens": 32},
        "sampling option": {"options": {"top_p": 0.5}},
    }
    for n, (what, change) in enumerate(changes.items(), start=1):
        s = _run(db, server.url, f"judge-{n}", **change)
        assert (s.calls, s.from_cache, server.count) == (6, 0, 6 + 6 * n), what
    sent = server.requests[-18:]
    assert {r["temperature"] for r in sent[:6]} == {0.7}
    assert {r["max_tokens"] for r in sent[6:12]} == {32}
    assert {r.get("top_p") for r in sent[12:]} == {0.5} and {r["temperature"] for r in sent[12:]} == {0}
    # The endpoint: the same model name on another server is another call.
    other = JudgeServer()
    try:
        s = _run(db, other.url, "elsewhere")
        assert (s.calls, s.from_cache, other.count) == (6, 0, 6)
    finally:
        other.close()
    # The repeat index: a second repeat of each unit is a new call, the first comes from the cache.
    before = server.count
    twice = _run(db, server.url, "twice", repeats=2)
    assert (twice.calls, twice.from_cache, server.count - before) == (6, 6, 6)
    # And every one of them is cached: the same again costs nothing.
    for judge, change in [("base-2", {}), *((f"again-{n}", c) for n, c in enumerate(changes.values()))]:
        assert _run(db, server.url, judge, **change).calls == 0
    assert _run(db, server.url, "twice-2", repeats=2).calls == 0


def test_a_rerun_under_the_same_judge_name_with_other_settings_judges_again(db, server) -> None:
    _run(db, server.url, "j")
    assert _run(db, server.url, "j").already_done == 6
    warmer = _run(db, server.url, "j", temperature=0.5)
    assert (warmer.already_done, warmer.calls) == (0, 6)
    settings = db.execute("SELECT DISTINCT settings FROM judge_verdict_settings").fetchall()
    assert len(settings) == 2 and all(endpoint_key(server.url) in s for (s,) in settings)


_OLD_CACHE = """
    CREATE TABLE judge_cache (
        model TEXT NOT NULL, prompt_hash TEXT NOT NULL, content_hash TEXT NOT NULL, shown_order TEXT NOT NULL DEFAULT '',
        raw TEXT NOT NULL, verdict TEXT, parseable INTEGER NOT NULL, tokens_in INTEGER, tokens_out INTEGER, latency REAL,
        at TEXT NOT NULL, raw_length INTEGER,
        PRIMARY KEY (model, prompt_hash, content_hash, shown_order)
    ) WITHOUT ROWID;
"""


def _as_before_the_key_named_settings(path: Path, rows: list[tuple]) -> None:
    """Rewind the project to the step before the cache's key named the settings, with ``rows``
    in its cache as that version stored them; the next connect migrates it."""
    conn = sqlite3.connect(path, isolation_level=None)
    for table in ("judge_cache", "judge_verdict_settings", "judge_repeats"):
        conn.execute(f"DROP TABLE {table}")
    conn.executescript(_OLD_CACHE)
    conn.executemany("INSERT INTO judge_cache (model, prompt_hash, content_hash, shown_order, raw, verdict, parseable, "
                     "tokens_in, tokens_out, latency, at) VALUES (?, ?, ?, '', ?, ?, 1, 40, ?, 0.1, '2026-01-01')", rows)
    conn.execute(f"PRAGMA user_version = {MIGRATIONS.index(_M_JUDGE_SETTINGS)}")
    conn.close()


def test_a_cache_made_before_the_key_named_settings_still_answers_them(tmp_path: Path, server) -> None:
    path = tmp_path / "old.db"
    db = make_project(path, n_queries=2, per_query=3)
    prompt = default_prompt(db, "relevance", None)
    every = units(db, "relevance", prompt)
    db.close()
    # Replies the server would not give ("3" for every entry), so a hit is told from a call; one
    # reply of 20 tokens, longer than a 16-token budget would allow.
    rows = [("m1", prompt.hash, u.item_hash, "3", "3", 20 if i == 0 else 1) for i, u in enumerate(every)]
    _as_before_the_key_named_settings(path, rows)
    db = connect(path)
    migrated = db.execute("SELECT DISTINCT endpoint, temperature, max_tokens, options, repeat FROM judge_cache").fetchall()
    assert migrated == [("", 0.0, 0, "{}", 0)] and db.execute("SELECT count(*) FROM judge_cache").fetchone()[0] == 6
    # The settings they were made with (temperature 0, no other option, one call), from this endpoint:
    # every reply from the cache, but the one too long for a 16-token budget.
    s = _run(db, server.url, "old", max_tokens=16)
    assert (s.from_cache, s.calls, server.count) == (5, 1, 1)
    assert sorted(v.verdict for v in latest_judge_verdicts(db, "old", caller=OWNER)).count("3") >= 5
    # A budget it fits in: all six.
    assert _run(db, server.url, "old-wide", max_tokens=64).from_cache == 6
    # Other settings than they were made with: asked anew.
    assert _run(db, server.url, "old-warm", temperature=0.3).calls == 6
    assert _run(db, server.url, "old-twice", repeats=2).calls == 6  # repeat 0 from the old rows, repeat 1 asked
    db.close()


def test_a_verdict_made_before_settings_were_recorded_counts_as_done_for_the_settings_it_had(db, server) -> None:
    _run(db, server.url, "j")
    # Verdicts without a settings row are what older runs left (the rows are append-only: the
    # trigger goes first): done for temperature 0, one call.
    conn = db.conn
    conn.execute("DROP TRIGGER judge_verdict_settings_no_delete")
    conn.execute("DELETE FROM judge_verdict_settings")
    conn.commit()
    assert _run(db, server.url, "j").already_done == 6
    assert _run(db, server.url, "j", temperature=0.2).already_done == 0


def test_the_endpoint_key_drops_user_info_and_hides_a_query() -> None:
    assert endpoint_key("http://user:pw@LOCALHOST:8000/v1/") == "http://localhost:8000/v1"
    assert "key" not in endpoint_key("https://api.example.org/v1?key=secret")
    assert endpoint_key("http://[::1]:9/v1") == "http://[::1]:9/v1"
